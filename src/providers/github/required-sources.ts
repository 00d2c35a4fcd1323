/**
 * Where a run's required checks come from, read from GitHub once and kept: the target branch's
 * `.mainline.yml` and `.trunk/trunk.yaml` change rarely, so each read serves every run until a
 * `push` to the target branch touches the file, or for the TTL at most (a lost webhook); its
 * protection and rulesets are the git host's kept read (`branchChecks`), forgotten on their
 * webhooks. A run's file is the one of its tested commit: the kept one (the target branch's)
 * serves only when one compare of the target branch with the tested commit shows that the run's
 * pull requests leave the file alone; otherwise the file is read at the tested commit.
 */
import { SECOND_MS } from "../../lib/time.js";
import { statusOf } from "./conditional.js";
import type { GitHubRepositoryAccess } from "./repositories.js";
import type { RequiredCheck } from "./required-checks.js";
import { BoundedMap } from "../../lib/bounded-map.js";

/** How long a kept read serves at most (events forget it sooner). */
export const DEFAULT_REQUIRED_SOURCES_TTL_MS = 5 * 60 * SECOND_MS;
/** GitHub lists at most 300 files in a compare: a list that long may be cut. */
const COMPARE_FILES_LIMIT = 300;

interface Kept<T> {
  at: number;
  value: Promise<T>;
}

/** A push as its webhook tells it: the files each pushed commit added, modified or removed. */
export interface PushFacts {
  ref: string;
  forced: boolean;
  created: boolean;
  deleted: boolean;
  commits: readonly { added?: string[]; modified?: string[]; removed?: string[] }[] | undefined;
}

/** GitHub's push webhook lists at most this many commits (then it cannot tell what changed). */
const PUSH_COMMITS_LISTED = 20;

export class GitHubRequiredSources {
  /** A target branch's file (undefined: none), per repository, branch and path. */
  private readonly files = new BoundedMap<string, Kept<string | undefined>>(1024);
  /** The files a tested commit changes from its target branch (undefined: too many to tell). */
  private readonly changed = new BoundedMap<string, Promise<Set<string> | undefined>>(256);

  constructor(
    private readonly options: {
      now: () => number;
      /** Default 5 min. */
      ttlMs?: number | undefined;
      /**
       * What a tested commit changes from its base, when the test branch's assembly told it (its
       * merges list their files): no compare then.
       */
      assembledChanges?: ((sha: string) => Set<string> | undefined) | undefined;
      /**
       * The target branch's required checks as the git host keeps them (its readiness reads
       * protection and rulesets too): one read serves both.
       */
      branchChecks: (access: GitHubRepositoryAccess, branch: string) => Promise<RequiredCheck[]>;
    },
  ) {}

  /** The target branch's required checks (protection and active rulesets, unioned). */
  requiredChecks(access: GitHubRepositoryAccess, branch: string): Promise<RequiredCheck[]> {
    return this.options.branchChecks(access, branch);
  }

  /**
   * The file at the tested commit `sha` of a run on `branch`: the branch's (kept) when the run's
   * changes leave it alone, else read at `sha`. Undefined: there is none.
   */
  async fileAt(
    access: GitHubRepositoryAccess,
    branch: string,
    sha: string,
    path: string,
  ): Promise<string | undefined> {
    const changed = await this.changedFiles(access, branch, sha);
    if (changed === undefined || changed.has(path)) return readContent(access, sha, path);
    return this.kept(this.files, `${key(access, branch)}\u0000${path}`, () =>
      readContent(access, branch, path),
    );
  }

  /**
   * A push: a branch whose push touched a kept file, or whose push cannot tell (forced, created,
   * deleted, too many commits listed), has its files forgotten.
   */
  pushed(repo: { owner: string; name: string }, push: PushFacts): void {
    if (!push.ref.startsWith("refs/heads/")) return;
    const branch = push.ref.slice("refs/heads/".length);
    const prefix = `${key(repo, branch)}\u0000`;
    const commits = push.commits;
    const unknown =
      push.forced ||
      push.created ||
      push.deleted ||
      commits === undefined ||
      commits.length >= PUSH_COMMITS_LISTED;
    const touched = new Set(
      (commits ?? []).flatMap((c) => [
        ...(c.added ?? []),
        ...(c.modified ?? []),
        ...(c.removed ?? []),
      ]),
    );
    for (const name of [...this.files.keys()]) {
      if (!name.startsWith(prefix)) continue;
      if (unknown || touched.has(name.slice(prefix.length))) this.files.delete(name);
    }
  }

  private changedFiles(
    access: GitHubRepositoryAccess,
    branch: string,
    sha: string,
  ): Promise<Set<string> | undefined> {
    const assembled = this.options.assembledChanges?.(sha);
    if (assembled !== undefined) return Promise.resolve(assembled);
    const name = `${key(access, branch)}\u0000${sha}`;
    const known = this.changed.get(name);
    if (known) return known;
    const read = (async () => {
      const { data } = await access.client.request("GET /repos/{owner}/{repo}/compare/{basehead}", {
        owner: access.owner,
        repo: access.name,
        basehead: `${branch}...${sha}`,
        per_page: 1,
      });
      const files = (data as { files?: { filename: string; previous_filename?: string }[] }).files;
      if (files === undefined || files.length >= COMPARE_FILES_LIMIT) return undefined;
      return new Set(
        files.flatMap((f) =>
          f.previous_filename === undefined ? [f.filename] : [f.filename, f.previous_filename],
        ),
      );
    })();
    this.changed.set(name, read);
    read.catch(() => {
      if (this.changed.get(name) === read) this.changed.delete(name);
    });
    return read;
  }

  private kept<T>(map: BoundedMap<string, Kept<T>>, name: string, read: () => Promise<T>) {
    const now = this.options.now();
    const ttl = this.options.ttlMs ?? DEFAULT_REQUIRED_SOURCES_TTL_MS;
    const known = map.get(name);
    if (known && now - known.at < ttl) return known.value;
    const value = read();
    map.set(name, { at: now, value });
    // A failed read is never kept: the next run asks again.
    value.catch(() => {
      if (map.get(name)?.value === value) map.delete(name);
    });
    return value;
  }
}

function key(repo: { owner: string; name: string }, branch: string): string {
  return `${repo.owner}/${repo.name}`.toLowerCase() + `\u0000${branch}`;
}

/** A file at a ref (a commit or a branch) through the contents API; undefined when there is none. */
export async function readContent(
  access: GitHubRepositoryAccess,
  ref: string,
  path: string,
): Promise<string | undefined> {
  try {
    const answer = await access.client.request("GET /repos/{owner}/{repo}/contents/{path}", {
      owner: access.owner,
      repo: access.name,
      path,
      ref,
    });
    const data = answer.data as { type?: string; content?: string; encoding?: string };
    if (data.type !== "file" || typeof data.content !== "string") return undefined;
    return Buffer.from(data.content, data.encoding === "base64" ? "base64" : "utf8").toString(
      "utf8",
    );
  } catch (error) {
    if (statusOf(error) === 404) return undefined;
    throw error;
  }
}
