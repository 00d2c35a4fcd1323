import { Type } from "typebox";
import { PR_STATES, type PrState } from "../../mergequeue/model.js";
import type { PullRequestService } from "../../mergequeue/pull-request-service.js";
import { DEFAULT_TAKE, MAX_TAKE } from "../../mergequeue/pull-request-views.js";
import { principalOf } from "../plugins/auth.js";
import { COMMON_ERRORS, CaseInsensitiveEnum, errorResponses } from "../schemas.js";
import type { ApiApp } from "../types.js";
import { presentMergeItem } from "./presenters.js";
import { ListPullRequestsResponse, QueueAddressFields } from "./schemas.js";

export const ListPullRequestsBody = Type.Object({
  ...QueueAddressFields,
  state: Type.Optional(CaseInsensitiveEnum(PR_STATES, "Only pull requests in this state.")),
  since: Type.Optional(
    Type.String({
      format: "date-time",
      description:
        "Only pull requests that concluded (merged, failed, cancelled) at or after this time.",
    }),
  ),
  cursor: Type.Optional(
    Type.String({
      maxLength: 64,
      description: '`nextCursor` of the previous page (a UUID); absent or `""` for the first page.',
    }),
  ),
  history: Type.Optional(
    Type.Boolean({
      description:
        "Every submission: a pull request submitted again after it was cancelled or failed is listed once per submission. Default: once, as its latest submission.",
    }),
  ),
  take: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_TAKE,
      description: `Page size, 1 to ${MAX_TAKE}; default ${DEFAULT_TAKE}.`,
    }),
  ),
});

export function registerListPullRequests(app: ApiApp, pullRequests: PullRequestService): void {
  app.post(
    "/v1/listPullRequests",
    {
      schema: {
        tags: ["Merge queue"],
        summary: "List a merge queue's pull requests",
        description:
          "The queue's pull requests, current and concluded, in submission order, a page at a time: each once, as its latest submission (`history: true`: every submission). A cursor this server did not hand out answers 400.",
        body: ListPullRequestsBody,
        response: { 200: ListPullRequestsResponse, ...errorResponses(...COMMON_ERRORS, 404) },
      },
    },
    async (request) => {
      const { repo, targetBranch, state, since, cursor, take, history } = request.body;
      const page = await pullRequests.list(
        principalOf(request),
        { repo, targetBranch },
        {
          ...(state === undefined ? {} : { state: state.toLowerCase() as PrState }),
          ...(since === undefined ? {} : { since: Date.parse(since) }),
          ...(cursor === undefined ? {} : { cursor }),
          ...(take === undefined ? {} : { take }),
          ...(history === undefined ? {} : { history }),
        },
      );
      return {
        pullRequests: page.pullRequests.map(presentMergeItem),
        ...(page.nextCursor === undefined ? {} : { nextCursor: page.nextCursor }),
      };
    },
  );
}
