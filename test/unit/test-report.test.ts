import { describe, expect, it } from "vitest";
import {
  decodeTestReport,
  encodeTestReport,
  encodeTestResult,
  TEST_CASE_RUN_STATUS,
  testCasesOfReport,
  TestReportError,
} from "../../src/testhealth/bundle/index.js";
import { repeatedRunsReport, rspecPluginReport } from "../helpers/trunk-reports.js";

const { success, failure, skipped } = TEST_CASE_RUN_STATUS;

describe("Trunk's binary test report", () => {
  it("reads a report shaped as Trunk's RSpec plugin writes it (a bare TestResult)", () => {
    const bytes = rspecPluginReport();
    const report = decodeTestReport(bytes);
    expect(report.uploader_metadata).toMatchObject({ origin: "rspec" });
    const cases = testCasesOfReport(report);
    expect(cases).toHaveLength(13);
    expect(cases.filter((c) => c.parent === "context_ruby")).toHaveLength(5);
    expect(cases.filter((c) => c.parent === "RSpec Expectations")).toHaveLength(8);
    expect(cases[0]).toMatchObject({
      name: "context_ruby should be able to env_parse",
      classname: "test.test_parse_and_validate_spec",
      file: "./test/test_parse_and_validate_spec.rb",
      line: 8,
      idAttribute: null,
    });
    expect(cases.every((c) => c.attempts.length === 1 && c.attempts[0]?.status === "passed")).toBe(
      true,
    );
    expect(cases[0]?.attempts[0]?.startedAt).toBe(1748019964000);
  });

  it("reads repeated runs as attempts, the last one the outcome", () => {
    const bytes = repeatedRunsReport();
    const report = decodeTestReport(bytes);
    expect(report.uploader_metadata?.variant).toBe("test-variant");
    const cases = testCasesOfReport(report);
    expect(cases.map((c) => [c.name, c.attempts.map((a) => `${a.status}/${a.kind}`)])).toEqual([
      [
        "Hello",
        [
          "failed/flaky",
          "failed/flaky",
          "passed/flaky",
          "passed/flaky",
          "failed/flaky",
          "passed/final",
        ],
      ],
      ["Goodbye", ["passed/rerun", "failed/final"]],
    ]);
    expect(cases[0]?.attempts[0]?.failure).toEqual({
      type: null,
      message: null,
      text: "Failure at 1:00",
    });
  });

  it("round-trips the current TestReport shape, ordering attempts by attempt_index", () => {
    const bytes = encodeTestReport({
      uploader_metadata: { version: "0.10.0", origin: "rspec" },
      test_results: [
        {
          test_case_runs: [
            {
              name: "retries",
              classname: "Spec",
              parent_name: "suite",
              file: "spec/a_spec.rb",
              status: success,
              attempt_index: { number: 1 },
              started_at: { seconds: 1_700_000_010, nanos: 0 },
              finished_at: { seconds: 1_700_000_011, nanos: 500_000_000 },
            },
            {
              name: "retries",
              classname: "Spec",
              parent_name: "suite",
              file: "spec/a_spec.rb",
              status: failure,
              attempt_index: { number: 0 },
              test_output: { message: "expected 1", text: "expected 1\n  at spec/a_spec.rb:3" },
            },
            { name: "skips", classname: "Spec", parent_name: "suite", status: skipped },
            { name: "unspecified", id: "trunk:custom-id" },
          ],
        },
      ],
    });
    const cases = testCasesOfReport(decodeTestReport(bytes));
    expect(cases).toHaveLength(3);
    expect(cases[0]?.attempts).toEqual([
      expect.objectContaining({
        status: "failed",
        kind: "flaky",
        failure: { type: null, message: "expected 1", text: "expected 1\n  at spec/a_spec.rb:3" },
      }),
      expect.objectContaining({
        status: "passed",
        kind: "final",
        durationMs: 1500,
        startedAt: 1_700_000_010_000,
      }),
    ]);
    expect(cases[1]).toMatchObject({
      name: "skips",
      file: null,
      attempts: [{ status: "skipped" }],
    });
    expect(cases[2]).toMatchObject({
      idAttribute: "trunk:custom-id",
      attempts: [{ status: "skipped" }],
    });
  });

  it("reads the older bare TestResult shape too", () => {
    const bytes = encodeTestResult({
      test_case_runs: [{ name: "old", classname: "C", parent_name: "s", status: failure }],
    });
    const cases = testCasesOfReport(decodeTestReport(bytes));
    expect(cases.map((c) => [c.name, c.attempts[0]?.status])).toEqual([["old", "failed"]]);
  });

  it("keeps the beginning and the end of an over-long failure text", () => {
    const text = `start ${"x".repeat(20_000)} end`;
    const bytes = encodeTestReport({
      test_results: [
        {
          test_case_runs: [{ name: "long", status: failure, test_output: { text, message: text } }],
        },
      ],
    });
    const failed = testCasesOfReport(decodeTestReport(bytes))[0]?.attempts[0]?.failure;
    for (const kept of [failed?.text ?? "", failed?.message ?? ""]) {
      expect(kept.length).toBeLessThanOrEqual(8_000);
      expect(kept.startsWith("start ")).toBe(true);
      expect(kept.endsWith(" end")).toBe(true);
      expect(kept).toContain("characters cut");
    }
  });

  it("rejects bytes that are not a report", () => {
    expect(() => decodeTestReport(Buffer.from("<testsuites></testsuites>\u0007\u0007"))).toThrow(
      TestReportError,
    );
  });
});
