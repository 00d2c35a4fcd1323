import { describe, expect, it } from "vitest";
import {
  mergeRepeatedTestcases,
  parseJunitText,
  type ParsedTestCase,
} from "../../src/testhealth/junit/index.js";

const kindsAndStatuses = (testCase: ParsedTestCase | undefined) =>
  testCase?.attempts.map((a) => `${a.kind}:${a.status}`);

async function merged(body: string): Promise<ParsedTestCase[]> {
  return mergeRepeatedTestcases(
    await parseJunitText(`<testsuite name="pytest">${body}</testsuite>`),
  );
}

describe("mergeRepeatedTestcases", () => {
  it("folds repeated records of one identity into attempts, in file order", async () => {
    const cases = await merged(
      '<testcase classname="pkg" name="TestA" time="0.1"><failure message="boom"/></testcase>' +
        '<testcase classname="pkg" name="TestB" time="0.1"/>' +
        '<testcase classname="pkg" name="TestA" time="0.2"/>',
    );
    expect(cases.map((c) => c.name)).toEqual(["TestA", "TestB"]);
    expect(kindsAndStatuses(cases[0])).toEqual(["flaky:failed", "final:passed"]);
    expect(cases[0]?.attempts[0]?.failure?.message).toBe("boom");
    expect(kindsAndStatuses(cases[1])).toEqual(["final:passed"]);
  });

  it("keeps tests apart when file, classname or suite differ", async () => {
    const cases = mergeRepeatedTestcases(
      await parseJunitText(
        '<testsuites><testsuite name="a"><testcase classname="x" name="t"/><testcase classname="y" name="t"/>' +
          '<testcase classname="x" name="t" file="f.py"/></testsuite>' +
          '<testsuite name="b"><testcase classname="x" name="t"/></testsuite></testsuites>',
      ),
    );
    expect(cases).toHaveLength(4);
  });

  it("marks earlier attempts of a test that never passed as reruns", async () => {
    const [testCase] = await merged(
      '<testcase name="t" time="1"><failure/></testcase><testcase name="t" time="1"><error/></testcase>',
    );
    expect(kindsAndStatuses(testCase)).toEqual(["rerun:failed", "final:failed"]);
  });

  it("keeps a real pass followed by a failure (pass-then-fail order)", async () => {
    const [testCase] = await merged(
      '<testcase name="t" time="1.0"/><testcase name="t" time="1.0"><failure/></testcase>',
    );
    expect(kindsAndStatuses(testCase)).toEqual(["rerun:passed", "final:failed"]);
  });

  it("reads pytest-rerunfailures 16.6.1 hollow records before a failure as failed attempts", async () => {
    // facebookresearch/ProgramBench#64: an always-failing test with --reruns=2.
    const [testCase] = await merged(
      '<testcase classname="test_rerun" name="test_always_fails" />' +
        '<testcase classname="test_rerun" name="test_always_fails" />' +
        '<testcase classname="test_rerun" name="test_always_fails">' +
        '<failure message="assert False">AssertionError</failure></testcase>',
    );
    expect(kindsAndStatuses(testCase)).toEqual(["rerun:failed", "rerun:failed", "final:failed"]);
    expect(testCase?.attempts[0]?.failure).toBeNull(); // the placeholder says nothing about why
  });

  it("reads a hollow record without time before a final pass as a failed attempt", async () => {
    const [testCase] = await merged(
      '<testcase classname="c" name="t" /><testcase classname="c" name="t" time="0.31" />',
    );
    expect(kindsAndStatuses(testCase)).toEqual(["flaky:failed", "final:passed"]);
  });

  it("keeps zero-duration passes that no failure follows (go test -count=3)", async () => {
    const [testCase] = await merged(
      '<testcase name="t" time="0.000"/><testcase name="t" time="0.000"/><testcase name="t" time="0.000"/>',
    );
    expect(kindsAndStatuses(testCase)).toEqual(["flaky:passed", "flaky:passed", "final:passed"]);
  });

  it("keeps a zero-duration pass after a failure (gotestsum --rerun-fails)", async () => {
    const [testCase] = await merged(
      '<testcase name="t" time="0.000"><failure/></testcase><testcase name="t" time="0.000"/>',
    );
    expect(kindsAndStatuses(testCase)).toEqual(["flaky:failed", "final:passed"]);
  });

  it("does not treat a record with output as hollow", async () => {
    const [testCase] = await merged(
      '<testcase name="t" time="0"><system-out>ran</system-out></testcase><testcase name="t" time="1"><failure/></testcase>',
    );
    expect(kindsAndStatuses(testCase)).toEqual(["rerun:passed", "final:failed"]);
  });

  it("keeps retry elements inside merged records", async () => {
    const [testCase] = await merged(
      '<testcase name="t" time="1"><failure/><rerunFailure/></testcase>' +
        '<testcase name="t" time="1"><flakyFailure/></testcase>',
    );
    expect(kindsAndStatuses(testCase)).toEqual([
      "rerun:failed",
      "flaky:failed",
      "flaky:failed",
      "final:passed",
    ]);
  });

  it("does not modify its input", async () => {
    const cases = await parseJunitText(
      '<testsuite><testcase name="t"/><testcase name="t" time="1"><failure/></testcase></testsuite>',
    );
    const before = structuredClone(cases);
    mergeRepeatedTestcases(cases);
    expect(cases).toEqual(before);
  });
});
