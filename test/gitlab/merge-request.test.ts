/**
 * The queue as a team sees it on a GitLab merge request: `/trunk` commands in notes (for
 * Developers and above; anyone else gets a reply and nothing changes), the queue's one note edited
 * in place (found again by its marker when GitLab answered its creation with a 502), the state
 * labels, and the queue's commit status on the commit it tested.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { COMMENT_MARKER } from "../../src/providers/presence/view.js";
import {
  GITLAB_HOST,
  connectProject,
  mergeRequestsOf,
  settleGitLab,
  startGitLabServer,
  startGitLabWorld,
  type GitLabWorld,
  testBranchPipeline,
  FAILS_ON_BAD,
} from "../helpers/gitlab.js";
import type { TestServer } from "../helpers/server.js";

const PROJECT = "tools/cli";
const REPO = { host: GITLAB_HOST, owner: "tools", name: "cli" };
const QUEUE = { repo: REPO, targetBranch: "main" };
const CI = testBranchPipeline(FAILS_ON_BAD);

let world: GitLabWorld;
let server: TestServer;
let bot: string;

vi.setConfig({ testTimeout: 120_000 });

beforeAll(async () => {
  world = await startGitLabWorld();
  const { gl } = world;
  gl.createUser("alice");
  gl.createUser("rita");
  await gl.createProject({ path: PROJECT, files: { "README.md": "cli\n", ".gitlab-ci.yml": CI } });
  gl.addMember(PROJECT, "alice", 30);
  // A Reporter: may comment, may not merge.
  gl.addMember(PROJECT, "rita", 20);
  const made = gl.createProjectToken(PROJECT, { accessLevel: 40 });
  bot = made.user.username;
  server = await startGitLabServer(world, { gitlabPresence: { pollIntervalMs: 50, settleMs: 0 } });
  await connectProject(world, server, PROJECT, made.token);
  const created = await server.call("createQueue", QUEUE);
  expect(created.status, created.text).toBe(200);
  const updated = await server.call("updateQueue", { ...QUEUE, stateLabelsEnabled: true });
  expect(updated.status, updated.text).toBe(200);
}, 60_000);

afterAll(async () => {
  await server.close();
  await world.gl.close();
});

const mrs = mergeRequestsOf(() => ({ world, server }), PROJECT, QUEUE, "topic");
const openMr = (files: Record<string, string>) => mrs.open(files);
const state = (number: number) => mrs.state(number);

const queueNotes = (iid: number) =>
  world.gl
    .notes(PROJECT, iid)
    .filter((note) => note.author.username === bot && note.body.startsWith(COMMENT_MARKER));
const replies = (iid: number) =>
  world.gl
    .notes(PROJECT, iid)
    .filter((note) => note.author.username === bot && !note.body.startsWith(COMMENT_MARKER));

async function shown(): Promise<void> {
  await settleGitLab(world, server);
  await server.services.gitlab?.presence.idle();
}

describe("the queue on a GitLab merge request", () => {
  it("takes `/trunk merge` from a Developer, shows one note and its labels, and merges", async () => {
    const { gl } = world;
    const iid = await openMr({ "feature.txt": "feature\n" });
    await gl.addNote(PROJECT, iid, "alice", "/trunk merge --priority=high");
    await expect.poll(() => state(iid), { timeout: 60_000, interval: 200 }).toBe("merged");
    await shown();
    expect(gl.mergeRequest(PROJECT, iid).state).toBe("merged");
    // One note, edited in place to the end.
    const notes = queueNotes(iid);
    expect(notes).toHaveLength(1);
    expect(notes[0]?.body).toContain("**Merged**");
    expect(notes[0]?.updatedAt).toBeGreaterThan(notes[0]?.createdAt ?? Infinity);
    // The state labels came and went.
    expect(gl.mergeRequest(PROJECT, iid).labels.filter((l) => l.startsWith("trunk:"))).toEqual([]);
    const labelWrites = gl.requestLog.filter(
      (request) =>
        request.method === "PUT" && request.path.endsWith(`/merge_requests/${String(iid)}`),
    );
    expect(labelWrites.length).toBeGreaterThan(0);
    // The queue's verdict, on the commit it tested (never on the merge request's head).
    const tested = gl.pipelines(PROJECT).filter((p) => p.ref.startsWith("trunk-merge/main/"));
    const statuses = tested.flatMap((p) => gl.commitStatuses(PROJECT, p.sha));
    expect(statuses.map((s) => [s.name, s.status])).toContainEqual([
      "Mainline merge queue (main)",
      "success",
    ]);
    const head = gl.mergeRequest(PROJECT, iid).sha;
    expect(gl.commitStatuses(PROJECT, head).map((s) => s.name)).not.toContain(
      "Mainline merge queue (main)",
    );
  });

  it("refuses a Reporter's command with a reply, and answers a command it does not know", async () => {
    const { gl } = world;
    const iid = await openMr({ "reporter.txt": "reporter\n" });
    await gl.addNote(PROJECT, iid, "rita", "/trunk merge");
    await gl.addNote(PROJECT, iid, "alice", "/trunk frobnicate");
    await shown();
    expect(await state(iid)).toBeUndefined();
    const said = replies(iid).map((note) => note.body);
    expect(said.some((body) => body.includes("@rita Only Developers and above"))).toBe(true);
    expect(said.some((body) => body.includes("Unknown command `frobnicate`"))).toBe(true);
    // Nothing else happened to the merge request.
    expect(gl.mergeRequest(PROJECT, iid).state).toBe("opened");
    expect(queueNotes(iid)).toHaveLength(0);
  });

  it("takes a merge request out with `/trunk cancel`", async () => {
    const { gl } = world;
    gl.setJobOutcome(PROJECT, "test", "stuck");
    try {
      const iid = await openMr({ "cancelled.txt": "cancelled\n" });
      await gl.addNote(PROJECT, iid, "alice", "/trunk merge");
      await expect.poll(() => state(iid), { timeout: 30_000, interval: 100 }).toBe("testing");
      await gl.addNote(PROJECT, iid, "alice", "/mainline cancel");
      await expect.poll(() => state(iid), { timeout: 30_000, interval: 100 }).toBe("cancelled");
      await shown();
      expect(gl.mergeRequest(PROJECT, iid).state).toBe("opened");
      expect(queueNotes(iid)[0]?.body).toContain("**Cancelled**");
      expect(gl.mergeRequest(PROJECT, iid).labels.filter((l) => l.startsWith("trunk:"))).toEqual(
        [],
      );
    } finally {
      gl.setJobOutcome(PROJECT, "test", null);
    }
  });

  it("finds its note again when GitLab made it but answered 502: still one note", async () => {
    const { gl } = world;
    const rule = gl.faults.add(
      gl.fault.didThen5xx({
        method: "POST",
        path: "/projects/:id/merge_requests/:iid/notes",
        times: 1,
      }),
    );
    const iid = await openMr({ "note-once.txt": "once\n" });
    await mrs.submit(iid);
    await expect.poll(() => state(iid), { timeout: 60_000, interval: 200 }).toBe("merged");
    await shown();
    expect(gl.faults.fired(rule)).toBe(1);
    const notes = queueNotes(iid);
    expect(notes).toHaveLength(1);
    expect(notes[0]?.body).toContain("**Merged**");
  });
});
