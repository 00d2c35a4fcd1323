import { rmSync } from "node:fs";
import { Auth } from "./auth.js";
import { fault, Faults } from "./faults.js";
import { GitHttp } from "./git-http.js";
import { HttpServer } from "./http.js";
import { MergeRequests } from "./merge-requests.js";
import { Merges } from "./merge.js";
import type { AccessLevel, Group, User } from "./model.js";
import { Notes } from "./notes.js";
import { OAuthProvider } from "./oauth.js";
import { redirectUris, type OAuthGrantRecord } from "./oauth-protocol.js";
import { Pipelines } from "./pipelines.js";
import { Pushes } from "./pushes.js";
import { RequestLog, type LoggedRequest } from "./request-log.js";
import { registerCiRoutes } from "./routes-ci.js";
import { registerMergeRequestRoutes } from "./routes-mrs.js";
import { registerProjectRoutes } from "./routes-projects.js";
import { Webhooks, type DeliveryAttempt } from "./webhooks.js";
import { atLeast, World } from "./world.js";

/**
 * The fake GitLab's wiring (the areas and the HTTP server) and its accounts: users, tokens,
 * groups. `setup.ts` adds projects and git, `index.ts` merge requests, CI and webhooks.
 */

export interface FakeGitLabOptions {
  /** Every random choice: tokens, UUIDs, chaos, flaky jobs (default 1). */
  seed?: number;
  /** Where the bare repositories go (kept on close when given). */
  dataDir?: string;
  /** The GitLab version to behave as (default 17.4.0). */
  version?: string;
  /** Reads of a fresh or moved merge request that answer `checking` before the check (default 1). */
  uncheckedReads?: number;
  /** A webhook receiver slower than this is a failed delivery (default 10 s, GitLab's). */
  webhookTimeoutMs?: number;
  /** Conflicts on `PUT …/merge`: default 422 from 16.0, 406 before. */
  mergeConflictStatus?: 406 | 422;
  /** How long after a `git push` its side effects start (default 0: right after the response). */
  pushProcessingDelayMs?: number;
  /** OAuth access tokens' lifetime in seconds (default 7200, GitLab's). */
  oauthTokenTtlSeconds?: number;
  /**
   * When a refresh revokes the pair it replaces: `at-once` (default; GitLab's documentation:
   * "Invalidates the existing access_token and refresh_token") or `on-first-use` (Doorkeeper
   * with a `previous_refresh_token` column: the old pair lives until the new token is used).
   */
  oauthRefreshRevokes?: "at-once" | "on-first-use";
}

export class Instance {
  readonly world: World;
  readonly http: HttpServer;
  readonly auth: Auth;
  readonly faults: Faults;
  /** GitLab's failures, ready for `faults.add`. */
  readonly fault = fault;
  readonly webhooks: Webhooks;
  readonly pipelineService: Pipelines;
  readonly mrs: MergeRequests;
  readonly pushes: Pushes;
  readonly merges: Merges;
  readonly noteService: Notes;
  /** The OAuth 2.0 provider (`/oauth/…`). */
  readonly oauth: OAuthProvider;
  readonly requests = new RequestLog();
  protected readonly root: User;

  protected constructor(options: FakeGitLabOptions) {
    const version = options.version ?? "17.4.0";
    this.world = new World({
      seed: options.seed ?? 1,
      dataDir: options.dataDir,
      version,
      uncheckedReads: options.uncheckedReads ?? 1,
      webhookTimeoutMs: options.webhookTimeoutMs ?? 10_000,
      mergeConflictStatus: options.mergeConflictStatus ?? (atLeast(version, 16, 0) ? 422 : 406),
      pushProcessingDelayMs: options.pushProcessingDelayMs ?? 0,
    });
    const world = this.world;
    this.auth = new Auth(world);
    this.faults = new Faults(world.random);
    this.webhooks = new Webhooks(world);
    this.pipelineService = new Pipelines(world, this.webhooks);
    this.mrs = new MergeRequests(world, this.webhooks, this.pipelineService);
    this.pushes = new Pushes(world, this.webhooks, this.mrs, this.pipelineService);
    this.merges = new Merges(world, this.mrs, this.pushes);
    this.noteService = new Notes(world, this.webhooks, this.mrs, this.merges);
    const gitHttp = new GitHttp(
      world,
      this.auth,
      this.pushes,
      this.faults,
      (method, path, status, user, faultName) => {
        this.requests.record({
          atMs: Date.now(),
          method,
          path,
          route: "git",
          status,
          user: user?.username ?? null,
          credential: user === null ? "none" : "token",
          fault: faultName ?? null,
          durationMs: 0,
        });
      },
    );
    this.http = new HttpServer({
      authenticate: (req, query) => this.auth.authenticate(req, query),
      authorize: (ctx) => {
        this.auth.authorize(ctx);
      },
      faults: (method, path) => this.faults.apply(method, path),
      observe: (ctx, status, faultName, startedMs) => {
        const c = ctx.credential;
        this.requests.record({
          atMs: startedMs,
          method: ctx.method,
          path: ctx.path,
          route: ctx.route.path,
          status,
          user: c.kind === "token" ? c.user.username : null,
          credential: c.kind,
          fault: faultName ?? null,
          durationMs: Date.now() - startedMs,
        });
      },
      other: (req, res, url) => gitHttp.handle(req, res, url),
    });
    registerProjectRoutes(this.http, world, this.webhooks, this.pushes);
    registerMergeRequestRoutes(this.http, {
      world,
      mrs: this.mrs,
      merges: this.merges,
      notes: this.noteService,
    });
    registerCiRoutes(this.http, world, this.pipelineService);
    this.oauth = new OAuthProvider(
      world,
      options.oauthTokenTtlSeconds ?? 7200,
      options.oauthRefreshRevokes ?? "at-once",
    );
    this.oauth.register(this.http);
    this.root = this.addUser("root", { admin: true, name: "Administrator" });
  }

  /** The instance URL (`http://127.0.0.1:PORT`). */
  get url(): string {
    return this.world.url;
  }

  get apiUrl(): string {
    return `${this.world.url}/api/v4`;
  }

  /** Every API and git request answered. */
  get requestLog(): LoggedRequest[] {
    return this.requests.entries;
  }

  /** Every webhook delivery attempt (and the deliveries chaos dropped or a disabled hook skipped). */
  get deliveries(): DeliveryAttempt[] {
    return this.webhooks.deliveries;
  }

  /** Stops serving, kills running jobs, removes its temporary directory (unless `dataDir`). */
  async close(): Promise<void> {
    this.pipelineService.close();
    await this.http.close();
    await this.pushes.settle();
    if (this.world.options.dataDir === undefined) {
      rmSync(this.world.dataDir, { recursive: true, force: true });
    }
  }

  /** Waits until pushes are processed, pipelines have finished (stuck ones excepted) and webhooks sent. */
  async settle(): Promise<void> {
    for (let round = 0; round < 3; round++) {
      await this.pushes.settle();
      await this.pipelineService.settle();
      await this.webhooks.settle();
    }
  }

  // ---- users, tokens, groups -----------------------------------------------------------------

  protected addUser(
    username: string,
    options: { admin?: boolean; name?: string; email?: string; bot?: boolean },
  ): User {
    const key = username.toLowerCase();
    if (this.world.users.has(key)) throw new Error(`user ${username} exists`);
    const user: User = {
      id: this.world.nextId("user"),
      username,
      name: options.name ?? username,
      email: options.email ?? `${username}@example.com`,
      admin: options.admin ?? false,
      bot: options.bot ?? false,
      createdAt: Date.now(),
    };
    this.world.users.set(key, user);
    return user;
  }

  createUser(
    username: string,
    options: { admin?: boolean; name?: string; email?: string } = {},
  ): { id: number; username: string } {
    const user = this.addUser(username, options);
    return { id: user.id, username: user.username };
  }

  /** A personal access token (`glpat-…`); scopes default to `api` and `write_repository`. */
  createToken(options: {
    user: string;
    scopes?: string[];
    expiresAt?: string;
    name?: string;
  }): string {
    const world = this.world;
    const token = `glpat-${world.random.alphanumeric(20)}`;
    world.tokens.set(token, {
      id: world.nextId("token"),
      token,
      name: options.name ?? "token",
      user: world.user(options.user),
      scopes: [...(options.scopes ?? ["api", "write_repository"])],
      expiresAt: options.expiresAt ?? null,
      revoked: false,
      createdAt: Date.now(),
      lastUsedAt: null,
      kind: "personal",
      expiresAtMs: null,
    });
    return token;
  }

  revokeToken(token: string): void {
    const found = this.world.tokens.get(token);
    if (found === undefined) throw new Error("no such token");
    found.revoked = true;
  }

  // ---- OAuth applications ----------------------------------------------------------------------

  /**
   * An OAuth application (GitLab: Applications). `redirectUri`: one or several (a list, or
   * newline-separated as GitLab's form takes them); `scopes`: GitLab's (`api`, `read_user`,
   * `write_repository`, …); `confidential` (default true) must authenticate with its secret;
   * `owner`: the user who registered it (none: instance-wide).
   */
  createOAuthApplication(options: {
    name: string;
    redirectUri: string | string[];
    scopes: string[];
    confidential?: boolean;
    owner?: string;
  }): { id: number; applicationId: string; secret: string } {
    const application = this.oauth.createApplication(options);
    return { id: application.id, applicationId: application.uid, secret: application.secret };
  }

  /** GitLab's "Renew secret": a new `gloas-…` secret; the old one stops working. */
  renewOAuthSecret(applicationId: string): string {
    return this.oauth.renewSecret(applicationId);
  }

  /** GitLab's "Edit application": its redirect URIs are these now. */
  setOAuthRedirectUri(applicationId: string, redirectUri: string | string[]): void {
    this.oauth.application(applicationId).redirectUris = redirectUris(redirectUri);
  }

  /** The OAuth access tokens issued so far (the user's, or all), oldest first, revoked ones too. */
  oauthAccessTokens(username?: string): string[] {
    return this.oauth.accessTokens(username);
  }

  /** A `Cookie` header value for a browser signed in as the user (for `/oauth/authorize`). */
  browserCookie(username: string): string {
    return this.oauth.browserCookie(username);
  }

  /** The OAuth access tokens issued so far (the user's, or everyone's) expire now. */
  expireOAuthTokens(username?: string): void {
    this.oauth.expireTokens(username);
  }

  /** Authorization codes not yet exchanged are past their 10 minutes. */
  expireOAuthCodes(): void {
    this.oauth.expireCodes();
  }

  /** Every token `/oauth/token` issued: `{ grantType, atMs, applicationId, user }`. */
  get oauthGrants(): OAuthGrantRecord[] {
    return this.oauth.issued;
  }

  /** A project access token: a bot user `project_<id>_bot_<n>`, member with the role given. */
  createProjectToken(
    projectPath: string,
    options: { accessLevel: AccessLevel; scopes?: string[]; name?: string; expiresAt?: string },
  ): { token: string; user: { id: number; username: string } } {
    const project = this.world.project(projectPath);
    const n =
      [...this.world.users.values()].filter((u) =>
        u.username.startsWith(`project_${project.id}_bot_`),
      ).length + 1;
    const bot = this.addUser(`project_${project.id}_bot_${n}`, {
      name: options.name ?? "Mainline",
      bot: true,
    });
    project.members.set(bot.id, options.accessLevel);
    const token = this.createToken({
      user: bot.username,
      scopes: options.scopes ?? ["api", "write_repository"],
      name: options.name ?? "Mainline",
      ...(options.expiresAt !== undefined ? { expiresAt: options.expiresAt } : {}),
    });
    return { token, user: { id: bot.id, username: bot.username } };
  }

  /** A group, nested under its parent path (parents are created as needed). */
  createGroup(fullPath: string): { id: number; fullPath: string } {
    const group = this.group(fullPath, true);
    return { id: group.id, fullPath: group.fullPath };
  }

  protected group(fullPath: string, create: boolean): Group {
    const existing = this.world.groups.get(fullPath.toLowerCase());
    if (existing !== undefined) return existing;
    if (!create) throw new Error(`no group ${fullPath}`);
    const slash = fullPath.lastIndexOf("/");
    const parent = slash < 0 ? null : this.group(fullPath.slice(0, slash), true);
    const path = fullPath.slice(slash + 1);
    const group: Group = {
      id: this.world.nextId("group"),
      name: path,
      path,
      fullPath,
      parent,
      members: new Map(),
      createdAt: Date.now(),
    };
    this.world.groups.set(fullPath.toLowerCase(), group);
    return group;
  }

  addGroupMember(groupPath: string, username: string, level: AccessLevel): void {
    this.group(groupPath, false).members.set(this.world.user(username).id, level);
  }
}
