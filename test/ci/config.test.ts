import { describe, expect, it } from "vitest";
import {
  parseMainlineConfig,
  parseTrunkRequiredStatuses,
  type MainlineConfig,
} from "../../src/mergequeue/repo-config.js";
import { consultsSource, resolveRequiredStatuses } from "../../src/mergequeue/required-statuses.js";

function messageOf(text: string): string {
  const parsed = parseMainlineConfig(text);
  if (parsed.ok) throw new Error("expected the configuration to be refused");
  return parsed.message;
}

describe(".mainline.yml", () => {
  it("reads checks with their defaults and the required statuses", () => {
    const parsed = parseMainlineConfig(
      [
        "merge:",
        "  required_statuses: [test, test, deploy-preview]",
        "ci:",
        "  checks:",
        "    - name: test",
        "      run: ./ci.sh",
        "      timeout_minutes: 2.5",
        '      junit_paths: ["reports/**/*.xml"]',
        "    - name: lint",
        "      run: npm run lint",
      ].join("\n"),
    );
    expect(parsed).toMatchObject({
      ok: true,
      config: {
        requiredStatuses: ["test", "deploy-preview"],
        checks: [
          { name: "test", run: "./ci.sh", timeoutMinutes: 2.5, junitPaths: ["reports/**/*.xml"] },
          { name: "lint", run: "npm run lint", timeoutMinutes: 30, junitPaths: [] },
        ],
      },
    });
  });

  it("leaves the required statuses undefined when merge does not name them", () => {
    const parsed = parseMainlineConfig("ci:\n  checks:\n    - {name: a, run: 'true'}\n");
    expect(parsed.ok && parsed.config.requiredStatuses).toBeUndefined();
    expect(parsed.ok && parsed.config.checks.map((c) => c.name)).toEqual(["a"]);
  });

  it("says where the YAML is broken", () => {
    expect(messageOf("ci:\n  checks: [a, b\nmerge: {}\n")).toMatch(
      /^\.mainline\.yml: invalid YAML at line \d+, column \d+: /,
    );
    expect(messageOf("ci: {}\nci: {}\n")).toBe(
      ".mainline.yml: invalid YAML at line 2, column 1: Map keys must be unique",
    );
  });

  it("names the path of every unknown key", () => {
    const message = messageOf(
      [
        "colour: blue",
        "merge: {required_status: [a]}",
        "ci:",
        "  check: []",
        "  checks:",
        "    - {name: a, run: x}",
        "    - {name: b, run: y, timout: 3}",
      ].join("\n"),
    );
    expect(message.split("; ")).toEqual([
      "colour: unknown key",
      "merge.required_status: unknown key",
      "ci.check: unknown key",
      "ci.checks[1].timout: unknown key",
    ]);
  });

  it("refuses a check without run, without name, or with a name already used", () => {
    expect(messageOf("ci:\n  checks:\n    - name: test\n")).toBe(
      'ci.checks[0] ("test"): missing "run"',
    );
    expect(messageOf("ci:\n  checks:\n    - run: make\n")).toBe('ci.checks[0]: missing "name"');
    expect(
      messageOf(
        "ci:\n  checks:\n    - {name: t, run: a}\n    - {name: u, run: b}\n    - {name: t, run: c}\n",
      ),
    ).toBe('ci.checks[2] ("t"): duplicate name (also ci.checks[0])');
  });

  it("checks the types of every value", () => {
    const message = messageOf(
      [
        "merge: {required_statuses: [ok, '', 3]}",
        "ci:",
        "  checks:",
        "    - {name: t, run: '', timeout_minutes: 0, junit_paths: reports}",
      ].join("\n"),
    );
    expect(message.split("; ")).toEqual([
      "merge.required_statuses[1]: expected a non-empty string",
      "merge.required_statuses[2]: expected a non-empty string",
      'ci.checks[0] ("t").run: expected a non-empty string',
      'ci.checks[0] ("t").timeout_minutes: expected a positive number',
      'ci.checks[0] ("t").junit_paths: expected a list of strings',
    ]);
    expect(messageOf("- a\n")).toBe(".mainline.yml: expected a mapping");
    expect(messageOf("merge: {}\n")).toBe('ci: missing (the built-in runner needs "ci.checks")');
    expect(messageOf("ci: {checks: []}\n")).toBe("ci.checks: expected a non-empty list of checks");
  });
});

describe(".trunk/trunk.yaml", () => {
  it("takes merge.required_statuses and ignores the rest of Trunk's file", () => {
    const text = [
      "version: 0.1",
      "cli: {version: 1.22.0}",
      "lint:",
      "  enabled: [eslint@9.0.0]",
      "merge:",
      "  required_statuses:",
      "    - Build",
      "    - Test (ubuntu)",
    ].join("\n");
    expect(parseTrunkRequiredStatuses(text)).toMatchObject({
      ok: true,
      requiredStatuses: ["Build", "Test (ubuntu)"],
    });
    expect(parseTrunkRequiredStatuses("version: 0.1\nlint: {}\n")).toMatchObject({
      ok: true,
      requiredStatuses: undefined,
    });
  });

  it("refuses broken YAML and a malformed list", () => {
    const broken = parseTrunkRequiredStatuses("merge: [\n");
    expect(!broken.ok && broken.message).toMatch(/^\.trunk\/trunk\.yaml: invalid YAML at line/);
    const malformed = parseTrunkRequiredStatuses("merge:\n  required_statuses: Build\n");
    expect(!malformed.ok && malformed.message).toBe(
      ".trunk/trunk.yaml: merge.required_statuses: expected a list of strings",
    );
  });
});

describe("required statuses", () => {
  const mainline = (requiredStatuses?: string[]): MainlineConfig => ({
    requiredStatuses,
    checks: [
      { name: "test", run: "x", timeoutMinutes: 30, junitPaths: [] },
      { name: "lint", run: "y", timeoutMinutes: 30, junitPaths: [] },
    ],
  });

  it("takes the first source that names them", () => {
    const all = {
      override: ["o"],
      mainline: mainline(["m"]),
      trunk: ["t"],
      branchProtection: ["b"],
    };
    expect(resolveRequiredStatuses(all)).toEqual({
      ok: true,
      statuses: ["o"],
      source: "merge_instance",
    });
    expect(resolveRequiredStatuses({ ...all, override: null })).toMatchObject({
      statuses: ["m"],
      source: "mainline_config",
    });
    expect(resolveRequiredStatuses({ ...all, override: null, mainline: mainline() })).toMatchObject(
      { statuses: ["t"], source: "trunk_config" },
    );
    expect(
      resolveRequiredStatuses({ ...all, override: null, mainline: undefined, trunk: undefined }),
    ).toMatchObject({ statuses: ["b"], source: "branch_protection" });
    expect(
      resolveRequiredStatuses({ override: null, mainline: mainline(), trunk: undefined }),
    ).toMatchObject({ statuses: ["test", "lint"], source: "mainline_checks" });
  });

  it("fails on an explicit empty list, even when a later source has one", () => {
    const empty = resolveRequiredStatuses({
      override: [],
      mainline: mainline(["m"]),
      trunk: ["t"],
    });
    expect(empty).toEqual({
      ok: false,
      reason: "no_required_statuses",
      message: "the queue's requiredStatuses setting is an empty list",
    });
    const emptyFile = resolveRequiredStatuses({
      override: null,
      mainline: mainline([]),
      trunk: ["t"],
    });
    expect(!emptyFile.ok && emptyFile.message).toBe(
      "merge.required_statuses in .mainline.yml is an empty list",
    );
  });

  it("fails when no source names any", () => {
    const none = resolveRequiredStatuses({ override: null, mainline: undefined, trunk: undefined });
    expect(none).toMatchObject({ ok: false, reason: "no_required_statuses" });
  });

  it("consults a source only when no earlier one names statuses (one precedence)", () => {
    expect(consultsSource({ override: null, mainline: mainline() }, "trunk_config")).toBe(true);
    expect(consultsSource({ override: ["o"], mainline: mainline() }, "trunk_config")).toBe(false);
    expect(consultsSource({ override: null, mainline: mainline(["m"]) }, "trunk_config")).toBe(
      false,
    );
    // An explicit empty list decides too: nothing after it is read.
    expect(consultsSource({ override: [], mainline: mainline() }, "trunk_config")).toBe(false);
    expect(consultsSource({ override: null, mainline: undefined }, "branch_protection")).toBe(true);
    expect(
      consultsSource({ override: null, mainline: mainline(), trunk: ["t"] }, "branch_protection"),
    ).toBe(false);
  });
});
