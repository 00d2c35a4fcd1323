/**
 * "Sign in with GitHub" for a server whose GitHub App has OAuth credentials: the OAuth web flow
 * (a `state` cookie against CSRF), then the installations the user reaches decide the
 * organizations they may enter: one → a session, several → a chooser (choices signed with the
 * state cookie's value), none → a page saying so. Each route's rules are on its registration.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import type {
  GitHubSignIn as GitHubSignInSession,
  SessionService,
} from "../organizations/sessions.js";
import {
  cookieValue,
  crossSite,
  isSecure,
  sessionCookieName,
  setSessionCookie,
} from "./cookies.js";
import { renderGitHubChooser } from "./pages/sign-in.js";
import { redirect } from "./respond.js";
import type { Web } from "./toolkit.js";
import { urls } from "./urls.js";

export const GITHUB_STATE_COOKIE = "mainline_github_state";
const GITHUB_PATH = "/sign-in/github";
const STATE_MAX_AGE_S = 10 * 60;
const STATE_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** What the web layer needs of the GitHub side (src/providers/github/sign-in.ts). */
export interface GitHubSignInFlow {
  authorizeUrl(redirectUri: string, state: string): string;
  complete(
    code: string,
    redirectUri: string,
  ): Promise<{
    user: { id: number; login: string };
    choices: {
      organizationId: string;
      organizationSlug: string;
      installationId: number;
      accountLogin: string;
    }[];
  }>;
}

/** Whether an error from `complete` is one to show the user (GitHubSignInError). */
function signInProblem(error: unknown): { status: number; message: string } | undefined {
  if (!(error instanceof Error) || !("reason" in error)) return undefined;
  const reason = (error as { reason: unknown }).reason;
  if (reason === "bad_code") return { status: 403, message: error.message };
  if (reason === "github_unavailable") return { status: 502, message: error.message };
  return undefined;
}

function stateCookie(secure: boolean, value: string): string {
  return [
    `${GITHUB_STATE_COOKIE}=${encodeURIComponent(value)}`,
    `Path=${GITHUB_PATH}`,
    `Max-Age=${value === "" ? 0 : STATE_MAX_AGE_S}`,
    "HttpOnly",
    "SameSite=Lax",
    ...(secure ? ["Secure"] : []),
  ].join("; ");
}

/** `state.next`: the state, and where to go afterwards (a path of this server, or empty). */
function parseState(
  raw: string | undefined,
): { state: string; next: string | undefined } | undefined {
  if (raw === undefined) return undefined;
  const at = raw.indexOf(".");
  const state = at === -1 ? raw : raw.slice(0, at);
  if (!STATE_PATTERN.test(state)) return undefined;
  const next = at === -1 ? "" : raw.slice(at + 1);
  return { state, next: next === "" ? undefined : next };
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function sign(key: string, payload: string): string {
  return createHmac("sha256", key)
    .update(`mainline github choice v1\n${payload}`)
    .digest("base64url");
}

const CallbackQuery = Type.Object({
  code: Type.Optional(Type.String({ maxLength: 512 })),
  state: Type.Optional(Type.String({ maxLength: 512 })),
  error: Type.Optional(Type.String({ maxLength: 200 })),
  error_description: Type.Optional(Type.String({ maxLength: 1000 })),
});
const StartQuery = Type.Object({ next: Type.Optional(Type.String({ maxLength: 2048 })) });
const ChooseForm = Type.Object(
  {
    choice: Type.Optional(Type.String({ maxLength: 2048 })),
    next: Type.Optional(Type.String({ maxLength: 2048 })),
  },
  { additionalProperties: true },
);

/** What "Sign in with GitHub" needs. */
interface GitHubSignInDependencies {
  github: GitHubSignInFlow | undefined;
  sessions: Pick<SessionService, "signInWithGitHub" | "signOut" | "lifetimes">;
  publicUrl: string | undefined;
  clock: { now(): number };
  safeNext(next: unknown): string | undefined;
}

export function registerGitHubSignIn(web: Web, deps: GitHubSignInDependencies): void {
  registerStart(web, deps);
  registerCallback(web, deps);
  registerChoose(web, deps);
}

function notConfigured(web: Web, reply: FastifyReply): Promise<FastifyReply> {
  return web.message(
    reply,
    404,
    "Sign-in with GitHub is not set up",
    "This server has no GitHub App OAuth credentials (MAINLINE_GITHUB_CLIENT_ID and MAINLINE_GITHUB_CLIENT_SECRET): sign in with an API token.",
  );
}

/** Where GitHub sends the browser back to. */
function callbackUrl(deps: GitHubSignInDependencies, request: FastifyRequest): string {
  const origin = (deps.publicUrl ?? `${request.protocol}://${request.host}`).replace(/\/+$/, "");
  return `${origin}${GITHUB_PATH}/callback`;
}

/** Signs in to the organization chosen (or the only one): a new session, the state cleared. */
async function enter(
  deps: GitHubSignInDependencies,
  request: FastifyRequest,
  reply: FastifyReply,
  signIn: GitHubSignInSession,
  next: string | undefined,
): Promise<FastifyReply> {
  const secure = isSecure(request, deps.publicUrl);
  const created = await deps.sessions.signInWithGitHub(signIn);
  const previous = cookieValue(request, sessionCookieName(secure));
  if (previous !== undefined) await deps.sessions.signOut(previous);
  void reply.header("set-cookie", stateCookie(secure, ""));
  setSessionCookie(reply, secure, created.sessionId, deps.sessions.lifetimes.absoluteMs / 1000);
  return redirect(reply, next ?? urls.home(signIn.organizationSlug));
}

/**
 * `GET /sign-in/github?next=…`: a random `state` in a short-lived cookie (HttpOnly, SameSite=Lax so
 * that it comes back with GitHub's redirect, Path=/sign-in/github), then 303 to GitHub's authorize
 * page.
 */
function registerStart(web: Web, deps: GitHubSignInDependencies): void {
  web.app.get(
    GITHUB_PATH,
    { schema: { hide: true, querystring: StartQuery } },
    async (request, reply) => {
      if (!deps.github) return notConfigured(web, reply);
      const next = deps.safeNext(request.query.next);
      const state = randomBytes(32).toString("base64url");
      void reply.header(
        "set-cookie",
        stateCookie(isSecure(request, deps.publicUrl), `${state}.${next ?? ""}`),
      );
      return redirect(reply, deps.github.authorizeUrl(callbackUrl(deps, request), state));
    },
  );
}

/**
 * `GET /sign-in/github/callback?code&state`: the state must be the cookie's (else refused: the
 * OAuth flow's CSRF); the code is exchanged and GitHub says which of the App's installations the
 * user reaches; those linked to an organization decide: one → a session; several → a chooser;
 * none → a page saying so, and nothing created.
 */
function registerCallback(web: Web, deps: GitHubSignInDependencies): void {
  web.app.get(
    `${GITHUB_PATH}/callback`,
    { schema: { hide: true, querystring: CallbackQuery } },
    async (request, reply) => {
      if (!deps.github) return notConfigured(web, reply);
      const held = parseState(cookieValue(request, GITHUB_STATE_COOKIE));
      const { code, state, error } = request.query;
      if (!held || state === undefined || !sameSecret(held.state, state)) {
        return web.message(
          reply,
          403,
          "Sign-in with GitHub refused",
          "This sign-in did not start from this browser, or took longer than ten minutes. Start again from the sign-in page.",
        );
      }
      if (error !== undefined || code === undefined || code === "") {
        void reply.header("set-cookie", stateCookie(isSecure(request, deps.publicUrl), ""));
        return web.message(
          reply,
          403,
          "Sign-in with GitHub cancelled",
          "GitHub did not authorize the sign-in (it was declined or cancelled). Start again from the sign-in page.",
        );
      }
      const next = deps.safeNext(held.next);
      let result: Awaited<ReturnType<GitHubSignInFlow["complete"]>>;
      try {
        result = await deps.github.complete(code, callbackUrl(deps, request));
      } catch (failure) {
        const problem = signInProblem(failure);
        if (!problem) throw failure;
        void reply.header("set-cookie", stateCookie(isSecure(request, deps.publicUrl), ""));
        return web.message(reply, problem.status, "Sign-in with GitHub failed", problem.message);
      }
      const { user, choices } = result;
      if (choices.length === 0) {
        void reply.header("set-cookie", stateCookie(isSecure(request, deps.publicUrl), ""));
        return web.message(
          reply,
          403,
          "No organization to enter",
          `You are signed in to GitHub as ${user.login}, but no installation of this server's GitHub App that you can access is linked to an organization here. An owner of the GitHub account links its installation to an organization (POST /v1/github/linkInstallation with the organization's API token, or mainline github link on the server; see docs/github.md); or sign in with an API token.`,
        );
      }
      const only = choices.length === 1 ? choices[0] : undefined;
      if (only) {
        return enter(deps, request, reply, { ...only, userId: user.id, login: user.login }, next);
      }
      const issuedAt = deps.clock.now();
      return web.send(
        reply,
        200,
        renderGitHubChooser({
          login: user.login,
          next,
          choices: choices.map((c) => {
            const payload = [
              c.organizationId,
              c.organizationSlug,
              c.installationId,
              user.id,
              user.login,
              issuedAt,
            ].join(" ");
            return {
              organizationSlug: c.organizationSlug,
              accountLogin: c.accountLogin,
              value: `${Buffer.from(payload).toString("base64url")}.${sign(held.state, payload)}`,
            };
          }),
        }),
        undefined,
      );
    },
  );
}

/**
 * `POST /sign-in/github/choose`: the chooser's answer. Each choice is signed with the state
 * cookie's value (an HMAC: only this browser holds it, no server key is needed) and expires with it.
 */
function registerChoose(web: Web, deps: GitHubSignInDependencies): void {
  web.app.post(
    `${GITHUB_PATH}/choose`,
    { schema: { hide: true, body: ChooseForm } },
    async (request, reply) => {
      if (!deps.github) return notConfigured(web, reply);
      const refused = () =>
        web.message(
          reply,
          403,
          "Sign-in with GitHub refused",
          "This choice did not come from this browser's sign-in, or it expired. Start again from the sign-in page.",
        );
      if (crossSite(request, deps.publicUrl)) return refused();
      const held = parseState(cookieValue(request, GITHUB_STATE_COOKIE));
      const [encoded = "", signature = ""] = (request.body.choice ?? "").split(".");
      const payload = Buffer.from(encoded, "base64url").toString("utf8");
      if (!held || encoded === "" || !sameSecret(sign(held.state, payload), signature)) {
        return refused();
      }
      const [organizationId, organizationSlug, installationId, userId, login, issuedAt] =
        payload.split(" ");
      if (
        !organizationId ||
        !organizationSlug ||
        !login ||
        deps.clock.now() - Number(issuedAt) > STATE_MAX_AGE_S * 1000
      ) {
        return refused();
      }
      return enter(
        deps,
        request,
        reply,
        {
          organizationId,
          organizationSlug,
          installationId: Number(installationId),
          userId: Number(userId),
          login,
        },
        deps.safeNext(request.body.next),
      );
    },
  );
}
