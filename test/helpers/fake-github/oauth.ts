import { GitHubError, pageOf, type HttpServer, type RequestContext } from "./http.js";
import type { Account, FakeApp, Installation } from "./model.js";
import * as objects from "./objects.js";
import type { World } from "./world.js";

/**
 * A GitHub App's user authorization, the web flow (GitHub's docs, "Generating a user access token
 * for a GitHub App"): `GET /login/oauth/authorize` (the browser; the fake's "signed-in user" is
 * the one the test chose with `gh.authorizeAs`, and it has already approved the App, so the answer
 * is straight the redirect back with a code), `POST /login/oauth/access_token` (a code is good
 * once, for ten minutes, with the App's client id and secret; errors are 200s with `error`, as
 * GitHub answers them), and `GET /user/installations` (the App's installations the user reaches:
 * on their own account, or on an organization they belong to).
 *
 * `/login/oauth/*` is not in GitHub's REST description: its shapes follow GitHub's docs.
 */

const CODE_LIFETIME_MS = 10 * 60_000;

interface Grant {
  appId: number;
  login: string;
  redirectUri: string | null;
  expiresAtMs: number;
  used: boolean;
}

export class OAuthFlow {
  /** Who the browser is signed in to the fake GitHub as (`gh.authorizeAs`). */
  browserUser: string | null = null;
  private readonly grants = new Map<string, Grant>();
  /** The App that issued each user token (`/user/installations` lists only its installations). */
  readonly tokenApps = new Map<string, number>();

  constructor(private readonly world: World) {}

  private appByClientId(clientId: string | null): FakeApp | undefined {
    if (clientId === null || clientId === "") return undefined;
    return [...this.world.apps.values()].find((a) => a.clientId === clientId);
  }

  /** Whether `user` reaches `inst`: its own account, or an organization it belongs to. */
  reaches(user: Account, inst: Installation): boolean {
    if (inst.account.login === user.login) return true;
    return inst.account.type === "Organization" && inst.account.members.has(user.login);
  }

  register(server: HttpServer): void {
    const world = this.world;
    server.add({
      method: "GET",
      path: "/login/oauth/authorize",
      operationId: "oauth/authorize",
      auth: "none",
      handler: (ctx) => {
        const app = this.appByClientId(ctx.query.get("client_id"));
        if (app === undefined) throw new GitHubError(404, "Not Found");
        const redirectUri = ctx.query.get("redirect_uri");
        if (redirectUri === null || !/^https?:\/\//.test(redirectUri)) {
          throw new GitHubError(422, "The redirect_uri is not associated with this application.");
        }
        if (this.browserUser === null) {
          return {
            status: 302,
            headers: {
              location: `${world.urls.api}/login?return_to=${encodeURIComponent(ctx.path)}`,
            },
          };
        }
        const code = world.random.hex(10);
        this.grants.set(code, {
          appId: app.id,
          login: this.browserUser,
          redirectUri,
          expiresAtMs: world.now() + CODE_LIFETIME_MS,
          used: false,
        });
        const back = new URL(redirectUri);
        back.searchParams.set("code", code);
        const state = ctx.query.get("state");
        if (state !== null) back.searchParams.set("state", state);
        return { status: 302, headers: { location: back.toString() } };
      },
    });
    server.add({
      method: "POST",
      path: "/login/oauth/access_token",
      operationId: "oauth/access-token",
      auth: "none",
      handler: (ctx) => {
        const field = (name: string): string | null => {
          const value = ctx.body[name] ?? ctx.query.get(name);
          return typeof value === "string" ? value : null;
        };
        const answer = (body: Record<string, string>) => {
          const json = (ctx.headers.accept ?? "").includes("application/json");
          return json
            ? { status: 200, body }
            : {
                status: 200,
                raw: {
                  contentType: "application/x-www-form-urlencoded; charset=utf-8",
                  text: new URLSearchParams(body).toString(),
                },
              };
        };
        const failure = (error: string, description: string) =>
          answer({
            error,
            error_description: description,
            error_uri:
              "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors",
          });
        const app = this.appByClientId(field("client_id"));
        if (
          app === undefined ||
          app.clientSecret === "" ||
          field("client_secret") !== app.clientSecret
        ) {
          return failure(
            "incorrect_client_credentials",
            "The client_id and/or client_secret passed are incorrect.",
          );
        }
        const code = field("code") ?? "";
        const grant = this.grants.get(code);
        if (
          grant === undefined ||
          grant.appId !== app.id ||
          grant.used ||
          grant.expiresAtMs <= world.now()
        ) {
          return failure("bad_verification_code", "The code passed is incorrect or expired.");
        }
        const redirectUri = field("redirect_uri");
        if (redirectUri !== null && redirectUri !== grant.redirectUri) {
          return failure(
            "redirect_uri_mismatch",
            "The redirect_uri MUST match the registered callback URL for this application.",
          );
        }
        grant.used = true;
        const token = `ghu_${world.random.alphanumeric(36)}`;
        world.userTokens.set(token, world.account(grant.login));
        this.tokenApps.set(token, app.id);
        return answer({ access_token: token, token_type: "bearer", scope: "" });
      },
    });
    server.add({
      method: "GET",
      path: "/user/installations",
      operationId: "apps/list-installations-for-authenticated-user",
      auth: "user",
      handler: (ctx: RequestContext) => {
        const cred = ctx.credential;
        if (cred.kind !== "user") throw new GitHubError(403, "Forbidden");
        const header = ctx.headers.authorization ?? "";
        const appId = this.tokenApps.get(header.replace(/^(bearer|token)\s+/i, "").trim());
        if (appId === undefined) {
          throw new GitHubError(
            403,
            "You must authenticate with an access token authorized to a GitHub App in order to list installations",
          );
        }
        const user = world.account(cred.login);
        const all = [...world.installations.values()]
          .filter((i) => i.app.id === appId && this.reaches(user, i))
          .sort((a, b) => a.id - b.id);
        const page = pageOf(ctx, all, world.urls.api);
        return {
          status: 200,
          body: {
            total_count: all.length,
            installations: page.items.map((i) => objects.installation(world.urls, i)),
          },
          headers: page.headers,
        };
      },
    });
  }
}
