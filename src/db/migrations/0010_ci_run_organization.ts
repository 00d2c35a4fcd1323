import { sql } from "kysely";
import type { DialectMigration } from "./types.js";

/**
 * Every repository below the API now carries the organization it belongs to (local repositories
 * live in one tree per organization on disk), and so does the request a CI run keeps in
 * `ci_runs.request` for a restarted runner: runs stored before get their queue's repository's
 * organization written into it. Data only; no column changes.
 */
export const ciRunOrganization: DialectMigration = {
  async up(db) {
    // One-word names: the connection may map snake_case names of results to camelCase.
    const rows = await sql<{ queue: string; run: string; request: string; org: string }>`
      select c.queue_id as queue, c.run_id as run, c.request as request, r.organization_id as org
      from ci_runs c
      join merge_queues q on q.id = c.queue_id
      join repositories r on r.id = q.repository_id`.execute(db);
    for (const row of rows.rows) {
      const request = JSON.parse(row.request) as { repo?: Record<string, unknown> };
      if (!request.repo || typeof request.repo.organizationId === "string") continue;
      request.repo = { organizationId: row.org, ...request.repo };
      await sql`update ci_runs set request = ${JSON.stringify(request)}
        where queue_id = ${row.queue} and run_id = ${row.run}`.execute(db);
    }
  },

  async down(db) {
    const rows = await sql<{ queue: string; run: string; request: string }>`
      select queue_id as queue, run_id as run, request from ci_runs`.execute(db);
    for (const row of rows.rows) {
      const request = JSON.parse(row.request) as { repo?: Record<string, unknown> };
      if (!request.repo || !("organizationId" in request.repo)) continue;
      delete request.repo.organizationId;
      await sql`update ci_runs set request = ${JSON.stringify(request)}
        where queue_id = ${row.queue} and run_id = ${row.run}`.execute(db);
    }
  },
};
