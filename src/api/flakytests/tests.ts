import type { Services } from "../../app.js";
import type { ApiApp } from "../types.js";

/** get-test-details, run history, overrides, tickets, settings (being written). */
export function registerTestRoutes(_app: ApiApp, _services: Services): void {
  // filled in by the test-details work
}
