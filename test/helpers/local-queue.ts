/**
 * A merge queue on the local git host driven through the HTTP API, for the end-to-end tests:
 * the calls a person makes (create the repository, open pull requests, submit) and the reads
 * that check the outcome.
 */
import { createLocalProject, type LocalProject } from "./local-project.js";
import { waitFor } from "./process.js";

export const LOCAL = { host: "local", owner: "acme", name: "shop" };
export const QUEUE = { repo: LOCAL, targetBranch: "main" };
export const TERMINAL = new Set(["merged", "failed", "cancelled"]);

/** `POST /v1/<operation>`: any server, in this process or another. */
export type Call = (
  operation: string,
  body: unknown,
) => Promise<{ status: number; body: unknown; text?: string }>;

/** A call's body, or an error with the status and answer when it did not succeed. */
export async function ok<T>(call: Call, operation: string, body: unknown): Promise<T> {
  const answered = await call(operation, body);
  if (answered.status !== 200) {
    throw new Error(
      `${operation}: ${String(answered.status)} ${answered.text ?? JSON.stringify(answered.body)}`,
    );
  }
  return answered.body as T;
}

export interface TimelineEntry {
  at: string;
  toState: string;
  reason: string;
  detail: string | null;
}

/** Creates the repository, pushes the project and creates the queue with `settings`. */
export async function createRepositoryAndQueue(
  call: Call,
  settings: Record<string, unknown>,
  files?: Record<string, string>,
): Promise<LocalProject> {
  const { remoteUrl } = await ok<{ remoteUrl: string }>(call, "local/createRepository", {
    repo: LOCAL,
  });
  const project = await createLocalProject(remoteUrl, files);
  await ok(call, "createQueue", QUEUE);
  await ok(call, "updateQueue", { ...QUEUE, ...settings });
  return project;
}

/** Pushes branch `pr-k` with `changes`, opens a pull request titled `Add k`; its number. */
export async function openPullRequest(
  call: Call,
  project: LocalProject,
  k: number,
  changes: Record<string, string>,
): Promise<number> {
  const head = `pr-${String(k)}`;
  await project.branch(head, changes, `Add ${String(k)}`);
  const { number } = await ok<{ number: number }>(call, "local/openPullRequest", {
    repo: LOCAL,
    head,
    base: "main",
    title: `Add ${String(k)}`,
    author: "dev",
  });
  return number;
}

export async function submit(call: Call, number: number): Promise<void> {
  await ok(call, "submitPullRequest", { ...QUEUE, pr: { number } });
}

export async function stateOf(call: Call, number: number): Promise<string> {
  const pr = await ok<{ state: string }>(call, "getSubmittedPullRequest", {
    ...QUEUE,
    pr: { number },
  });
  return pr.state;
}

export async function allConcluded(call: Call, numbers: Iterable<number>): Promise<boolean> {
  for (const number of numbers) {
    if (!TERMINAL.has(await stateOf(call, number))) return false;
  }
  return true;
}

/**
 * Two pull requests submitted one after the other, once both concluded: `good` adds a number
 * (merges), `bad` adds a word where the built-in CI wants numbers (fails).
 */
export async function oneMergedOneFailed(
  call: Call,
  project: LocalProject,
): Promise<{ good: number; bad: number }> {
  const good = await openPullRequest(call, project, 1, { "numbers/p1.txt": "1\n" });
  const bad = await openPullRequest(call, project, 2, { "numbers/p2.txt": "two\n" });
  await submit(call, good);
  await submit(call, bad);
  await waitFor(() => allConcluded(call, [good, bad]), "both pull requests to conclude", {
    timeoutMs: 60_000,
    intervalMs: 200,
  });
  return { good, bad };
}

export async function timeline(call: Call, number: number): Promise<TimelineEntry[]> {
  const pr = await ok<{ timeline: TimelineEntry[] }>(call, "getSubmittedPullRequest", {
    ...QUEUE,
    pr: { number },
    includeTimeline: true,
  });
  return pr.timeline;
}
