/**
 * Branch tips read straight from a bare repository's files, as git reads them (the loose
 * `refs/heads/<name>` first, else `packed-refs`): starting git is the dearest thing the local host
 * does, and every pull-request lookup needs two tips. Anything not recognised (a symbolic ref,
 * another ref storage, an untrusted name) answers `undefined`, and the caller asks git.
 */
import { readFile, stat } from "node:fs/promises";
import path from "node:path";

const OBJECT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/**
 * A branch name safe to use as a path below `refs/heads` (a subset of `git check-ref-format`: what
 * falls outside it is left to git).
 */
function plainBranchName(name: string): boolean {
  if (name === "" || name.length > 200) return false;
  return name.split("/").every(
    (part) =>
      part !== "" &&
      !part.startsWith(".") &&
      !part.endsWith(".lock") &&
      // Letters, digits and the punctuation branch names use; no control characters, no `\`.
      /^[A-Za-z0-9._+@=,-]+$/.test(part) &&
      !part.includes(".."),
  );
}

interface PackedRefs {
  /** What identifies the file's version: a rewrite (git renames a new file in) changes it. */
  version: string;
  refs: Map<string, string>;
}

/** The packed refs of each repository, parsed once per version of the file. */
const packedCache = new Map<string, PackedRefs>();
const PACKED_CACHE_LIMIT = 1_000;

async function packedRefs(gitDir: string): Promise<Map<string, string> | undefined> {
  const file = path.join(gitDir, "packed-refs");
  let version: string;
  try {
    const info = await stat(file, { bigint: true });
    version = `${String(info.ino)}:${String(info.size)}:${String(info.mtimeNs)}`;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return new Map();
    return undefined;
  }
  const cached = packedCache.get(file);
  if (cached?.version === version) return cached.refs;
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    // Replaced between the two calls: git is rewriting it; let git answer.
    return (error as NodeJS.ErrnoException).code === "ENOENT" ? new Map() : undefined;
  }
  const refs = new Map<string, string>();
  for (const line of text.split("\n")) {
    // The header (`# pack-refs with: …`) and the peeled ids of annotated tags (`^<id>`).
    if (line === "" || line.startsWith("#") || line.startsWith("^")) continue;
    const space = line.indexOf(" ");
    const id = line.slice(0, space);
    if (space <= 0 || !OBJECT_ID.test(id)) return undefined;
    refs.set(line.slice(space + 1), id);
  }
  packedCache.delete(file);
  packedCache.set(file, { version, refs });
  if (packedCache.size > PACKED_CACHE_LIMIT) {
    const oldest = packedCache.keys().next();
    if (!oldest.done) packedCache.delete(oldest.value);
  }
  return refs;
}

/**
 * The tips of `branches` in the bare repository at `gitDir` (a branch that does not exist is
 * absent), or `undefined` when the files say something this reader does not handle.
 */
export async function readBranchTips(
  gitDir: string,
  branches: readonly string[],
): Promise<Map<string, string> | undefined> {
  if (!branches.every(plainBranchName)) return undefined;
  const tips = new Map<string, string>();
  const missing: string[] = [];
  for (const branch of new Set(branches)) {
    let text: string;
    try {
      text = await readFile(path.join(gitDir, "refs", "heads", ...branch.split("/")), "utf8");
    } catch (error) {
      // No loose file: look in packed-refs.
      if ((error as NodeJS.ErrnoException).code === "ENOENT") {
        missing.push(branch);
        continue;
      }
      // Anything else (`refs/heads` not a directory, as in a reftable repository; `refs/heads/a`
      // a directory of branches `a/…`): let git say what it means.
      return undefined;
    }
    const id = text.trim();
    // `ref: …` (a symbolic ref) or anything else unexpected: git knows what to do with it.
    if (!OBJECT_ID.test(id)) return undefined;
    tips.set(branch, id);
  }
  if (missing.length > 0) {
    const packed = await packedRefs(gitDir);
    if (packed === undefined) return undefined;
    for (const branch of missing) {
      const id = packed.get(`refs/heads/${branch}`);
      if (id !== undefined) tips.set(branch, id);
    }
  }
  return tips;
}
