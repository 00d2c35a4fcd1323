import { isoTime, type Clock } from "../../../lib/clock.js";
import { brokeAt } from "../../../testhealth/runs.js";
import type { Principal } from "../../../organizations/service.js";
import type { RepositoryHealthService } from "../../../testhealth/repository-health.js";
import type { TestQueryService } from "../../../testhealth/test-queries.js";
import type { TestPageLoader, TestPageView } from "../../../web/test-page/html.js";
import { presentRun } from "./runs.js";
import { presentationOf, presentTestDetails } from "./tests.js";

/** Where a broken test broke, from the runs read (the commit of its first failure in a row). */
function brokenSince(
  status: string,
  runs: Parameters<typeof brokeAt>[0],
  monitors: Parameters<typeof brokeAt>[1],
): Pick<TestPageView, "brokeAt"> {
  if (status !== "broken") return {};
  const found = brokeAt(runs, monitors);
  if (!found) return {};
  return {
    brokeAt: {
      commit_sha: found.commitSha,
      at: isoTime(found.at),
      last_passed_sha: found.lastPassedSha,
    },
  };
}

/** The latest runs the test page shows. */
const PAGE_RUNS = 50;

/**
 * The test page's view of a test: what get-test-details and list-test-runs present, for the
 * page in src/web to render.
 */
export function testPageView(deps: {
  queries: Pick<TestQueryService, "testPage">;
  repositoryHealth: Pick<RepositoryHealthService, "testDaily">;
  clock: Clock;
  /** The repository's ticket connection by id (its name and last error), if it is the caller's. */
  ticketConnection?:
    | ((
        principal: Principal,
        id: string,
      ) => Promise<{ name: string; lastError: string | null } | undefined>)
    | undefined;
}): TestPageLoader {
  return async (principal: Principal, query, baseUrl): Promise<TestPageView | undefined> => {
    const found = await deps.queries.testPage(principal, query, PAGE_RUNS);
    if (!found) return undefined;
    const { scope, details, runs } = found;
    const connectionId = scope.settings.tickets.connectionId;
    const [daily, ticketConnection] = await Promise.all([
      deps.repositoryHealth.testDaily(details.row.key),
      connectionId === null ? undefined : deps.ticketConnection?.(principal, connectionId),
    ]);
    const view = presentTestDetails(details, scope.settings, presentationOf(scope, baseUrl));
    const { repository } = scope;
    return {
      orgSlug: principal.organizationSlug,
      repository: { host: repository.host, owner: repository.owner, name: repository.name },
      test: view.test,
      quarantine: view.test.quarantine,
      history: view.status_history,
      monitors: view.monitors,
      runs: runs.runs.map(presentRun),
      ...brokenSince(view.test.status.value, runs.runs, scope.settings.monitors),
      totalRuns: runs.total,
      daily,
      firstSeenAt: details.row.firstSeenAt,
      ticketConnection,
      now: deps.clock.now(),
    };
  };
}
