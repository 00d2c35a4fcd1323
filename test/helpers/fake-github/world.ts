import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BareRepository } from "./git.js";
import { GitHubError, notFound } from "./http.js";
import {
  fullName,
  type Account,
  type FakeApp,
  type Installation,
  type InstallationToken,
  type Repository,
} from "./model.js";
import { iso, nodeId, Urls } from "./objects.js";
import { SeededRandom } from "./random.js";

/**
 * Everything the fake knows, and the few operations every area needs: ids, the clock (which a
 * test may skew, as auth-app's clock-drift recovery expects), lookups, and the notifications one
 * area sends another (a ref moved: pull requests resynchronize, CI starts).
 */

/** Who did something: a person, or an App through an installation token. */
export type Actor =
  | { kind: "user"; account: Account }
  | { kind: "app"; app: FakeApp; installation: Installation | null };

export function actorAccount(actor: Actor): Account {
  return actor.kind === "user" ? actor.account : actor.app.bot;
}

export interface RefUpdate {
  repo: Repository;
  /** Full ref name (`refs/heads/main`). */
  ref: string;
  before: string | null;
  after: string | null;
  forced: boolean;
  actor: Actor;
}

export interface WorldOptions {
  seed: number;
  dataDir: string | undefined;
  /** How long `mergeable` stays null after a base or head moves. */
  mergeabilityDelayMs: number;
  /** Installation tokens' lifetime (GitHub: one hour). */
  tokenLifetimeMs: number;
  /** Primary rate limit per installation/user per hour (GitHub: 5,000 for an installation). */
  rateLimit: number;
}

const ID_BASES: Record<string, number> = {
  account: 1000,
  app: 100,
  installation: 40_000_000,
  repo: 500_000_000,
  pull: 1_800_000_000,
  issue: 2_900_000_000,
  comment: 2_100_000_000,
  label: 6_000_000_000,
  review: 2_200_000_000,
  reaction: 250_000_000,
  suite: 23_000_000_000,
  run: 28_000_000_000,
  status: 31_000_000_000,
  ruleset: 1_000_000,
  protectionRule: 3_000_000,
  hook: 480_000_000,
  workflow: 160_000_000,
  workflowRun: 12_000_000_000,
};

export class World {
  readonly random: SeededRandom;
  readonly dataDir: string;
  readonly accounts = new Map<string, Account>();
  readonly apps = new Map<number, FakeApp>();
  readonly installations = new Map<number, Installation>();
  readonly tokens = new Map<string, InstallationToken>();
  readonly userTokens = new Map<string, Account>();
  readonly repos = new Map<string, Repository>();
  readonly git = new Map<number, BareRepository>();
  urls = new Urls("http://127.0.0.1", "http://127.0.0.1/html");
  clockSkewMs = 0;
  private readonly counters = new Map<string, number>();
  private readonly refListeners: ((update: RefUpdate) => Promise<void> | void)[] = [];

  constructor(readonly options: WorldOptions) {
    this.random = new SeededRandom(options.seed);
    this.dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "mainline-fake-github-"));
  }

  /** The fake's clock: real time plus the test's skew. */
  now(): number {
    return Date.now() + this.clockSkewMs;
  }

  nowIso(): string {
    return iso(this.now());
  }

  nextId(kind: keyof typeof ID_BASES): number {
    const next = (this.counters.get(kind) ?? ID_BASES[kind] ?? 1) + 1;
    this.counters.set(kind, next);
    return next;
  }

  createAccount(
    login: string,
    type: Account["type"],
    options: { id?: number; name?: string; email?: string } = {},
  ): Account {
    const key = login.toLowerCase();
    if (this.accounts.has(key)) throw new Error(`account ${login} exists`);
    const id = options.id ?? this.nextId("account");
    const account: Account = {
      id,
      login,
      nodeId: nodeId(type, id),
      type,
      name: options.name ?? login,
      email: options.email ?? `${id}+${login}@users.noreply.example.com`,
      createdAt: this.nowIso(),
      members: new Map(),
    };
    this.accounts.set(key, account);
    return account;
  }

  account(login: string): Account {
    const found = this.accounts.get(login.toLowerCase());
    if (found === undefined) throw new Error(`no account ${login}`);
    return found;
  }

  findAccount(login: string): Account | undefined {
    return this.accounts.get(login.toLowerCase());
  }

  /** The repository `owner/name` (control API: throws). */
  repo(name: string): Repository {
    const found = this.repos.get(name.toLowerCase());
    if (found === undefined) throw new Error(`no repository ${name}`);
    return found;
  }

  /** The repository of an API path (404 as GitHub answers). */
  repoOf(params: Record<string, string>): Repository {
    const found = this.repos.get(`${params.owner ?? ""}/${params.repo ?? ""}`.toLowerCase());
    if (found === undefined) throw notFound();
    return found;
  }

  gitOf(repo: Repository): BareRepository {
    const found = this.git.get(repo.id);
    if (found === undefined) throw new Error(`no git for ${fullName(repo)}`);
    return found;
  }

  app(id: number): FakeApp {
    const found = this.apps.get(id);
    if (found === undefined) throw new Error(`no App ${id}`);
    return found;
  }

  installation(id: number): Installation {
    const found = this.installations.get(id);
    if (found === undefined) throw new Error(`no installation ${id}`);
    return found;
  }

  /** The installations of every App that can see `repo` (webhook targets). */
  installationsFor(repo: Repository): Installation[] {
    return [...this.installations.values()].filter(
      (inst) =>
        inst.suspendedAt === null &&
        inst.account.id === repo.owner.id &&
        (inst.repositorySelection === "all" || inst.repositoryIds.has(repo.id)),
    );
  }

  /** A repository's role for a user: owner, org admin, or collaborator. */
  roleOf(repo: Repository, account: Account): string | undefined {
    if (account.type === "Bot") return undefined;
    if (repo.owner.id === account.id) return "admin";
    if (repo.owner.type === "Organization" && repo.owner.members.get(account.login) === "admin") {
      return "admin";
    }
    return repo.collaborators.get(account.login.toLowerCase());
  }

  onRefUpdate(listener: (update: RefUpdate) => Promise<void> | void): void {
    this.refListeners.push(listener);
  }

  /** Tells every area that a ref moved (after the compare-and-swap succeeded). */
  async refUpdated(update: RefUpdate): Promise<void> {
    update.repo.pushedAt = this.nowIso();
    for (const listener of this.refListeners) await listener(update);
  }

  assertValid(condition: boolean, status: number, message: string): asserts condition {
    if (!condition) throw new GitHubError(status, message);
  }
}
