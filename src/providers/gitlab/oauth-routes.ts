/**
 * Where GitLab sends the person who approved Mainline's OAuth application
 * (`GET /gitlab/oauth/callback`): outside `/v1` and without an API token, since a browser arrives
 * here; the single-use `state` says which organization's authorization it finishes. Answers a
 * small page saying what happened, never a token.
 */
import { createHash } from "node:crypto";
import { Type } from "typebox";
import type { ApiApp } from "../../api/types.js";
import { ApiError } from "../../lib/errors.js";
import type { GitLabConnections } from "./connections.js";

export const GITLAB_CALLBACK_PATH = "/gitlab/oauth/callback";

const Param = Type.Optional(Type.String({ maxLength: 2000 }));

export function registerGitLabCallbackRoute(
  scope: ApiApp,
  connections: Pick<GitLabConnections, "oauth" | "connectOAuth">,
): void {
  scope.get(
    GITLAB_CALLBACK_PATH,
    {
      schema: {
        hide: true,
        querystring: Type.Object({
          code: Param,
          state: Param,
          error: Param,
          error_description: Param,
        }),
      },
    },
    async (request, reply) => {
      const query = request.query;
      try {
        const grants = connections.oauth;
        if (!grants) {
          throw new ApiError(
            "host_not_connected",
            "This server has no GitLab OAuth application: its operator sets MAINLINE_GITLAB_OAUTH_CLIENT_ID and MAINLINE_GITLAB_OAUTH_CLIENT_SECRET (docs/gitlab.md).",
          );
        }
        const finished = await grants.finish({
          state: query.state,
          code: query.code,
          error: query.error,
          errorDescription: query.error_description,
        });
        const record = await connections.connectOAuth(finished);
        return await reply
          .status(200)
          .headers(PAGE_HEADERS)
          .type("text/html; charset=utf-8")
          .send(
            page(
              "GitLab connected",
              `Mainline now acts on GitLab as @${record.username}, with the scopes ${record.scopes.join(", ")}. It renews the authorization by itself; you can close this page.`,
            ),
          );
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        return await reply
          .status(error.status)
          .headers(PAGE_HEADERS)
          .type("text/html; charset=utf-8")
          .send(page("GitLab not connected", error.message));
      }
    },
  );
}

/** The page's only style, allowed by its hash: no script, link or image can carry the address on. */
const STYLE =
  "body{font:16px/1.5 system-ui,sans-serif;margin:0;padding:0 1rem;color:#1a1a1a;background:#f6f7f9}" +
  "main{max-width:38rem;margin:4rem auto;padding:2rem;background:#fff;border:1px solid #d0d4da;border-radius:8px}" +
  "h1{font-size:1.5rem;margin:0 0 1rem}a{color:#0b57d0}";
const STYLE_HASH = createHash("sha256").update(STYLE).digest("base64");

const PAGE_HEADERS = {
  "cache-control": "no-store",
  "content-security-policy": `default-src 'none'; script-src 'self'; style-src 'sha256-${STYLE_HASH}'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'`,
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
};

function page(title: string, text: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escape(title)} · Mainline</title><style>${STYLE}</style></head><body><main><h1>${escape(title)}</h1><p>${escape(text)}</p><p><a href="/">Open Mainline</a></p></main></body></html>`;
}

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${String(c.charCodeAt(0))};`);
}
