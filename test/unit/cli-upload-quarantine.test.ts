import { describe, expect, it } from "vitest";
import {
  commandExitCode,
  decideExit,
  type TestRunOutcome,
} from "../../src/cli/upload/quarantine.js";
import { failedTestIdentifiers, type FailedTest } from "../../src/testhealth/reports.js";
import { testId } from "../../src/testhealth/identity.js";

const FAILED_3: TestRunOutcome = {
  command: { code: 3, signal: null },
  reports: { failedTestIds: ["a", "b"], complete: true },
  uploaded: true,
  quarantine: { isDisabled: false, testIds: ["a", "b", "unrelated"] },
};

describe("decideExit", () => {
  it("a passing command passes, whatever else happened", () => {
    for (const outcome of [
      { ...FAILED_3, command: { code: 0, signal: null } },
      { command: { code: 0, signal: null }, reports: null, uploaded: false, quarantine: null },
    ]) {
      expect(decideExit(outcome)).toMatchObject({ exitCode: 0, reason: null });
    }
  });

  it("a failing command passes when every failed test is quarantined", () => {
    expect(decideExit(FAILED_3)).toEqual({
      exitCode: 0,
      quarantined: ["a", "b"],
      notQuarantined: [],
      reason: "All 2 failed test(s) are quarantined.",
    });
  });

  it("one failure not quarantined: the command's exit code, with both lists", () => {
    const outcome = { ...FAILED_3, quarantine: { isDisabled: false, testIds: ["a"] } };
    expect(decideExit(outcome)).toEqual({
      exitCode: 3,
      quarantined: ["a"],
      notQuarantined: ["b"],
      reason: "1 of 2 failed test(s) are not quarantined.",
    });
  });

  it.each<[string, Partial<TestRunOutcome>, RegExp]>([
    ["no report was read", { reports: null }, /No test report/],
    [
      "a report was unreadable",
      { reports: { failedTestIds: ["a", "b"], complete: false } },
      /could not be read/,
    ],
    [
      "the reports hold no failure (the command failed otherwise)",
      { reports: { failedTestIds: [], complete: true } },
      /no failed test/,
    ],
    ["the upload failed", { uploaded: false }, /not uploaded/],
    ["the quarantine lookup failed", { quarantine: null }, /lookup failed/],
    [
      "quarantining is disabled",
      { quarantine: { isDisabled: true, testIds: ["a", "b"] } },
      /disabled/,
    ],
  ])("the command's exit code stands when %s", (_, change, reason) => {
    const decision = decideExit({ ...FAILED_3, ...change });
    expect(decision.exitCode).toBe(3);
    expect(decision.reason).toMatch(reason);
  });

  it("a signal: 128 + its number, even when every failure is quarantined", () => {
    const decision = decideExit({ ...FAILED_3, command: { code: null, signal: "SIGTERM" } });
    expect(decision.exitCode).toBe(143);
    expect(decision.reason).toMatch(/SIGTERM/);
    expect(decideExit({ ...FAILED_3, command: { code: null, signal: "SIGKILL" } }).exitCode).toBe(
      137,
    );
  });

  it("never turns a failure into success unless every condition holds (exhaustive)", () => {
    const reportsOptions: TestRunOutcome["reports"][] = [
      null,
      { failedTestIds: [], complete: true },
      { failedTestIds: ["a"], complete: true },
      { failedTestIds: ["a", "b"], complete: true },
      { failedTestIds: ["a"], complete: false },
    ];
    const quarantineOptions: TestRunOutcome["quarantine"][] = [
      null,
      { isDisabled: false, testIds: [] },
      { isDisabled: false, testIds: ["a"] },
      { isDisabled: false, testIds: ["a", "b"] },
      { isDisabled: true, testIds: ["a", "b"] },
    ];
    for (const code of [1, 2, 3, 255])
      for (const reports of reportsOptions)
        for (const uploaded of [false, true])
          for (const quarantine of quarantineOptions) {
            const outcome = { command: { code, signal: null }, reports, uploaded, quarantine };
            const expected =
              reports !== null &&
              reports.complete &&
              reports.failedTestIds.length > 0 &&
              uploaded &&
              quarantine !== null &&
              !quarantine.isDisabled &&
              reports.failedTestIds.every((id) => quarantine.testIds.includes(id))
                ? 0
                : code;
            expect(decideExit(outcome).exitCode, JSON.stringify(outcome)).toBe(expected);
          }
  });
});

describe("commandExitCode", () => {
  it("the code, or 128 + the signal's number", () => {
    expect(commandExitCode({ code: 0, signal: null })).toBe(0);
    expect(commandExitCode({ code: 42, signal: null })).toBe(42);
    expect(commandExitCode({ code: null, signal: "SIGINT" })).toBe(130);
    expect(commandExitCode({ code: null, signal: null })).toBe(1);
  });
});

describe("failedTestIdentifiers", () => {
  const failed: FailedTest[] = [
    {
      name: "logs in",
      classname: "LoginTest",
      parent: "auth",
      file: "src/login.test.ts",
      idAttribute: null,
      message: "expected 200",
    },
    {
      name: "logs in",
      classname: "LoginTest",
      parent: "auth",
      file: "src/login.test.ts",
      idAttribute: null,
      message: "again (another file)",
    },
    { name: "bare", classname: "", parent: "", file: null, idAttribute: null, message: null },
  ];
  const repo = { host: "github.com", owner: "Acme", name: "App" };

  it("ids as the server computes them (repository spelled as given), each test once", () => {
    const identifiers = failedTestIdentifiers(failed, { org: "acme", repo, variant: "" });
    expect(identifiers).toEqual([
      {
        name: "logs in",
        parentName: "auth",
        className: "LoginTest",
        file: "src/login.test.ts",
        id: testId({
          org: "acme",
          repoFullName: "github.com/Acme/App",
          file: "src/login.test.ts",
          classname: "LoginTest",
          parent: "auth",
          name: "logs in",
        }),
        timestamp_millis: null,
        is_quarantined: false,
        failure_message: "expected 200",
        variant: "",
      },
      {
        name: "bare",
        parentName: "",
        className: null,
        file: null,
        id: testId({ org: "acme", repoFullName: "github.com/Acme/App", name: "bare" }),
        timestamp_millis: null,
        is_quarantined: false,
        failure_message: null,
        variant: "",
      },
    ]);
  });

  it("a variant changes every id and is sent along", () => {
    const plain = failedTestIdentifiers(failed, { org: "acme", repo, variant: "" });
    const linux = failedTestIdentifiers(failed, { org: "acme", repo, variant: "linux" });
    expect(linux.map((t) => t.variant)).toEqual(["linux", "linux"]);
    expect(linux[0]?.id).not.toBe(plain[0]?.id);
    expect(linux[0]?.id).toBe(
      testId({
        org: "acme",
        repoFullName: "github.com/Acme/App",
        file: "src/login.test.ts",
        classname: "LoginTest",
        parent: "auth",
        name: "logs in",
        variant: "linux",
      }),
    );
  });

  it("a trunk: id attribute selects Trunk's id rule", () => {
    const bare: FailedTest = {
      name: "bare",
      classname: "",
      parent: "",
      file: null,
      idAttribute: "trunk:custom-1",
      message: null,
    };
    const [withAttribute] = failedTestIdentifiers([bare], { org: "acme", repo, variant: "" });
    expect(withAttribute?.id).toBe(
      testId({ org: "acme", repoFullName: "github.com/Acme/App", idAttribute: "trunk:custom-1" }),
    );
  });
});
