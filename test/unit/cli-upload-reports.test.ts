import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fileProgress } from "../../src/cli/upload/progress.js";
import { describeCounts, readReports, summarizeCases } from "../../src/testhealth/reports.js";
import { parseJunitText } from "../../src/testhealth/junit/index.js";

const REPORT = `<?xml version="1.0"?>
<testsuites>
  <testsuite name="auth" file="src/auth.test.ts">
    <testcase name="passes" classname="Auth" time="0.1"/>
    <testcase name="fails" classname="Auth" time="0.2">
      <failure message="expected 200, got 500" type="AssertionError">stack</failure>
    </testcase>
    <testcase name="errors" classname="Auth" time="0.2"><error type="TypeError"/></testcase>
    <testcase name="skipped" classname="Auth"><skipped/></testcase>
    <testcase name="flaky" classname="Auth" time="0.3">
      <flakyFailure message="timeout"/>
    </testcase>
    <testcase name="rerun" classname="Auth" time="0.3">
      <failure message="still failing"/>
      <rerunFailure message="first"/>
    </testcase>
  </testsuite>
</testsuites>`;

/** gotestsum --rerun-fails: repeated records of one test, the last one decides. */
const REPEATED = `<testsuites><testsuite name="pkg">
  <testcase name="TestRetry" classname="pkg" time="0.1"><failure message="first"/></testcase>
  <testcase name="TestRetry" classname="pkg" time="0.1"/>
  <testcase name="TestBroken" classname="pkg" time="0.1"><failure message="one"/></testcase>
  <testcase name="TestBroken" classname="pkg" time="0.1"><failure message="two"/></testcase>
</testsuite></testsuites>`;

describe("summarizeCases", () => {
  it("counts each test by its final attempt; failures carry their identity and message", async () => {
    const summary = summarizeCases(await parseJunitText(REPORT));
    expect(summary.counts).toEqual({ passed: 2, failed: 3, skipped: 1 });
    expect(summary.failed).toEqual([
      {
        name: "fails",
        classname: "Auth",
        parent: "auth",
        file: "src/auth.test.ts",
        idAttribute: null,
        message: "expected 200, got 500",
      },
      {
        name: "errors",
        classname: "Auth",
        parent: "auth",
        file: "src/auth.test.ts",
        idAttribute: null,
        message: "TypeError",
      },
      {
        name: "rerun",
        classname: "Auth",
        parent: "auth",
        file: "src/auth.test.ts",
        idAttribute: null,
        message: "still failing",
      },
    ]);
  });

  it("repeated records are one test: passed on retry is a pass, failed twice is one failure", async () => {
    const summary = summarizeCases(await parseJunitText(REPEATED));
    expect(summary.counts).toEqual({ passed: 1, failed: 1, skipped: 0 });
    expect(summary.failed.map((t) => [t.name, t.message])).toEqual([["TestBroken", "two"]]);
  });

  it("describeCounts", () => {
    expect(describeCounts({ passed: 1, failed: 0, skipped: 0 })).toBe(
      "1 test (1 passed, 0 failed, 0 skipped)",
    );
    expect(describeCounts({ passed: 2, failed: 3, skipped: 1 })).toBe(
      "6 tests (2 passed, 3 failed, 1 skipped)",
    );
  });
});

describe("readReports", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), "mainline-reports-"));
    writeFileSync(path.join(dir, "a.xml"), REPORT);
    writeFileSync(path.join(dir, "b.xml"), REPEATED);
    writeFileSync(path.join(dir, "empty.xml"), "");
    writeFileSync(path.join(dir, "cut.xml"), REPORT.slice(0, 300));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it("adds the readable files up; unreadable ones are listed with a reason and count nothing", async () => {
    const files = ["a.xml", "b.xml", "empty.xml", "cut.xml", "missing.xml"].map((f) =>
      path.join(dir, f),
    );
    const progress: string[] = [];
    const summary = await readReports(files, (done, total) => progress.push(`${done}/${total}`));
    expect(summary.files).toBe(5);
    expect(summary.counts).toEqual({ passed: 3, failed: 4, skipped: 1 });
    expect(summary.failed.map((t) => t.name)).toEqual(["fails", "errors", "rerun", "TestBroken"]);
    expect(summary.unreadable.map((u) => path.basename(u.path))).toEqual([
      "empty.xml",
      "cut.xml",
      "missing.xml",
    ]);
    for (const { reason } of summary.unreadable) expect(reason).not.toBe("");
    expect(progress).toEqual(["1/5", "2/5", "3/5", "4/5", "5/5"]);
  });
});

describe("fileProgress", () => {
  const sink = (isTTY: boolean) => {
    const writes: string[] = [];
    return { writes, isTTY, write: (text: string) => writes.push(text) };
  };

  it("on a terminal: one line redrawn at most every 100 ms, finished with a newline", () => {
    const tty = sink(true);
    let now = 0;
    const progress = fileProgress(tty, { now: () => now });
    progress(1, 400);
    now = 50;
    progress(2, 400);
    now = 150;
    progress(3, 400);
    progress(400, 400);
    expect(tty.writes).toEqual([
      "\r  read 1/400 files",
      "\r  read 3/400 files",
      "\r  read 400/400 files\n",
    ]);
  });

  it("elsewhere: a line every N files and at the end; nothing for small sets", () => {
    const plain = sink(false);
    const progress = fileProgress(plain, { every: 100 });
    for (let done = 1; done <= 250; done++) progress(done, 250);
    expect(plain.writes).toEqual([
      "  read 100/250 files\n",
      "  read 200/250 files\n",
      "  read 250/250 files\n",
    ]);
    const small = sink(false);
    const few = fileProgress(small, { every: 100 });
    for (let done = 1; done <= 12; done++) few(done, 12);
    expect(small.writes).toEqual([]);
  });
});
