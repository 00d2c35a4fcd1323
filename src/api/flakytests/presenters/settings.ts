import type { Static } from "typebox";
import { isoTime } from "../../../lib/clock.js";
import type { StoredTestSettings } from "../../../testhealth/records.js";
import { toWireSettings } from "../../../testhealth/settings-wire.js";
import type { TestSettingsResponse } from "../test-detail-schemas.js";

/** A repository's test-health settings as get-test-settings and update-test-settings answer. */
export function presentSettings(settings: StoredTestSettings): Static<typeof TestSettingsResponse> {
  return {
    ...toWireSettings(settings),
    updated_at: settings.updatedAt === null ? null : isoTime(settings.updatedAt),
  };
}
