/**
 * A ticket's content, pure: from a test as the Flaky Tests API presents it (status and since
 * when, failure rates, PRs impacted, common failures, recent failing runs, quarantine, owners, its
 * page), a title and the neutral blocks each provider renders. Also the marker that finds a
 * ticket again after a create whose outcome was unknown.
 */
import { createHash, randomBytes } from "node:crypto";
import type { TicketBlock, TicketDraft, TicketSpan } from "./types.js";

/** Jira's summary is at most 255 characters; Linear's and GitHub's titles are longer. */
export const TITLE_MAX = 255;
const SUMMARY_MAX = 300;
const FAILURE_TEXT_MAX = 2000;
export const FAILURES_SHOWN = 5;
export const RUNS_SHOWN = 5;

/** A test as its ticket tells of it (the API's presentation of the test, plus its latest failing runs). */
export interface TicketSubject {
  test: {
    id: string;
    name: string;
    classname: string;
    parent: string;
    file: string;
    variant: string;
    htmlUrl: string;
    status: { value: string; reason: string; since: string };
    quarantined: boolean;
    owners: string[];
    failureRate7d: number;
    failureRate24h: number;
    prsImpacted7d: number;
    mostCommonFailures: { summary: string; count: number; last: string }[];
  };
  repository: { name: string; htmlUrl: string };
  /** Newest first. */
  recentFailures: {
    at: string;
    branch: string;
    commitSha: string;
    commitUrl: string | null;
    prNumber: number | null;
    prUrl: string | null;
    summary: string | null;
    text: string | null;
  }[];
}

/** A new marker: unique to one create of a test's ticket through one connection. */
export function newMarker(connectionId: string, testId: string): string {
  return `mainline:${connectionId}:${testId}:${randomBytes(6).toString("hex")}`;
}

/** The label a Jira ticket carries for its marker (labels hold no spaces or colons). */
export function markerLabel(marker: string): string {
  return `mainline-${createHash("sha256").update(marker).digest("hex").slice(0, 12)}`;
}

/** One line, whitespace runs as one space, at most `max` characters (an ellipsis when cut). */
export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1).trimEnd()}…`;
}

const STATUS_WORDS: Record<string, string> = { flaky: "Flaky test", broken: "Broken test" };

export function ticketTitle(subject: TicketSubject): string {
  const { test } = subject;
  const what = STATUS_WORDS[test.status.value] ?? "Test";
  const name = [test.classname, test.name].filter((part) => part !== "").join(" ");
  const variant = test.variant === "" ? "" : ` [${test.variant}]`;
  return oneLine(`${what}: ${name}${variant}`, TITLE_MAX);
}

function percent(fraction: number): string {
  const value = Math.round(fraction * 1000) / 10;
  return `${Number.isInteger(value) ? value.toFixed(0) : value.toFixed(1)}%`;
}

const text = (value: string): TicketSpan => ({ text: value });
const code = (value: string): TicketSpan => ({ text: value, code: true });
const strong = (value: string): TicketSpan => ({ text: value, strong: true });
const link = (value: string, href: string): TicketSpan => ({ text: value, href });

function summaryBlocks(subject: TicketSubject): TicketBlock[] {
  const { test } = subject;
  const status = test.status.value;
  const intro: TicketSpan[] = [
    code(oneLine(test.name, SUMMARY_MAX)),
    text(" in "),
    link(subject.repository.name, subject.repository.htmlUrl),
    text(status === "healthy" ? " is " : " has been "),
    strong(status),
    text(status === "healthy" ? " now" : ` since ${test.status.since}`),
    text(test.status.reason === "" ? "." : `: ${oneLine(test.status.reason, SUMMARY_MAX)}.`),
  ];
  const owners =
    test.owners.length > 0 ? test.owners.map((owner) => code(owner)) : [text("none in CODEOWNERS")];
  const ownerSpans = owners.flatMap((span, i) => (i === 0 ? [span] : [text(", "), span]));
  return [
    { kind: "paragraph", spans: intro },
    { kind: "heading", text: "Impact" },
    {
      kind: "list",
      items: [
        [
          strong("Failure rate: "),
          text(
            `${percent(test.failureRate7d)} over 7 days, ${percent(test.failureRate24h)} over 24 hours`,
          ),
        ],
        [strong("Pull requests impacted (7 days): "), text(String(test.prsImpacted7d))],
        [strong("Quarantined: "), text(test.quarantined ? "yes" : "no")],
        [strong("Owners: "), ...ownerSpans],
      ],
    },
  ];
}

function failureBlocks(subject: TicketSubject): TicketBlock[] {
  const failures = subject.test.mostCommonFailures.slice(0, FAILURES_SHOWN);
  if (failures.length === 0) return [];
  return [
    { kind: "heading", text: "Most common failures" },
    {
      kind: "list",
      items: failures.map((failure) => [
        strong(`${failure.count}×`),
        text(" "),
        code(oneLine(failure.summary, SUMMARY_MAX) || "(no message)"),
        text(` (last ${failure.last})`),
      ]),
    },
  ];
}

function runBlocks(subject: TicketSubject): TicketBlock[] {
  const runs = subject.recentFailures.slice(0, RUNS_SHOWN);
  if (runs.length === 0) return [];
  const items = runs.map((run) => {
    const sha = run.commitSha.slice(0, 7);
    const spans: TicketSpan[] = [
      text(`${run.at} on `),
      code(run.branch || "(no branch)"),
      text(" at "),
      run.commitUrl ? { text: sha, code: true, href: run.commitUrl } : code(sha),
    ];
    if (run.prNumber !== null) {
      const pr = `PR #${run.prNumber}`;
      spans.push(text(" ("), run.prUrl ? link(pr, run.prUrl) : text(pr), text(")"));
    }
    if (run.summary) spans.push(text(": "), code(oneLine(run.summary, SUMMARY_MAX)));
    return spans;
  });
  const latest = runs.find((run) => run.text !== null && run.text.trim() !== "");
  const blocks: TicketBlock[] = [
    { kind: "heading", text: "Recent failing runs" },
    { kind: "list", items },
  ];
  if (latest?.text) {
    const failure = latest.text.trimEnd();
    blocks.push(
      { kind: "paragraph", spans: [text("The latest failure:")] },
      {
        kind: "code",
        text:
          failure.length <= FAILURE_TEXT_MAX ? failure : `${failure.slice(0, FAILURE_TEXT_MAX)}\n…`,
      },
    );
  }
  return blocks;
}

function testBlocks(subject: TicketSubject): TicketBlock[] {
  const { test } = subject;
  const rows: [string, string][] = [
    ["File", test.file],
    ["Suite", test.parent],
    ["Class", test.classname],
    ["Variant", test.variant],
    ["Test id", test.id],
  ];
  return [
    { kind: "heading", text: "The test" },
    {
      kind: "list",
      items: rows
        .filter(([, value]) => value !== "")
        .map(([label, value]) => [strong(`${label}: `), code(oneLine(value, SUMMARY_MAX))]),
    },
    {
      kind: "paragraph",
      spans: [link("Open the test in Mainline", test.htmlUrl), text(" for its runs and history.")],
    },
  ];
}

/** The ticket for a test: its title, content, labels and owners; `marker` finds it again. */
export function ticketDraft(
  subject: TicketSubject,
  marker: string,
  labels: readonly string[],
): TicketDraft {
  return {
    testId: subject.test.id,
    marker,
    title: ticketTitle(subject),
    blocks: [
      ...summaryBlocks(subject),
      ...failureBlocks(subject),
      ...runBlocks(subject),
      ...testBlocks(subject),
    ],
    labels: [...labels],
    owners: [...subject.test.owners],
  };
}
