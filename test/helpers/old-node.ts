/**
 * A Node.js 20 binary, to prove that what must keep running on old CI images (the uploader) does.
 * The system's `node` when it is 20 (as on Debian 12), else MAINLINE_TEST_NODE20, else the Node
 * 20 that scripts/ensure-node.sh fetches from the npm registry into its cache.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { REPO_ROOT } from "./process.js";

export const OLD_NODE_VERSION = "20.20.2";

function versionOf(binary: string): string | undefined {
  try {
    return execFileSync(binary, ["--version"], { encoding: "utf8" }).trim();
  } catch {
    return undefined;
  }
}

export function node20(): string {
  const candidates = [
    process.env.MAINLINE_TEST_NODE20,
    ...(process.env.PATH ?? "").split(path.delimiter).map((dir) => path.join(dir, "node")),
  ];
  for (const candidate of candidates) {
    if (candidate && existsSync(candidate) && versionOf(candidate)?.startsWith("v20.")) {
      return candidate;
    }
  }
  const dir = execFileSync(
    "bash",
    [path.join(REPO_ROOT, "scripts/ensure-node.sh"), OLD_NODE_VERSION],
    {
      encoding: "utf8",
    },
  ).trim();
  return path.join(dir, "node");
}
