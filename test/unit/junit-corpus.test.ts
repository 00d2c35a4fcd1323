/**
 * The whole third-party fixture corpus (test/fixtures/junit, 274 real reports): every file
 * either parses or is rejected with a JunitParseError, never anything else; the known-bad files
 * are rejected; a few files are checked field by field.
 */
import { createReadStream } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  JunitParseError,
  mergeRepeatedTestcases,
  parseJunit,
  type ParsedTestCase,
} from "../../src/testhealth/junit/index.js";
import { corpusRoot, KNOWN_BAD, manifestCounts, reportFiles } from "../helpers/corpus.js";

type Outcome = { cases: ParsedTestCase[] } | { rejected: string };

async function parseFile(relative: string): Promise<Outcome> {
  const cases: ParsedTestCase[] = [];
  try {
    for await (const testCase of parseJunit(createReadStream(path.join(corpusRoot, relative)))) {
      cases.push(testCase);
    }
    return { cases };
  } catch (error) {
    if (error instanceof JunitParseError) return { rejected: error.reason };
    throw error;
  }
}

async function casesOf(relative: string): Promise<ParsedTestCase[]> {
  const outcome = await parseFile(relative);
  if ("rejected" in outcome) throw new Error(`${relative} rejected: ${outcome.rejected}`);
  return outcome.cases;
}

describe("JUnit fixture corpus", () => {
  const files = reportFiles();

  it("has the files the corpus README announces", () => {
    expect(files.length).toBe(274);
  });

  it("parses every file or rejects it with a reason, and rejects exactly the known-bad ones", async () => {
    const rejected = new Map<string, string>();
    let parsedCases = 0;
    for (const file of files) {
      const outcome = await parseFile(file);
      if ("rejected" in outcome) rejected.set(file, outcome.rejected);
      else parsedCases += outcome.cases.length;
    }
    for (const reason of rejected.values()) expect(reason.length).toBeGreaterThan(5);
    expect([...rejected.keys()].sort()).toEqual([...KNOWN_BAD].sort());
    expect(files.length - rejected.size).toBe(260);
    expect(parsedCases).toBeGreaterThan(10_000);
  });

  it("finds as many test cases in each file as its MANIFEST counts", async () => {
    const counts = manifestCounts();
    const mismatches: string[] = [];
    for (const [file, expected] of counts) {
      if (KNOWN_BAD.includes(file)) continue;
      const found = (await casesOf(file)).length;
      if (found !== expected) mismatches.push(`${file}: manifest ${expected}, parsed ${found}`);
    }
    expect(counts.size).toBeGreaterThan(250);
    expect(mismatches).toEqual([]);
  });

  it("gives the reasons for the known-bad files", async () => {
    const reasonOf = async (file: string) => {
      const outcome = await parseFile(file);
      return "rejected" in outcome ? outcome.rejected : "parsed";
    };
    expect(await reasonOf("datadog-datadog-ci/empty.xml")).toBe("empty file");
    expect(await reasonOf("datadog-datadog-ci/invalid.xml")).toBe(
      "root element <nothing> is not <testsuites> or <testsuite>",
    );
    expect(await reasonOf("enricomi-publish-unit-test-result-action/xml/non-xml.xml")).toBe(
      "not XML: the file does not start with '<'",
    );
    expect(await reasonOf(KNOWN_BAD[3] ?? "")).toBe(
      "not well-formed XML at line 18: unclosed CDATA section (file cut off?)",
    );
    expect(await reasonOf("mikepenz-action-junit-report/junit-web-test/expected.xml")).toMatch(
      /^not well-formed XML at line 9: /,
    );
  });

  it("reads Surefire flakyFailure as a failed attempt before the pass", async () => {
    const [testCase] = await casesOf(
      "mikepenz-action-junit-report/maven_surefire_flaky/surefire-report.xml",
    );
    expect(testCase?.name).toBe("createWebhook");
    expect(testCase?.parent).toBe(
      "io.sodadata.dependson.soda.integrations.msteams.MicrosoftTeamsCrudTest",
    );
    expect(testCase?.attempts.map((a) => `${a.kind}:${a.status}`)).toEqual([
      "flaky:failed",
      "final:passed",
    ]);
    const [flaky, final] = testCase?.attempts ?? [];
    expect(flaky?.failure?.type).toBe("java.lang.AssertionError");
    expect(flaky?.failure?.message).toBe("\nExpected: <false>\n     but: was <true>");
    expect(flaky?.failure?.text).toMatch(
      /^java\.lang\.AssertionError:[\s\S]*MicrosoftTeamsCrudTest\.java:58/,
    );
    expect(flaky?.systemErr).toBe("Some error output here");
    expect(final?.durationMs).toBe(683);
  });

  it("reads Surefire 3 rerunFailure for a test that always fails", async () => {
    const cases = await casesOf("jenkinsci-junit-plugin/gh-237/TEST-io.olamy.AlwaysFailTest.xml");
    const kinds = cases.flatMap((c) => c.attempts.map((a) => `${a.kind}:${a.status}`));
    expect(kinds).toContain("rerun:failed");
    expect(kinds).not.toContain("final:passed");
  });

  it("keeps the outermost suite as parent through 13 levels of nesting", async () => {
    const cases = await casesOf(
      "enricomi-publish-unit-test-result-action/nunit/nunit3/jenkins/NUnit-issue44527.junit-xml",
    );
    expect(new Set(cases.map((c) => c.parent)).size).toBe(1);
    const nested = await casesOf("mikepenz-action-junit-report/nested/junit.xml");
    expect(nested.map((c) => [c.name, c.parent])).toEqual([
      ["A", "All tests"],
      ["B", "All tests"],
      ["A", "All tests"],
      ["B", "All tests"],
      ["A", "All tests"],
    ]);
  });

  it("resolves testcase file attributes and merges repeated testcases into attempts", async () => {
    const cases = await casesOf(
      "mikepenz-action-junit-report/flaky_retries/flaky_with_classname_file.xml",
    );
    expect(cases[0]?.file).toBe("/home/runner/work/foo/bar/test_foo.py");
    expect(cases[0]?.line).toBe(42);
    const merged = mergeRepeatedTestcases(cases);
    expect(merged.map((c) => [c.classname, c.name, c.attempts.map((a) => a.status)])).toEqual([
      ["test_foo.TestFoo", "test_foo", ["failed", "failed", "passed"]],
      ["test_bar.TestBar", "test_foo", ["passed"]],
      ["test_baz.TestBaz", "test_baz", ["passed"]],
    ]);
  });

  it("takes mocha's suite-level file for its test cases", async () => {
    const [testCase] = await casesOf("mikepenz-action-junit-report/mocha/mocha.xml");
    expect(testCase?.file).toMatch(/\.(js|ts)$/);
  });

  it("reads go-junit-report output: packages as suites, CDATA output, suite timestamps", async () => {
    const cases = await casesOf("jstemmer-go-junit-report/001-report.xml");
    const log = cases.find((c) => c.name === "TestPassLog");
    expect(log).toMatchObject({ classname: "package/pass", parent: "package/pass", file: null });
    expect(log?.attempts[0]).toMatchObject({
      status: "passed",
      durationMs: 100,
      startedAt: Date.parse("2022-01-01T00:00:00Z"),
    });
    expect(log?.attempts[0]?.systemOut).toMatch(/^pass_test\.go:9: log line\n/);
    expect(cases.find((c) => c.name === "TestOne")?.attempts[0]?.status).toBe("failed");
  });

  it("reads jest-junit: suite per file, no file attribute, naive timestamps as UTC", async () => {
    const cases = await casesOf("dorny-test-reporter/jest-junit.xml");
    expect(cases[0]).toMatchObject({
      name: "Passing test",
      classname: "Test 1",
      parent: "__tests__\\main.test.js",
      file: null,
    });
    expect(cases[0]?.attempts[0]?.startedAt).toBe(Date.parse("2020-10-27T21:39:41Z"));
    expect(cases[1]?.attempts[0]?.failure?.text).toMatch(
      /^Error: expect\(received\)\.toBeTruthy\(\)/,
    );
  });

  it("reads pytest: parent 'pytest', skips, offsets in timestamps", async () => {
    const cases = await casesOf("dorny-test-reporter/python-xunit-pytest.xml");
    expect(cases).toHaveLength(10); // the suite claims tests="15": subtests are counted, not written
    expect(cases.every((c) => c.parent === "pytest")).toBe(true);
    expect(cases[0]?.attempts[0]?.startedAt).toBe(Date.parse("2025-11-15T16:51:49.548Z"));
    const skip = cases.find((c) => c.name === "test_always_skip");
    expect(skip?.attempts[0]?.status).toBe("skipped");
  });

  it("decodes entities and astral-plane characters", async () => {
    const entities = await casesOf(
      "enricomi-publish-unit-test-result-action/junit-xml/with-xml-entities.xml",
    );
    expect(entities.map((c) => c.name)).toEqual([
      'Test with "quotes" in the test name',
      "Test with 'apostrophe' in the test name",
      "Test with & in the test name",
      "Test with < and > in the test name",
    ]);
    expect(entities[2]?.attempts[0]?.failure).toEqual({
      type: null,
      message: "A message with &",
      text: "Content with &",
    });
    const unicode = await casesOf(
      "enricomi-publish-unit-test-result-action/junit-xml/unsupported-unicode.xml",
    );
    expect(unicode[0]?.name).toBe("test 1 헴䜝헱홐㣇㿷䔭𒍺𡓿𠄉㦓");
    expect(unicode[0]?.file).toBe("test/test-1.py");
  });

  it("reads a BOM-prefixed report", async () => {
    const cases = await casesOf("allure-framework-allure2/testsuites.xml");
    expect(cases.length).toBeGreaterThan(0);
  });

  it("reads the many timestamp shapes of one file", async () => {
    const cases = await casesOf(
      "jenkinsci-junit-plugin/junit-report-testsuite-various-timestamps.xml",
    );
    const startedAt = (name: string) => cases.find((c) => c.name === name)?.attempts[0]?.startedAt;
    expect(startedAt("testPopup")).toBe(Date.parse("2024-01-03T00:00:00Z")); // date only
    expect(startedAt("testResize")).toBe(Date.parse("2024-01-03T13:27:11.210Z")); // -01:00
    expect(startedAt("testShop")).toBe(Date.parse("2024-01-03T11:27:15Z")); // +01:00
    expect(startedAt("testGet")).toBe(Date.parse("2024-01-03T12:27:54Z")); // space separator
  });
});
