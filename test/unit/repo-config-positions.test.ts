/**
 * Every mistake in `.mainline.yml` and `.trunk/trunk.yaml` says where it is: the file, line and
 * column of the key or value at fault (`repo-config.ts`), and a required status that names no
 * check the line of its list item (`run-config.ts`).
 */
import { describe, expect, it } from "vitest";
import {
  parseMainlineConfig,
  parseTrunkRequiredStatuses,
  type ConfigProblem,
} from "../../src/mergequeue/repo-config.js";
import { resolveRunConfig } from "../../src/mergequeue/run-config.js";

function problemsOf(lines: string[]): ConfigProblem[] {
  const parsed = parseMainlineConfig(lines.join("\n"));
  if (parsed.ok) throw new Error("expected the configuration to be refused");
  return parsed.problems;
}

/** `resolveRunConfig` over files held in memory. */
function runConfig(files: Record<string, string>, override: string[] | null = null) {
  return resolveRunConfig(
    (file) => Promise.resolve({ ok: true, text: files[file] }),
    override,
    "abc123",
  );
}

const CHECKS = ["ci:", "  checks:", "    - name: test", "      run: sh test.sh"];

describe("where .mainline.yml's mistakes are", () => {
  it("a YAML syntax error: its line and column", () => {
    expect(problemsOf(["ci: {}", "ci: {}"])).toEqual([
      {
        code: "invalid_yaml",
        message: "invalid YAML: Map keys must be unique",
        file: ".mainline.yml",
        line: 2,
        column: 1,
      },
    ]);
  });

  it("an unknown key: the key itself, at any depth", () => {
    expect(
      problemsOf([
        "colour: blue",
        "merge: {required_status: [a]}",
        "ci:",
        "  check: []",
        "  checks:",
        "    - {name: a, run: x}",
        "    - name: b",
        "      run: y",
        "      timout: 3",
      ]),
    ).toEqual([
      {
        code: "unknown_key",
        message: "colour: unknown key",
        file: ".mainline.yml",
        line: 1,
        column: 1,
      },
      {
        code: "unknown_key",
        message: "merge.required_status: unknown key",
        file: ".mainline.yml",
        line: 2,
        column: 9,
      },
      {
        code: "unknown_key",
        message: "ci.check: unknown key",
        file: ".mainline.yml",
        line: 4,
        column: 3,
      },
      {
        code: "unknown_key",
        message: "ci.checks[1].timout: unknown key",
        file: ".mainline.yml",
        line: 9,
        column: 7,
      },
    ]);
  });

  it("a value of the wrong type: the value; an empty one: its key", () => {
    const problems = problemsOf([
      "merge:",
      "  required_statuses:",
      "    - ok",
      "    - ''",
      "ci:",
      "  checks:",
      "    - name: t",
      "      run:",
      "      timeout_minutes: 0",
      "      junit_paths: reports",
    ]);
    expect(problems.map((p) => [p.code, p.message, p.line, p.column])).toEqual([
      ["wrong_type", "merge.required_statuses[1]: expected a non-empty string", 4, 7],
      ["wrong_type", 'ci.checks[0] ("t").run: expected a non-empty string', 8, 7],
      ["wrong_type", 'ci.checks[0] ("t").timeout_minutes: expected a positive number', 9, 24],
      ["wrong_type", 'ci.checks[0] ("t").junit_paths: expected a list of strings', 10, 20],
    ]);
    expect(problemsOf(["merge: [a]", ...CHECKS])[0]).toMatchObject({
      code: "wrong_type",
      message: "merge: expected a mapping",
      line: 1,
      column: 8,
    });
    expect(problemsOf(["", "- a"])).toEqual([
      {
        code: "wrong_type",
        message: "expected a mapping",
        file: ".mainline.yml",
        line: 2,
        column: 1,
      },
    ]);
  });

  it("a missing key: the mapping that lacks it", () => {
    expect(problemsOf(["ci:", "  checks:", "    - {name: a, run: x}", "    - name: b"])).toEqual([
      {
        code: "missing_key",
        message: 'ci.checks[1] ("b"): missing "run"',
        file: ".mainline.yml",
        line: 4,
        column: 7,
      },
    ]);
    expect(problemsOf(["", "merge: {}"])[0]).toMatchObject({
      code: "missing_key",
      message: 'ci: missing (the built-in runner needs "ci.checks")',
      line: 2,
      column: 1,
    });
  });

  it("a duplicate check name: the second name", () => {
    expect(
      problemsOf([
        "ci:",
        "  checks:",
        "    - {name: t, run: a}",
        "    - {name: u, run: b}",
        "    - name: t",
        "      run: c",
      ]),
    ).toEqual([
      {
        code: "duplicate_check",
        message: 'ci.checks[2] ("t"): duplicate name (also ci.checks[0])',
        file: ".mainline.yml",
        line: 5,
        column: 13,
      },
    ]);
  });

  it(".trunk/trunk.yaml's mistakes name that file", () => {
    const parsed = parseTrunkRequiredStatuses("version: 0.1\nmerge:\n  required_statuses: Build\n");
    expect(!parsed.ok && parsed.problems).toEqual([
      {
        code: "wrong_type",
        message: "merge.required_statuses: expected a list of strings",
        file: ".trunk/trunk.yaml",
        line: 3,
        column: 22,
      },
    ]);
  });
});

describe("a required status that names no check", () => {
  it("is reported at its list item in .mainline.yml", async () => {
    const resolved = await runConfig({
      ".mainline.yml": [
        "merge:",
        "  required_statuses:",
        "    - test",
        "    - build",
        ...CHECKS,
      ].join("\n"),
    });
    expect(resolved).toEqual({
      ok: false,
      error: {
        reason: "config_parsing_failure",
        message:
          'required status "build" (from .mainline.yml) names no check in .mainline.yml, whose checks are "test"',
      },
      problems: [
        {
          code: "unknown_required_status",
          message:
            'merge.required_statuses: "build" names no check in .mainline.yml, whose checks are "test"',
          file: ".mainline.yml",
          line: 4,
          column: 7,
        },
      ],
    });
  });

  it("in .trunk/trunk.yaml, at its item there; from the queue's settings, in no file", async () => {
    const trunk = await runConfig({
      ".mainline.yml": CHECKS.join("\n"),
      ".trunk/trunk.yaml": "version: 0.1\nmerge:\n  required_statuses: [test, lint]\n",
    });
    expect(!trunk.ok && trunk.problems).toEqual([
      {
        code: "unknown_required_status",
        message:
          'merge.required_statuses: "lint" names no check in .mainline.yml, whose checks are "test"',
        file: ".trunk/trunk.yaml",
        line: 3,
        column: 29,
      },
    ]);
    const override = await runConfig({ ".mainline.yml": CHECKS.join("\n") }, ["deploy"]);
    expect(!override.ok && override.problems).toEqual([
      {
        code: "unknown_required_status",
        message:
          'required status "deploy" (from the queue\'s settings) names no check in .mainline.yml, whose checks are "test"',
      },
    ]);
  });

  it("an empty list is reported where it is; a missing file names the file", async () => {
    const empty = await runConfig({
      ".mainline.yml": ["merge:", "  required_statuses: []", ...CHECKS].join("\n"),
    });
    expect(!empty.ok && empty.problems).toEqual([
      {
        code: "no_required_statuses",
        message: "merge.required_statuses in .mainline.yml is an empty list",
        file: ".mainline.yml",
        line: 2,
        column: 22,
      },
    ]);
    const none = await runConfig({});
    expect(none).toMatchObject({
      ok: false,
      error: { reason: "config_parsing_failure", message: "no .mainline.yml at abc123" },
      problems: [{ code: "missing_file", file: ".mainline.yml" }],
    });
    expect(await runConfig({ ".mainline.yml": CHECKS.join("\n") })).toMatchObject({
      ok: true,
      required: { statuses: ["test"], source: "mainline_checks" },
    });
  });
});
