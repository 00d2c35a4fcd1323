/**
 * Trunk's binary test report (`internal.bin` or `internal/<n>` in a bundle), protobuf of package
 * `test_context.test_run`. The schema below is ours: Trunk's field numbers and types, only the
 * fields we read. Pure: bytes in, the JUnit parser's `ParsedTestCase`s out; a `TestReport` is tried
 * first, then a bare `TestResult` (older uploaders), as Trunk's own reader does.
 */
import protobuf from "protobufjs";
import type { AttemptKind, AttemptStatus, ParsedAttempt, ParsedTestCase } from "../junit/types.js";
import { NAME_LIMIT, TEXT_LIMIT } from "../junit/types.js";
import { fitText, headOf } from "../junit/long-text.js";

const SCHEMA = `
syntax = "proto3";
package test_context.test_run;

enum TestCaseRunStatus {
  TEST_CASE_RUN_STATUS_UNSPECIFIED = 0;
  TEST_CASE_RUN_STATUS_SUCCESS = 1;
  TEST_CASE_RUN_STATUS_FAILURE = 2;
  TEST_CASE_RUN_STATUS_SKIPPED = 3;
}

message Timestamp { int64 seconds = 1; int32 nanos = 2; }
message CodeOwner { string name = 1; }
message Counter { int32 number = 1; }

message TestOutput {
  string text = 1;
  string message = 2;
  string system_out = 3;
  string system_err = 4;
}

message TestCaseRun {
  string id = 1;
  string name = 2;
  string classname = 3;
  string file = 4;
  string parent_name = 5;
  int32 line = 6;
  TestCaseRunStatus status = 7;
  int32 attempt_number = 8;
  Timestamp started_at = 9;
  Timestamp finished_at = 10;
  string status_output_message = 11;
  bool is_quarantined = 12;
  repeated CodeOwner codeowners = 13;
  Counter attempt_index = 14;
  Counter line_number = 15;
  TestOutput test_output = 16;
}

message UploaderMetadata {
  string version = 1;
  string origin = 2;
  Timestamp upload_time = 3;
  string variant = 4;
}

message TestResult {
  repeated TestCaseRun test_case_runs = 1;
  UploaderMetadata uploader_metadata = 2;
}

message TestReport {
  repeated TestResult test_results = 1;
  UploaderMetadata uploader_metadata = 2;
}
`;

const root = protobuf.parse(SCHEMA, { keepCase: true }).root;
const TestReportType = root.lookupType("test_context.test_run.TestReport");
const TestResultType = root.lookupType("test_context.test_run.TestResult");

export const TEST_CASE_RUN_STATUS = { unspecified: 0, success: 1, failure: 2, skipped: 3 } as const;

export interface ReportTimestamp {
  seconds: number;
  nanos?: number;
}

/** A `TestCaseRun` as we read and write it (field names as on the wire). */
export interface TestCaseRunMessage {
  id?: string;
  name?: string;
  classname?: string;
  file?: string;
  parent_name?: string;
  line?: number;
  status?: number;
  attempt_number?: number;
  started_at?: ReportTimestamp;
  finished_at?: ReportTimestamp;
  status_output_message?: string;
  is_quarantined?: boolean;
  codeowners?: { name: string }[];
  attempt_index?: { number: number };
  line_number?: { number: number };
  test_output?: { text?: string; message?: string; system_out?: string; system_err?: string };
}

export interface UploaderMetadataMessage {
  version?: string;
  origin?: string;
  upload_time?: ReportTimestamp;
  variant?: string;
}

export interface TestResultMessage {
  test_case_runs?: TestCaseRunMessage[];
  uploader_metadata?: UploaderMetadataMessage;
}

export interface TestReportMessage {
  test_results?: TestResultMessage[];
  uploader_metadata?: UploaderMetadataMessage;
}

/** The bytes are not a test report in Trunk's format; `reason` is one sentence for the uploader. */
export class TestReportError extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = "TestReportError";
  }
}

/** Encodes a `TestReport` (tests and our own tools; Trunk's current uploader writes this shape). */
export function encodeTestReport(report: TestReportMessage): Uint8Array {
  return TestReportType.encode(TestReportType.fromObject(report)).finish();
}

/** Encodes a bare `TestResult`, the shape older uploaders and plugins write. */
export function encodeTestResult(result: TestResultMessage): Uint8Array {
  return TestResultType.encode(TestResultType.fromObject(result)).finish();
}

const TO_OBJECT: protobuf.IConversionOptions = { longs: Number, enums: Number, arrays: true };

/** The report's results, whichever of the two shapes the bytes hold. */
export function decodeTestReport(bytes: Uint8Array): TestReportMessage {
  const asReport = tryDecode(TestReportType, bytes) as TestReportMessage | undefined;
  const reportRuns = asReport?.test_results?.reduce(
    (sum, result) => sum + (result.test_case_runs?.length ?? 0),
    0,
  );
  if (asReport && reportRuns !== 0) return asReport;
  // protobuf decoding is lenient: a bare TestResult can sometimes be read as an empty report.
  const asResult = tryDecode(TestResultType, bytes) as TestResultMessage | undefined;
  if (asReport && !asResult?.test_case_runs?.length) return asReport;
  if (asResult) {
    return {
      test_results: [asResult],
      ...(asResult.uploader_metadata ? { uploader_metadata: asResult.uploader_metadata } : {}),
    };
  }
  throw new TestReportError("not a Trunk test report (protobuf TestReport or TestResult)");
}

function tryDecode(type: protobuf.Type, bytes: Uint8Array): Record<string, unknown> | undefined {
  try {
    return type.toObject(type.decode(bytes), TO_OBJECT);
  } catch {
    return undefined;
  }
}

/**
 * The report's test cases, one per test and result, with its runs as attempts: the runs of one
 * test (same file, classname, suite and name) within one `TestResult` are ordered by their
 * attempt index (then start time, then report order); the last is the outcome, earlier ones are
 * `flaky` attempts when it passed, `rerun` ones otherwise. A run whose status is unspecified says
 * nothing about the test and is read as skipped.
 */
export function testCasesOfReport(report: TestReportMessage): ParsedTestCase[] {
  const cases: ParsedTestCase[] = [];
  for (const result of report.test_results ?? []) {
    const groups = new Map<string, { run: TestCaseRunMessage; order: number }[]>();
    (result.test_case_runs ?? []).forEach((run, order) => {
      const key = JSON.stringify([
        nonEmpty(run.file) ?? "",
        run.classname ?? "",
        run.parent_name ?? "",
        run.name ?? "",
      ]);
      const group = groups.get(key);
      if (group === undefined) groups.set(key, [{ run, order }]);
      else group.push({ run, order });
    });
    for (const group of groups.values()) {
      group.sort(
        (a, b) =>
          attemptIndex(a.run) - attemptIndex(b.run) ||
          millis(a.run.started_at, 0) - millis(b.run.started_at, 0) ||
          a.order - b.order,
      );
      const runs = group.map((g) => g.run);
      const last = runs.at(-1);
      if (last === undefined) continue;
      const outcome = statusOf(last);
      const earlier: AttemptKind = outcome === "passed" ? "flaky" : "rerun";
      cases.push({
        name: cut(last.name ?? "", NAME_LIMIT),
        classname: cut(last.classname ?? "", NAME_LIMIT),
        parent: cut(last.parent_name ?? "", NAME_LIMIT),
        file: nonEmpty(last.file),
        line: positive(last.line_number?.number) ?? positive(last.line),
        idAttribute: nonEmpty(last.id),
        attempts: runs.map((run, i) =>
          attemptFromRun(run, i === runs.length - 1 ? "final" : earlier),
        ),
      });
    }
  }
  return cases;
}

function attemptFromRun(run: TestCaseRunMessage, kind: AttemptKind): ParsedAttempt {
  const status = statusOf(run);
  const output = run.test_output;
  const startedAt = millis(run.started_at, null);
  const finishedAt = millis(run.finished_at, null);
  const text = nonEmpty(output?.text) ?? nonEmpty(run.status_output_message);
  const message = nonEmpty(output?.message);
  return {
    status,
    kind,
    durationMs:
      startedAt !== null && finishedAt !== null && finishedAt >= startedAt
        ? finishedAt - startedAt
        : null,
    startedAt,
    failure:
      status === "failed"
        ? {
            type: null,
            message: message === null ? null : fitText(message, TEXT_LIMIT),
            text: text === null ? null : fitText(text.trim(), TEXT_LIMIT),
          }
        : null,
    systemOut: cutOrNull(output?.system_out),
    systemErr: cutOrNull(output?.system_err),
  };
}

function statusOf(run: TestCaseRunMessage): AttemptStatus {
  if (run.status === TEST_CASE_RUN_STATUS.success) return "passed";
  if (run.status === TEST_CASE_RUN_STATUS.failure) return "failed";
  return "skipped";
}

/** RSpec's 0-based `attempt_index`, else the deprecated `attempt_number`, else 0. */
function attemptIndex(run: TestCaseRunMessage): number {
  return run.attempt_index?.number ?? run.attempt_number ?? 0;
}

function millis<T extends number | null>(
  at: ReportTimestamp | undefined,
  otherwise: T,
): number | T {
  if (at === undefined) return otherwise;
  const ms = at.seconds * 1000 + Math.floor((at.nanos ?? 0) / 1e6);
  return Number.isFinite(ms) && ms > 0 ? ms : otherwise;
}

function nonEmpty(value: string | undefined): string | null {
  return value === undefined || value === "" ? null : value;
}

function positive(value: number | undefined): number | null {
  return value !== undefined && value > 0 ? value : null;
}

/** Names keep their beginning, as in JUnit reports. */
function cut(value: string, limit: number): string {
  return headOf(value, limit);
}

/** Long texts keep their beginning and end, as in JUnit reports. */
function cutOrNull(value: string | undefined): string | null {
  const text = nonEmpty(value);
  return text === null ? null : fitText(text, TEXT_LIMIT);
}
