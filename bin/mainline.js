#!/usr/bin/env -S node --max-semi-space-size=16
// Entry point of the `mainline` command. `npm ci` builds dist/ (the "prepare" script).
// The server's young generation is Node 20's (16 MiB semi-spaces): Node 24's default doubles it,
// which put a server ingesting a 640 MiB failure text over its 300 MB peak (ADR 0033). V8 reads
// the flag only at start, so it is on the command line: here, `npm start` and the test helpers.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const entry = new URL("../dist/cli/main.js", import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write("mainline: dist/ is missing. Run `npm ci` (or `npm run build`) first.\n");
  process.exit(1);
}
await import(entry.href);
