import { afterAll, describe, it } from "vitest";
import { VERSION } from "../../src/version.js";
import { runCli, runCliInProcess, stopAllProcesses } from "../helpers/process.js";

afterAll(stopAllProcesses);

const ADDRESS_OPTIONS = ["--repo <host/owner/name>", "--branch <branch>", "--url <url>", "--token"];
const ADDRESS_ENV = ["MAINLINE_URL", "MAINLINE_TOKEN"];

/** Every queue setting `queue update` must offer as a flag. */
const UPDATE_SETTINGS = [
  "--state",
  "--mode",
  "--concurrency",
  "--bisection-concurrency",
  "--testing-timeout-minutes",
  "--pending-failure-depth",
  "--can-optimistically-merge",
  "--batch",
  "--batching-max-wait-time-minutes",
  "--batching-min-size",
  "--merge-method",
  "--comments-enabled",
  "--commands-enabled",
  "--create-prs-for-testing-branches",
  "--status-check-enabled",
  "--direct-merge-mode",
  "--optimization-mode",
  "--extension-enabled",
  "--enqueueing-label",
  "--label-commands-enabled",
  "--state-labels-enabled",
  "--not-ready-timeout-hours",
  "--speculation-threshold-percent",
  "--required-statuses <names>",
  "--delete-required-statuses",
  "--json",
];

const CASES: { command: string[]; mentions: string[] }[] = [
  {
    command: [],
    mentions: ["serve", "migrate", "org", "token", "session", "whoami", "queue", "pr", "--version"],
  },
  {
    command: ["serve"],
    mentions: [
      "Start the HTTP service",
      "DATABASE_URL",
      "MAINLINE_DATA_DIR",
      "MAINLINE_BOOTSTRAP_TOKEN",
      "MAINLINE_WEBHOOKS_RETRY_SCHEDULE",
      "MAINLINE_WEBHOOKS_TIMEOUT_MS",
      "MAINLINE_WEBHOOKS_DISABLE_AFTER",
      "MAINLINE_WEBHOOKS_ALLOW_PRIVATE",
      "MAINLINE_SLACK_API_URL",
    ],
  },
  { command: ["migrate"], mentions: ["Apply pending database migrations"] },
  {
    command: ["webhooks"],
    mentions: ["add", "add-slack-bot", "list", "remove", "test", "deliveries", "resend"],
  },
  {
    command: ["webhooks", "add"],
    mentions: [
      "[url]",
      "--kind <kind>",
      "--bot-token <xoxb-…>",
      "--channel <id>",
      "--owner <owner>",
      "--event <type>",
      "--repo <host/owner/name>",
    ],
  },
  {
    command: ["webhooks", "add-slack-bot"],
    mentions: ["--bot-token <xoxb-…>", "MAINLINE_SLACK_BOT_TOKEN", "--channel <id>"],
  },
  { command: ["gitlab"], mentions: ["connect", "authorize", "status", "disconnect"] },
  {
    command: ["gitlab", "connect"],
    mentions: ["--token-file <file>", "GITLAB_TOKEN", ...ADDRESS_ENV],
  },
  { command: ["gitlab", "status"], mentions: ["--json", "--show-secret", "exits 1"] },
  { command: ["org"], mentions: ["create", "list"] },
  { command: ["org", "create"], mentions: ["<slug>", "--name <name>"] },
  { command: ["org", "list"], mentions: ["--json"] },
  { command: ["token"], mentions: ["create", "list", "revoke"] },
  { command: ["token", "create"], mentions: ["--org <slug>", "--name <name>"] },
  { command: ["token", "list"], mentions: ["--org <slug>", "--json"] },
  { command: ["token", "revoke"], mentions: ["<token-id>"] },
  { command: ["session"], mentions: ["list", "revoke"] },
  { command: ["session", "list"], mentions: ["--org <slug>", "--json"] },
  { command: ["session", "revoke"], mentions: ["<session-id>", "--org <slug>"] },
  {
    command: ["whoami"],
    mentions: ["--url <url>", "--token", "MAINLINE_URL", "MAINLINE_TOKEN", "--json"],
  },
  { command: ["queue"], mentions: ["create", "get", "update", "delete"] },
  {
    command: ["queue", "create"],
    mentions: [...ADDRESS_OPTIONS, ...ADDRESS_ENV, "--mode <mode>", "--concurrency <n>"],
  },
  { command: ["queue", "get"], mentions: [...ADDRESS_OPTIONS, ...ADDRESS_ENV, "--json"] },
  { command: ["queue", "update"], mentions: [...ADDRESS_OPTIONS, ...UPDATE_SETTINGS] },
  { command: ["queue", "delete"], mentions: [...ADDRESS_OPTIONS, ...ADDRESS_ENV] },
  { command: ["pr"], mentions: ["submit", "cancel", "restart", "status", "list"] },
  {
    command: ["pr", "submit"],
    mentions: [
      ...ADDRESS_OPTIONS,
      ...ADDRESS_ENV,
      "<number>",
      "--priority <priority>",
      "--no-batch",
    ],
  },
  { command: ["pr", "cancel"], mentions: [...ADDRESS_OPTIONS, ...ADDRESS_ENV, "<number>"] },
  { command: ["pr", "restart"], mentions: [...ADDRESS_OPTIONS, ...ADDRESS_ENV, "<number>"] },
  {
    command: ["pr", "status"],
    mentions: [
      ...ADDRESS_OPTIONS,
      ...ADDRESS_ENV,
      "[number]",
      "--head <branch>",
      "--timeline",
      "--json",
    ],
  },
  {
    command: ["pr", "list"],
    mentions: [
      ...ADDRESS_OPTIONS,
      ...ADDRESS_ENV,
      "--state <state>",
      "--since <time>",
      "--take <n>",
      "--cursor <cursor>",
      "--json",
    ],
  },
];

describe.concurrent("--help", () => {
  for (const { command, mentions } of CASES) {
    const name = ["mainline", ...command].join(" ");
    it(`${name} --help exits 0 and describes its options`, async ({ expect }) => {
      // `mainline --help` and `--version` run as real processes (smoke tests of the entry point);
      // every other help is the same program run in-process.
      const run = command.length === 0 ? runCli : runCliInProcess;
      const result = await run([...command, "--help"]);
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      // The help of this very command, not of its parent.
      expect(result.stdout).toMatch(new RegExp(`^Usage: ${name} `));
      expect(result.stdout).toContain("-h, --help");
      for (const mention of mentions) expect(result.stdout).toContain(mention);
    });
  }

  it("mainline --version prints the version", async ({ expect }) => {
    const result = await runCli(["--version"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`${VERSION}\n`);
  });

  it("mainline test without -- before the command: the error says to put it there", async ({
    expect,
  }) => {
    const hint =
      "mainline: put -- before the test command, e.g. mainline test --junit 'reports/*.xml' -- python3 -m pytest";
    const [option, missing, withDashes] = await Promise.all([
      runCliInProcess(["test", "--junit", "reports/*.xml", "python3", "-m", "pytest"]),
      runCliInProcess(["test", "--junit", "reports/*.xml", "npm"]),
      runCliInProcess(["test", "--junit", "reports/*.xml", "--bogus", "--", "true"]),
    ]);
    expect(option.code).not.toBe(0);
    expect(option.stderr).toContain("unknown option '-m'");
    expect(option.stderr).toContain(hint);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain("missing required argument 'command'");
    expect(missing.stderr).toContain(hint);
    // With -- in place, a mistake in mainline's own options gets no such hint.
    expect(withDashes.stderr).toContain("unknown option '--bogus'");
    expect(withDashes.stderr).not.toContain(hint);
  });

  it("an unknown command exits non-zero and says so", async ({ expect }) => {
    const result = await runCliInProcess(["frobnicate"]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("unknown command 'frobnicate'");
  });
});
