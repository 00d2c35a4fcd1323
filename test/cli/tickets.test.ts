/**
 * `mainline tickets …` and `mainline tests ticket --create` end to end: the real CLI process
 * against a real HTTP server (in this process) and the fake Jira.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCliInProcess, stopAllProcesses, type CliResult } from "../helpers/process.js";
import type { TestServer } from "../helpers/server.js";
import { startFakeJira, type FakeJira } from "../helpers/fake-jira.js";
import {
  addTest,
  JIRA_EMAIL,
  JIRA_TOKEN,
  repository,
  startTicketServer,
  type Repo,
} from "../tickets/support.js";
import { failed, succeeded } from "./support.js";

let server: TestServer;
let jira: FakeJira;
let repo: Repo;

const cli = (args: string[], env: Record<string, string> = {}): Promise<CliResult> =>
  runCliInProcess(args, { MAINLINE_URL: server.url, MAINLINE_TOKEN: server.token, ...env });
const at = ["--repo", "github.com/acme/cli-app"];

beforeAll(async () => {
  server = await startTicketServer();
  jira = await startFakeJira({ flavour: "cloud", email: JIRA_EMAIL, token: JIRA_TOKEN });
  repo = await repository(server, "cli-app");
});

afterAll(async () => {
  await stopAllProcesses();
  await server.close();
  await jira.close();
});

describe("mainline tickets", () => {
  it("adds a Jira connection, lists it without its token, uses it, creates a ticket and removes it", async () => {
    const added = succeeded(
      await cli(
        [
          "tickets",
          "add-jira",
          "--site",
          jira.url,
          "--project",
          "ENG",
          "--email",
          JIRA_EMAIL,
          "--name",
          "Jira ENG",
        ],
        { MAINLINE_JIRA_TOKEN: JIRA_TOKEN },
      ),
    );
    const id = added.stdout.trim();
    expect(id).toMatch(/^tc_/);
    expect(added.stderr).toContain(`--ticket-connection ${id}`);

    const listed = succeeded(await cli(["tickets", "list"]));
    expect(listed.stdout).toMatch(/^ID +KIND +NAME +WHERE +CREDENTIAL +LAST ERROR$/m);
    expect(listed.stdout).toMatch(new RegExp(`^${id} +jira_cloud +Jira ENG +\\S+ ENG +set`, "m"));
    expect(listed.stdout + listed.stderr).not.toContain(JIRA_TOKEN);

    succeeded(
      await cli([
        "tests",
        "settings",
        "update",
        ...at,
        "--ticket-connection",
        id,
        "--auto-ticket-flaky",
        "true",
        "--auto-ticket-after-hours",
        "12",
      ]),
    );
    const settings = JSON.parse(
      succeeded(await cli(["tests", "settings", "get", ...at, "--json"])).stdout,
    ) as {
      ticket_connection_id: string;
      auto_ticket: { flaky: boolean; after_hours: number };
    };
    expect(settings.ticket_connection_id).toBe(id);
    expect(settings.auto_ticket).toMatchObject({ flaky: true, after_hours: 12 });

    const testId = await addTest(server, repo);
    const created = succeeded(await cli(["tests", "ticket", testId, "--create", ...at]));
    expect(created.stdout).toBe(`Created ENG-1 ${jira.url}/browse/ENG-1 · To Do\n`);
    expect(failed(await cli(["tests", "ticket", testId, "--create", ...at]))).toContain(
      "already has a ticket (ENG-1)",
    );
    expect(failed(await cli(["tests", "ticket", testId, "ENG-9", "--create", ...at]))).toContain(
      "Give a ticket (URL or id), or --unlink, or --create.",
    );

    succeeded(await cli(["tickets", "remove", id]));
    expect(succeeded(await cli(["tickets", "list"])).stderr).toContain("No ticket connections.");
    expect(failed(await cli(["tickets", "remove", id]))).toContain("No ticket connection");
  });

  it("refuses a Jira connection without a token, and says what the API refused", async () => {
    expect(
      failed(await cli(["tickets", "add-jira", "--site", jira.url, "--project", "ENG"])),
    ).toContain("--jira-token or MAINLINE_JIRA_TOKEN");
    const refused = failed(
      await cli(["tickets", "add-jira", "--site", jira.url, "--project", "ENG"], {
        MAINLINE_JIRA_TOKEN: JIRA_TOKEN,
      }),
    );
    expect(refused).toContain("email is required for Jira Cloud");
    expect(refused).not.toContain(JIRA_TOKEN);
  });

  it("adds Linear and GitHub connections", async () => {
    const linear = succeeded(
      await cli(["tickets", "add-linear", "--team", "team-1", "--json"], {
        MAINLINE_LINEAR_API_KEY: "lin_api_abcdef0123456789",
      }),
    );
    expect(JSON.parse(linear.stdout)).toMatchObject({
      connection: { kind: "linear", target: "team-1", credentialSet: true },
    });
    const github = succeeded(await cli(["tickets", "add-github", "--repository", "acme/triage"]));
    expect(github.stdout.trim()).toMatch(/^tc_/);
    const listed = succeeded(await cli(["tickets", "list"])).stdout;
    expect(listed).toMatch(/github +GitHub acme\/triage +acme\/triage +none/);
    expect(listed).not.toContain("lin_api_abcdef0123456789");
  });
});
