import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import {
  freePort,
  runCliInProcess,
  startServer,
  stopAllProcesses,
  type CliResult,
  type RunningServer,
  waitFor,
} from "../helpers/process.js";
import { QUEUE_DEFAULTS } from "../helpers/contract.js";
import { failed, post, succeeded } from "./support.js";

let database: TestDatabase;
let server: RunningServer;
const TOKEN = randomBytes(32).toString("hex");

beforeAll(async () => {
  database = await createTestDatabase();
  server = await startServer({
    ...database.env,
    MAINLINE_BOOTSTRAP_ORG: "acme",
    MAINLINE_BOOTSTRAP_TOKEN: TOKEN,
  });
});

afterAll(async () => {
  await server.stop();
  await stopAllProcesses();
  await database.cleanup();
});

/** `mainline queue …` told where the server is with --url and --token. */
const withFlags = (...args: string[]): Promise<CliResult> =>
  runCliInProcess(["queue", ...args, "--url", server.url, "--token", TOKEN]);

/** `mainline queue …` told where the server is with MAINLINE_URL and MAINLINE_TOKEN. */
const withEnv = (args: string[], env: Record<string, string> = {}): Promise<CliResult> =>
  runCliInProcess(["queue", ...args], { MAINLINE_URL: server.url, MAINLINE_TOKEN: TOKEN, ...env });

const parsed = (result: CliResult) =>
  JSON.parse(succeeded(result).stdout) as Record<string, unknown>;

const REPO = { host: "github.com", owner: "acme", name: "app" };

/** getQueue straight over HTTP: what the CLI did, seen from the API. */
async function httpQueue(
  targetBranch: string,
  repo: Record<string, string> = REPO,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const answer = await post(server.url, "getQueue", { repo, targetBranch }, TOKEN);
  return { status: answer.status, body: answer.body as Record<string, unknown> };
}

describe("queue commands with --url and --token", () => {
  const at = ["--repo", "github.com/acme/app", "--branch", "flags"];

  it("create, then get as text and as JSON", async () => {
    const created = succeeded(await withFlags("create", ...at));
    expect(created.stdout).toBe("");
    expect(created.stderr).toContain("Created the merge queue for flags.");
    // This server has no GitHub App: the queue is there, and the CLI says it cannot work yet.
    expect(created.stderr).toContain(
      "mainline: warning: No provider for host github.com is configured on this server: the queue was created, but it cannot read, test or merge its pull requests",
    );
    expect((await httpQueue("flags")).status).toBe(200);

    const [text, json] = await Promise.all([
      withFlags("get", ...at),
      withFlags("get", ...at, "--json"),
    ]);
    succeeded(text);
    expect(text.stdout).toMatch(/^concurrency +1$/m);
    expect(text.stdout).toMatch(/^state +"running"$/m);
    expect(text.stdout).toMatch(/^requiredStatuses +null$/m);
    expect(text.stdout).toMatch(/^enqueued +0 pull request\(s\)$/m);
    expect(parsed(json)).toEqual({
      ...QUEUE_DEFAULTS,
      branch: "flags",
      enqueuedPullRequests: [],
      localizations: [],
      host: { state: "ok" },
    });
  });

  it("update echoes the new settings, which the API then answers", async () => {
    const update = await withFlags(
      "update",
      ...at,
      "--concurrency",
      "4",
      "--state",
      "paused",
      "--required-statuses",
      "build, test",
      "--json",
    );
    const expected = { concurrency: 4, state: "paused", requiredStatuses: ["build", "test"] };
    expect(parsed(update)).toMatchObject({ ...QUEUE_DEFAULTS, ...expected, branch: "flags" });
    expect((await httpQueue("flags")).body).toMatchObject(expected);

    const cleared = parsed(
      await withFlags("update", ...at, "--delete-required-statuses", "--json"),
    );
    expect(cleared).toMatchObject({ concurrency: 4, state: "paused", requiredStatuses: null });
    expect((await httpQueue("flags")).body).toMatchObject({ requiredStatuses: null });
  });

  it("a value the server refuses: non-zero exit with its field error, nothing changed", async () => {
    const stderr = failed(await withFlags("update", ...at, "--concurrency", "0"));
    expect(stderr).toMatch(/^mainline: .+\n {2}- [\w.]*concurrency: .+/m);
    expect((await httpQueue("flags")).body).toMatchObject({ concurrency: 4 });
  });

  it("a value the CLI itself refuses never reaches the server", async () => {
    const stderr = failed(await withFlags("update", ...at, "--concurrency", "four"));
    expect(stderr).toContain("expected a whole number");
    expect((await httpQueue("flags")).body).toMatchObject({ concurrency: 4 });
  });

  it("an empty --required-statuses is refused instead of requiring nothing", async () => {
    const stderr = failed(await withFlags("update", ...at, "--required-statuses", " , "));
    expect(stderr).toContain("--delete-required-statuses");
    expect((await httpQueue("flags")).body).toMatchObject({ requiredStatuses: null });
  });

  it("creating an existing queue fails with 'already exists'", async () => {
    const stderr = failed(await withFlags("create", ...at, "--concurrency", "9"));
    expect(stderr).toContain(
      "mainline: A merge queue already exists for branch flags of github.com/acme/app.",
    );
    expect((await httpQueue("flags")).body).toMatchObject({ concurrency: 4 });
  });

  it("delete, then get fails with 'No merge queue'", async () => {
    const deleted = succeeded(await withFlags("delete", ...at));
    expect(deleted.stderr).toContain("Deleted the merge queue for flags.");
    expect((await httpQueue("flags")).status).toBe(404);
    const stderr = failed(await withFlags("get", ...at));
    expect(stderr).toContain("mainline: No merge queue for branch flags of github.com/acme/app.");
  });
});

describe("queue update --speculation-threshold-percent", () => {
  const at = ["--repo", "github.com/acme/app", "--branch", "speculation"];

  it("sets Mainline's extension, which the API then answers; 101 is the server's field error", async () => {
    succeeded(await withFlags("create", ...at));
    const text = succeeded(
      await withFlags("update", ...at, "--speculation-threshold-percent", "30"),
    );
    expect(text.stdout).toMatch(/^speculationThresholdPercent +30$/m);
    expect((await httpQueue("speculation")).body).toMatchObject({
      speculationThresholdPercent: 30,
    });

    const stderr = failed(
      await withFlags("update", ...at, "--speculation-threshold-percent", "101"),
    );
    expect(stderr).toMatch(
      /^ {2}- speculationThresholdPercent: must be a whole number from 0 to 100$/m,
    );
    expect((await httpQueue("speculation")).body).toMatchObject({
      speculationThresholdPercent: 30,
    });
  });
});

describe("queue commands with MAINLINE_URL and MAINLINE_TOKEN", () => {
  const at = ["--repo", "github.com/acme/app", "--branch", "from-env"];

  it("create, get, update, delete", async () => {
    succeeded(await withEnv(["create", ...at, "--mode", "parallel", "--concurrency", "3"]));
    const read = parsed(await withEnv(["get", ...at, "--json"]));
    expect(read).toEqual({
      ...QUEUE_DEFAULTS,
      mode: "parallel",
      concurrency: 3,
      branch: "from-env",
      enqueuedPullRequests: [],
      localizations: [],
      host: { state: "ok" },
    });

    const updated = parsed(
      await withEnv([
        "update",
        ...at,
        "--testing-timeout-minutes",
        "15",
        "--batch",
        "true",
        "--json",
      ]),
    );
    expect(updated).toMatchObject({ testingTimeoutMinutes: 15, batch: true, concurrency: 3 });
    expect((await httpQueue("from-env")).body).toMatchObject({ testingTimeoutMinutes: 15 });

    succeeded(await withEnv(["delete", ...at]));
    expect(failed(await withEnv(["get", ...at]))).toContain("No merge queue for branch from-env");
  });

  it("the flags win over the environment", async () => {
    const unused = await freePort();
    const result = await withEnv(["create", ...at, "--url", server.url, "--token", TOKEN], {
      MAINLINE_URL: `http://127.0.0.1:${unused}`,
      MAINLINE_TOKEN: "wrong-token",
    });
    succeeded(result);
    expect((await httpQueue("from-env")).status).toBe(200);
  });
});

describe("--repo", () => {
  it("owner/name means the local git host's local/owner/name, as in every command", async () => {
    // A queue on the local git host needs the organization's local repository first.
    const repository = { host: "local", owner: "acme", name: "short" };
    expect(
      (await post(server.url, "local/createRepository", { repo: repository }, TOKEN)).status,
    ).toBe(200);
    succeeded(await withFlags("create", "--repo", "acme/short", "--branch", "short-form"));
    const answer = await httpQueue("short-form", { host: "local", owner: "acme", name: "short" });
    expect(answer.status).toBe(200);
    const github = await httpQueue("short-form", {
      host: "github.com",
      owner: "acme",
      name: "short",
    });
    expect(github.status).toBe(404);
  });

  it("gitlab.com/group/sub/app keeps the group path as the owner", async () => {
    const repo = ["--repo", "gitlab.com/group/sub/app", "--branch", "nested"];
    succeeded(await withFlags("create", ...repo));
    const nested = { host: "gitlab.com", owner: "group/sub", name: "app" };
    expect((await httpQueue("nested", nested)).status).toBe(200);
    expect((await httpQueue("nested", { ...nested, owner: "group" })).status).toBe(404);
    const read = parsed(await withFlags("get", ...repo, "--json"));
    expect(read).toMatchObject({ branch: "nested", concurrency: 1 });
  });

  it("a single name is a usage error", async () => {
    const stderr = failed(await withFlags("get", "--repo", "app"));
    expect(stderr).toContain("expected owner/name (a repository on Mainline's local git host)");
  });
});

describe("queue commands that cannot reach the API", () => {
  it("without a token: a clear message", async () => {
    const result = await runCliInProcess([
      "queue",
      "get",
      "--repo",
      "acme/app",
      "--url",
      server.url,
    ]);
    expect(failed(result)).toContain("mainline: No API token: pass --token or set MAINLINE_TOKEN");
  });

  it("with a wrong token: the server's 401 message", async () => {
    const result = await runCliInProcess([
      "queue",
      "get",
      "--repo",
      "acme/app",
      "--url",
      server.url,
      "--token",
      "wrong",
    ]);
    expect(failed(result)).toContain("mainline: The API token is not valid or has been revoked.");
  });

  it("with no server at the address: 'Cannot reach Mainline'", async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const result = await runCliInProcess([
      "queue",
      "get",
      "--repo",
      "acme/app",
      "--url",
      url,
      "--token",
      TOKEN,
    ]);
    const stderr = failed(result);
    expect(stderr).toContain(`mainline: Cannot reach Mainline at ${url}`);
    expect(stderr).toContain("ECONNREFUSED");
  });
});

describe("a repository argument that names a host and an owner but no repository", () => {
  const EXPECTED =
    "github.com/acme names a host (github.com) and an owner (acme) but no repository: expected host/owner/name, e.g. github.com/acme/app";

  it.each([
    ["queue", "create", "--repo", "github.com/acme"],
    ["queue", "get", "--repo", "github.com/acme"],
    ["repo", "create", "github.com/acme"],
    ["repo", "public-id", "github.com/acme"],
    ["pr", "open", "--repo", "github.com/acme", "--head", "feature"],
    ["tests", "flaky", "--repo", "github.com/acme"],
  ])("%s %s … is refused with the expected form, nothing suggested or created", async (...args) => {
    const result = await runCliInProcess([...args, "--url", server.url, "--token", TOKEN]);
    const stderr = failed(result);
    expect(stderr).toContain(EXPECTED);
    expect(stderr).not.toContain("repo create");
    // No local repository owned by "github.com" came to be.
    const local = await post(
      server.url,
      "local/listPullRequests",
      { repo: { host: "local", owner: "github.com", name: "acme" } },
      TOKEN,
    );
    expect(local.status).toBe(404);
  });
});

describe("a queue on a host this server has no provider for (github.com without the App)", () => {
  interface LogLine {
    level: number;
    msg: string;
  }
  const logSince = (offset: number): LogLine[] =>
    server.stdout
      .slice(offset)
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as LogLine);
  const noProvider = (lines: LogLine[]) =>
    lines.filter((line) => /no provider for host github\.com/i.test(line.msg));

  it("is created with a warning the CLI prints; the server says so once at warn level, never at error level, however often the queue tries", async () => {
    const offset = server.stdout.length;
    const at = ["--repo", "github.com/acme/unconnected", "--branch", "main"];
    const created = succeeded(await withFlags("create", ...at));
    expect(created.stderr).toContain("Created the merge queue for main.");
    expect(created.stderr).toMatch(
      /^mainline: warning: No provider for host github\.com is configured on this server: the queue was created, but it cannot read, test or merge its pull requests, and submitting one is refused \(host_not_connected\), until the server is configured for github\.com/m,
    );
    // The queue is there, and works as far as it can: its settings.
    expect((await httpQueue("main", { ...REPO, name: "unconnected" })).status).toBe(200);
    // The server's output reaches this process a moment after the answer.
    await waitFor(() => noProvider(logSince(offset)).length > 0, "the server's warning");
    expect(noProvider(logSince(offset)).map((line) => line.level)).toEqual([40]);

    // Work for its driver: impacted targets are kept; each attempt on the host fails.
    const targets = await post(
      server.url,
      "setImpactedTargets",
      {
        repo: { ...REPO, name: "unconnected" },
        targetBranch: "main",
        pr: { number: "1", sha: "a".repeat(40) },
        impactedTargets: "ALL",
      },
      TOKEN,
    );
    expect(targets.status).toBe(200);
    // Attempts after 1, 2 and 4 s of backoff: several steps of the engine.
    await new Promise((resolve) => setTimeout(resolve, 8_000));
    const lines = logSince(offset);
    expect(lines.filter((line) => line.level >= 50)).toEqual([]);
    // Once where the queue was made, once when its driver first needed the host.
    expect(noProvider(lines).map((line) => line.level)).toEqual([40, 40]);
    expect(noProvider(lines)[1]?.msg).toMatch(/does not answer/);
  }, 60_000);
});
