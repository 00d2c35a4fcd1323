/**
 * Test health across an organization's repositories: what the dashboard's home shows. Five
 * statements whatever the number of repositories or tests (the pages' budget).
 */
import type { Clock } from "../lib/clock.js";
import { DAY_MS } from "../lib/time.js";
import type { Repository } from "../organizations/repositories.js";
import type { Principal } from "../organizations/service.js";
import type { TestOverviewRecords } from "./ports.js";
import type { QuarantineSettings } from "./quarantine.js";
import { defaultTestSettings } from "./settings.js";
import { dailyStatusCounts, utcDay, type DailyStatusCounts } from "./trends.js";

export interface RepositoryHealth {
  repository: Repository;
  quarantine: QuarantineSettings;
  /** Tests known in the repository, and how many are flaky, broken and quarantined now. */
  tests: number;
  flaky: number;
  broken: number;
  quarantined: number;
  /** Flaky and broken tests at the end of each UTC day, oldest first, ending today. */
  daily: DailyStatusCounts[];
}

export interface OrganizationHealth {
  repositories: RepositoryHealth[];
  /** The sum of the repositories' daily counts. */
  daily: DailyStatusCounts[];
}

export class TestHealthOverview {
  constructor(
    private readonly deps: {
      overview: TestOverviewRecords;
      clock: Clock;
    },
  ) {}

  /** Every repository of the caller's organization with its counts and `days` days of trend. */
  async organization(principal: Principal, days = 30): Promise<OrganizationHealth> {
    const now = this.deps.clock.now();
    const since = utcDay(now) - (days - 1) * DAY_MS;
    // The organization's repositories first: the other reads are by their ids (which every
    // planner turns into index ranges), so nothing reads another organization's rows.
    const repositories = await this.deps.overview.repositories(principal.organizationId);
    const ids = repositories.map((r) => r.repository.id);
    const [statuses, overrides, changes] = await Promise.all([
      this.deps.overview.statusCounts(ids),
      this.deps.overview.overrideCounts(ids),
      this.deps.overview.statusChanges(ids, since),
    ]);
    const result = repositories.map(({ repository, quarantine }): RepositoryHealth => {
      const settings = quarantine ?? defaultTestSettings().quarantine;
      const count = (status: string) =>
        statuses.find((r) => r.repositoryId === repository.id && r.status === status)?.count ?? 0;
      const override = (o: string) =>
        overrides.find((r) => r.repositoryId === repository.id && r.override === o) ?? {
          count: 0,
          flaky: 0,
        };
      const flaky = count("flaky");
      const broken = count("broken");
      // The quarantine rule: enabled && (ALWAYS || (not NEVER && auto && flaky)).
      const quarantined = !settings.quarantiningEnabled
        ? 0
        : override("ALWAYS_QUARANTINE").count +
          (settings.autoQuarantine
            ? flaky - override("ALWAYS_QUARANTINE").flaky - override("NEVER_QUARANTINE").flaky
            : 0);
      const tests = count("*");
      return {
        repository,
        quarantine: settings,
        tests,
        flaky,
        broken,
        quarantined,
        daily: dailyStatusCounts(
          { flaky, broken },
          changes.filter((c) => c.repositoryId === repository.id),
          days,
          now,
        ),
      };
    });
    const daily = dailyStatusCounts(
      {
        flaky: result.reduce((sum, r) => sum + r.flaky, 0),
        broken: result.reduce((sum, r) => sum + r.broken, 0),
      },
      changes,
      days,
      now,
    );
    return { repositories: result, daily };
  }
}
