/**
 * The fake GitHub in a process of its own (forked by a benchmark, IPC messages), so that the
 * benchmark's own CPU figures are Mainline's alone. It sets up one organization, one repository
 * with `pulls` open pull requests and the App installed on it, and answers questions about the
 * requests it served (operations, statuses) and its own CPU.
 */
import { FakeGitHub } from "../../test/helpers/fake-github/index.js";

export type FakeRequest =
  | { op: "setup"; pulls: number }
  | { op: "mark" }
  | { op: "requests"; since: number }
  | { op: "cpu" }
  | { op: "push"; branch: string }
  | { op: "close" };

export interface FakeSetup {
  url: string;
  app: { id: number; privateKey: string; webhookSecret: string };
  installationId: number;
  repo: { owner: string; name: string };
  setupMs: number;
}

let gh: FakeGitHub | undefined;
const OWNER = "bench-gh";
const NAME = "widgets";
const REPO = `${OWNER}/${NAME}`;

async function setup(pulls: number): Promise<FakeSetup> {
  const started = performance.now();
  gh = await FakeGitHub.start({ seed: 1, validate: false, rateLimit: 15_000 });
  gh.createOrganization(OWNER);
  gh.createUser("alice");
  gh.addOrgMember(OWNER, "alice", "admin");
  const app = gh.createApp({ slug: "mainline-bench" });
  await gh.createRepository({ owner: OWNER, name: NAME });
  // One commit ahead of main, on a branch per pull request (GitHub takes one PR per head).
  const sha = await gh.commit(REPO, {
    branch: "feature-0",
    files: { "a.txt": "1\n" },
    by: "alice",
  });
  for (let i = 0; i < pulls; i++) {
    if (i > 0) await gh.push(REPO, `feature-${i}`, sha, { by: "alice" });
    await gh.openPullRequest(REPO, { head: `feature-${i}`, by: "alice" });
  }
  const { id: installationId } = gh.installApp(app.id, { account: OWNER, repositories: "all" });
  return {
    url: gh.url,
    app: { id: app.id, privateKey: app.privateKey, webhookSecret: app.webhookSecret },
    installationId,
    repo: { owner: OWNER, name: NAME },
    setupMs: Math.round(performance.now() - started),
  };
}

async function answer(request: FakeRequest): Promise<unknown> {
  if (request.op === "setup") return setup(request.pulls);
  if (!gh) throw new Error("not set up");
  switch (request.op) {
    case "mark":
      return gh.requests.mark();
    case "requests": {
      const entries = gh.requests.entries.slice(request.since);
      const statuses: Record<string, number> = {};
      for (const e of entries) statuses[e.status] = (statuses[e.status] ?? 0) + 1;
      return { byOperation: gh.requests.byOperation(request.since), statuses };
    }
    case "cpu": {
      const { user, system } = process.cpuUsage();
      return { cpuMs: Math.round((user + system) / 1000) };
    }
    case "push":
      await gh.commit(REPO, {
        branch: request.branch,
        files: { "b.txt": `${Date.now()}\n` },
        by: "alice",
      });
      return null;
    case "close":
      await gh.close();
      return null;
  }
}

process.on("message", (message: { id: number; request: FakeRequest }) => {
  answer(message.request).then(
    (result) => process.send?.({ id: message.id, result }),
    (error: unknown) =>
      process.send?.({
        id: message.id,
        error: error instanceof Error ? error.message : String(error),
      }),
  );
});
