/**
 * The local git host's operations: create a repository, open, close and list its pull requests.
 * Repositories are `{host: "local", owner, name}`.
 */
import { Type, type Static } from "typebox";
import type { LocalPullRequestRecord } from "../../../mergequeue/local-pull-request-records.js";
import type { LocalHostService } from "../git/service.js";
import { principalOf } from "../../../api/plugins/auth.js";
import { ApiError } from "../../../lib/errors.js";
import {
  BranchName,
  COMMON_ERRORS,
  CaseInsensitiveEnum,
  OutputEnum,
  PrNumber,
  RepoRefSchema,
  errorResponses,
  prNumberOf,
} from "../../../api/schemas.js";
import type { ApiApp } from "../../../api/types.js";

const PR_STATES = ["open", "closed", "merged"] as const;

const LocalPullRequest = Type.Object({
  number: Type.Integer(),
  title: Type.String(),
  author: Type.String(),
  description: Type.String({
    description: 'What the pull request is about; `""` when none was given.',
  }),
  head: Type.String({ description: "The branch with the changes." }),
  base: Type.String({ description: "The branch it merges into." }),
  headSha: Type.Union([Type.String(), Type.Null()], {
    description: "The head branch's commit now; null when the branch is gone.",
  }),
  state: OutputEnum(PR_STATES, "`open`, `closed` or `merged`."),
  createdAt: Type.String({ format: "date-time" }),
  closedAt: Type.Union([Type.String({ format: "date-time" }), Type.Null()]),
  mergedSha: Type.Union([Type.String(), Type.Null()], {
    description: "The commit that landed it on the base branch.",
  }),
});

/** A pull request of the local git host as the API answers it. */
export type LocalPullRequestView = Static<typeof LocalPullRequest>;

const iso = (ms: number) => new Date(ms).toISOString();

function present(pr: LocalPullRequestRecord, headSha: string | undefined) {
  return {
    number: pr.number,
    title: pr.title,
    author: pr.author,
    description: pr.description,
    head: pr.headBranch,
    base: pr.baseBranch,
    headSha: headSha ?? null,
    state: pr.state,
    createdAt: iso(pr.createdAt),
    closedAt: pr.closedAt === null ? null : iso(pr.closedAt),
    mergedSha: pr.mergedSha,
  };
}

export function registerLocalHostRoutes(app: ApiApp, local: LocalHostService): void {
  app.post(
    "/v1/local/createRepository",
    {
      schema: {
        tags: ["Local git host"],
        summary: "Create a repository on the local git host",
        description:
          "Creates an empty bare repository for the token's organization, in the organization's own tree under the data directory (`git/{organizationId}/{owner}/{name}.git`; another organization may have a repository of the same name, which is a different one), and answers the path to push to. 409 when it exists.",
        body: Type.Object({ repo: RepoRefSchema }),
        response: {
          200: Type.Object({
            remoteUrl: Type.String({ description: "The bare repository's path: a git remote." }),
          }),
          ...errorResponses(...COMMON_ERRORS, 409, 507),
        },
      },
    },
    async (request) => {
      const { remoteUrl } = await local.createRepository(principalOf(request), request.body.repo);
      return { remoteUrl };
    },
  );

  app.post(
    "/v1/local/openPullRequest",
    {
      schema: {
        tags: ["Local git host"],
        summary: "Open a pull request on the local git host",
        description:
          "Both branches must exist (push them first). A second open pull request from the same head into the same base is a 409. `description` (or `body`) is kept and, with the squash merge method, becomes the body of the commit that lands.",
        body: Type.Object({
          repo: RepoRefSchema,
          head: BranchName("The branch with the changes."),
          base: BranchName("The branch to merge into, e.g. `main`."),
          title: Type.Optional(Type.String({ maxLength: 1000 })),
          author: Type.Optional(
            Type.String({
              maxLength: 255,
              description:
                "Who the pull request is by; default: the author of the oldest commit of `head` that `base` lacks.",
            }),
          ),
          description: Type.Optional(
            Type.String({
              maxLength: 65536,
              description:
                "What the pull request is about. A squash merge puts it in the commit message, after the title.",
            }),
          ),
          body: Type.Optional(
            Type.String({
              maxLength: 65536,
              description: "GitHub's name for `description`; send one of the two.",
            }),
          ),
        }),
        response: {
          200: Type.Object({ number: Type.Integer() }),
          ...errorResponses(...COMMON_ERRORS, 404, 409),
        },
      },
    },
    async (request) => {
      const { repo, body, description, ...input } = request.body;
      if (body !== undefined && description !== undefined && body !== description) {
        throw ApiError.invalid("body", "must not differ from description; send one of the two");
      }
      const given = description ?? body;
      const pr = await local.openPullRequest(principalOf(request), repo, {
        ...input,
        ...(given === undefined ? {} : { description: given }),
      });
      return { number: pr.number };
    },
  );

  app.post(
    "/v1/local/closePullRequest",
    {
      schema: {
        tags: ["Local git host"],
        summary: "Close a pull request on the local git host",
        description:
          "A queued pull request is cancelled by its queue. Closing a closed one again is fine; a merged one is a 409.",
        body: Type.Object({ repo: RepoRefSchema, number: PrNumber() }),
        response: { 200: LocalPullRequest, ...errorResponses(...COMMON_ERRORS, 404, 409) },
      },
    },
    async (request) => {
      const { repo, number } = request.body;
      const principal = principalOf(request);
      const closed = await local.closePullRequest(principal, repo, prNumberOf(number));
      const repository = await local.repository(principal, repo);
      const branches = await local.branches(repository);
      return present(closed, branches.get(closed.headBranch));
    },
  );

  app.post(
    "/v1/local/listPullRequests",
    {
      schema: {
        tags: ["Local git host"],
        summary: "List the pull requests of a local repository",
        description: "Newest first; optionally only those in one state.",
        body: Type.Object({
          repo: RepoRefSchema,
          state: Type.Optional(CaseInsensitiveEnum(PR_STATES, "Only this state.")),
        }),
        response: {
          200: Type.Object({ pullRequests: Type.Array(LocalPullRequest) }),
          ...errorResponses(...COMMON_ERRORS, 404),
        },
      },
    },
    async (request) => {
      const { repo, state } = request.body;
      const { repository, pullRequests } = await local.listPullRequests(
        principalOf(request),
        repo,
        state?.toLowerCase() as (typeof PR_STATES)[number] | undefined,
      );
      const branches = await local.branches(repository);
      return { pullRequests: pullRequests.map((pr) => present(pr, branches.get(pr.headBranch))) };
    },
  );
}
