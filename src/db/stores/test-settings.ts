import type { Kysely } from "kysely";
import type { MonitorSettings } from "../../testhealth/monitors.js";
import {
  defaultTestSettings,
  defaultTicketRule,
  type RepositoryTestSettings,
  type TicketRule,
} from "../../testhealth/settings.js";
import type { Database } from "../schema.js";
import type { StoredTestSettings } from "../../testhealth/records.js";
import type { TestSettingsRecords } from "../../testhealth/ports.js";
import { cachedLookup, lookupsChanged } from "../lookup-cache.js";

/**
 * The lookup cache's kind of these rows (read by every Flaky Tests read, rarely changed). A change
 * forgets every repository's settings and nothing else; a store on a transaction (`modifySettings`)
 * reads and writes around the cache, and its caller forgets after the commit.
 */
export const TEST_SETTINGS_KIND = "testSettings";

const bit = (value: boolean): number => (value ? 1 : 0);

/** `repository_test_settings`: one row per repository, created on first write (defaults before). */
export class TestSettingsStore implements TestSettingsRecords {
  constructor(private readonly db: Kysely<Database>) {}

  /** The settings of a repository (a record of the caller's own, built from the cached row). */
  async get(repositoryId: string): Promise<StoredTestSettings> {
    const found = await cachedLookup(this.db, TEST_SETTINGS_KIND, repositoryId, async () => ({
      row:
        (await this.db
          .selectFrom("repositoryTestSettings")
          .selectAll()
          .where("repositoryId", "=", repositoryId)
          .executeTakeFirst()) ?? null,
    }));
    const row = found?.row ?? null;
    if (!row) {
      return {
        ...defaultTestSettings(),
        codeowners: null,
        codeownersUpdatedAt: null,
        updatedAt: null,
      };
    }
    return {
      monitors: JSON.parse(row.monitors) as MonitorSettings,
      quarantine: {
        quarantiningEnabled: Boolean(row.quarantiningEnabled),
        autoQuarantine: Boolean(row.autoQuarantine),
      },
      ticketBaseUrl: row.ticketBaseUrl,
      pullRequestComments: Boolean(row.pullRequestComments),
      tickets: {
        connectionId: row.ticketConnectionId,
        rule: ticketRuleOf(row.ticketRule),
      },
      codeowners: row.codeowners,
      codeownersUpdatedAt: row.codeownersUpdatedAt,
      updatedAt: row.updatedAt,
    };
  }

  /** Replaces the settings (the caller read, changed and validated them). */
  async put(repositoryId: string, settings: RepositoryTestSettings, now: number): Promise<void> {
    const values = {
      monitors: JSON.stringify(settings.monitors),
      quarantiningEnabled: bit(settings.quarantine.quarantiningEnabled),
      autoQuarantine: bit(settings.quarantine.autoQuarantine),
      ticketBaseUrl: settings.ticketBaseUrl,
      pullRequestComments: bit(settings.pullRequestComments),
      ticketConnectionId: settings.tickets.connectionId,
      ticketRule: JSON.stringify(settings.tickets.rule),
      updatedAt: now,
    };
    await this.db
      .insertInto("repositoryTestSettings")
      .values({ repositoryId, ...values, codeowners: null, codeownersUpdatedAt: null })
      .onConflict((oc) => oc.column("repositoryId").doUpdateSet(values))
      .execute();
    lookupsChanged(this.db, [TEST_SETTINGS_KIND]);
  }

  /** Keeps the latest CODEOWNERS an upload carried (by upload time: an old bundle never wins). */
  async putCodeowners(repositoryId: string, text: string, at: number): Promise<void> {
    const defaults = defaultTestSettings();
    await this.db
      .insertInto("repositoryTestSettings")
      .values({
        repositoryId,
        monitors: JSON.stringify(defaults.monitors),
        quarantiningEnabled: 1,
        autoQuarantine: 1,
        ticketBaseUrl: null,
        codeowners: text,
        codeownersUpdatedAt: at,
        updatedAt: at,
      })
      .onConflict((oc) =>
        oc
          .column("repositoryId")
          .doUpdateSet({ codeowners: text, codeownersUpdatedAt: at })
          .where((eb) =>
            eb.or([
              eb("repositoryTestSettings.codeownersUpdatedAt", "is", null),
              eb("repositoryTestSettings.codeownersUpdatedAt", "<=", at),
            ]),
          ),
      )
      .execute();
    lookupsChanged(this.db, [TEST_SETTINGS_KIND]);
  }
}

/** The stored rule over the defaults (a rule stored before a field existed gets its default). */
export function ticketRuleOf(text: string | null): TicketRule {
  const rule = defaultTicketRule();
  if (text === null) return rule;
  try {
    return { ...rule, ...(JSON.parse(text) as Partial<TicketRule>) };
  } catch {
    return rule;
  }
}
