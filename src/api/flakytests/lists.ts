import type { Services } from "../../app.js";
import type { ApiApp } from "../types.js";

/** list-failing-tests, list-unhealthy-tests, list-quarantined-tests (being written). */
export function registerListRoutes(_app: ApiApp, _services: Services): void {
  // filled in by the lists work
}
