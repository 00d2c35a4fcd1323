/**
 * Binary test reports in the shapes Trunk's clients write them, built with our own encoder (the
 * wire format follows the public `.proto` of Trunk's uploader): what its RSpec plugin writes (a
 * bare `TestResult`, one run per test) and a result with repeated runs of a test and a variant.
 */
import {
  encodeTestResult,
  TEST_CASE_RUN_STATUS,
  type TestCaseRunMessage,
} from "../../src/testhealth/bundle/index.js";

const { success, failure } = TEST_CASE_RUN_STATUS;

/** 13 passing runs in two suites (`context_ruby`, 5; `RSpec Expectations`, 8), as RSpec's plugin. */
export function rspecPluginReport(): Uint8Array {
  const started = 1748019964;
  const runs: TestCaseRunMessage[] = [];
  for (let i = 0; i < 5; i++) {
    runs.push({
      id: "",
      name: i === 0 ? "context_ruby should be able to env_parse" : `context_ruby example ${i}`,
      classname: "test.test_parse_and_validate_spec",
      file: "./test/test_parse_and_validate_spec.rb",
      parent_name: "context_ruby",
      line_number: { number: 8 + i * 6 },
      status: success,
      started_at: { seconds: started + i, nanos: 0 },
      finished_at: { seconds: started + i, nanos: 5_000_000 },
      attempt_index: { number: 0 },
    });
  }
  for (let i = 0; i < 8; i++) {
    runs.push({
      name: `RSpec Expectations matcher ${i}`,
      classname: "spec.expectations_spec",
      file: "./spec/expectations_spec.rb",
      parent_name: "RSpec Expectations",
      line_number: { number: 3 + i * 4 },
      status: success,
      started_at: { seconds: started + 10 + i },
      finished_at: { seconds: started + 10 + i, nanos: 1_000_000 },
      attempt_index: { number: 0 },
    });
  }
  return encodeTestResult({
    test_case_runs: runs,
    uploader_metadata: { version: "0.1.0", origin: "rspec", upload_time: { seconds: started } },
  });
}

/** `Hello` run six times (fail, fail, pass, pass, fail, pass) and `Goodbye` twice (pass, fail). */
export function repeatedRunsReport(): Uint8Array {
  const run = (name: string, index: number, passed: boolean): TestCaseRunMessage => ({
    name,
    classname: "greetings",
    file: "greetings.test.js",
    parent_name: "greetings",
    status: passed ? success : failure,
    attempt_index: { number: index },
    started_at: { seconds: 1_700_000_000 + index },
    ...(passed ? {} : { status_output_message: "Failure at 1:00" }),
  });
  const hello = [false, false, true, true, false, true];
  return encodeTestResult({
    test_case_runs: [
      ...hello.map((passed, i) => run("Hello", i, passed)),
      run("Goodbye", 0, true),
      run("Goodbye", 1, false),
    ],
    uploader_metadata: { version: "0.1.0", origin: "trunk-analytics-cli", variant: "test-variant" },
  });
}
