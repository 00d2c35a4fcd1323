#!/usr/bin/env node
// Entry point of the `mainline` command. `npm ci` builds dist/ (the "prepare" script).
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const entry = new URL("../dist/cli/main.js", import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write("mainline: dist/ is missing. Run `npm ci` (or `npm run build`) first.\n");
  process.exit(1);
}
await import(entry.href);
