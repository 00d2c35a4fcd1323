import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LocalRepositories } from "../../src/providers/local/git/repositories.js";
import { LocalRefWatcher, type RefChange } from "../../src/providers/local/git/watcher.js";
import { WorkingClone, temporaryDirectory } from "../helpers/local-git.js";
import { type OwnedRepoRef } from "../../src/organizations/repositories.js";

const app = { organizationId: "org-1", host: "local", owner: "acme", name: "app" };
const missing = { organizationId: "org-1", host: "local", owner: "acme", name: "missing" };

let root: string;
let repositories: LocalRepositories;
let clone: WorkingClone;
let changes: RefChange[];
let errors: string[];
let watched: OwnedRepoRef[];
let watcher: LocalRefWatcher;

beforeEach(async () => {
  root = temporaryDirectory("watcher");
  repositories = new LocalRepositories(join(root, "data"));
  const { path } = await repositories.create(app);
  clone = WorkingClone.of(path, join(root, "work"));
  clone.git("symbolic-ref", "HEAD", "refs/heads/main");
  clone.commit({ branch: "main", files: { "a.txt": "a\n" } });
  clone.commit({ branch: "feature", from: "main", files: { "f.txt": "f\n" } });
  clone.push("main", "feature");
  changes = [];
  errors = [];
  watched = [app];
  watcher = new LocalRefWatcher({
    repositories,
    watched: () => watched,
    listener: (change) => {
      changes.push(change);
    },
    logger: { error: (message) => errors.push(message) },
    intervalMs: 20,
  });
});

afterEach(async () => {
  vi.useRealTimers();
  await watcher.stop();
  rmSync(root, { recursive: true, force: true });
});

describe("LocalRefWatcher", () => {
  it("reports pushed, new and deleted branches after a first poll that only records", async () => {
    await watcher.pollNow();
    expect(changes).toEqual([]);

    const before = clone.git("rev-parse", "main");
    const pushed = clone.commit({ branch: "main", files: { "a.txt": "b\n" } });
    const created = clone.commit({ branch: "new", from: "main", files: { "n.txt": "n\n" } });
    clone.push("main", "new");
    const deleted = clone.git("rev-parse", "feature");
    clone.push("--delete", "feature");
    await watcher.pollNow();

    expect(changes).toEqual([
      { repo: app, branch: "main", before, after: pushed },
      { repo: app, branch: "new", before: null, after: created },
      { repo: app, branch: "feature", before: deleted, after: null },
    ]);
    await watcher.pollNow();
    expect(changes).toHaveLength(3);
  });

  it("does not report Mainline's own test branches", async () => {
    await watcher.pollNow();
    clone.push("main:refs/heads/mainline-merge/main/run-1");
    await watcher.pollNow();
    expect(changes).toEqual([]);
  });

  it("polls on its own once started, and leaves no timer behind when stopped", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    let noticed: (change: RefChange) => void = () => undefined;
    const seen = new Promise<RefChange>((resolve) => (noticed = resolve));
    watcher = new LocalRefWatcher({
      repositories,
      watched: () => watched,
      listener: (change) => {
        noticed(change);
      },
      logger: { error: (message) => errors.push(message) },
      intervalMs: 50,
    });
    watcher.start();
    expect(vi.getTimerCount()).toBe(1);
    await watcher.pollNow();
    const pushed = clone.commit({ branch: "main", files: { "a.txt": "c\n" } });
    clone.push("main");

    vi.advanceTimersByTime(50);
    // The next poll is planned when this one ends, never while it runs.
    expect(vi.getTimerCount()).toBe(0);
    expect((await seen).after).toBe(pushed);
    await watcher.pollNow();
    expect(vi.getTimerCount()).toBe(1);

    await watcher.stop();
    expect(vi.getTimerCount()).toBe(0);
  });

  it("keeps going past a repository that is missing or a listener that fails", async () => {
    watched = [missing, app];
    let calls = 0;
    watcher = new LocalRefWatcher({
      repositories,
      watched: () => watched,
      listener: () => {
        calls += 1;
        throw new Error("listener broke");
      },
      logger: { error: (message) => errors.push(message) },
    });
    await watcher.pollNow();
    clone.push("main:other", "main:third");
    await watcher.pollNow();

    expect(calls).toBe(2);
    expect(errors.filter((e) => e.includes("acme/missing"))).toHaveLength(2);
    expect(errors.filter((e) => e.includes("handling"))).toHaveLength(2);
  });
});
