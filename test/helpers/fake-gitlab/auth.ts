import type { IncomingMessage } from "node:http";
import { GitLabError, unauthorized, type Credential, type RequestContext } from "./http.js";
import type { Token } from "./model.js";
import type { World } from "./world.js";

/**
 * Tokens as GitLab's API guard judges them: `PRIVATE-TOKEN`, `Authorization: Bearer`, or the
 * `private_token` parameter; an unknown token is `401 Unauthorized`, an expired or revoked one
 * 401 `invalid_token`; a token without the scope a route needs is 403 `insufficient_scope`
 * (reads: `read_api` or `api`; writes: `api`). Git over HTTP takes the token as a Basic
 * password (any user name): `read_repository`, `write_repository` or `api`.
 */

export function today(): string {
  return new Date().toISOString().slice(0, 10);
}

export function expired(token: Token): boolean {
  return token.expiresAt !== null && token.expiresAt <= today();
}

function invalidToken(description: string): GitLabError {
  return new GitLabError(
    401,
    description,
    { error: "invalid_token", error_description: description },
    {
      "www-authenticate": `Bearer realm="", error="invalid_token", error_description="${description}"`,
    },
  );
}

export class Auth {
  constructor(private readonly world: World) {}

  /** The token a request carries, judged. */
  authenticate(req: IncomingMessage, query: URLSearchParams): Credential {
    const header = req.headers["private-token"];
    const bearer = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? "")?.[1];
    const text =
      (typeof header === "string" ? header : undefined) ??
      bearer ??
      query.get("private_token") ??
      query.get("access_token") ??
      undefined;
    if (text === undefined || text === "") return { kind: "none" };
    return this.judge(text);
  }

  judge(text: string): Credential {
    const token = this.world.tokens.get(text.trim());
    if (token === undefined) return { kind: "rejected", response: unauthorized().toResponse() };
    if (token.revoked)
      return { kind: "rejected", response: invalidToken("Token has been revoked.").toResponse() };
    if (expired(token))
      return { kind: "rejected", response: invalidToken("Token has expired.").toResponse() };
    token.lastUsedAt = Date.now();
    return { kind: "token", token, user: token.user };
  }

  /** The route's scope against the credential (project visibility is the routes' business). */
  authorize(ctx: RequestContext): void {
    const credential = ctx.credential;
    if (credential.kind === "rejected") {
      const r = credential.response;
      throw new GitLabError(r.status, "rejected", r.body, r.headers ?? {});
    }
    const scope = ctx.route.scope;
    if (scope === "none") return;
    if (credential.kind === "none") {
      if (scope === "read") return;
      throw unauthorized();
    }
    const scopes = credential.token.scopes;
    const needed =
      scope === "write"
        ? ["api"]
        : scope === "user"
          ? ["api", "read_api", "read_user"]
          : ["api", "read_api"];
    if (!needed.some((s) => scopes.includes(s))) {
      const description =
        "The request requires higher privileges than provided by the access token.";
      throw new GitLabError(
        403,
        description,
        { error: "insufficient_scope", error_description: description, scope: needed.join(" ") },
        {
          "www-authenticate": `Bearer realm="", error="insufficient_scope", error_description="${description}", scope="${needed.join(" ")}"`,
        },
      );
    }
  }

  /** Git over HTTP: the Basic password is the token. Null without credentials. */
  gitCredential(req: IncomingMessage): Credential {
    const m = /^Basic\s+(.+)$/i.exec(req.headers.authorization ?? "");
    if (m === null) return { kind: "none" };
    const decoded = Buffer.from(m[1] ?? "", "base64").toString("utf8");
    const password = decoded.slice(decoded.indexOf(":") + 1);
    if (password === "") return { kind: "none" };
    return this.judge(password);
  }
}
