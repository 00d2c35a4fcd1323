import type { Services } from "../../app.js";
import type { ApiApp } from "../types.js";

/** The HTML page of a test, `/{org}/flaky-tests/test/{id}?repo=owner/name` (being written). */
export function registerTestPage(_app: ApiApp, _services: Services): void {
  // filled in by the test-details work
}
