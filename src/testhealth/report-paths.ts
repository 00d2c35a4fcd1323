/**
 * A report's `file` as a path in the repository: a path under the bundle's `repo_root` becomes
 * relative to it (`/` separators), anything else is kept as written. Some runners write absolute
 * paths, and a test's identity includes its file, so it must not change with the checkout's place.
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
