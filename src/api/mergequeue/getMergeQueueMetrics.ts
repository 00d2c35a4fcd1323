import { Type } from "typebox";
import type { RepoRef } from "../../organizations/repositories.js";
import { ApiError } from "../../lib/errors.js";
import type { PullRequestService } from "../../mergequeue/pull-request-service.js";
import { principalOf } from "../plugins/auth.js";
import { errorResponses } from "../schemas.js";
import type { ApiApp } from "../types.js";

export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

export const GetMergeQueueMetricsQuery = Type.Object({
  repo: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 512,
      description:
        "`owner/name` (GitLab: `group/sub/name`); omit for every queue of the organization.",
    }),
  ),
  repoHost: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      description: "Host of `repo`, e.g. `github.com`; required with `repo`.",
    }),
  ),
});

/** `repo=owner/name` + `repoHost`: the owner is everything before the last slash. */
export function metricsRepo(
  repo: string | undefined,
  repoHost: string | undefined,
): RepoRef | undefined {
  if (repo === undefined) return undefined;
  if (repoHost === undefined) throw ApiError.invalid("repoHost", "is required when repo is given");
  const slash = repo.lastIndexOf("/");
  if (slash <= 0 || slash === repo.length - 1) {
    throw ApiError.invalid("repo", "must be owner/name, e.g. acme/app");
  }
  return { host: repoHost, owner: repo.slice(0, slash), name: repo.slice(slash + 1) };
}

export function registerGetMergeQueueMetrics(app: ApiApp, pullRequests: PullRequestService): void {
  app.get(
    "/v1/getMergeQueueMetrics",
    {
      schema: {
        tags: ["Merge queue"],
        summary: "Prometheus metrics of merge queues",
        description:
          "Prometheus text (format 0.0.4) for every merge queue of the organization, or of one repository: gauges `mq_depth_current`, `mq_awaiting_mergeability`, `mq_testing_slots_active`; over the last hour `mq_pr_conclusions_1h_total{conclusion}`, `mq_pr_restarts_1h_total` and the histograms `mq_pr_wait_duration_1h_seconds`, `mq_pr_test_duration_1h_seconds`, `mq_pr_time_in_queue_1h_seconds`. Labels `repo`, `branch`, `queue_type`. A repository without a merge queue answers 404.",
        querystring: GetMergeQueueMetricsQuery,
        response: {
          200: {
            description: "Prometheus exposition text.",
            content: { "text/plain": { schema: Type.String() } },
          },
          ...errorResponses(400, 401, 404, 500),
        },
      },
    },
    async (request, reply) => {
      const { repo, repoHost } = request.query;
      const text = await pullRequests.metrics(principalOf(request), metricsRepo(repo, repoHost));
      return reply.type(PROMETHEUS_CONTENT_TYPE).send(text);
    },
  );
}
