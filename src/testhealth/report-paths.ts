/**
 * A report's `file` as a path in the repository. Some runners write absolute paths (Node's test
 * runner since 22, Trunk's Playwright reporter): a test's identity, which includes its file, would
 * then change with the directory the repository was checked out in (every run of the built-in CI
 * has a checkout of its own; self-hosted runners vary theirs). A path under the bundle's
 * `repo_root` becomes relative to it, with `/` separators; anything else is kept as written.
 */
export function repoRelativeFile(file: string | null, repoRoot: string | null): string | null {
  if (file === null || !repoRoot) return file;
  const windows = /^[A-Za-z]:[\\/]/.test(repoRoot);
  const normalize = (p: string) => (windows ? p.replaceAll("\\", "/") : p);
  const root = normalize(repoRoot).replace(/\/+$/, "");
  const path = normalize(file);
  if (root === "" || !path.startsWith(`${root}/`)) return file;
  const relative = path.slice(root.length + 1);
  return relative === "" ? file : relative;
}
