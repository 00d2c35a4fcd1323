/**
 * The GitLab connection's operations for an organization's token (`/v1/gitlab/*`): connect the
 * organization with a GitLab access token, show the connection (with the webhook address and
 * secret to give GitLab), disconnect. On a server without MAINLINE_GITLAB_URL they answer
 * `host_not_connected` (409), so that the API is the same everywhere.
 */
import { Type } from "typebox";
import { principalOf } from "../../api/plugins/auth.js";
import { COMMON_ERRORS, EmptyObject, PATTERN_MESSAGES, errorResponses } from "../../api/schemas.js";
import type { ApiApp } from "../../api/types.js";
import { isoTime } from "../../lib/clock.js";
import { ApiError } from "../../lib/errors.js";
import type { GitLabConnectionRecord } from "../../organizations/gitlab-connections.js";
import type { GitLabConnections } from "./connections.js";
import { GITLAB_CALLBACK_PATH } from "./oauth-routes.js";
import { GITLAB_WEBHOOK_PATH, gitlabWebhookUrl } from "./webhooks.js";

const TOKEN_PATTERN = "^[\\x21-\\x7e]+$";
PATTERN_MESSAGES.set(TOKEN_PATTERN, "must be a GitLab token: visible ASCII characters, no spaces");

/** The events the queue needs from a project's webhook. */
export const HOOK_EVENTS = [
  "push_events",
  "merge_requests_events",
  "note_events",
  "pipeline_events",
];

const Connection = Type.Object({
  instanceUrl: Type.String({ description: "The GitLab instance (MAINLINE_GITLAB_URL)." }),
  method: Type.Union([Type.Literal("token"), Type.Literal("oauth")], {
    description:
      "`token`: an access token given to `connect`; `oauth`: the OAuth application's grant (`authorize`), renewed by Mainline.",
  }),
  problem: Type.Union([Type.String(), Type.Null()], {
    description:
      "Why the connection stopped working, when Mainline knows (GitLab refused to renew the grant): connect again.",
  }),
  host: Type.String({ description: "The `host` its repositories carry in the API." }),
  username: Type.String({ description: "The token's user: whom Mainline acts as on GitLab." }),
  scopes: Type.Array(Type.String(), { description: "The token's scopes, where GitLab said." }),
  expiresAt: Type.Union([Type.String({ format: "date-time" }), Type.Null()]),
  connectedAt: Type.String({ format: "date-time" }),
  webhook: Type.Object(
    {
      url: Type.Union([Type.String(), Type.Null()], {
        description:
          "Where each project's webhook delivers (null until the server knows its public address, MAINLINE_PUBLIC_URL).",
      }),
      path: Type.String({
        description:
          "The webhook's path on this server (`/webhooks/gitlab/{key}`), behind any proxy.",
      }),
      secret: Type.String({ description: "The hook's secret token (`X-Gitlab-Token`)." }),
      events: Type.Array(Type.String(), { description: "The events to turn on." }),
    },
    {
      description:
        "The project webhook Mainline registers itself on each project it queues for (with a Maintainer token), or that a Maintainer adds by hand.",
    },
  ),
});

export interface GitLabRoutesService {
  connections: Pick<GitLabConnections, "connect" | "get" | "disconnect" | "oauth">;
  host: string;
  publicUrl: () => string | undefined;
}

export function presentConnection(
  record: GitLabConnectionRecord,
  service: Pick<GitLabRoutesService, "host" | "publicUrl">,
) {
  const publicUrl = service.publicUrl();
  return {
    instanceUrl: record.instanceUrl,
    method: record.method,
    problem: record.problem,
    host: service.host,
    username: record.username,
    scopes: record.scopes,
    expiresAt: record.expiresAt === null ? null : isoTime(record.expiresAt),
    connectedAt: isoTime(record.createdAt),
    webhook: {
      url: publicUrl === undefined ? null : gitlabWebhookUrl(publicUrl, record.hookKey),
      path: `${GITLAB_WEBHOOK_PATH}/${record.hookKey}`,
      secret: record.webhookSecret,
      events: HOOK_EVENTS,
    },
  };
}

function notConfigured(): ApiError {
  return new ApiError(
    "host_not_connected",
    "This server is not configured for GitLab: its operator sets MAINLINE_GITLAB_URL (docs/gitlab.md).",
  );
}

export function registerGitLabRoutes(scope: ApiApp, gitlab: GitLabRoutesService | undefined): void {
  const service = () => {
    if (!gitlab) throw notConfigured();
    return gitlab;
  };

  scope.post(
    "/v1/gitlab/connect",
    {
      schema: {
        tags: ["GitLab"],
        summary: "Connect the organization to GitLab",
        description:
          "Stores `token` as the organization's GitLab access token once GitLab accepts it: a group or project access token, or a bot user's personal access token, with the `api` and `write_repository` scopes and at least the Developer role (Maintainer to register webhooks). Replaces the token the organization had; the webhook address and secret stay. 400: GitLab refused the token or it lacks a scope; 503: GitLab could not be reached.",
        body: Type.Object({
          token: Type.String({ minLength: 1, maxLength: 1000, pattern: TOKEN_PATTERN }),
        }),
        response: {
          200: Type.Object({ connection: Connection }),
          ...errorResponses(...COMMON_ERRORS, 403, 409, 503),
        },
      },
    },
    async (request) => {
      const routes = service();
      const record = await routes.connections.connect(
        principalOf(request).organizationId,
        request.body.token,
      );
      return { connection: presentConnection(record, routes) };
    },
  );

  scope.post(
    "/v1/gitlab/authorize",
    {
      schema: {
        tags: ["GitLab"],
        summary: "Start connecting the organization through the OAuth application",
        description:
          "Answers the address on GitLab where a person approves Mainline's OAuth application (the operator's MAINLINE_GITLAB_OAUTH_CLIENT_ID). Whoever approves is whom Mainline acts as: use a bot or service account with the Developer role (Maintainer to register webhooks). GitLab then sends the browser to `redirectUri`, which connects the organization (replacing the connection it had; the webhook address and secret stay). The address serves once, within ten minutes. 409: no OAuth application is configured.",
        body: Type.Object({}),
        response: {
          200: Type.Object({
            url: Type.String({ description: "Open in a browser signed in to GitLab." }),
            redirectUri: Type.String({
              description:
                "Where GitLab sends the browser back: the OAuth application's redirect URI must be exactly this.",
            }),
            expiresAt: Type.String({ format: "date-time" }),
          }),
          ...errorResponses(...COMMON_ERRORS, 409),
        },
      },
    },
    async (request) => {
      const routes = service();
      const grants = routes.connections.oauth;
      if (!grants) {
        throw new ApiError(
          "host_not_connected",
          "This server has no GitLab OAuth application: its operator registers one and sets MAINLINE_GITLAB_OAUTH_CLIENT_ID and MAINLINE_GITLAB_OAUTH_CLIENT_SECRET; or connect with an access token (POST /v1/gitlab/connect; docs/gitlab.md).",
        );
      }
      const base = routes.publicUrl() ?? `${request.protocol}://${request.host}`;
      const redirectUri = `${base.replace(/\/+$/, "")}${GITLAB_CALLBACK_PATH}`;
      const started = await grants.start(principalOf(request).organizationId, redirectUri);
      return { url: started.url, redirectUri, expiresAt: isoTime(started.expiresAt) };
    },
  );

  scope.post(
    "/v1/gitlab/getConnection",
    {
      schema: {
        tags: ["GitLab"],
        summary: "The organization's GitLab connection",
        description: "What the token is and where GitLab's webhooks go; 404 when not connected.",
        body: Type.Object({}),
        response: {
          200: Type.Object({ connection: Connection }),
          ...errorResponses(...COMMON_ERRORS, 404, 409),
        },
      },
    },
    async (request) => {
      const routes = service();
      const record = await routes.connections.get(principalOf(request).organizationId);
      if (!record) throw new ApiError("not_found", "This organization is not connected to GitLab.");
      return { connection: presentConnection(record, routes) };
    },
  );

  scope.post(
    "/v1/gitlab/disconnect",
    {
      schema: {
        tags: ["GitLab"],
        summary: "Disconnect the organization from GitLab",
        description:
          "Forgets the token: the organization's GitLab repositories stop being usable by the queue (a clear error says why); their queues and data are kept. 404 when not connected.",
        body: Type.Object({}),
        response: { 200: EmptyObject, ...errorResponses(...COMMON_ERRORS, 404, 409) },
      },
    },
    async (request) => {
      if (!(await service().connections.disconnect(principalOf(request).organizationId))) {
        throw new ApiError("not_found", "This organization is not connected to GitLab.");
      }
      return {};
    },
  );
}
