/**
 * Summarizes a V8 CPU profile (`node --cpu-prof`) of the webhook server: where the main thread's
 * time went, by the groups docs/benchmarks.md reports (self time: the function the sample was
 * in; async callers do not show on the stacks, so inclusive time by caller would mislead).
 *
 * Usage: npx tsx bench/support/cpu-profile-summary.ts <file.cpuprofile> [more…]
 */
import { readFile } from "node:fs/promises";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Self time: the first group whose test matches the frame. */
const GROUPS: [string, (f: ProfileNode["callFrame"]) => boolean][] = [
  ["idle", (f) => f.functionName === "(idle)"],
  ["garbage collection", (f) => f.functionName === "(garbage collector)"],
  // better-sqlite3 runs statements synchronously: in its caller's frame, Kysely's SQLite driver.
  [
    "SQLite statements (better-sqlite3)",
    (f) => f.url.includes("better-sqlite3") || f.url.includes("dialect/sqlite/sqlite-driver"),
  ],
  ["kysely (building, compiling, plugins)", (f) => f.url.includes("/kysely/")],
  ["pg driver", (f) => /\/pg(-protocol|-pool|-types)?\//.test(f.url)],
  ["fastify and its plugins", (f) => /fastify|find-my-way|light-my-request|avvio/.test(f.url)],
  ["inbox, dispatch, handlers", (f) => /webhooks\/(inbox|dispatch|registry|handlers)/.test(f.url)],
  ["receiver, writer, signature", (f) => /webhooks\/(receiver|writer|signature)/.test(f.url)],
  ["stores (src/db)", (f) => f.url.includes("/src/db/")],
  ["other Mainline code", (f) => f.url.includes("/src/")],
  ["loading modules (start-up)", (f) => f.url.startsWith("node:internal/modules")],
  ["node internals", (f) => f.url.startsWith("node:")],
  ["(program) and natives", () => true],
];

for (const file of process.argv.slice(2)) {
  const profile = JSON.parse(await readFile(file, "utf8")) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const ms = (profile.timeDeltas[i] ?? 0) / 1000;
    total += ms;
    const node = byId.get(id);
    if (!node) return;
    const group = GROUPS.find(([, test]) => test(node.callFrame))?.[0] ?? "?";
    self.set(group, (self.get(group) ?? 0) + ms);
  });
  const busy = total - (self.get("idle") ?? 0);
  process.stdout.write(
    `${file}: ${(total / 1000).toFixed(2)} s sampled, ${(busy / 1000).toFixed(2)} s busy\n`,
  );
  for (const [group] of GROUPS) {
    const ms = self.get(group) ?? 0;
    if (ms > 0) process.stdout.write(`  ${(ms / 1000).toFixed(2).padStart(6)} s  ${group}\n`);
  }
}
