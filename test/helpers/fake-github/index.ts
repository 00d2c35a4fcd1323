import { rmSync } from "node:fs";
import { join } from "node:path";
import {
  AppAuth,
  DEFAULT_APP_EVENTS,
  DEFAULT_APP_PERMISSIONS,
  generateAppKeyPair,
  publicKeyOf,
} from "./app-auth.js";
import {
  Actions,
  type WorkflowRun,
  type WorkflowRunConclusion,
  type WorkflowRunStatus,
} from "./actions.js";
import { fault, Faults, type FaultRule } from "./faults.js";
import { Checks } from "./checks.js";
import { Ci, type Workflow } from "./ci.js";
import { BareRepository, git } from "./git.js";
import { HttpServer } from "./http.js";
import { ZERO_SHA } from "./model.js";
import type {
  Account,
  BranchProtection,
  CheckConclusion,
  CheckRun,
  CheckStatus,
  CommitStatus,
  FakeApp,
  Installation,
  Issue,
  IssueComment,
  PermissionSet,
  PullRequest,
  Repository,
  RepositoryRole,
  RepositorySettings,
  Ruleset,
  RulesetBypassActor,
  RulesetRule,
} from "./model.js";
import * as objects from "./objects.js";
import * as protection from "./protection.js";
import { Issues } from "./issues.js";
import { OAuthFlow } from "./oauth.js";
import { PlainIssues } from "./plain-issues.js";
import { SchemaGuard } from "./openapi-guard.js";
import { Pulls } from "./pulls.js";
import { RefService } from "./refs.js";
import { Repos } from "./repos.js";
import { RequestLog } from "./request-log.js";
import { WebhookHub, type Delivery, type WebhookChaos } from "./webhooks.js";
import { World, type Actor, type WorldOptions } from "./world.js";

/**
 * A faithful fake of GitHub's REST API and webhooks for a GitHub-App merge queue, on real bare
 * git repositories (test/helpers/fake-github/README.md: how to use it; ADR 0022: what it models).
 */

export { fault } from "./faults.js";
export type { FaultRule } from "./faults.js";
export type { Delivery, WebhookChaos } from "./webhooks.js";
export type { LoggedRequest } from "./request-log.js";
export type { CheckDefinition, CiRun, Outcome, Workflow } from "./ci.js";
export type { WorkflowRun, WorkflowRunConclusion, WorkflowRunStatus } from "./actions.js";

/** The GitHub Actions App's id on github.com (check runs from Actions carry it). */
export const GITHUB_ACTIONS_APP_ID = 15368;

export interface FakeGitHubOptions extends Partial<WorldOptions> {
  /** Webhook deliveries: every URL gets each one, or the URLs take turns (two servers behind a balancer). */
  webhookMode?: "each" | "round-robin";
  /** How long a webhook receiver may take before the delivery counts as failed (GitHub: 10 s). */
  webhookTimeoutMs?: number;
  /**
   * Validate every response and webhook payload against GitHub's OpenAPI descriptions (default:
   * on under vitest, off elsewhere, e.g. in benchmarks). Violations land in `gh.schema`.
   */
  validate?: boolean;
}

export interface CreatedApp {
  id: number;
  slug: string;
  clientId: string;
  /** The App's OAuth client secret (user authorization: `POST /login/oauth/access_token`). */
  clientSecret: string;
  /** PKCS#1 PEM, as GitHub hands it out. */
  privateKey: string;
  webhookSecret: string;
  /** The login its installation tokens act as: `<slug>[bot]`. */
  botLogin: string;
}

export interface RepositoryInit {
  owner: string;
  name: string;
  defaultBranch?: string;
  private?: boolean;
  description?: string;
  /** The first commit's files (default: a README). `{}`: an empty repository. */
  files?: Record<string, string>;
  settings?: Partial<RepositorySettings>;
}

export class FakeGitHub {
  readonly world: World;
  readonly http: HttpServer;
  readonly auth: AppAuth;
  /** A GitHub App's user authorization (the web flow): `authorizeAs` picks the browser's user. */
  readonly oauth: OAuthFlow;
  readonly webhooks: WebhookHub;
  readonly requests = new RequestLog();
  /** The schema guard: `violations`, `checked`, `assertValid()`. */
  readonly schema = new SchemaGuard();
  readonly faults: Faults;
  readonly refs: RefService;
  readonly repos: Repos;
  readonly checks: Checks;
  readonly pulls: Pulls;
  readonly issues: Issues;
  /** Issues that are not pull requests (tickets). */
  readonly plainIssues: PlainIssues;
  readonly ci: Ci;
  /** GitHub Actions' workflow runs (`GET …/actions/runs/{id}`). */
  readonly actions: Actions;
  /** GitHub's failures, ready to pass to `faults.add`. */
  readonly fault = fault;

  private constructor(options: FakeGitHubOptions) {
    this.world = new World({
      seed: options.seed ?? 1,
      dataDir: options.dataDir,
      mergeabilityDelayMs: options.mergeabilityDelayMs ?? 0,
      tokenLifetimeMs: options.tokenLifetimeMs ?? 60 * 60 * 1000,
      rateLimit: options.rateLimit ?? 5000,
    });
    const world = this.world;
    const validate = options.validate ?? process.env.VITEST !== undefined;
    this.auth = new AppAuth(world);
    this.oauth = new OAuthFlow(world);
    this.webhooks = new WebhookHub(world, {
      mode: options.webhookMode ?? "each",
      timeoutMs: options.webhookTimeoutMs ?? 10_000,
    });
    this.faults = new Faults(world, (ctx, resetInSec) => {
      this.auth.exhaust(this.auth.bucketKey(ctx), resetInSec);
    });
    this.http = new HttpServer({
      now: () => world.now(),
      requestId: () =>
        `${world.random.hex(4)}:${world.random.hex(4)}:${world.random.hex(6)}:${world.random.hex(7)}:${world.random.hex(8)}`.toUpperCase(),
      authenticate: (header) => this.auth.authenticate(header),
      authorize: (ctx) => {
        this.auth.authorize(ctx);
      },
      rateLimit: (ctx, counts) => this.auth.rateLimit(ctx, counts),
      faults: (ctx) => this.faults.apply(ctx),
      observe: (ctx, response, faultName, startedMs) => {
        this.requests.record(ctx, response, faultName, startedMs, world.now());
        if (validate && response.raw === undefined) {
          this.schema.checkResponse(ctx.route.operationId, response.status, response.body);
        }
      },
    });
    if (validate) {
      this.webhooks.observe((d) => {
        this.schema.checkWebhook(d.event, d.action, d.payload);
      });
    }
    this.refs = new RefService(world);
    this.refs.addGuard(protection.refGuard(world));
    this.repos = new Repos(world, this.auth, this.refs, this.webhooks);
    this.checks = new Checks(world, this.auth, this.webhooks);
    this.pulls = new Pulls(world, this.auth, this.refs, this.webhooks);
    this.issues = new Issues(world, this.auth, this.pulls, this.webhooks);
    this.plainIssues = new PlainIssues(
      world,
      this.auth,
      this.pulls,
      this.issues,
      this.webhooks,
      validate ? this.schema : null,
    );
    this.actions = new Actions(world, this.auth);
    this.ci = new Ci(world, this.checks, this.webhooks, GITHUB_ACTIONS_APP_ID, this.actions);
    this.auth.register(this.http);
    this.oauth.register(this.http);
    this.repos.register(this.http);
    protection.register(this.http, world, this.auth);
    this.checks.register(this.http);
    this.pulls.register(this.http);
    this.issues.register(this.http);
    this.plainIssues.register(this.http);
    this.actions.register(this.http);
    this.createGitHubActionsApp();
  }

  /** Starts a fake on 127.0.0.1 (ephemeral port). */
  static async start(options: FakeGitHubOptions = {}): Promise<FakeGitHub> {
    const fake = new FakeGitHub(options);
    // Compile GitHub's schemas before serving, so that the first answer is not late by it.
    if (options.validate ?? process.env.VITEST !== undefined) fake.schema.setup();
    const url = await fake.http.listen();
    fake.world.urls = new objects.Urls(url, `${url}/html`);
    return fake;
  }

  /** The API base URL (Octokit's `baseUrl`, Mainline's `MAINLINE_GITHUB_API_URL`). */
  get url(): string {
    return this.world.urls.api;
  }

  async close(options: { keepData?: boolean } = {}): Promise<void> {
    await this.http.close();
    if (options.keepData !== true && this.world.options.dataDir === undefined) {
      rmSync(this.world.dataDir, { recursive: true, force: true });
    }
  }

  // ---- accounts ------------------------------------------------------------------------------

  createUser(login: string, options: { name?: string; email?: string } = {}): Account {
    return this.world.createAccount(login, "User", options);
  }

  createOrganization(login: string): Account {
    return this.world.createAccount(login, "Organization");
  }

  addOrgMember(org: string, login: string, role: "admin" | "member" = "member"): void {
    const account = this.world.account(org);
    if (account.type !== "Organization") throw new Error(`${org} is not an organization`);
    account.members.set(this.world.account(login).login, role);
  }

  /** An OAuth user token for `login` (`GET /user`, `GET /user/memberships/orgs/{org}`). */
  createUserToken(login: string): string {
    const token = `gho_${this.world.random.alphanumeric(36)}`;
    this.world.userTokens.set(token, this.world.account(login));
    return token;
  }

  /**
   * Who the browser is signed in to GitHub as: `GET /login/oauth/authorize` then answers straight
   * with the redirect back and a code for this user (who has approved the App); null: signed out.
   */
  authorizeAs(login: string | null): void {
    this.oauth.browserUser = login === null ? null : this.world.account(login).login;
  }

  /** Shifts the fake's clock (JWT checks and the `date` header), as a drifting server would. */
  setClockSkew(seconds: number): void {
    this.world.clockSkewMs = seconds * 1000;
  }

  // ---- Apps and installations ----------------------------------------------------------------

  createApp(options: {
    slug: string;
    name?: string;
    owner?: string;
    permissions?: PermissionSet;
    events?: string[];
    webhookUrls?: string[];
    webhookSecret?: string;
  }): CreatedApp {
    const world = this.world;
    const { privateKeyPem } = generateAppKeyPair();
    const id = world.nextId("app");
    const bot = world.createAccount(`${options.slug}[bot]`, "Bot", { id: world.nextId("account") });
    const owner =
      options.owner !== undefined
        ? world.account(options.owner)
        : (world.findAccount("app-owner") ?? world.createAccount("app-owner", "User"));
    const app: FakeApp = {
      id,
      slug: options.slug,
      name: options.name ?? options.slug,
      clientId: `Iv23li${world.random.alphanumeric(14)}`,
      clientSecret: world.random.hex(20),
      nodeId: objects.nodeId("Integration", id),
      owner,
      privateKeyPem,
      publicKey: publicKeyOf(privateKeyPem),
      webhookSecret: options.webhookSecret ?? world.random.alphanumeric(32),
      hookId: world.nextId("hook"),
      webhookUrls: [...(options.webhookUrls ?? [])],
      permissions: { ...(options.permissions ?? DEFAULT_APP_PERMISSIONS) },
      events: [...(options.events ?? DEFAULT_APP_EVENTS)],
      bot,
      createdAt: world.nowIso(),
    };
    world.apps.set(id, app);
    return {
      id,
      slug: app.slug,
      clientId: app.clientId,
      clientSecret: app.clientSecret,
      privateKey: privateKeyPem,
      webhookSecret: app.webhookSecret,
      botLogin: bot.login,
    };
  }

  /** Points an App's webhook at `urls` (replacing the previous ones). */
  setWebhookUrls(appId: number, urls: string[]): void {
    this.world.app(appId).webhookUrls = [...urls];
  }

  /**
   * Installs an App on a user or organization, on all its repositories or a selection, and sends
   * `installation.created` (sender: `by`, default the account or its first admin).
   */
  installApp(
    appId: number,
    options: {
      account: string;
      repositories?: "all" | string[];
      permissions?: PermissionSet;
      by?: string;
    },
  ): { id: number } {
    const world = this.world;
    const app = world.app(appId);
    const account = world.account(options.account);
    const selected = options.repositories ?? "all";
    const now = world.nowIso();
    const inst: Installation = {
      id: world.nextId("installation"),
      app,
      account,
      permissions: { ...(options.permissions ?? app.permissions) },
      repositorySelection: selected === "all" ? "all" : "selected",
      repositoryIds: new Set(
        selected === "all" ? [] : selected.map((name) => world.repo(`${account.login}/${name}`).id),
      ),
      events: [...app.events],
      createdAt: now,
      updatedAt: now,
      suspendedAt: null,
    };
    world.installations.set(inst.id, inst);
    this.emitInstallation(inst, "created", options.by);
    return { id: inst.id };
  }

  /** Adds repositories to a "selected" installation (`installation_repositories.added`). */
  addInstallationRepositories(installationId: number, names: string[], by?: string): void {
    const inst = this.world.installation(installationId);
    const repos = names.map((n) => this.world.repo(`${inst.account.login}/${n}`));
    for (const repo of repos) inst.repositoryIds.add(repo.id);
    inst.repositorySelection = "selected";
    this.emitInstallationRepositories(inst, "added", repos, by);
  }

  removeInstallationRepositories(installationId: number, names: string[], by?: string): void {
    const inst = this.world.installation(installationId);
    const repos = names.map((n) => this.world.repo(`${inst.account.login}/${n}`));
    if (inst.repositorySelection === "all") {
      inst.repositorySelection = "selected";
      for (const r of this.auth.reachable(inst, null)) inst.repositoryIds.add(r.id);
    }
    for (const repo of repos) inst.repositoryIds.delete(repo.id);
    this.emitInstallationRepositories(inst, "removed", repos, by);
  }

  suspendInstallation(installationId: number, by?: string): void {
    const inst = this.world.installation(installationId);
    inst.suspendedAt = this.world.nowIso();
    this.emitInstallation(inst, "suspend", by);
  }

  unsuspendInstallation(installationId: number, by?: string): void {
    const inst = this.world.installation(installationId);
    inst.suspendedAt = null;
    this.emitInstallation(inst, "unsuspend", by);
  }

  /** Uninstalls (`installation.deleted`); its tokens stop working. */
  deleteInstallation(installationId: number, by?: string): void {
    const inst = this.world.installation(installationId);
    this.emitInstallation(inst, "deleted", by);
    this.world.installations.delete(installationId);
  }

  /** An installation token minted directly (for tests that act as the App without Octokit). */
  installationToken(installationId: number): string {
    return this.auth.mintToken(this.world.installation(installationId)).token;
  }

  private installer(inst: Installation, by: string | undefined): Account {
    if (by !== undefined) return this.world.account(by);
    if (inst.account.type !== "Organization") return inst.account;
    const admin = [...inst.account.members].find(([, role]) => role === "admin")?.[0];
    return admin !== undefined ? this.world.account(admin) : inst.account;
  }

  private repositoryRefs(repos: Repository[]): Record<string, unknown>[] {
    return repos.map((r) => ({
      id: r.id,
      node_id: r.nodeId,
      name: r.name,
      full_name: `${r.owner.login}/${r.name}`,
      private: r.private,
    }));
  }

  private emitInstallation(inst: Installation, action: string, by: string | undefined): Delivery {
    const urls = this.world.urls;
    const sender = this.installer(inst, by);
    return this.webhooks.emit(
      inst.app,
      null,
      "installation",
      {
        action,
        installation: objects.installation(urls, inst),
        ...(action === "created" || action === "deleted"
          ? { repositories: this.repositoryRefs(this.auth.reachable(inst, null)) }
          : {}),
        ...(action === "created" ? { requester: null } : {}),
        sender: objects.simpleUser(urls, sender),
      },
      null,
    );
  }

  private emitInstallationRepositories(
    inst: Installation,
    action: "added" | "removed",
    repos: Repository[],
    by: string | undefined,
  ): Delivery {
    const urls = this.world.urls;
    return this.webhooks.emit(
      inst.app,
      null,
      "installation_repositories",
      {
        action,
        installation: objects.installation(urls, inst),
        repository_selection: inst.repositorySelection,
        repositories_added: action === "added" ? this.repositoryRefs(repos) : [],
        repositories_removed: action === "removed" ? this.repositoryRefs(repos) : [],
        requester: null,
        sender: objects.simpleUser(urls, this.installer(inst, by)),
      },
      null,
    );
  }

  // ---- repositories --------------------------------------------------------------------------

  /** A repository on a bare git repository, with a first commit on the default branch. */
  async createRepository(init: RepositoryInit): Promise<Repository> {
    const world = this.world;
    const owner = world.account(init.owner);
    const key = `${owner.login}/${init.name}`.toLowerCase();
    if (world.repos.has(key)) throw new Error(`repository ${key} exists`);
    const id = world.nextId("repo");
    const defaultBranch = init.defaultBranch ?? "main";
    const gitDir = join(world.dataDir, owner.login, `${init.name}.git`);
    const bare = await BareRepository.create(gitDir, defaultBranch);
    const now = world.nowIso();
    const repo: Repository = {
      id,
      nodeId: objects.nodeId("Repository", id),
      owner,
      name: init.name,
      private: init.private ?? false,
      description: init.description ?? null,
      defaultBranch,
      gitDir,
      createdAt: now,
      updatedAt: now,
      pushedAt: now,
      settings: {
        allowMergeCommit: true,
        allowSquashMerge: true,
        allowRebaseMerge: true,
        allowUpdateBranch: false,
        deleteBranchOnMerge: false,
        draftPullRequests: true,
        hasIssues: true,
        ...init.settings,
      },
      parent: null,
      collaborators: new Map(),
      labels: new Map(),
      nextIssueNumber: 1,
      pulls: new Map(),
      issues: new Map(),
      comments: new Map(),
      checkSuites: new Map(),
      checkRuns: new Map(),
      statuses: [],
      protections: [],
      rulesets: [],
    };
    world.repos.set(key, repo);
    world.git.set(id, bare);
    const files = init.files ?? { "README.md": `# ${init.name}\n` };
    if (Object.keys(files).length > 0) {
      const tree = await bare.treeWith(null, files, join(world.dataDir, `index-${id}`));
      const who = { name: owner.name, email: owner.email };
      const sha = await bare.commitTree(tree, [], "Initial commit", who, who);
      await bare.casRef(`refs/heads/${defaultBranch}`, sha, "0".repeat(40));
    }
    return repo;
  }

  /** Gives `login` a role on a repository (what `collaborators/{user}/permission` reports). */
  setCollaborator(repoName: string, login: string, role: RepositoryRole): void {
    this.world
      .repo(repoName)
      .collaborators.set(this.world.account(login).login.toLowerCase(), role);
  }

  repository(name: string): Repository {
    return this.world.repo(name);
  }

  /** The bare git directory of a repository (clone it, or read it with git). */
  gitDir(name: string): string {
    return this.world.repo(name).gitDir;
  }

  /** A ref's SHA (`heads/main`, `pull/3/head`, or a full `refs/…` name), or null. */
  async readRef(repoName: string, ref: string): Promise<string | null> {
    const repo = this.world.repo(repoName);
    return this.world.gitOf(repo).readRef(ref.startsWith("refs/") ? ref : `refs/${ref}`);
  }

  /** GitHub Actions as GitHub shows it: App 15368, `github-actions`, owned by `github`. */
  private createGitHubActionsApp(): void {
    const world = this.world;
    const owner = world.createAccount("github", "Organization", { id: 9919 });
    const bot = world.createAccount("github-actions[bot]", "Bot", { id: 41898282 });
    world.apps.set(GITHUB_ACTIONS_APP_ID, {
      id: GITHUB_ACTIONS_APP_ID,
      slug: "github-actions",
      name: "GitHub Actions",
      clientId: "Iv1.05c79e9ad1f6bdfa",
      clientSecret: "",
      nodeId: "MDM6QXBwMTUzNjg=",
      owner,
      privateKeyPem: "",
      publicKey: null,
      webhookSecret: "",
      hookId: 0,
      webhookUrls: [],
      permissions: {
        actions: "write",
        checks: "write",
        contents: "write",
        metadata: "read",
        pull_requests: "write",
        statuses: "write",
      },
      events: [],
      bot,
      createdAt: "2018-07-30T09:30:17Z",
    });
  }

  /** A person, or an App acting through its first installation on the repository's owner. */
  actor(login: string, repoName?: string): Actor {
    const account = this.world.account(login);
    if (account.type !== "Bot") return { kind: "user", account };
    const app = [...this.world.apps.values()].find((a) => a.bot.id === account.id);
    if (app === undefined) throw new Error(`no App behind ${login}`);
    const owner = repoName === undefined ? undefined : this.world.repo(repoName).owner.id;
    const installation =
      [...this.world.installations.values()].find(
        (i) => i.app.id === app.id && (owner === undefined || i.account.id === owner),
      ) ?? null;
    return { kind: "app", app, installation };
  }

  private defaultPusher(repo: Repository): string {
    if (repo.owner.type === "User") return repo.owner.login;
    const admin = [...repo.owner.members].find(([, role]) => role === "admin")?.[0];
    if (admin !== undefined) return admin;
    const writer = [...repo.collaborators].find(
      ([, role]) => role === "admin" || role === "write",
    )?.[0];
    if (writer !== undefined) return writer;
    throw new Error(`say who pushes to ${repo.owner.login}/${repo.name} (by)`);
  }

  // ---- git, as a developer ----------------------------------------------------------------------

  /**
   * Commits `files` (null deletes) on `branch` and pushes it as `by` (default: the owner, an org
   * admin, or a writer): `push` webhooks, pull request `synchronize`, CI follow. A new branch starts
   * at `from` (default: the default branch). Returns the commit.
   */
  async commit(
    repoName: string,
    change: {
      branch: string;
      files: Record<string, string | null>;
      from?: string;
      message?: string;
      author?: { name: string; email: string };
      by?: string;
      bypassProtection?: boolean;
      force?: boolean;
    },
  ): Promise<string> {
    const repo = this.world.repo(repoName);
    const { by, ...rest } = change;
    return this.repos.commit(repo, {
      ...rest,
      by: this.actor(by ?? this.defaultPusher(repo), repoName),
    });
  }

  /** Moves (or, with null, deletes) a branch as `by`'s push; non-fast-forward needs `force`. */
  async push(
    repoName: string,
    branch: string,
    sha: string | null,
    options: { by?: string; force?: boolean; bypassProtection?: boolean } = {},
  ): Promise<void> {
    const repo = this.world.repo(repoName);
    const { by, ...rest } = options;
    await this.repos.pushRef(
      repo,
      branch,
      sha,
      this.actor(by ?? this.defaultPusher(repo), repoName),
      rest,
    );
  }

  /**
   * Pushes `branch` of a working clone (made with `git clone <gitDir(repo)>`) to the fake, as
   * `git push` would, with the fake's events. Returns the pushed commit.
   */
  async pushFrom(
    repoName: string,
    workDir: string,
    branch: string,
    options: { by?: string; force?: boolean; bypassProtection?: boolean; localRef?: string } = {},
  ): Promise<string> {
    const repo = this.world.repo(repoName);
    const bare = this.world.gitOf(repo);
    const { localRef, ...pushOptions } = options;
    const incoming = `refs/fake-incoming/${this.world.random.hex(12)}`;
    await git(join(workDir, ".git"), [
      "push",
      "--quiet",
      repo.gitDir,
      `${localRef ?? branch}:${incoming}`,
    ]);
    const sha = await bare.readRef(incoming);
    if (sha === null) throw new Error(`nothing pushed from ${workDir}`);
    await bare.casRef(incoming, ZERO_SHA, sha);
    await this.push(repoName, branch, sha, pushOptions);
    return sha;
  }

  // ---- forks and pull requests -------------------------------------------------------------------

  /** A fork of `repoName` under `owner` (a bare clone that remembers its parent). */
  async fork(repoName: string, options: { owner: string; name?: string }): Promise<Repository> {
    const parent = this.world.repo(repoName);
    const fork = await this.createRepository({
      owner: options.owner,
      name: options.name ?? parent.name,
      defaultBranch: parent.defaultBranch,
      private: parent.private,
      files: {},
    });
    fork.parent = parent;
    await git(fork.gitDir, [
      "fetch",
      "--quiet",
      "--no-tags",
      parent.gitDir,
      "+refs/heads/*:refs/heads/*",
    ]);
    return fork;
  }

  /**
   * Opens a pull request as `by` (default: the pusher rule of `commit`): `head` is a branch of the
   * repository, or `owner:branch` of a fork. Sends `pull_request.opened`. Returns its number.
   */
  async openPullRequest(
    repoName: string,
    input: {
      head: string;
      base?: string;
      title?: string;
      body?: string;
      draft?: boolean;
      by?: string;
    },
  ): Promise<number> {
    const repo = this.world.repo(repoName);
    const pr = await this.pulls.open(
      repo,
      this.actor(input.by ?? this.defaultPusher(repo), repoName),
      {
        head: input.head,
        base: input.base ?? repo.defaultBranch,
        title: input.title ?? input.head,
        ...(input.body !== undefined ? { body: input.body } : {}),
        ...(input.draft !== undefined ? { draft: input.draft } : {}),
      },
    );
    return pr.number;
  }

  pullRequest(repoName: string, number: number): PullRequest {
    return this.pulls.pull(this.world.repo(repoName), number);
  }

  private prActor(
    repoName: string,
    number: number,
    by: string | undefined,
  ): { pr: PullRequest; actor: Actor } {
    const pr = this.pullRequest(repoName, number);
    return { pr, actor: this.actor(by ?? pr.user.login, repoName) };
  }

  /**
   * Pushes a commit to a pull request's head branch (in its fork, for a fork PR) as `by` (default:
   * its author): `push` and `pull_request.synchronize`. Returns the new head.
   */
  async pushToPullRequest(
    repoName: string,
    number: number,
    files: Record<string, string | null>,
    options: { by?: string; message?: string } = {},
  ): Promise<string> {
    const { pr, actor } = this.prActor(repoName, number, options.by);
    return this.repos.commit(pr.headRepo, {
      branch: pr.headRef,
      files,
      by: actor,
      ...(options.message !== undefined ? { message: options.message } : {}),
    });
  }

  async closePullRequest(
    repoName: string,
    number: number,
    options: { by?: string } = {},
  ): Promise<void> {
    const { pr, actor } = this.prActor(repoName, number, options.by);
    await this.pulls.close(pr, actor);
  }

  async reopenPullRequest(
    repoName: string,
    number: number,
    options: { by?: string } = {},
  ): Promise<void> {
    const { pr, actor } = this.prActor(repoName, number, options.by);
    await this.pulls.reopen(pr, actor);
  }

  /** Changes the base branch (`pull_request.edited` with `changes.base`). */
  async changeBase(
    repoName: string,
    number: number,
    base: string,
    options: { by?: string } = {},
  ): Promise<void> {
    const { pr, actor } = this.prActor(repoName, number, options.by);
    await this.pulls.changeBase(pr, base, actor);
  }

  async editPullRequest(
    repoName: string,
    number: number,
    input: { title?: string; body?: string; by?: string },
  ): Promise<void> {
    const { pr, actor } = this.prActor(repoName, number, input.by);
    await this.pulls.edit(pr, actor, {
      ...(input.title !== undefined ? { title: input.title } : {}),
      ...(input.body !== undefined ? { body: input.body } : {}),
    });
  }

  /** `pull_request.converted_to_draft` (GitHub offers this through GraphQL and the web only). */
  async markDraft(repoName: string, number: number, options: { by?: string } = {}): Promise<void> {
    const { pr, actor } = this.prActor(repoName, number, options.by);
    await this.pulls.setDraft(pr, true, actor);
  }

  /** `pull_request.ready_for_review`. */
  async markReady(repoName: string, number: number, options: { by?: string } = {}): Promise<void> {
    const { pr, actor } = this.prActor(repoName, number, options.by);
    await this.pulls.setDraft(pr, false, actor);
  }

  /** An approving review by `login` on the current head (`pull_request_review.submitted`). */
  async approve(repoName: string, number: number, login: string): Promise<void> {
    await this.pulls.review(
      this.pullRequest(repoName, number),
      this.world.account(login),
      "APPROVED",
    );
  }

  async requestChanges(repoName: string, number: number, login: string): Promise<void> {
    await this.pulls.review(
      this.pullRequest(repoName, number),
      this.world.account(login),
      "CHANGES_REQUESTED",
    );
  }

  /** Merges as a person would from the web page (same rules as the API). Returns the landed SHA. */
  async mergePullRequest(
    repoName: string,
    number: number,
    options: { by?: string; method?: "merge" | "squash" | "rebase"; sha?: string } = {},
  ): Promise<string> {
    const repo = this.world.repo(repoName);
    const pr = this.pullRequest(repoName, number);
    const actor = this.actor(options.by ?? this.defaultPusher(repo), repoName);
    const result = await this.pulls.merge(pr, actor, {
      ...(options.method !== undefined ? { method: options.method } : {}),
      ...(options.sha !== undefined ? { sha: options.sha } : {}),
    });
    return result.sha;
  }

  /** Keeps `mergeable: null` for `ms` longer after each move of this PR. */
  holdMergeability(repoName: string, number: number, ms: number): void {
    this.pulls.holdMergeability(this.pullRequest(repoName, number), ms);
  }

  // ---- comments and labels, as a person -------------------------------------------------------

  /** A comment on a pull request by `by` (`issue_comment.created`). Returns its id. */
  comment(repoName: string, number: number, body: string, options: { by: string }): number {
    const pr = this.pullRequest(repoName, number);
    return this.issues.comment(pr, this.actor(options.by, repoName), body).id;
  }

  /** Edits a comment (`issue_comment.edited` with `changes.body.from`). */
  editComment(repoName: string, commentId: number, body: string, options: { by: string }): void {
    const repo = this.world.repo(repoName);
    const comment = repo.comments.get(commentId);
    if (comment === undefined) throw new Error(`no comment ${commentId}`);
    this.issues.editComment(repo, comment, this.actor(options.by, repoName), body);
  }

  deleteComment(repoName: string, commentId: number, options: { by: string }): void {
    const repo = this.world.repo(repoName);
    const comment = repo.comments.get(commentId);
    if (comment === undefined) throw new Error(`no comment ${commentId}`);
    this.issues.deleteComment(repo, comment, this.actor(options.by, repoName));
  }

  /** The comments on a pull request, oldest first. */
  // ---- issues (not pull requests) ------------------------------------------------------------

  /** Opens an issue as `by` (default: the owner or an admin), as from the web page. */
  createIssue(
    repoName: string,
    input: { title: string; body?: string; labels?: string[]; assignees?: string[]; by?: string },
  ): number {
    const repo = this.world.repo(repoName);
    const by = input.by ?? this.defaultPusher(repo);
    const issue = this.plainIssues.create(repo, this.actor(by, repoName), {
      title: input.title,
      body: input.body ?? null,
      labels: input.labels ?? [],
      assignees: input.assignees ?? [],
    });
    return issue.number;
  }

  /** The issue's record (title, body, state, stateReason, labels, assignees…). */
  issue(repoName: string, number: number): Issue {
    return this.plainIssues.issue(this.world.repo(repoName), number);
  }

  /** Every issue of a repository that is not a pull request, by number. */
  issuesOf(repoName: string): Issue[] {
    return [...this.world.repo(repoName).issues.values()].sort((a, b) => a.number - b.number);
  }

  /** Closes an issue from the web page (`issues.closed`); reason `completed` or `not_planned`. */
  closeIssue(
    repoName: string,
    number: number,
    options: { by?: string; reason?: "completed" | "not_planned" } = {},
  ): void {
    const repo = this.world.repo(repoName);
    const by = options.by ?? this.defaultPusher(repo);
    this.plainIssues.close(
      this.issue(repoName, number),
      this.actor(by, repoName),
      options.reason ?? "completed",
    );
  }

  reopenIssue(repoName: string, number: number, options: { by?: string } = {}): void {
    const repo = this.world.repo(repoName);
    const by = options.by ?? this.defaultPusher(repo);
    this.plainIssues.reopen(this.issue(repoName, number), this.actor(by, repoName));
  }

  /** Turns a repository's issues off (the issues API answers 410) or on. */
  setIssuesEnabled(repoName: string, enabled: boolean): void {
    this.world.repo(repoName).settings.hasIssues = enabled;
  }

  comments(repoName: string, number: number): IssueComment[] {
    return [...this.world.repo(repoName).comments.values()]
      .filter((c) => c.issueNumber === number)
      .sort((a, b) => a.id - b.id);
  }

  /** Labels a pull request (`pull_request.labeled`; unknown labels are created). */
  async addLabels(
    repoName: string,
    number: number,
    names: string[],
    options: { by: string },
  ): Promise<void> {
    await this.issues.addLabels(
      this.pullRequest(repoName, number),
      this.actor(options.by, repoName),
      names,
    );
  }

  /** `pull_request.unlabeled`. */
  async removeLabel(
    repoName: string,
    number: number,
    name: string,
    options: { by: string },
  ): Promise<void> {
    await this.issues.removeLabel(
      this.pullRequest(repoName, number),
      this.actor(options.by, repoName),
      name,
    );
  }

  // ---- protection ----------------------------------------------------------------------------

  /**
   * Classic branch protection on a branch name pattern (`main`, `release/*`, `trunk-merge/**`).
   * Replaces a rule with the same pattern.
   */
  protectBranch(
    repoName: string,
    pattern: string,
    options: {
      requiredStatusChecks?: {
        strict?: boolean;
        contexts?: string[];
        checks?: { context: string; appId?: number | null }[];
      } | null;
      requiredApprovingReviewCount?: number;
      dismissStaleReviews?: boolean;
      bypassPullRequestApps?: string[];
      bypassPullRequestUsers?: string[];
      enforceAdmins?: boolean;
      restrictions?: { users?: string[]; apps?: string[] } | null;
      allowForcePushes?: boolean;
      allowDeletions?: boolean;
      requiredLinearHistory?: boolean;
    } = {},
  ): void {
    const repo = this.world.repo(repoName);
    const checks = options.requiredStatusChecks;
    const rule: BranchProtection = {
      pattern,
      requiredStatusChecks:
        checks == null
          ? null
          : {
              strict: checks.strict ?? false,
              checks: [
                ...(checks.contexts ?? []).map((context) => ({ context, appId: null })),
                ...(checks.checks ?? []).map((c) => ({
                  context: c.context,
                  appId: c.appId ?? null,
                })),
              ],
            },
      requiredPullRequestReviews:
        options.requiredApprovingReviewCount === undefined
          ? null
          : {
              requiredApprovingReviewCount: options.requiredApprovingReviewCount,
              dismissStaleReviews: options.dismissStaleReviews ?? false,
              bypassApps: options.bypassPullRequestApps ?? [],
              bypassUsers: options.bypassPullRequestUsers ?? [],
            },
      enforceAdmins: options.enforceAdmins ?? false,
      restrictions:
        options.restrictions == null
          ? null
          : { users: options.restrictions.users ?? [], apps: options.restrictions.apps ?? [] },
      allowForcePushes: options.allowForcePushes ?? false,
      allowDeletions: options.allowDeletions ?? false,
      requiredLinearHistory: options.requiredLinearHistory ?? false,
    };
    const existed = repo.protections.some((p) => p.pattern === pattern);
    repo.protections = [...repo.protections.filter((p) => p.pattern !== pattern), rule];
    this.protectionChanged(repoName, existed ? "edited" : "created", pattern, rule);
  }

  unprotectBranch(repoName: string, pattern: string): void {
    const repo = this.world.repo(repoName);
    repo.protections = repo.protections.filter((p) => p.pattern !== pattern);
    this.protectionChanged(repoName, "deleted", pattern);
  }

  /** GitHub's `branch_protection_rule` webhook for a change of classic protection. */
  private protectionChanged(
    repoName: string,
    action: string,
    pattern: string,
    rule?: BranchProtection,
  ): void {
    const repo = this.world.repo(repoName);
    const { actor, payload } = protection.protectionRuleEvent(
      this.world,
      repo,
      action,
      pattern,
      rule,
    );
    this.webhooks.emitForRepo("branch_protection_rule", repo, actor, payload);
  }

  /** GitHub's `repository_ruleset` webhook for a change of a ruleset. */
  private rulesetChanged(repoName: string, action: string, ruleset: Ruleset): void {
    const repo = this.world.repo(repoName);
    const { actor, payload } = protection.rulesetEvent(this.world, repo, action, ruleset);
    this.webhooks.emitForRepo("repository_ruleset", repo, actor, payload);
  }

  /**
   * A ruleset, with rules as GitHub's API spells them (`{ type: "required_status_checks",
   * parameters: { required_status_checks: [{ context, integration_id }],
   * strict_required_status_checks_policy } }`, `pull_request`, `non_fast_forward`, `merge_queue`,
   * `creation`, `update`, `deletion`, `required_linear_history`). `include` takes GitHub's
   * patterns: `~DEFAULT_BRANCH`, `~ALL`, `refs/heads/trunk-merge/**`. Returns its id.
   */
  addRuleset(
    repoName: string,
    options: {
      name: string;
      enforcement?: Ruleset["enforcement"];
      include: string[];
      exclude?: string[];
      bypassActors?: RulesetBypassActor[];
      rules: RulesetRule[];
      sourceType?: Ruleset["sourceType"];
    },
  ): number {
    const repo = this.world.repo(repoName);
    const id = this.world.nextId("ruleset");
    const ruleset: Ruleset = {
      id,
      name: options.name,
      enforcement: options.enforcement ?? "active",
      include: options.include,
      exclude: options.exclude ?? [],
      bypassActors: options.bypassActors ?? [],
      rules: options.rules,
      sourceType: options.sourceType ?? "Repository",
      createdAt: this.world.nowIso(),
    };
    repo.rulesets.push(ruleset);
    this.rulesetChanged(repoName, "created", ruleset);
    return id;
  }

  setRulesetEnforcement(repoName: string, id: number, enforcement: Ruleset["enforcement"]): void {
    const ruleset = this.world.repo(repoName).rulesets.find((r) => r.id === id);
    if (ruleset === undefined) throw new Error(`no ruleset ${id}`);
    ruleset.enforcement = enforcement;
    this.rulesetChanged(repoName, "edited", ruleset);
  }

  removeRuleset(repoName: string, id: number): void {
    const repo = this.world.repo(repoName);
    const ruleset = repo.rulesets.find((r) => r.id === id);
    repo.rulesets = repo.rulesets.filter((r) => r.id !== id);
    if (ruleset !== undefined) this.rulesetChanged(repoName, "deleted", ruleset);
  }

  // ---- checks and statuses, as other CIs and Apps ---------------------------------------------

  /** A check run posted by an App (default: GitHub Actions), with the webhooks GitHub sends. */
  async postCheckRun(
    repoName: string,
    input: {
      appId?: number;
      name: string;
      headSha: string;
      status?: CheckStatus;
      conclusion?: CheckConclusion;
      detailsUrl?: string;
      summary?: string;
    },
  ): Promise<CheckRun> {
    const repo = this.world.repo(repoName);
    const app = this.world.app(input.appId ?? GITHUB_ACTIONS_APP_ID);
    const installation =
      [...this.world.installations.values()].find(
        (i) => i.app.id === app.id && i.account.id === repo.owner.id,
      ) ?? null;
    return this.checks.createRun(
      repo,
      app,
      { kind: "app", app, installation },
      {
        name: input.name,
        headSha: input.headSha,
        ...(input.status !== undefined ? { status: input.status } : {}),
        ...(input.conclusion !== undefined ? { conclusion: input.conclusion } : {}),
        ...(input.detailsUrl !== undefined ? { detailsUrl: input.detailsUrl } : {}),
        ...(input.summary !== undefined
          ? { output: { title: input.name, summary: input.summary, text: null } }
          : {}),
      },
    );
  }

  async completeCheckRun(
    repoName: string,
    runId: number,
    conclusion: CheckConclusion,
  ): Promise<CheckRun> {
    const repo = this.world.repo(repoName);
    const run = repo.checkRuns.get(runId);
    if (run === undefined) throw new Error(`no check run ${runId}`);
    const app = run.suite.app;
    return this.checks.updateRun(
      repo,
      run,
      { kind: "app", app, installation: null },
      { conclusion },
    );
  }

  /** A commit status posted by a person or a third-party CI's token (`by`: a login). */
  postStatus(
    repoName: string,
    sha: string,
    input: {
      state: CommitStatus["state"];
      context: string;
      by?: string;
      description?: string;
      targetUrl?: string;
    },
  ): CommitStatus {
    const repo = this.world.repo(repoName);
    const by = input.by ?? this.defaultPusher(repo);
    return this.checks.createStatus(repo, this.actor(by, repoName), {
      sha,
      state: input.state,
      context: input.context,
      description: input.description ?? null,
      targetUrl: input.targetUrl ?? null,
    });
  }

  // ---- the Actions-like CI ------------------------------------------------------------------

  /**
   * The repository's workflows (replacing earlier ones): push branch patterns and/or pull request
   * events, and per check a command, a function or a scripted outcome (ci.ts).
   */
  configureCi(repoName: string, workflows: Workflow[]): void {
    this.ci.configure(this.world.repo(repoName), workflows);
  }

  /** Waits until every CI check started so far has completed (stuck ones excepted). */
  settleCi(): Promise<void> {
    return this.ci.settle();
  }

  /**
   * A workflow run of `repoName` made directly (no checks): in progress (or `status`) until
   * `completeWorkflowRun`. For a pull request from a fork, `headRepository` is the fork
   * (`owner/name`) and `headBranch` its branch; `pullRequest` (a number of `repoName`) fills
   * them in from the pull request. Returns the run's id.
   */
  startWorkflowRun(
    repoName: string,
    input: {
      headSha?: string;
      headRepository?: string;
      headBranch?: string | null;
      event?: string;
      pullRequest?: number;
      workflowName?: string;
      status?: WorkflowRunStatus;
    } = {},
  ): number {
    const repo = this.world.repo(repoName);
    const pr =
      input.pullRequest !== undefined ? this.pullRequest(repoName, input.pullRequest) : null;
    const headSha = input.headSha ?? pr?.headSha;
    if (headSha === undefined) throw new Error("startWorkflowRun needs headSha or pullRequest");
    const headRepo =
      input.headRepository !== undefined
        ? this.world.repo(input.headRepository)
        : (pr?.headRepo ?? repo);
    return this.actions.start(repo, {
      headSha,
      headRepo,
      headBranch: input.headBranch !== undefined ? input.headBranch : (pr?.headRef ?? null),
      event: input.event ?? (pr !== null ? "pull_request" : "push"),
      ...(pr !== null ? { actor: pr.user } : {}),
      ...(input.workflowName !== undefined ? { workflowName: input.workflowName } : {}),
      ...(input.status !== undefined ? { status: input.status } : {}),
    }).id;
  }

  /** A workflow run's record (status, conclusion, head…). */
  workflowRun(id: number): WorkflowRun {
    return this.actions.run(id);
  }

  /** Completes a workflow run (default conclusion `success`). */
  completeWorkflowRun(id: number, conclusion: WorkflowRunConclusion = "success"): void {
    this.actions.update(this.actions.run(id), "completed", conclusion);
  }

  // ---- webhooks ------------------------------------------------------------------------------

  /** Every delivery made so far (optionally of one event, e.g. `pull_request`). */
  deliveries(event?: string): Delivery[] {
    return this.webhooks.deliveries.filter((d) => event === undefined || d.event === event);
  }

  setWebhookChaos(chaos: WebhookChaos): void {
    this.webhooks.setChaos(chaos);
  }

  /** Waits until every webhook delivery sent so far has been answered. */
  settleWebhooks(): Promise<void> {
    return this.webhooks.settle();
  }

  addFault(rule: FaultRule): FaultRule {
    return this.faults.add(rule);
  }
}
