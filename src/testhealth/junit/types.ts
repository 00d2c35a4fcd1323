/**
 * What the JUnit parser produces: one `ParsedTestCase` per `<testcase>` element, each carrying the
 * attempts (runs) it records; ingestion turns attempts into runs (`../runs.ts`).
 */

/** Failure messages, stack traces and captured output are cut to this many characters (Trunk: 8,000). */
export const TEXT_LIMIT = 8_000;
/** Test names, classnames and suite names are cut to this many characters (Trunk: 1,000). */
export const NAME_LIMIT = 1_000;

export type AttemptStatus = "passed" | "failed" | "skipped";

/**
 * `final`: the attempt whose result is the outcome of the test in this run (the testcase's own result).
 * `flaky`: another attempt of a test judged flaky, i.e. it passed in the end: `flakyFailure`/`flakyError`
 *   elements, or earlier records of a repeated testcase whose last record passed.
 * `rerun`: another attempt of a test that did not pass: `rerunFailure`/`rerunError` elements, or earlier
 *   records of a repeated testcase whose last record failed or was skipped.
 */
export type AttemptKind = "final" | "flaky" | "rerun";

export interface AttemptFailure {
  /** The `type` attribute (often an exception class), null when absent. */
  type: string | null;
  /** The `message` attribute, null when absent. */
  message: string | null;
  /** The element's text (for retry elements: `<stackTrace>`, else the element's own text), trimmed; null when empty. */
  text: string | null;
}

export interface ParsedAttempt {
  status: AttemptStatus;
  kind: AttemptKind;
  /** From the `time` attribute (seconds); null when absent, negative or unreadable. */
  durationMs: number | null;
  /** Epoch milliseconds from a `timestamp` attribute; null when absent or unreadable. */
  startedAt: number | null;
  /** Present for failed attempts when the report says why; null for passes and skips. */
  failure: AttemptFailure | null;
  systemOut: string | null;
  systemErr: string | null;
}

export interface ParsedTestCase {
  name: string;
  /** "" when the testcase has no `classname` (the identity formula treats missing parts as ""). */
  classname: string;
  /** Name of the OUTERMOST enclosing `<testsuite>` ("" when none or unnamed); inner suites are ignored, like Trunk. */
  parent: string;
  /** Testcase `file` → testcase `filepath` → nearest enclosing suite `file` → its `filepath`; null when none. */
  file: string | null;
  line: number | null;
  /** The testcase `id` attribute verbatim (Trunk uses it as, or to derive, the test id). */
  idAttribute: string | null;
  /** Testcase `<properties>`, by property name; absent when the testcase has none. */
  properties?: Readonly<Record<string, string>>;
  /** In order of execution as far as the report tells; the `final` attempt is last. */
  attempts: ParsedAttempt[];
}

/** The file is not a JUnit report we can read. `reason` is one sentence meant for the uploader. */
export class JunitParseError extends Error {
  readonly reason: string;

  constructor(reason: string) {
    super(reason);
    this.name = "JunitParseError";
    this.reason = reason;
  }
}
