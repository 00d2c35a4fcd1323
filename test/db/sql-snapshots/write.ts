import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { QUERIES_DIR, renderAll } from "./render.js";

/** `npm run sql:snapshots`: rewrites `src/db/queries/` from the stores' current SQL. */
const files = await renderAll();
mkdirSync(QUERIES_DIR, { recursive: true });
for (const name of readdirSync(QUERIES_DIR)) {
  if (name.endsWith(".sql") && !files.has(name)) rmSync(`${QUERIES_DIR}${name}`);
}
for (const [name, content] of files) writeFileSync(`${QUERIES_DIR}${name}`, content);
console.log(`wrote ${String(files.size)} SQL snapshots to src/db/queries/`);
