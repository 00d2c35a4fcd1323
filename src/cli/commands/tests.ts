import { InvalidArgumentError, Option, type Command } from "commander";
import type { RepoRef } from "../../organizations/repositories.js";
import { CliError, callApi, type ClientOptions } from "../client.js";
import type { CliContext } from "../context.js";
import { parseRepoArg } from "../repo-arg.js";
import { formatTable } from "../table.js";
import { DAY_MS, HOUR_MS, MINUTE_MS } from "../../lib/time.js";

/**
 * `mainline tests …`: test health from the command line, through the same HTTP API as curl
 * (`/v1/flaky-tests/*`). Tables by default, the API's JSON with `--json`; the API's errors as
 * they come (message and field details), with exit code 1.
 */

export interface TestsOptions {
  repo: RepoRef;
  org?: string;
  url: string;
  token?: string;
  json?: boolean;
}

interface ListOptions extends TestsOptions {
  pageSize: number;
  pageToken?: string;
}

interface Page {
  total_rows: number;
  total_pages: number;
  page_index: number;
  next_page_token: string;
}

interface ListedTest {
  id: string;
  name: string;
  variant: string;
  status: { value: string; reason: string; timestamp: string };
  quarantined: boolean;
  pull_requests_impacted_last_7d: number;
  html_url: string;
  file_path: string;
  parent: string;
  classname: string;
  codeowners: string[];
  ticket?: { html_url: string };
}

interface FailingTest extends ListedTest {
  failure_rate_last_24h: number;
  failure_rate_last_7d: number;
  most_common_failures: { summary: string; occurrence_count: number; last_occurrence: string }[];
}

interface QuarantinedTest {
  test_case_id: string;
  name: string;
  variant: string;
  status: string;
  quarantine_setting: string;
  quarantined_at: string;
}

interface TestDetails {
  test: FailingTest & {
    quarantine: {
      setting: string | null;
      override: string;
      override_actor: string | null;
      override_reason: string | null;
      override_at: string | null;
    };
  };
  status_history: {
    status: string;
    reason: string;
    at: string;
    kind: string;
    actor: string | null;
  }[];
  monitors: {
    id: string;
    classification: string | null;
    active: boolean;
    reason: string;
    changed_at: string;
  }[];
}

const OVERRIDES: Record<string, string> = {
  always: "ALWAYS_QUARANTINE",
  never: "NEVER_QUARANTINE",
  unspecified: "UNSPECIFIED",
  none: "UNSPECIFIED",
};

/** Where a `tests` command writes: results on standard output, notes on standard error. */
interface Printer {
  write(text: string): void;
  note(text: string): void;
}

function printer(context: CliContext): Printer {
  return {
    write: (text) => void context.stdout.write(text),
    note: (text) => void context.stderr.write(text),
  };
}

function printJson(out: Printer, body: unknown): void {
  out.write(JSON.stringify(body, null, 2) + "\n");
}

function parsePageSize(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError("expected a whole number from 1 to 100");
  return Number(value);
}

function parseWhole(value: string): number {
  if (!/^\d{1,6}$/.test(value)) throw new InvalidArgumentError("expected a whole number");
  return Number(value);
}

function parseBoolean(value: string): boolean {
  if (value !== "true" && value !== "false")
    throw new InvalidArgumentError("expected true or false");
  return value === "true";
}

function parseOverride(value: string): string {
  const override = OVERRIDES[value.toLowerCase()] ?? value.toUpperCase();
  if (!Object.values(OVERRIDES).includes(override)) {
    throw new InvalidArgumentError("expected always, never or unspecified");
  }
  return override;
}

const UNITS: Record<string, number> = { m: MINUTE_MS, h: HOUR_MS, d: DAY_MS };

/** `90m`, `24h`, `7d`: a window ending now. */
function parseSince(value: string): number {
  const match = /^(\d{1,6})([mhd])$/.exec(value.trim());
  if (!match) throw new CliError("--since: expected a duration such as 90m, 24h or 7d");
  return Number(match[1]) * (UNITS[match[2] as string] as number);
}

function parseList(value: string): string[] {
  return value
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}

/** --repo, --org, --url, --token and --json, as every `tests` command takes them. */
function testsOptions(command: Command): Command {
  return command
    .requiredOption(
      "--repo <host/owner/name>",
      "the repository, e.g. github.com/acme/app (owner/name means github.com)",
      parseRepoArg,
    )
    .option("--org <slug>", "the organization (default: the token's)")
    .addOption(
      new Option("--url <url>", "Mainline's address")
        .env("MAINLINE_URL")
        .default("http://127.0.0.1:8080"),
    )
    .addOption(new Option("--token <token>", "API token").env("MAINLINE_TOKEN"))
    .option("--json", "print the API's JSON");
}

function listOptions(command: Command): Command {
  return testsOptions(command)
    .option("--page-size <n>", "rows per page, 1 to 100", parsePageSize, 25)
    .option("--page-token <token>", "a page token printed by the previous page");
}

const clientOf = (o: TestsOptions): ClientOptions => ({ url: o.url, token: o.token });

/** The request's `repo` and `org_url_slug`; the slug is the token's unless --org names one. */
async function scope(o: TestsOptions): Promise<{ repo: RepoRef; org_url_slug: string }> {
  let org = o.org;
  if (org === undefined) {
    const who = await callApi<{ organization: { slug: string } }>(clientOf(o), "whoami", {});
    org = who.organization.slug;
  }
  return { repo: o.repo, org_url_slug: org };
}

const pageQuery = (o: ListOptions) => ({
  page_size: o.pageSize,
  ...(o.pageToken !== undefined ? { page_token: o.pageToken } : {}),
});

function percent(fraction: number): string {
  const value = Math.round(fraction * 1000) / 10;
  return `${Number.isInteger(value) ? value.toFixed(0) : value.toFixed(1)}%`;
}

const displayName = (name: string, variant: string) => (variant ? `${name} [${variant}]` : name);

/** The table, or a line saying there is nothing; then where the next page is (on stderr). */
function printPage(out: Printer, rows: string[][], page: Page, nothing: string): void {
  if (rows.length <= 1) {
    out.write(`${nothing}\n`);
    return;
  }
  out.write(formatTable(rows));
  if (page.total_pages > 1) {
    const next = page.next_page_token
      ? `; next page: --page-token ${page.next_page_token}`
      : "; last page";
    out.note(
      `Page ${page.page_index + 1} of ${page.total_pages} (${page.total_rows} tests)${next}\n`,
    );
  }
}

const testRow = (t: ListedTest): string[] => [
  t.id,
  t.status.value,
  t.quarantined ? "yes" : "no",
  String(t.pull_requests_impacted_last_7d),
  displayName(t.name, t.variant),
];

function registerLists(tests: Command, out: Printer): void {
  listOptions(
    tests
      .command("failing")
      .description("Tests that failed in a window (default: the last 24 hours; at most 7 days)"),
  )
    .option("--since <duration>", "the window ends now and starts this long ago: 90m, 24h, 7d")
    .option("--start <time>", "the window's start (ISO 8601), with --end")
    .option("--end <time>", "the window's end (ISO 8601), with --start")
    .action(async (o: ListOptions & { since?: string; start?: string; end?: string }) => {
      let start = o.start;
      let end = o.end;
      if (start !== undefined || end !== undefined) {
        if (start === undefined || end === undefined || o.since !== undefined) {
          throw new CliError("Give --start and --end together, or --since alone.");
        }
      } else {
        const now = Date.now();
        end = new Date(now).toISOString();
        start = new Date(now - parseSince(o.since ?? "24h")).toISOString();
      }
      const body = await callApi<{ tests: FailingTest[]; page: Page }>(
        clientOf(o),
        "flaky-tests/list-failing-tests",
        { ...(await scope(o)), start_time: start, end_time: end, page_query: pageQuery(o) },
      );
      if (o.json) {
        printJson(out, body);
        return;
      }
      const rows = [
        ["ID", "STATUS", "QUARANTINED", "PRS 7D", "FAILED 24H", "FAILED 7D", "NAME"],
        ...body.tests.map((t) => {
          const [id, status, quarantined, prs, name] = testRow(t) as [
            string,
            string,
            string,
            string,
            string,
          ];
          return [
            id,
            status,
            quarantined,
            prs,
            percent(t.failure_rate_last_24h),
            percent(t.failure_rate_last_7d),
            name,
          ];
        }),
      ];
      printPage(out, rows, body.page, "No test failed in that window.");
    });

  for (const status of ["flaky", "broken"] as const) {
    listOptions(
      tests.command(status).description(`Tests that are ${status} now (most PRs impacted first)`),
    ).action(async (o: ListOptions) => {
      const body = await callApi<{ tests: ListedTest[]; page: Page }>(
        clientOf(o),
        "flaky-tests/list-unhealthy-tests",
        { ...(await scope(o)), status: status.toUpperCase(), page_query: pageQuery(o) },
      );
      if (o.json) {
        printJson(out, body);
        return;
      }
      const rows = [["ID", "STATUS", "QUARANTINED", "PRS 7D", "NAME"], ...body.tests.map(testRow)];
      printPage(out, rows, body.page, `No ${status} tests.`);
    });
  }

  listOptions(
    tests.command("quarantined").description("Quarantined tests (most recently quarantined first)"),
  ).action(async (o: ListOptions) => {
    const body = await callApi<{ quarantined_tests: QuarantinedTest[]; page: Page }>(
      clientOf(o),
      "flaky-tests/list-quarantined-tests",
      { ...(await scope(o)), page_query: pageQuery(o) },
    );
    if (o.json) {
      printJson(out, body);
      return;
    }
    const rows = [
      ["ID", "STATUS", "QUARANTINE", "SINCE", "NAME"],
      ...body.quarantined_tests.map((t) => [
        t.test_case_id,
        t.status.toLowerCase(),
        t.quarantine_setting,
        t.quarantined_at,
        displayName(t.name, t.variant),
      ]),
    ];
    printPage(out, rows, body.page, "No quarantined tests.");
  });
}

/** `tests show`: the test as `key  value` lines, then its monitors and latest history. */
export function formatTestDetails(details: TestDetails): string {
  const { test } = details;
  const q = test.quarantine;
  const lines: [string, string][] = [
    ["name", displayName(test.name, test.variant)],
    ["id", test.id],
    ["status", `${test.status.value} since ${test.status.timestamp}`],
    ["reason", test.status.reason],
    ["quarantined", test.quarantined ? `yes (${q.setting ?? ""})` : "no"],
    [
      "override",
      q.override === "UNSPECIFIED"
        ? "none (the repository's rule applies)"
        : `${q.override}${q.override_actor ? ` by ${q.override_actor}` : ""}${q.override_reason ? `: ${q.override_reason}` : ""}`,
    ],
    ["suite", test.parent],
    ["class", test.classname],
    ["file", test.file_path],
    ["codeowners", test.codeowners.join(", ")],
    ["ticket", test.ticket?.html_url ?? ""],
    ["failed 24h", percent(test.failure_rate_last_24h)],
    ["failed 7d", percent(test.failure_rate_last_7d)],
    ["PRs 7d", String(test.pull_requests_impacted_last_7d)],
    ["page", test.html_url],
  ];
  const width = Math.max(...lines.map(([key]) => key.length));
  let out = lines.map(([key, value]) => `${key.padEnd(width)}  ${value}`.trimEnd() + "\n").join("");
  if (test.most_common_failures.length > 0) {
    out +=
      "\n" +
      formatTable([
        ["COUNT", "LAST", "FAILURE"],
        ...test.most_common_failures.map((f) => [
          String(f.occurrence_count),
          f.last_occurrence,
          f.summary.replace(/\s+/g, " "),
        ]),
      ]);
  }
  if (details.monitors.length > 0) {
    out +=
      "\n" +
      formatTable([
        ["MONITOR", "FLAGS", "STATE", "SINCE", "REASON"],
        ...details.monitors.map((m) => [
          m.id,
          m.classification ?? "(removed)",
          m.active ? "active" : "inactive",
          m.changed_at,
          m.reason,
        ]),
      ]);
  }
  if (details.status_history.length > 0) {
    out +=
      "\n" +
      formatTable([
        ["AT", "CHANGE", "STATUS", "BY", "REASON"],
        ...details.status_history
          .slice(0, 10)
          .map((h) => [h.at, h.kind, h.status, h.actor ?? "monitors", h.reason]),
      ]);
  }
  return out;
}

function registerTestCommands(tests: Command, out: Printer): void {
  testsOptions(
    tests
      .command("show")
      .description("One test: status and reason, quarantine, rates, monitors, history")
      .argument("<test-id>", "the test's id (from the lists)"),
  ).action(async (testId: string, o: TestsOptions) => {
    const body = await callApi<TestDetails>(clientOf(o), "flaky-tests/get-test-details", {
      ...(await scope(o)),
      test_id: testId,
    });
    if (o.json) {
      printJson(out, body);
      return;
    }
    out.write(formatTestDetails(body));
  });

  testsOptions(
    tests
      .command("quarantine")
      .description("Set a test's quarantine override")
      .argument("<test-id>", "the test's id")
      .argument(
        "<override>",
        "always | never | unspecified (back to the repository's rule)",
        parseOverride,
      ),
  )
    .option("--reason <text>", "why (kept with the override)")
    .option("--actor <who>", "who sets it (default: the token)")
    .action(async (testId: string, override: string, o: TestsOptions & Record<string, unknown>) => {
      const body = await callApi<{
        quarantined: boolean;
        override: string;
        setting: string | null;
      }>(clientOf(o), "flaky-tests/set-quarantine-override", {
        ...(await scope(o)),
        test_id: testId,
        override,
        ...(typeof o.reason === "string" ? { reason: o.reason } : {}),
        ...(typeof o.actor === "string" ? { actor: o.actor } : {}),
      });
      if (o.json) {
        printJson(out, body);
        return;
      }
      out.write(
        `Override ${body.override}: the test is ${body.quarantined ? `quarantined (${body.setting ?? ""})` : "not quarantined"}.\n`,
      );
    });

  testsOptions(
    tests
      .command("ticket")
      .description(
        "Link a ticket to a test (a URL, or an id after the ticket base URL), or create one (--create)",
      )
      .argument("<test-id>", "the test's id")
      .argument("[ticket]", "the ticket's URL or id"),
  )
    .option("--unlink", "remove the linked ticket")
    .option("--create", "create the ticket through the repository's ticket connection")
    .action(
      async (
        testId: string,
        ticket: string | undefined,
        o: TestsOptions & { unlink?: boolean; create?: boolean },
      ) => {
        const choices = [ticket !== undefined, o.unlink === true, o.create === true];
        if (choices.filter(Boolean).length !== 1) {
          throw new CliError("Give a ticket (URL or id), or --unlink, or --create.");
        }
        const { repo, org_url_slug } = await scope(o);
        if (o.create) {
          const created = await callApi<{
            ticket: { html_url: string; key: string | null; state: { name: string } | null };
            created: boolean;
          }>(clientOf(o), "flaky-tests/create-ticket-for-test-case", {
            repo,
            org_url_slug,
            test_id: testId,
          });
          if (o.json) {
            printJson(out, created);
            return;
          }
          const { key, html_url, state } = created.ticket;
          const what = created.created ? "Created" : "Linked (created by an earlier try)";
          out.write(`${what} ${key ?? ""} ${html_url}${state ? ` · ${state.name}` : ""}\n`);
          return;
        }
        const body = await callApi<{ ticket: { html_url: string } | null }>(
          clientOf(o),
          "flaky-tests/link-ticket-to-test-case",
          { repo, org_url_slug, test_case_id: testId, external_ticket_id: ticket ?? null },
        );
        if (o.json) {
          printJson(out, body);
          return;
        }
        out.write(body.ticket ? `Linked ${body.ticket.html_url}\n` : "Unlinked the ticket.\n");
      },
    );
}

function printSettings(out: Printer, body: Record<string, unknown>): void {
  const width = Math.max(...Object.keys(body).map((k) => k.length));
  for (const [key, value] of Object.entries(body)) {
    out.write(`${key.padEnd(width)}  ${JSON.stringify(value)}\n`);
  }
}

function registerSettings(tests: Command, out: Printer): void {
  const settings = tests
    .command("settings")
    .description("A repository's test-health settings (get, update)");

  testsOptions(settings.command("get").description("Show the settings")).action(
    async (o: TestsOptions) => {
      const body = await callApi<Record<string, unknown>>(
        clientOf(o),
        "flaky-tests/get-test-settings",
        await scope(o),
      );
      if (o.json) {
        printJson(out, body);
        return;
      }
      printSettings(out, body);
    },
  );

  testsOptions(
    settings
      .command("update")
      .description(
        "Change settings; unnamed ones stay as they are (monitors: use the API with a JSON body)",
      ),
  )
    .option("--quarantining-enabled <bool>", "true | false", parseBoolean)
    .option("--auto-quarantine <bool>", "quarantine flaky tests: true | false", parseBoolean)
    .option("--pass-on-retry <bool>", "the pass-on-retry monitor: true | false", parseBoolean)
    .option("--recovery-days <n>", "pass-on-retry resolves after this many days", parsePageSize)
    .option("--stable-branches <globs>", "comma-separated, e.g. main,release/*", parseList)
    .option("--merge-queue-branches <globs>", "comma-separated", parseList)
    .option("--ticket-base-url <url>", "ticket ids are appended to it")
    .option("--no-ticket-base-url", "remove the ticket base URL")
    .option(
      "--pull-request-comments <bool>",
      "comment failing tests on GitHub pull requests: true | false",
      parseBoolean,
    )
    .option(
      "--ticket-connection <id>",
      "the ticket connection tickets go to (mainline tickets list)",
    )
    .option("--no-ticket-connection", "no ticket connection")
    .option(
      "--auto-ticket-flaky <bool>",
      "a ticket for tests flaky long enough: true | false",
      parseBoolean,
    )
    .option(
      "--auto-ticket-broken <bool>",
      "a ticket for tests broken long enough: true | false",
      parseBoolean,
    )
    .option("--auto-ticket-after-hours <n>", "how long first (hours, 0 to 720)", parseWhole)
    .option(
      "--auto-ticket-require-owner <bool>",
      "only tests with an owner in CODEOWNERS: true | false",
      parseBoolean,
    )
    .action(async (o: TestsOptions & Record<string, unknown>) => {
      const patch: Record<string, unknown> = {};
      if (o.quarantiningEnabled !== undefined) patch.quarantining_enabled = o.quarantiningEnabled;
      if (o.autoQuarantine !== undefined) patch.auto_quarantine = o.autoQuarantine;
      if (o.passOnRetry !== undefined || o.recoveryDays !== undefined) {
        patch.pass_on_retry = {
          ...(o.passOnRetry !== undefined ? { enabled: o.passOnRetry } : {}),
          ...(o.recoveryDays !== undefined ? { recovery_days: o.recoveryDays } : {}),
        };
      }
      if (o.stableBranches !== undefined) patch.stable_branches = o.stableBranches;
      if (o.mergeQueueBranches !== undefined) patch.merge_queue_branches = o.mergeQueueBranches;
      if (typeof o.ticketBaseUrl === "string") patch.ticket_base_url = o.ticketBaseUrl;
      if (o.ticketBaseUrl === false) patch.ticket_base_url = null;
      if (o.pullRequestComments !== undefined) {
        patch.pull_request_comments = o.pullRequestComments;
      }
      if (typeof o.ticketConnection === "string") patch.ticket_connection_id = o.ticketConnection;
      if (o.ticketConnection === false) patch.ticket_connection_id = null;
      const rule = {
        ...(o.autoTicketFlaky === undefined ? {} : { flaky: o.autoTicketFlaky }),
        ...(o.autoTicketBroken === undefined ? {} : { broken: o.autoTicketBroken }),
        ...(o.autoTicketAfterHours === undefined ? {} : { after_hours: o.autoTicketAfterHours }),
        ...(o.autoTicketRequireOwner === undefined
          ? {}
          : { require_owner: o.autoTicketRequireOwner }),
      };
      if (Object.keys(rule).length > 0) patch.auto_ticket = rule;
      if (Object.keys(patch).length === 0) {
        throw new CliError("Name at least one setting to change (see --help).");
      }
      const body = await callApi<Record<string, unknown>>(
        clientOf(o),
        "flaky-tests/update-test-settings",
        { ...(await scope(o)), ...patch },
      );
      if (o.json) {
        printJson(out, body);
        return;
      }
      printSettings(out, body);
    });
}

export function registerTestsCommands(program: Command, context: CliContext): void {
  const out = printer(context);
  const tests = program
    .command("tests")
    .description(
      "Test health: failing, flaky, broken and quarantined tests, one test, overrides, tickets, settings (through the HTTP API)",
    );
  registerLists(tests, out);
  registerTestCommands(tests, out);
  registerSettings(tests, out);
}
