// Builds dist/: the compiled sources (tsc), the single-file uploader, the dashboard's files.
// With --if-stale (`npm start`), only when the inputs changed since the last build: a hash of
// every source file, build script, tsconfig and the lockfile is kept in dist/.build-stamp.
// --check only says whether dist/ is up to date (exit 0) or stale (exit 1).
// Usage: node scripts/build.mjs [--if-stale | --check]
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const STAMP = path.join(root, "dist/.build-stamp");
const INPUTS = [
  "src",
  "scripts/build.mjs",
  "scripts/bundle-uploader.mjs",
  "scripts/build-web-assets.mjs",
  "tsconfig.json",
  "tsconfig.build.json",
  "package.json",
  "package-lock.json",
];

/** A file itself; a directory's files, recursively. */
function filesOf(relative) {
  const full = path.join(root, relative);
  if (!statSync(full).isDirectory()) return [relative];
  return readdirSync(full, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)));
}

/** One hash of the inputs' names and contents, in a stable order. */
function inputsHash() {
  const hash = createHash("sha256");
  const files = INPUTS.flatMap(filesOf).sort();
  for (const file of files) {
    hash.update(`${file}\0`);
    hash.update(readFileSync(path.join(root, file)));
    hash.update("\0");
  }
  return `${hash.digest("hex")} node ${process.versions.node}`;
}

const node = process.versions.node;
const ifStale = process.argv.includes("--if-stale");
const check = process.argv.includes("--check");
const wanted = inputsHash();
const built = existsSync(STAMP) ? readFileSync(STAMP, "utf8").trim() : "";
const upToDate = built === wanted && existsSync(path.join(root, "dist/cli/main.js"));
if (check) {
  console.log(
    upToDate ? "dist/ is up to date" : "dist/ is stale: its sources changed since it was built",
  );
  process.exit(upToDate ? 0 : 1);
}
if (ifStale && upToDate) {
  console.log(`dist/ is up to date; starting on Node.js ${node} (${process.execPath})`);
  process.exit(0);
}

console.log(`building dist/ on Node.js ${node} (${process.execPath})`);
rmSync(STAMP, { force: true });
const steps = [
  [path.join(root, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.build.json"],
  [path.join(root, "scripts/bundle-uploader.mjs")],
  [path.join(root, "scripts/build-web-assets.mjs")],
];
for (const step of steps) {
  const result = spawnSync(process.execPath, step, { cwd: root, stdio: "inherit" });
  if (result.status !== 0) process.exit(result.status ?? 1);
}
writeFileSync(STAMP, `${wanted}\n`);
