import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BareRepository, git, type Signature } from "../fake-github/git.js";
import { ZERO_SHA } from "./model.js";

/**
 * One project's bare repository, on the fake GitHub's git plumbing (merge-tree, commit-tree,
 * compare-and-swap update-ref). Refs are always read from git, never cached: git's own
 * receive-pack moves them behind the fake's back. The repository's hooks enforce protected
 * branches (pre-receive, from rules the fake hands it per push) and report what a push changed
 * (post-receive).
 */

export { git, type Signature };

const PRE_RECEIVE = `#!/bin/bash
# Protected branches, as GitLab's pre-receive check refuses them. FAKE_GITLAB_PROTECTED holds one
# rule a line: <wildcard> TAB <may push: 0|1> TAB <may force-push: 0|1>, for the pushing user.
zero=${ZERO_SHA}
status=0
while read -r old new ref; do
  case "$ref" in refs/heads/*) ;; *) continue ;; esac
  branch=\${ref#refs/heads/}
  rule=""
  while IFS=$'\\t' read -r pattern push force; do
    [ -z "$pattern" ] && continue
    if [[ "$branch" == $pattern ]]; then rule="$push $force"; break; fi
  done <<< "$FAKE_GITLAB_PROTECTED"
  [ -z "$rule" ] && continue
  read -r push force <<< "$rule"
  if [ "$new" = "$zero" ]; then
    echo "GitLab: You can only delete protected branches using the web interface." >&2
    status=1
  elif [ "$push" != 1 ]; then
    echo "GitLab: You are not allowed to push code to protected branches on this project." >&2
    status=1
  elif [ "$old" != "$zero" ] && ! git merge-base --is-ancestor "$old" "$new"; then
    if [ "$force" != 1 ]; then
      echo "GitLab: You are not allowed to force push code to a protected branch on this project." >&2
      status=1
    fi
  fi
done
exit $status
`;

const POST_RECEIVE = `#!/bin/sh
# What the push changed ("<old> <new> <ref>" lines), for the fake's push processing.
if [ -n "$FAKE_GITLAB_PUSH_LOG" ]; then cat >> "$FAKE_GITLAB_PUSH_LOG"; else cat > /dev/null; fi
exit 0
`;

export interface RefUpdate {
  ref: string;
  before: string;
  after: string;
}

export interface PushCommit {
  sha: string;
  message: string;
  title: string;
  timestamp: string;
  author: { name: string; email: string };
  added: string[];
  modified: string[];
  removed: string[];
}

export class ProjectRepo {
  readonly bare: BareRepository;
  private scratch = 0;

  constructor(
    readonly gitDir: string,
    private readonly tmpDir: string,
  ) {
    this.bare = new BareRepository(gitDir);
  }

  static async create(gitDir: string, defaultBranch: string, tmpDir: string): Promise<ProjectRepo> {
    await BareRepository.create(gitDir, defaultBranch);
    const repo = new ProjectRepo(gitDir, tmpDir);
    for (const [key, value] of [
      ["http.receivepack", "true"],
      ["receive.advertisePushOptions", "true"],
      ["uploadpack.allowAnySHA1InWant", "true"],
    ]) {
      await repo.run(["config", key ?? "", value ?? ""]);
    }
    // GitLab's hidden refs: fetchable (merge request heads) but never pushable.
    for (const hidden of ["refs/merge-requests", "refs/pipelines", "refs/keep-around"]) {
      await repo.run(["config", "--add", "receive.hideRefs", hidden]);
    }
    mkdirSync(join(gitDir, "hooks"), { recursive: true });
    for (const [name, text] of [
      ["pre-receive", PRE_RECEIVE],
      ["post-receive", POST_RECEIVE],
    ] as const) {
      const file = join(gitDir, "hooks", name);
      writeFileSync(file, text);
      chmodSync(file, 0o755);
    }
    return repo;
  }

  run(
    args: string[],
    options?: Parameters<typeof git>[2],
  ): Promise<{ stdout: string; code: number }> {
    return git(this.gitDir, args, options);
  }

  /** A full ref's value, read from git (null when absent). */
  async readRef(ref: string): Promise<string | null> {
    const { stdout, code } = await this.run(
      ["rev-parse", "--verify", "--quiet", `${ref}^{commit}`],
      {
        okCodes: [1, 128],
      },
    );
    return code === 0 ? stdout.trim() : null;
  }

  branchHead(branch: string): Promise<string | null> {
    return this.readRef(`refs/heads/${branch}`);
  }

  /** Every ref under `prefix`: full name → sha. */
  async refs(prefix = "refs/"): Promise<Map<string, string>> {
    const { stdout } = await this.run([
      "for-each-ref",
      "--format=%(refname) %(objectname)",
      prefix,
    ]);
    const out = new Map<string, string>();
    for (const line of stdout.split("\n")) {
      const [name, sha] = line.split(" ");
      if (name !== undefined && name !== "" && sha !== undefined) out.set(name, sha);
    }
    return out;
  }

  /** Compare-and-swap (`expected` ZERO_SHA: must not exist; `next` ZERO_SHA: delete). */
  async updateRef(ref: string, next: string, expected: string | null): Promise<boolean> {
    const args =
      next === ZERO_SHA
        ? ["update-ref", "-d", ref, ...(expected === null ? [] : [expected])]
        : ["update-ref", ref, next, ...(expected === null ? [] : [expected])];
    const { code } = await this.run(args, { okCodes: [1, 128] });
    return code === 0;
  }

  /** Resolves a branch name or a (short) sha to a commit. */
  resolve(spec: string): Promise<string | null> {
    return this.bare.resolveCommit(spec);
  }

  /** A commit of `files` (null deletes) on `parent` (null: a root commit). */
  async commitFiles(
    parent: string | null,
    files: Record<string, string | null>,
    message: string,
    author: Signature,
    committer: Signature = author,
  ): Promise<string> {
    const index = join(this.tmpDir, `index-${process.pid}-${++this.scratch}-${Date.now()}`);
    try {
      const tree = await this.bare.treeWith(parent, files, index);
      return await this.bare.commitTree(
        tree,
        parent === null ? [] : [parent],
        message,
        author,
        committer,
      );
    } finally {
      rmSync(index, { force: true });
    }
  }

  async readFile(commit: string, path: string): Promise<string | null> {
    const file = await this.bare.readFile(commit, path);
    return file === null ? null : file.content.toString("utf8");
  }

  /**
   * The commits a push brought (oldest first): `before..after`, or for a new branch those not on
   * any other branch. `total` counts them all; `shas` are the newest `limit`.
   */
  async pushedCommits(update: RefUpdate, limit = 20): Promise<{ total: number; shas: string[] }> {
    if (update.after === ZERO_SHA) return { total: 0, shas: [] };
    let range: string[];
    if (update.before !== ZERO_SHA) range = [`${update.before}..${update.after}`];
    else {
      const others = [...(await this.refs("refs/heads/")).keys()].filter((r) => r !== update.ref);
      range = [update.after, ...(others.length > 0 ? ["--not", ...others] : [])];
    }
    const { stdout } = await this.run(["rev-list", "--reverse", "--topo-order", ...range]);
    const all = stdout.split("\n").filter((l) => l !== "");
    return { total: all.length, shas: all.slice(-limit) };
  }

  /** A commit as push payloads show it, with the files it added, modified and removed. */
  async pushCommit(sha: string): Promise<PushCommit> {
    const data = await this.bare.readCommit(sha);
    const { stdout } = await this.run([
      "diff-tree",
      "--root",
      "--no-commit-id",
      "--name-status",
      "-r",
      "-z",
      "-m",
      "--first-parent",
      sha,
    ]);
    const parts = stdout.split("\0").filter((p) => p !== "");
    const out: PushCommit = {
      sha,
      message: data.message,
      title: data.message.split("\n")[0] ?? "",
      timestamp: data.author.date.replace(/Z$/, "+00:00"),
      author: { name: data.author.name, email: data.author.email },
      added: [],
      modified: [],
      removed: [],
    };
    for (let i = 0; i + 1 < parts.length; i += 2) {
      const status = parts[i] ?? "";
      const file = parts[i + 1] ?? "";
      if (status.startsWith("A")) out.added.push(file);
      else if (status.startsWith("D")) out.removed.push(file);
      else out.modified.push(file);
    }
    return out;
  }
}
