import { sql, type Kysely } from "kysely";
import { Migrator, type Migration, type MigrationResultSet } from "kysely/migration";
import type { DatabaseHandle } from "./connection.js";
import { initial } from "./migrations/0001_initial.js";
import { serverSecrets } from "./migrations/0002_server_secrets.js";
import { testHealth } from "./migrations/0003_test_health.js";
import { testLists } from "./migrations/0004_test_lists.js";
import { coveringRunIndex } from "./migrations/0005_covering_run_index.js";
import { runsWithoutUploadFields } from "./migrations/0006_runs_without_upload_fields.js";
import { mergeQueueEngine } from "./migrations/0007_merge_queue_engine.js";
import { localGitHost } from "./migrations/0008_local_git_host.js";
import { speculationThreshold } from "./migrations/0009_speculation_threshold.js";
import { ciRunOrganization } from "./migrations/0010_ci_run_organization.js";
import { publicRepositoryIds } from "./migrations/0012_public_repository_ids.js";
import { localPullRequestDescriptions } from "./migrations/0013_local_pull_request_descriptions.js";
import { githubApp } from "./migrations/0015_github_app.js";
import { webSessions } from "./migrations/0017_web_sessions.js";
import { lookupChangeAnnouncements } from "./migrations/0018_lookup_change_announcements.js";
import { githubSessions } from "./migrations/0021_github_sessions.js";
import { githubCiRuns } from "./migrations/0022_github_ci_runs.js";
import { githubPresence } from "./migrations/0023_github_presence.js";
import { testCaseFigures } from "./migrations/0024_test_case_figures.js";
import { webhookPayloads } from "./migrations/0025_webhook_payloads.js";
import { testSettingsAnnouncements } from "./migrations/0026_test_settings_announcements.js";
import { noParallelListScans } from "./migrations/0027_no_parallel_list_scans.js";
import { issuedIds } from "./migrations/0028_issued_ids.js";
import { runFailFirst } from "./migrations/0029_run_fail_first.js";
import { hostTrouble } from "./migrations/0030_host_trouble.js";
import { outboundWebhooks } from "./migrations/0031_outbound_webhooks.js";
import { prTestReports } from "./migrations/0032_pr_test_reports.js";
import { chatDestinations } from "./migrations/0033_chat_destinations.js";
import { tickets } from "./migrations/0034_tickets.js";
import { gitlabConnections } from "./migrations/0035_gitlab_connections.js";
import { gitlabOAuth } from "./migrations/0036_gitlab_oauth.js";
import { hostNeutralTables } from "./migrations/0037_host_neutral_tables.js";
import { columnTypes, type DialectMigration } from "./migrations/types.js";
import type { Database } from "./schema.js";

/** Every migration, in order. Names sort lexically; never rename or edit a released one. */
const MIGRATIONS: Record<string, DialectMigration> = {
  "0001_initial": initial,
  "0002_server_secrets": serverSecrets,
  "0003_test_health": testHealth,
  "0004_test_lists": testLists,
  "0005_covering_run_index": coveringRunIndex,
  "0006_runs_without_upload_fields": runsWithoutUploadFields,
  "0007_merge_queue_engine": mergeQueueEngine,
  "0008_local_git_host": localGitHost,
  "0009_speculation_threshold": speculationThreshold,
  "0010_ci_run_organization": ciRunOrganization,
  "0012_public_repository_ids": publicRepositoryIds,
  "0013_local_pull_request_descriptions": localPullRequestDescriptions,
  "0015_github_app": githubApp,
  "0017_web_sessions": webSessions,
  "0018_lookup_change_announcements": lookupChangeAnnouncements,
  "0021_github_sessions": githubSessions,
  "0022_github_ci_runs": githubCiRuns,
  "0023_github_presence": githubPresence,
  "0024_test_case_figures": testCaseFigures,
  "0025_webhook_payloads": webhookPayloads,
  "0026_test_settings_announcements": testSettingsAnnouncements,
  "0027_no_parallel_list_scans": noParallelListScans,
  "0028_issued_ids": issuedIds,
  "0029_run_fail_first": runFailFirst,
  "0030_host_trouble": hostTrouble,
  "0031_outbound_webhooks": outboundWebhooks,
  "0032_pr_test_reports": prTestReports,
  "0033_chat_destinations": chatDestinations,
  "0034_tickets": tickets,
  "0035_gitlab_connections": gitlabConnections,
  "0036_gitlab_oauth": gitlabOAuth,
  "0037_host_neutral_tables": hostNeutralTables,
};

export interface MigrationReport {
  applied: string[];
}

/**
 * Brings the schema up to date. Safe to run from several processes at once: Kysely's migrator
 * holds a lock row while it works.
 */
export async function migrateToLatest(handle: DatabaseHandle): Promise<MigrationReport> {
  const types = columnTypes(handle.dialect);
  const migrations: Record<string, Migration> = {};
  for (const [name, migration] of Object.entries(MIGRATIONS)) {
    migrations[name] = {
      up: (db) => migration.up(db, types),
      down: (db) => migration.down(db, types),
    };
  }
  const db = handle.db as unknown as Kysely<unknown>;
  const migrator = new Migrator({
    db,
    provider: { getMigrations: () => Promise.resolve(migrations) },
    // Kysely looks for its bookkeeping tables in every schema unless told which one; another
    // schema's tables (a second instance in the same database) would then be taken for ours.
    ...(handle.dialect === "postgres" ? { migrationTableSchema: await currentSchema(db) } : {}),
  });
  const result: MigrationResultSet = await migrator.migrateToLatest();
  if (result.error) {
    const failed = result.results?.find((r) => r.status === "Error")?.migrationName;
    const cause =
      result.error instanceof Error ? result.error.message : JSON.stringify(result.error);
    throw new Error(`Migration ${failed ?? "(unknown)"} failed: ${cause}`, {
      cause: result.error,
    });
  }
  return {
    applied: (result.results ?? [])
      .filter((r) => r.status === "Success")
      .map((r) => r.migrationName),
  };
}

/**
 * Whether Mainline's schema was ever created in this database (its migration bookkeeping table
 * exists: in the current schema on PostgreSQL). Reads only.
 */
export async function hasMainlineSchema(handle: DatabaseHandle): Promise<boolean> {
  const db = handle.db as unknown as Kysely<unknown>;
  if (handle.dialect === "postgres") {
    const { rows } = await sql<{
      present: boolean;
    }>`select to_regclass('kysely_migration') is not null as present`.execute(db);
    return rows[0]?.present === true;
  }
  const { rows } = await sql<{
    name: string;
  }>`select name from sqlite_master where type = 'table' and name = 'kysely_migration'`.execute(db);
  return rows.length > 0;
}

async function currentSchema(db: Kysely<unknown>): Promise<string> {
  const { rows } = await sql<{ schema: string | null }>`select current_schema() as schema`.execute(
    db,
  );
  const schema = rows[0]?.schema;
  if (!schema) throw new Error("PostgreSQL has no current schema: check the search_path setting.");
  return schema;
}

export type { Database };
