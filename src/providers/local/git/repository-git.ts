/**
 * The git plumbing the local host is built from, on one bare repository: resolving refs, merging
 * trees without a checkout (`merge-tree --write-tree`), writing commits and moving refs with a
 * compare-and-swap. Callers pass commit ids, never options, in argument positions.
 */
import { GitError, git, runGit } from "./git.js";

export const ZERO_OID = "0000000000000000000000000000000000000000";

/** A full SHA-1 or SHA-256 object id; anything else is refused before it reaches git's argv. */
const OBJECT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

export function assertObjectId(value: string, what: string): void {
  if (!OBJECT_ID.test(value))
    throw new Error(`${what} is not a commit id: ${JSON.stringify(value)}`);
}

/** A merge of two commits: its tree, or why there is none (`files`: the conflicted paths). */
export type TreeMerge =
  { clean: true; tree: string } | { clean: false; files: string[]; summary: string };

/** A commit of a pull request, as a squash or a rebase needs it. */
export interface CommitSummary {
  sha: string;
  author: { name: string; email: string };
  message: string;
}

export class RepositoryGit {
  /** `commitEnv`: extra variables for commands that write commits (Mainline's commit dates). */
  constructor(
    readonly gitDir: string,
    private readonly commitEnv: () => Record<string, string> = () => ({}),
  ) {}

  /** The commit a ref or object name points at, undefined when there is none. */
  async resolve(name: string): Promise<string | undefined> {
    const { stdout, code } = await git(
      ["rev-parse", "--verify", "--quiet", `${name}^{commit}`],
      { gitDir: this.gitDir },
      [0, 1],
    );
    return code === 0 ? stdout.trim() : undefined;
  }

  branchHead(branch: string): Promise<string | undefined> {
    return this.resolve(`refs/heads/${branch}`);
  }

  /** A commit's committer date in git's form (`<seconds> <zone>`). */
  async readCommitDate(commit: string): Promise<string> {
    const { stdout } = await git(["show", "-s", "--format=%ct %cz", commit], {
      gitDir: this.gitDir,
    });
    return stdout.trim();
  }

  async readTree(commit: string): Promise<string> {
    const { stdout } = await git(["rev-parse", "--verify", `${commit}^{tree}`], {
      gitDir: this.gitDir,
    });
    return stdout.trim();
  }

  /** A commit's parents, first parent first. */
  async parents(commit: string): Promise<string[]> {
    const { stdout } = await git(["rev-list", "--parents", "-n", "1", commit], {
      gitDir: this.gitDir,
    });
    return stdout.trim().split(" ").slice(1);
  }

  /** Whether `ancestor` is reachable from `descendant` (a commit is its own ancestor). */
  async isAncestor(ancestor: string, descendant: string): Promise<boolean> {
    const { code } = await git(
      ["merge-base", "--is-ancestor", ancestor, descendant],
      { gitDir: this.gitDir },
      [0, 1],
    );
    return code === 0;
  }

  /**
   * The tree of a three-way merge of two commits (merge base found by git), or the files that
   * conflict. With `-z` the output is the tree id, then each conflicted path, then an empty field
   * before the informational messages, all NUL-separated (so any file name parses). Commits
   * without a common history cannot be merged either (git refuses with 128).
   */
  async mergeTree(ours: string, theirs: string): Promise<TreeMerge> {
    const args = ["merge-tree", "--write-tree", "-z", "--name-only", ours, theirs];
    const { stdout, stderr, code } = await git(args, { gitDir: this.gitDir }, [0, 1, 128]);
    if (code === 128) {
      if (stderr.includes("unrelated histories")) {
        return { clean: false, files: [], summary: "the histories are unrelated" };
      }
      throw new GitError(args, code, stderr);
    }
    const fields = stdout.split("\0");
    if (code === 0) return { clean: true, tree: fields[0] ?? "" };
    const end = fields.indexOf("", 1);
    const files = [...new Set(fields.slice(1, end === -1 ? undefined : end))];
    return { clean: false, files, summary: `conflicts in ${files.join(", ")}` };
  }

  /**
   * `author`: whom the commit is by (default: Mainline, like its committer); `date`: its author
   * and commit date in git's form (default: Mainline's commit dates).
   */
  async commitTree(
    tree: string,
    parents: string[],
    message: string,
    options: { author?: { name: string; email: string }; date?: string } = {},
  ): Promise<string> {
    const args = ["commit-tree", tree, ...parents.flatMap((parent) => ["-p", parent])];
    const { author, date } = options;
    const by = author ? { GIT_AUTHOR_NAME: author.name, GIT_AUTHOR_EMAIL: author.email } : {};
    const when = date ? { GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date } : {};
    const { stdout } = await git([...args, "-F", "-"], {
      gitDir: this.gitDir,
      input: message,
      env: { ...this.commitEnv(), ...by, ...when },
    });
    return stdout.trim();
  }

  /**
   * Points `ref` at `sha` if it still points at `expected` (`ZERO_OID`: if it does not exist).
   * False when the ref was elsewhere; a failure for any other reason throws.
   */
  async compareAndSwap(ref: string, sha: string, expected: string): Promise<boolean> {
    const args = ["update-ref", ref, sha, expected];
    const result = await runGit(args, { gitDir: this.gitDir });
    if (result.code === 0) return true;
    if (((await this.resolve(ref)) ?? ZERO_OID) !== expected) return false;
    throw new GitError(args, result.code, result.stderr);
  }

  /**
   * The non-merge commits of `head` that `base` lacks, oldest first, with their authors and
   * messages (what a squash or a rebase of a pull request lands).
   */
  async ownCommits(head: string, base: string): Promise<CommitSummary[]> {
    const format = "%H%x00%an%x00%ae%x00%B%x00";
    const args = ["log", "--reverse", "--topo-order", "--no-merges", "-z", `--format=${format}`];
    const { stdout } = await git([...args, head, `^${base}`], { gitDir: this.gitDir });
    const fields = stdout.split("\0");
    const commits: CommitSummary[] = [];
    // Each commit is four NUL-terminated fields; `-z` adds one more NUL between commits.
    for (let i = 0; i + 3 < fields.length; i += 5) {
      const [sha = "", name = "", email = "", message = ""] = fields.slice(i, i + 4);
      if (sha === "") break;
      commits.push({ sha: sha.trim(), author: { name, email }, message: message.trim() });
    }
    return commits;
  }

  /**
   * The first-parent history of `tip` down to (not including) what `stop` reaches, each commit
   * with its parents: `[commit, firstParent, ...otherParents]`, newest first.
   */
  async firstParentChain(tip: string, stop: string): Promise<string[][]> {
    const { stdout } = await git(["rev-list", "--first-parent", "--parents", tip, `^${stop}`], {
      gitDir: this.gitDir,
    });
    return stdout
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => line.split(" "));
  }

  /**
   * The first-parent history of `tip` down to (not including) what `stop` reaches, newest first;
   * with `paths`, only the commits that change one of them (against their first parent).
   */
  async firstParentCommits(tip: string, stop: string, paths: string[] = []): Promise<string[]> {
    const args = ["rev-list", "--first-parent", tip, `^${stop}`];
    if (paths.length > 0) args.push("--", ...paths);
    const { stdout } = await git(args, { gitDir: this.gitDir });
    return stdout.split("\n").filter((line) => line !== "");
  }

  /**
   * In one git call: the refs under `prefixes` whose tips `head` contains and `base` does not
   * (what `for-each-ref --merged=head --no-merged=base` lists), by full name, and whether `head`
   * contains `base` (`merge-base --is-ancestor base head`). `git log --boundary base..head` lists
   * the commits of head that base lacks, each with the refs that point at it, then the boundary:
   * the commits of base that are parents of those. A ref points into `base..head` exactly when
   * head contains its tip and base does not; and base's tip is on the boundary exactly when head
   * contains it (on a path down from head to it, the commit just above it is in `base..head`).
   * The output grows with the commits of `base..head`, the pull request's own.
   */
  async historyBetween(
    head: string,
    base: string,
    prefixes: readonly string[],
  ): Promise<{ refs: Map<string, string>; containsBase: boolean }> {
    assertObjectId(head, "head");
    assertObjectId(base, "base");
    const refs = new Map<string, string>();
    if (head === base) return { refs, containsBase: true };
    const { stdout } = await git(
      [
        "log",
        "--boundary",
        "--format=%m %H %D",
        "--decorate=full",
        ...prefixes.map((prefix) => `--decorate-refs=${prefix}`),
        `${base}..${head}`,
        "--",
      ],
      { gitDir: this.gitDir },
    );
    let containsBase = false;
    for (const line of stdout.split("\n")) {
      // "<mark> <commit> <refs, comma-separated>": `>` a commit of base..head, `-` the boundary.
      const [mark, commit, ...rest] = line.split(" ");
      if (commit === undefined) continue;
      if (mark === "-") {
        if (commit === base) containsBase = true;
        continue;
      }
      for (let name of rest.join(" ").split(", ")) {
        // HEAD and tags are filtered out by the prefixes; a bare HEAD would show as `HEAD -> …`.
        if (name.startsWith("HEAD -> ")) name = name.slice("HEAD -> ".length);
        if (prefixes.some((prefix) => name.startsWith(prefix))) refs.set(name, commit);
      }
    }
    return { refs, containsBase };
  }

  /** The commits of refs under `prefix` that `head` contains and `base` does not, by ref name. */
  async refsBetween(prefix: string, head: string, base: string): Promise<string[]> {
    const { refs } = await this.historyBetween(head, base, [prefix]);
    // In ref name order, as for-each-ref lists them (byte order), each commit once.
    const names = [...refs.keys()].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
    return [...new Set(names.map((name) => refs.get(name) as string))];
  }

  async updateRef(ref: string, sha: string): Promise<void> {
    await git(["update-ref", ref, sha], { gitDir: this.gitDir });
  }

  async deleteRef(ref: string): Promise<void> {
    await git(["update-ref", "-d", ref], { gitDir: this.gitDir });
  }

  /** A file's contents at a commit; undefined when the commit or the file is not there. */
  async readFile(commit: string, path: string): Promise<string | undefined> {
    const { stdout, code } = await git(
      ["cat-file", "blob", `${commit}:${path}`],
      { gitDir: this.gitDir },
      [0, 128],
    );
    return code === 0 ? stdout : undefined;
  }
}

/**
 * Which of the pull requests ahead a head that does not merge onto them conflicts with: none
 * when it conflicts with the base itself, else each one it does not merge with pairwise (all of
 * them if only the mix conflicts).
 */
export async function conflictsAhead(
  git: RepositoryGit,
  base: string,
  ahead: readonly { number: number; headSha: string }[],
  head: string,
): Promise<number[]> {
  if (!(await git.mergeTree(base, head)).clean) return [];
  const conflicting: number[] = [];
  for (const other of ahead) {
    if (!(await git.mergeTree(other.headSha, head)).clean) conflicting.push(other.number);
  }
  return conflicting.length === 0 ? ahead.map((other) => other.number) : conflicting;
}
