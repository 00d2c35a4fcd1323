import { execFile } from "node:child_process";
import { mkdirSync } from "node:fs";
import { ZERO_SHA } from "./model.js";

/**
 * Real git under the fake: one bare repository per fake repository, driven by plumbing. Merges use
 * `git merge-tree --write-tree` (conflicts are git's), commits `git commit-tree`, and every ref
 * change is a compare-and-swap `git update-ref <ref> <new> <old>`, so that "not a fast forward" and
 * two merges racing for one branch behave as they do on GitHub.
 */

export interface Signature {
  name: string;
  email: string;
  /** ISO time; git's own clock when absent. */
  date?: string;
}

export interface CommitData {
  sha: string;
  tree: string;
  parents: string[];
  author: Required<Signature>;
  committer: Required<Signature>;
  message: string;
}

export interface FileChange {
  filename: string;
  previousFilename?: string;
  status: "added" | "removed" | "modified" | "renamed" | "copied" | "changed" | "unchanged";
  additions: number;
  deletions: number;
  patch: string;
  sha: string | null;
}

export class GitFailure extends Error {
  constructor(
    message: string,
    readonly code: number | null,
    readonly stderr: string,
  ) {
    super(message);
  }
}

const BASE_ENV: NodeJS.ProcessEnv = {
  PATH: process.env.PATH,
  HOME: "/nonexistent",
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_TERMINAL_PROMPT: "0",
  LANG: "C",
};

/** git processes started so far (a cost measure for tests and benchmarks of the fake). */
export const gitStats = { processes: 0, byCommand: new Map<string, number>() };

export function git(
  gitDir: string,
  args: string[],
  options: { input?: string; env?: NodeJS.ProcessEnv; okCodes?: number[] } = {},
): Promise<{ stdout: string; code: number }> {
  gitStats.processes++;
  const command = args.find((a) => !a.startsWith("-") && !a.includes("=")) ?? "?";
  gitStats.byCommand.set(command, (gitStats.byCommand.get(command) ?? 0) + 1);
  return new Promise((resolve, reject) => {
    const child = execFile(
      "git",
      ["--git-dir", gitDir, ...args],
      { env: { ...BASE_ENV, ...options.env }, maxBuffer: 64 * 1024 * 1024, encoding: "utf8" },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : null;
        if (code !== null && (code === 0 || (options.okCodes ?? []).includes(code))) {
          resolve({ stdout, code });
        } else {
          reject(
            new GitFailure(
              `git ${args.join(" ")}: ${stderr.trim() || (error?.message ?? "failed")}`,
              code,
              stderr,
            ),
          );
        }
      },
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}

function signatureEnv(author: Signature, committer: Signature): NodeJS.ProcessEnv {
  return {
    GIT_AUTHOR_NAME: author.name,
    GIT_AUTHOR_EMAIL: author.email,
    ...(author.date !== undefined ? { GIT_AUTHOR_DATE: author.date } : {}),
    GIT_COMMITTER_NAME: committer.name,
    GIT_COMMITTER_EMAIL: committer.email,
    ...(committer.date !== undefined ? { GIT_COMMITTER_DATE: committer.date } : {}),
  };
}

function parseSignature(line: string): Required<Signature> {
  const m = /^(.*) <(.*)> (\d+) ([+-]\d{4})$/.exec(line);
  if (m === null) return { name: line, email: "", date: new Date(0).toISOString() };
  return {
    name: m[1] ?? "",
    email: m[2] ?? "",
    date: new Date(Number(m[3]) * 1000).toISOString().replace(/\.\d{3}Z$/, "Z"),
  };
}

const FULL_SHA = /^[0-9a-f]{40}$/;

export class BareRepository {
  /** Answers about immutable objects (keyed by full SHAs), so that a commit is read once. */
  private readonly memo = new Map<string, Promise<unknown>>();
  private readonly refs = new Map<string, string | null>();

  constructor(readonly gitDir: string) {}

  private cached<T>(key: string, shas: (string | null)[], compute: () => Promise<T>): Promise<T> {
    if (!shas.every((s) => s === null || FULL_SHA.test(s))) return compute();
    const hit = this.memo.get(key);
    if (hit !== undefined) return hit as Promise<T>;
    if (this.memo.size > 100_000) this.memo.clear();
    const promise = compute();
    this.memo.set(key, promise);
    promise.catch(() => this.memo.delete(key));
    return promise;
  }

  static async create(gitDir: string, defaultBranch: string): Promise<BareRepository> {
    mkdirSync(gitDir, { recursive: true });
    await git(gitDir, ["init", "--quiet", "--bare", `--initial-branch=${defaultBranch}`]);
    return new BareRepository(gitDir);
  }

  run(
    args: string[],
    options?: Parameters<typeof git>[2],
  ): Promise<{ stdout: string; code: number }> {
    return git(this.gitDir, args, options);
  }

  /** The object a full ref name points at, or null. */
  async readRef(ref: string): Promise<string | null> {
    // Refs move only through casRef and fetchFrom, so their values are kept once read.
    const known = this.refs.get(ref);
    if (known !== undefined) return known;
    const { stdout, code } = await this.run(["rev-parse", "--verify", "--quiet", ref], {
      okCodes: [1],
    });
    const value = code === 0 ? stdout.trim() : null;
    if (ref.startsWith("refs/")) this.refs.set(ref, value);
    return value;
  }

  /** A branch, tag, full ref or (abbreviated) SHA resolved to a commit, or null. */
  async resolveCommit(spec: string): Promise<string | null> {
    if (spec.startsWith("-")) return null;
    const candidates = /^[0-9a-f]{4,40}$/i.test(spec)
      ? [spec, `refs/heads/${spec}`]
      : spec.startsWith("refs/")
        ? [spec]
        : [`refs/heads/${spec}`, `refs/tags/${spec}`, spec];
    for (const candidate of candidates) {
      const { stdout, code } = await this.run(
        ["rev-parse", "--verify", "--quiet", "--end-of-options", `${candidate}^{commit}`],
        { okCodes: [1, 128] },
      );
      if (code === 0) return stdout.trim();
    }
    return null;
  }

  async objectType(sha: string): Promise<string | null> {
    const { stdout, code } = await this.run(["cat-file", "-t", sha], { okCodes: [1, 128] });
    return code === 0 ? stdout.trim() : null;
  }

  /** `for-each-ref` under a prefix: [full ref name, object sha]. */
  async listRefs(prefix: string): Promise<[string, string][]> {
    const { stdout } = await this.run([
      "for-each-ref",
      "--format=%(refname) %(objectname)",
      prefix,
    ]);
    return stdout
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => {
        const [name = "", sha = ""] = l.split(" ");
        return [name, sha];
      });
  }

  /**
   * Compare-and-swap: moves `ref` from `expected` (ZERO_SHA: must not exist) to `next`. Returns
   * false when the ref was not at `expected`, which is how a race is lost.
   */
  async casRef(ref: string, next: string, expected: string): Promise<boolean> {
    const args =
      next === ZERO_SHA ? ["update-ref", "-d", ref, expected] : ["update-ref", ref, next, expected];
    try {
      await this.run(args);
      this.refs.set(ref, next === ZERO_SHA ? null : next);
      return true;
    } catch (error) {
      this.refs.delete(ref);
      if (error instanceof GitFailure) return false;
      throw error;
    }
  }

  isAncestor(ancestor: string, descendant: string): Promise<boolean> {
    return this.cached(`anc ${ancestor} ${descendant}`, [ancestor, descendant], () =>
      this.isAncestorUncached(ancestor, descendant),
    );
  }

  private async isAncestorUncached(ancestor: string, descendant: string): Promise<boolean> {
    const { code } = await this.run(["merge-base", "--is-ancestor", ancestor, descendant], {
      okCodes: [1],
    });
    return code === 0;
  }

  mergeBase(a: string, b: string): Promise<string | null> {
    return this.cached(`mb ${a} ${b}`, [a, b], () => this.mergeBaseUncached(a, b));
  }

  private async mergeBaseUncached(a: string, b: string): Promise<string | null> {
    const { stdout, code } = await this.run(["merge-base", a, b], { okCodes: [1] });
    return code === 0 ? stdout.trim() : null;
  }

  /** A three-way merge of two commits without a work tree: the tree, or the conflicting paths. */
  mergeTree(ours: string, theirs: string): Promise<{ tree: string } | { conflicts: string[] }> {
    return this.cached(`mt ${ours} ${theirs}`, [ours, theirs], () =>
      this.mergeTreeUncached(ours, theirs),
    );
  }

  private async mergeTreeUncached(
    ours: string,
    theirs: string,
  ): Promise<{ tree: string } | { conflicts: string[] }> {
    const { stdout, code } = await this.run(
      [
        "merge-tree",
        "--write-tree",
        "--name-only",
        "--no-messages",
        "--allow-unrelated-histories",
        ours,
        theirs,
      ],
      { okCodes: [1] },
    );
    const lines = stdout.split("\n").filter((l) => l !== "");
    if (code === 0) return { tree: lines[0] ?? "" };
    return { conflicts: lines.slice(1) };
  }

  /**
   * Applies `commit` onto `onto` as cherry-pick does (a three-way merge whose base is the commit's
   * parent). git 2.39's merge-tree takes no explicit base, so the three trees are wrapped in
   * throwaway commits whose only common ancestor is the parent's tree.
   */
  async cherryPickTree(
    commit: string,
    onto: string,
  ): Promise<{ tree: string } | { conflicts: string[] }> {
    const data = await this.readCommit(commit);
    const parentTree =
      data.parents[0] === undefined
        ? await this.emptyTree()
        : (await this.readCommit(data.parents[0])).tree;
    const ontoTree = (await this.readCommit(onto)).tree;
    const who = { name: "fake", email: "fake@example.invalid", date: "2000-01-01T00:00:00Z" };
    const base = await this.commitTree(parentTree, [], "base", who, who);
    const left = await this.commitTree(ontoTree, [base], "ours", who, who);
    const right = await this.commitTree(data.tree, [base], "theirs", who, who);
    return this.mergeTree(left, right);
  }

  emptyTree(): Promise<string> {
    return this.cached("empty-tree", [], () => this.emptyTreeUncached());
  }

  private async emptyTreeUncached(): Promise<string> {
    const { stdout } = await this.run(["mktree"], { input: "" });
    return stdout.trim();
  }

  async commitTree(
    tree: string,
    parents: string[],
    message: string,
    author: Signature,
    committer: Signature,
  ): Promise<string> {
    const args = ["commit-tree", tree, ...parents.flatMap((p) => ["-p", p])];
    const { stdout } = await this.run(args, {
      input: message,
      env: signatureEnv(author, committer),
    });
    return stdout.trim();
  }

  readCommit(sha: string): Promise<CommitData> {
    return this.cached(`commit ${sha}`, [sha], () => this.readCommitUncached(sha));
  }

  private async readCommitUncached(sha: string): Promise<CommitData> {
    const { stdout } = await this.run(["cat-file", "commit", sha]);
    const split = stdout.indexOf("\n\n");
    const header = split < 0 ? stdout : stdout.slice(0, split);
    const message = split < 0 ? "" : stdout.slice(split + 2);
    let tree = "";
    const parents: string[] = [];
    let author = parseSignature("");
    let committer = parseSignature("");
    for (const line of header.split("\n")) {
      const space = line.indexOf(" ");
      const key = line.slice(0, space);
      const value = line.slice(space + 1);
      if (key === "tree") tree = value;
      else if (key === "parent") parents.push(value);
      else if (key === "author") author = parseSignature(value);
      else if (key === "committer") committer = parseSignature(value);
    }
    return { sha, tree, parents, author, committer, message: message.replace(/\n$/, "") };
  }

  /** Commits reachable from `head` and not from `base` (oldest first), as `base..head`. */
  commitsBetween(base: string | null, head: string): Promise<string[]> {
    return this.cached(`between ${base ?? "-"} ${head}`, [base, head], () =>
      this.commitsBetweenUncached(base, head),
    );
  }

  private async commitsBetweenUncached(base: string | null, head: string): Promise<string[]> {
    const range = base === null ? [head] : [`${base}..${head}`];
    const { stdout } = await this.run(["rev-list", "--reverse", "--topo-order", ...range]);
    return stdout.split("\n").filter((l) => l !== "");
  }

  countBetween(base: string, head: string): Promise<number> {
    return this.cached(`count ${base} ${head}`, [base, head], () =>
      this.countBetweenUncached(base, head),
    );
  }

  private async countBetweenUncached(base: string, head: string): Promise<number> {
    const { stdout } = await this.run(["rev-list", "--count", `${base}..${head}`]);
    return Number(stdout.trim());
  }

  /** A file's content at a commit, or null when the path is not a file there. */
  async readFile(
    commit: string,
    path: string,
  ): Promise<{ sha: string; content: Buffer; size: number } | null> {
    const { stdout, code } = await this.run(["ls-tree", "-z", "--full-tree", commit, "--", path], {
      okCodes: [128],
    });
    if (code !== 0) return null;
    const entry = stdout.split("\0").find((e) => e !== "");
    if (entry === undefined) return null;
    const m = /^(\d+) (\w+) ([0-9a-f]+)\t(.*)$/s.exec(entry);
    if (m === null || m[2] !== "blob" || m[4] !== path) return null;
    const sha = m[3] ?? "";
    const content = await new Promise<Buffer>((resolve, reject) => {
      execFile(
        "git",
        ["--git-dir", this.gitDir, "cat-file", "blob", sha],
        { env: BASE_ENV, encoding: "buffer", maxBuffer: 64 * 1024 * 1024 },
        (error, out) => {
          if (error === null) resolve(out);
          else reject(new GitFailure(error.message, null, ""));
        },
      );
    });
    return { sha, content, size: content.length };
  }

  /** A directory listing at a commit: [mode, type, sha, name]. */
  async listTree(
    commit: string,
    path: string,
  ): Promise<{ mode: string; type: string; sha: string; name: string }[] | null> {
    const target = path === "" ? commit : `${commit}:${path}`;
    const { stdout, code } = await this.run(["ls-tree", "-z", target], { okCodes: [128] });
    if (code !== 0) return null;
    return stdout
      .split("\0")
      .filter((e) => e !== "")
      .map((e) => {
        const m = /^(\d+) (\w+) ([0-9a-f]+)\t(.*)$/s.exec(e);
        return { mode: m?.[1] ?? "", type: m?.[2] ?? "", sha: m?.[3] ?? "", name: m?.[4] ?? "" };
      });
  }

  /** Files changed between two commits, with per-file patches (GitHub's `files[]`). */
  diff(base: string, head: string): Promise<FileChange[]> {
    return this.cached(`diff ${base} ${head}`, [base, head], () => this.diffUncached(base, head));
  }

  private async diffUncached(base: string, head: string): Promise<FileChange[]> {
    const [{ stdout: status }, { stdout: numstat }, { stdout: raw }] = await Promise.all([
      this.run(["diff", "--name-status", "-z", "-M", base, head]),
      this.run(["diff", "--numstat", "-z", "-M", base, head]),
      this.run(["diff", "--raw", "-z", "-M", "--no-abbrev", base, head]),
    ]);
    const statusParts = status.split("\0").filter((p) => p !== "");
    const changes: FileChange[] = [];
    for (let i = 0; i < statusParts.length;) {
      const code = statusParts[i++] ?? "";
      const letter = code[0] ?? "M";
      if (letter === "R" || letter === "C") {
        const from = statusParts[i++] ?? "";
        const to = statusParts[i++] ?? "";
        changes.push({
          filename: to,
          previousFilename: from,
          status: letter === "R" ? "renamed" : "copied",
          additions: 0,
          deletions: 0,
          patch: "",
          sha: null,
        });
      } else {
        const file = statusParts[i++] ?? "";
        const kinds: Record<string, FileChange["status"]> = {
          A: "added",
          D: "removed",
          M: "modified",
          T: "changed",
        };
        changes.push({
          filename: file,
          status: kinds[letter] ?? "modified",
          additions: 0,
          deletions: 0,
          patch: "",
          sha: null,
        });
      }
    }
    // numstat -z: "add\tdel\tpath\0" or, for renames, "add\tdel\t\0from\0to\0".
    const numParts = numstat.split("\0");
    const counts = new Map<string, [number, number]>();
    for (let i = 0; i < numParts.length; i++) {
      const part = numParts[i] ?? "";
      if (part === "") continue;
      const [add = "0", del = "0", path = ""] = part.split("\t");
      let file = path;
      if (path === "") {
        i += 2;
        file = numParts[i] ?? "";
      }
      counts.set(file, [Number(add) || 0, Number(del) || 0]);
    }
    // raw -z: ":oldmode newmode oldsha newsha status\0path\0[path2\0]"
    const rawParts = raw.split("\0");
    const shas = new Map<string, string>();
    for (let i = 0; i < rawParts.length; i++) {
      const meta = rawParts[i] ?? "";
      if (!meta.startsWith(":")) continue;
      const fields = meta.slice(1).split(" ");
      const newSha = fields[3] ?? "";
      const statusLetter = (fields[4] ?? "")[0];
      let file = rawParts[++i] ?? "";
      if (statusLetter === "R" || statusLetter === "C") file = rawParts[++i] ?? "";
      shas.set(file, newSha);
    }
    // One `git diff` for every patch, split per file on its "diff --git" header.
    const { stdout: patches } = await this.run(["diff", "-M", "--no-color", base, head]);
    const sections = patches.split(/^(?=diff --git )/m).filter((p) => p.startsWith("diff --git "));
    for (const change of changes) {
      const [additions, deletions] = counts.get(change.filename) ?? [0, 0];
      change.additions = additions;
      change.deletions = deletions;
      const sha = shas.get(change.filename);
      change.sha = sha === undefined || /^0+$/.test(sha) ? null : sha;
      const header = (section: string): string => section.slice(0, section.indexOf("\n"));
      const section = sections.find((p) => header(p).endsWith(` b/${change.filename}`));
      const hunk = section === undefined ? -1 : section.indexOf("\n@@");
      change.patch =
        section === undefined || hunk < 0 ? "" : section.slice(hunk + 1).replace(/\n$/, "");
    }
    return changes;
  }

  /** Paths that differ between two commits (for the workflow-file permission check). */
  async changedPaths(base: string, head: string): Promise<string[]> {
    const { stdout } = await this.run(["diff", "--name-only", "-z", base, head]);
    return stdout.split("\0").filter((p) => p !== "");
  }

  /** Writes files onto a commit's tree (null deletes) and returns the new tree, via a scratch index. */
  async treeWith(
    baseCommit: string | null,
    files: Record<string, string | null>,
    indexFile: string,
  ): Promise<string> {
    const env = { GIT_INDEX_FILE: indexFile };
    if (baseCommit === null) await this.run(["read-tree", "--empty"], { env });
    else await this.run(["read-tree", baseCommit], { env });
    // `--index-info` needs no work tree: mode 0 removes a path, a blob line adds or replaces one.
    const lines: string[] = [];
    for (const [path, content] of Object.entries(files)) {
      if (content === null) {
        lines.push(`0 ${"0".repeat(40)}\t${path}`);
      } else {
        const { stdout } = await this.run(["hash-object", "-w", "--stdin"], { input: content });
        lines.push(`100644 ${stdout.trim()}\t${path}`);
      }
    }
    if (lines.length > 0) {
      await this.run(["update-index", "--index-info"], { env, input: lines.join("\n") + "\n" });
    }
    const { stdout } = await this.run(["write-tree"], { env });
    return stdout.trim();
  }

  /** Copies a commit and its history from another bare repository (a fork) into this one. */
  async fetchFrom(other: BareRepository, sha: string, ref: string): Promise<void> {
    this.refs.delete(ref);
    await this.run([
      "-c",
      "uploadpack.allowAnySHA1InWant=true",
      "fetch",
      "--quiet",
      "--no-tags",
      other.gitDir,
      `+${sha}:${ref}`,
    ]);
  }
}
