import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SeededRandom } from "../fake-github/random.js";
import { ProjectRepo } from "./git.js";
import { notFound, type Credential } from "./http.js";
import type {
  Group,
  MergeRequest,
  Pipeline,
  Project,
  ProtectedBranch,
  Token,
  User,
} from "./model.js";

/**
 * Everything the fake knows, and what every area asks of it: ids, the seeded random source,
 * lookups (a project by numeric id or path, 404 as GitLab answers when the caller cannot see it),
 * roles and protected-branch rules, URLs, and the version profile.
 */

export interface WorldOptions {
  seed: number;
  dataDir: string | undefined;
  version: string;
  uncheckedReads: number;
  webhookTimeoutMs: number;
  /** Conflicts on `PUT …/merge`: 406 before 16.0, 422 since (overridable). */
  mergeConflictStatus: 406 | 422;
  /** Push side effects (hooks, merge request refresh, pipelines) start this long after a push. */
  pushProcessingDelayMs: number;
}

/** What a GitLab version changes in what the fake says. */
export interface VersionProfile {
  version: string;
  revision: string;
  /** `Idempotency-Key` on webhook deliveries (17.4+). */
  idempotencyKey: boolean;
  /** `X-Gitlab-Webhook-UUID` (16.2+). */
  webhookUuid: boolean;
  /** Note Hooks on edits, and `object_attributes.action` (16.11+). */
  noteActions: boolean;
}

export function atLeast(version: string, major: number, minor: number): boolean {
  const [a = 0, b = 0] = version.split(".").map((n) => Number.parseInt(n, 10) || 0);
  return a > major || (a === major && b >= minor);
}

const ID_BASES = {
  user: 0,
  token: 20,
  group: 100,
  project: 7000,
  mr: 40_000,
  note: 300_000,
  pipeline: 90_000,
  job: 500_000,
  hook: 10,
  label: 800,
  award: 1000,
  protected: 60,
  delivery: 0,
} as const;

export class World {
  readonly random: SeededRandom;
  readonly dataDir: string;
  readonly reposDir: string;
  readonly tmpDir: string;
  readonly profile: VersionProfile;
  url = "http://127.0.0.1";
  readonly users = new Map<string, User>();
  readonly tokens = new Map<string, Token>();
  readonly groups = new Map<string, Group>();
  readonly projects = new Map<number, Project>();
  private readonly repos = new Map<number, ProjectRepo>();
  private readonly counters = new Map<string, number>();

  constructor(readonly options: WorldOptions) {
    this.random = new SeededRandom(options.seed);
    this.dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "mainline-fake-gitlab-"));
    this.reposDir = join(this.dataDir, "repositories");
    this.tmpDir = join(this.dataDir, "tmp");
    mkdirSync(this.reposDir, { recursive: true });
    mkdirSync(this.tmpDir, { recursive: true });
    const version = options.version;
    this.profile = {
      version,
      revision: this.random.hex(11),
      idempotencyKey: atLeast(version, 17, 4),
      webhookUuid: atLeast(version, 16, 2),
      noteActions: atLeast(version, 16, 11),
    };
  }

  nextId(kind: keyof typeof ID_BASES): number {
    const next = (this.counters.get(kind) ?? ID_BASES[kind]) + 1;
    this.counters.set(kind, next);
    return next;
  }

  // ---- lookups (test-facing ones throw plain errors) --------------------------------------

  user(username: string): User {
    const found = this.users.get(username.toLowerCase());
    if (found === undefined) throw new Error(`no user ${username}`);
    return found;
  }

  userById(id: number): User | undefined {
    return [...this.users.values()].find((u) => u.id === id);
  }

  project(ref: string | number): Project {
    const found =
      typeof ref === "number" || /^\d+$/.test(ref)
        ? this.projects.get(Number(ref))
        : [...this.projects.values()].find(
            (p) => p.pathWithNamespace.toLowerCase() === ref.toLowerCase(),
          );
    if (found === undefined) throw new Error(`no project ${String(ref)}`);
    return found;
  }

  /** The project of an API `:id` (numeric or URL-encoded path); 404 when the caller cannot see it. */
  projectFor(idParam: string, credential: Credential): Project {
    let project: Project;
    try {
      project = this.project(idParam);
    } catch {
      throw notFound("Project");
    }
    const user = credential.kind === "token" ? credential.user : null;
    if (!this.canSee(project, user)) throw notFound("Project");
    return project;
  }

  mergeRequest(project: Project, iid: number): MergeRequest {
    const found = project.mergeRequests.get(iid);
    if (found === undefined) throw notFound("Merge Request");
    return found;
  }

  pipeline(project: Project, id: number): Pipeline {
    const found = project.pipelines.find((p) => p.id === id);
    if (found === undefined) throw notFound();
    return found;
  }

  repo(project: Project): ProjectRepo {
    let repo = this.repos.get(project.id);
    if (repo === undefined) {
      repo = new ProjectRepo(project.gitDir, this.tmpDir);
      this.repos.set(project.id, repo);
    }
    return repo;
  }

  // ---- roles and protection ----------------------------------------------------------------

  /** The user's role on the project: direct, or inherited from a group above it (0: none). */
  accessLevel(project: Project, user: User | null): number {
    if (user === null) return 0;
    let level = project.members.get(user.id) ?? 0;
    for (let g: Group | null = project.namespace; g !== null; g = g.parent) {
      level = Math.max(level, g.members.get(user.id) ?? 0);
    }
    return level;
  }

  /** What permission checks use: an administrator counts as an owner. */
  effectiveLevel(project: Project, user: User | null): number {
    if (user?.admin === true) return 50;
    return this.accessLevel(project, user);
  }

  canSee(project: Project, user: User | null): boolean {
    if (project.visibility === "public") return true;
    if (user === null) return false;
    return project.visibility === "internal" || this.effectiveLevel(project, user) >= 10;
  }

  protectionOf(project: Project, branch: string): ProtectedBranch | null {
    return (
      project.protectedBranches.find((p) => p.name === branch) ??
      project.protectedBranches.find((p) => wildcard(p.name).test(branch)) ??
      null
    );
  }

  canPush(project: Project, user: User, branch: string): boolean {
    const level = this.effectiveLevel(project, user);
    const rule = this.protectionOf(project, branch);
    if (rule === null) return level >= 30;
    return rule.pushAccessLevel !== 0 && level >= rule.pushAccessLevel;
  }

  /** `can_be_merged_by?`: may push to, or merge into, the target branch. */
  canMerge(project: Project, user: User, branch: string): boolean {
    const level = this.effectiveLevel(project, user);
    const rule = this.protectionOf(project, branch);
    if (rule === null) return level >= 30;
    const may = (required: number): boolean => required !== 0 && level >= required;
    return may(rule.pushAccessLevel) || may(rule.mergeAccessLevel);
  }

  /** Serializes merges and push processing per project. */
  withLock<T>(project: Project, action: () => Promise<T>): Promise<T> {
    const next = project.lock.then(action, action);
    project.lock = next.catch(() => undefined);
    return next;
  }

  // ---- URLs and times ------------------------------------------------------------------------

  projectWeb(project: Project): string {
    return `${this.url}/${project.pathWithNamespace}`;
  }

  httpUrl(project: Project): string {
    return `${this.url}/${project.pathWithNamespace}.git`;
  }

  mrWeb(mr: MergeRequest): string {
    return `${this.projectWeb(mr.project)}/-/merge_requests/${mr.iid}`;
  }
}

/** GitLab's protected-branch wildcard: `*` matches anything, slashes included. */
export function wildcard(pattern: string): RegExp {
  const body = pattern
    .split("*")
    .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
    .join(".*");
  return new RegExp(`^${body}$`);
}

/** REST times: ISO 8601 with milliseconds, UTC. */
export function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

/** Webhook payload times: `2024-05-01 12:00:00 UTC`. */
export function hookTime(ms: number | null): string | null {
  return ms === null
    ? null
    : new Date(ms)
        .toISOString()
        .replace("T", " ")
        .replace(/\.\d+Z$/, " UTC");
}
