import type { IncomingMessage } from "node:http";
import { GitLabError, unauthorized, type Credential, type RequestContext } from "./http.js";
import type { Token } from "./model.js";
import type { World } from "./world.js";

/**
 * Tokens as GitLab's API guard judges them: `PRIVATE-TOKEN`, `Authorization: Bearer`, or the
 * `private_token`/`access_token` parameters; an unknown token is `401 Unauthorized`, an expired or
 * revoked one 401 `invalid_token`; a token without the scope a route needs is 403
 * `insufficient_scope` (reads: `read_api` or `api`; writes: `api`). OAuth access tokens count in
 * `Authorization: Bearer` and `access_token` only (in `PRIVATE-TOKEN` or `private_token` they are
 * unknown: 401), and say `Token is expired. …`/`Token was revoked. …` as GitLab's API guard does.
 * Git over HTTP takes either kind as a Basic password (any user name): `read_repository`,
 * `write_repository` or `api`.
 */

export function today(): string {
  return new Date().toISOString().slice(0, 10);
}

export function expired(token: Token, nowMs = Date.now()): boolean {
  if (token.kind === "oauth") return token.expiresAtMs !== null && nowMs > token.expiresAtMs;
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

const rejected = (error: GitLabError): Credential => ({
  kind: "rejected",
  response: error.toResponse(),
});

export class Auth {
  constructor(private readonly world: World) {}

  /** The token a request carries, judged (the first of the places GitLab looks at). */
  authenticate(req: IncomingMessage, query: URLSearchParams): Credential {
    const header = req.headers["private-token"];
    const bearer = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? "")?.[1];
    // Where a token was found, and whether an OAuth access token counts there.
    const places: [string | null | undefined, boolean][] = [
      [typeof header === "string" ? header : undefined, false],
      [bearer, true],
      [query.get("private_token"), false],
      [query.get("access_token"), true],
    ];
    const found = places.find(([text]) => text !== undefined && text !== null);
    const text = found?.[0];
    if (found === undefined || text === undefined || text === null || text === "") {
      return { kind: "none" };
    }
    return this.judge(text, { oauth: found[1] });
  }

  judge(text: string, where: { oauth: boolean } = { oauth: true }): Credential {
    const token = this.world.tokens.get(text.trim());
    if (token === undefined || (token.kind === "oauth" && !where.oauth)) {
      return rejected(unauthorized());
    }
    if (token.kind === "oauth") {
      // GitLab's AccessTokenValidationService: expiry first, then revocation.
      if (expired(token)) {
        return rejected(
          invalidToken("Token is expired. You can either do re-authorization or token refresh."),
        );
      }
      if (token.revoked) {
        return rejected(invalidToken("Token was revoked. You have to re-authorize from the user."));
      }
    } else {
      if (token.revoked) return rejected(invalidToken("Token has been revoked."));
      if (expired(token)) return rejected(invalidToken("Token has expired."));
    }
    token.lastUsedAt = Date.now();
    const firstUse = token.onFirstUse;
    token.onFirstUse = undefined;
    firstUse?.();
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
