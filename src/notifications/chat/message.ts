/**
 * What a chat message says about an event, before Slack's or Teams' shape: a headline, a few
 * sentences, labelled facts, small print and links, all plain text (each renderer escapes for its
 * own markup). Read from the event's Trunk-shaped body, which may miss any field: what is missing
 * is left out. Pure.
 */
import { describeReason } from "../../mergequeue/reasons.js";

export interface ChatFact {
  label: string;
  value: string;
  /** The value links there. */
  url?: string | undefined;
}

export interface ChatLink {
  label: string;
  url: string;
}

export type ChatTone = "good" | "bad" | "warning" | "neutral";

export interface ChatMessage {
  /** The headline: the notification's text and the card's title. */
  title: string;
  /** Sentences under it; empty for a one-line message. */
  summary: string;
  facts: ChatFact[];
  /** Small print (a file, the first line of a failure). */
  notes: string[];
  links: ChatLink[];
  tone: ChatTone;
}

type Body = Record<string, unknown>;

const record = (value: unknown): Body =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Body) : {};
const text = (value: unknown): string =>
  typeof value === "string" ? value : typeof value === "number" ? String(value) : "";
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
/** An http(s) URL, else undefined (a link to anything else is never rendered). */
export const webUrl = (value: unknown): string | undefined =>
  typeof value === "string" && /^https?:\/\/[^\s]+$/i.test(value) ? value : undefined;
const words = (code: string): string => code.toLowerCase().replaceAll("_", " ");
const firstLine = (value: string): string =>
  value.split(/\r?\n/).find((l) => l.trim() !== "") ?? "";

function fact(label: string, value: string, url?: string): ChatFact[] {
  return value === "" ? [] : [{ label, value, ...(url === undefined ? {} : { url }) }];
}

function link(label: string, url: unknown): ChatLink[] {
  const href = webUrl(url);
  return href === undefined ? [] : [{ label, url: href }];
}

function message(partial: Partial<ChatMessage> & { title: string }): ChatMessage {
  return { summary: "", facts: [], notes: [], links: [], tone: "neutral", ...partial };
}

/** `acme/web` of a `{host, owner, name}` repository. */
function repositoryName(value: unknown): string {
  const repository = record(value);
  const owner = text(repository.owner);
  const name = text(repository.name);
  return owner && name ? `${owner}/${name}` : "";
}

/** `acme/web` from a repository's page (its path ends with owner and name). */
function repositoryFromUrl(value: unknown): string {
  const href = webUrl(value);
  if (href === undefined) return "";
  const parts = new URL(href).pathname.split("/").filter((p) => p !== "");
  const [owner, name] = parts.slice(-2).map((p) => decodeURIComponent(p));
  return owner && name ? `${owner}/${name}` : "";
}

/** `37.5%` of a rate between 0 and 1. */
export function percent(rate: unknown): string {
  if (typeof rate !== "number" || !Number.isFinite(rate)) return "";
  return `${String(Math.round(rate * 1000) / 10)}%`;
}

const yesNo = (value: unknown): string => (value === true ? "yes" : value === false ? "no" : "");

// Tests

const STATUS_TITLES: Record<string, { title: string; tone: ChatTone }> = {
  flaky: { title: "Test became flaky", tone: "warning" },
  broken: { title: "Test is broken", tone: "bad" },
  healthy: { title: "Test is healthy again", tone: "good" },
};

interface TestStatus {
  test: Body;
  previous: string;
  current: string;
  reason: string;
  repository: string;
}

function testStatus({ test, previous, current, reason, repository }: TestStatus): ChatMessage {
  const known = STATUS_TITLES[current];
  const name = text(test.name);
  const classname = text(test.classname);
  const rate = percent(test.failure_rate_last_7d);
  const owners = list(test.codeowners).map(text).filter(Boolean);
  const failure = firstLine(text(record(list(test.most_common_failures)[0]).summary));
  return message({
    title: known?.title ?? `Test is ${words(current)}`,
    summary: `${name}${repository ? ` in ${repository}` : ""}${reason ? `: ${reason}` : ""}`,
    facts: [
      ...fact("Test", classname ? `${classname} › ${name}` : name),
      ...fact("File", text(test.file_path)),
      ...fact("Failure rate (7 days)", rate),
      ...fact("PRs impacted (7 days)", text(test.pull_requests_impacted_last_7d)),
      ...fact("Quarantined", yesNo(test.quarantined)),
      ...fact("Owners", owners.length === 0 ? "none known" : owners.join(", ")),
      ...fact("Was", words(previous)),
    ],
    notes: failure ? [`Most common failure: ${failure}`] : [],
    links: [...link("Open test", test.html_url), ...link("Ticket", record(test.ticket).html_url)],
    tone: known?.tone ?? "neutral",
  });
}

function testStatusV1(body: Body): ChatMessage {
  const test = record(body.test_case);
  const change = record(body.status_change);
  const current = record(change.current_status);
  return testStatus({
    test,
    previous: text(change.previous_status),
    current: text(current.value).toLowerCase(),
    reason: text(current.reason),
    repository: repositoryFromUrl(record(test.repository).html_url),
  });
}

function testStatusV2(body: Body): ChatMessage {
  return testStatus({
    test: record(body.test_case),
    previous: text(body.previous_status),
    current: text(body.new_status).toLowerCase(),
    reason: text(body.mainline_reason),
    repository: repositoryFromUrl(record(body.repository).html_url),
  });
}

const SETTING_WORDS: Record<string, string> = {
  ALWAYS_QUARANTINE: "always quarantined",
  NEVER_QUARANTINE: "never quarantined",
  UNSPECIFIED: "automatic (the repository's settings)",
};
const settingWords = (value: unknown) => SETTING_WORDS[text(value)] ?? words(text(value));

function quarantineChanged(body: Body): ChatMessage {
  const test = record(body.test_case);
  const change = record(body.quarantine_setting_changed);
  const actor = record(change.actor);
  const who = text(actor.full_name) || text(actor.email) || "someone";
  const updated = settingWords(change.updated_quarantining_setting);
  return message({
    title: "Quarantine setting changed",
    summary: `${who} set ${text(test.name)} to ${updated}.`,
    facts: [
      ...fact("Test", text(test.name)),
      ...fact("Who", who),
      ...fact("What", `${settingWords(change.previous_quarantining_setting)} → ${updated}`),
      ...fact("Why", text(change.reason) || "no reason given"),
      ...fact("File", text(test.file_path)),
    ],
    links: link("Open test", test.html_url),
  });
}

// Pull requests and queues

/** `the main queue` (of `acme/web`). */
function queueName(body: Body): string {
  const branch = text(body.target_branch);
  return branch ? `the ${branch} queue` : "the queue";
}

const ACTION_LINES: Record<string, (pr: string, queue: string, branch: string) => string> = {
  submitted: (pr, queue) => `${pr} was submitted to ${queue}`,
  queued: (pr, queue) => `${pr} is queued in ${queue}`,
  testing: (pr, queue) => `${pr} is being tested in ${queue}`,
  merged: (pr, _queue, branch) => `${pr} merged into ${branch || "its target branch"}`,
  failed: (pr, queue) => `${pr} failed in ${queue}`,
  canceled: (pr, queue) => `${pr} was canceled in ${queue}`,
  pending_failure: (pr, queue) => `${pr} is failing in ${queue}, waiting for those ahead`,
};

/** Why, in words: Mainline's reason, else Trunk's, and the detail. */
function why(body: Body): string {
  const reason = text(body.mainline_reason);
  const trunk = text(body.failure_reason) || text(body.cancellation_reason);
  const said = reason ? describeReason(reason) : trunk ? `${words(trunk)}.` : "";
  const detail = text(body.detail);
  return [said, detail].filter(Boolean).join(" ");
}

const MAX_TESTS_LISTED = 10;

function failureFacts(body: Body): { facts: ChatFact[]; links: ChatLink[]; notes: string[] } {
  const failure = record(body.failure);
  const tests = list(failure.tests).map(text).filter(Boolean);
  const more = tests.length - MAX_TESTS_LISTED;
  const url = webUrl(failure.url);
  return {
    facts: [
      ...fact("Failing check", text(failure.check), url),
      ...fact(
        "Failing tests",
        [
          ...tests.slice(0, MAX_TESTS_LISTED),
          ...(more > 0 ? [`and ${String(more)} more`] : []),
        ].join("\n"),
      ),
    ],
    links: link("Failing check", url),
    notes: text(failure.summary) ? [firstLine(text(failure.summary))] : [],
  };
}

function pullRequest(type: string, body: Body): ChatMessage {
  const action = type.slice("pull_request.".length);
  const pr = `#${text(body.pr_number)}`;
  const line = ACTION_LINES[action];
  const title = line
    ? line(pr, queueName(body), text(body.target_branch))
    : `${pr} ${words(action)} in ${queueName(body)}`;
  const repository = repositoryName(body.repository);
  const details = link("Open pull request", body.http_details_url);
  if (action !== "failed" && action !== "canceled" && action !== "pending_failure") {
    return message({
      title: repository ? `${title} (${repository})` : title,
      links: details,
      tone: action === "merged" ? "good" : "neutral",
    });
  }
  const failure = failureFacts(body);
  return message({
    title,
    summary: why(body),
    facts: [
      ...fact("Repository", repository),
      ...fact("Author", text(body.author)),
      ...failure.facts,
      ...fact("Tested", body.is_bisection === true ? "in a bisection" : ""),
      ...fact("Batched", body.batched === true ? "yes" : ""),
    ],
    notes: failure.notes,
    links: [...details, ...failure.links],
    tone: action === "canceled" ? "neutral" : "bad",
  });
}

const numbers = (value: unknown) =>
  list(value)
    .map((n) => `#${text(n)}`)
    .join(", ");

function batch(type: string, body: Body): ChatMessage {
  const action = type.slice("pull_request_batch.".length);
  const members = numbers(body.pr_numbers_in_batch) || numbers(body.pr_numbers);
  const repository = repositoryName(body.repository);
  if (action !== "failed") {
    return message({
      title: `Batch ${members} ${words(action)} in ${queueName(body)}${repository ? ` (${repository})` : ""}`,
    });
  }
  const size = list(body.pr_numbers_in_batch).length || list(body.pr_numbers).length;
  const reason = text(body.failure_reason);
  return message({
    title: `A batch of ${String(size)} failed in ${queueName(body)}`,
    summary: reason ? `${words(reason)}.` : "",
    facts: [
      ...fact("Repository", repository),
      ...fact("Failed", numbers(body.pr_numbers)),
      ...fact("Batch", members),
      ...fact("Tested", body.is_bisection === true ? "in a bisection" : ""),
      ...fact("Test branch", text(body.test_branch)),
    ],
    tone: "bad",
  });
}

function queueState(body: Body): ChatMessage {
  const state = words(text(body.state));
  const repository = repositoryName(body.repository);
  const of = `${queueName(body)}${repository ? ` of ${repository}` : ""}`;
  const actor = text(body.actor);
  const previous = words(text(body.previous_state));
  const reason = text(body.reason);
  return message({
    title: `${of.charAt(0).toUpperCase()}${of.slice(1)} is ${state || "changed"}`,
    summary: `${actor || "Someone"} changed it${previous ? ` from ${previous}` : ""} to ${state}${reason ? `: ${reason}` : "."}`,
    facts: [...fact("By", actor), ...fact("Why", reason), ...fact("Was", previous)],
    links: link("Open queue", body.http_details_url),
    tone: state === "running" ? "good" : "warning",
  });
}

function queueBlocked(type: string, body: Body): ChatMessage {
  const repository = repositoryName(body.repository);
  const of = `${queueName(body)}${repository ? ` of ${repository}` : ""}`;
  const Of = `${of.charAt(0).toUpperCase()}${of.slice(1)}`;
  if (type === "mainline.queue.unblocked") {
    return message({
      title: `${Of} is unblocked`,
      links: link("Open queue", body.http_details_url),
      tone: "good",
    });
  }
  const cause = words(text(body.cause));
  return message({
    title: `${Of} is blocked${cause ? `: ${cause}` : ""}`,
    summary: text(body.message),
    facts: fact("Cause", cause),
    links: link("Open queue", body.http_details_url),
    tone: "bad",
  });
}

function ping(publicUrl: string): ChatMessage {
  return message({
    title: "Mainline is connected",
    summary: `A test message from Mainline (${publicUrl}): its notifications for this destination arrive here.`,
    links: link("Open Mainline", publicUrl),
    tone: "good",
  });
}

/** What a chat message says about an event of this type with this body. */
export function describeEvent(type: string, body: unknown, publicUrl: string): ChatMessage {
  const b = record(body);
  if (type === "test_case.status_changed") return testStatusV1(b);
  if (type === "v2.test_case.status_changed") return testStatusV2(b);
  if (type === "test_case.quarantining_setting_changed") return quarantineChanged(b);
  if (type.startsWith("pull_request_batch.")) return batch(type, b);
  if (type.startsWith("pull_request.")) return pullRequest(type, b);
  if (type === "mainline.queue.state_changed") return queueState(b);
  if (type === "mainline.queue.blocked" || type === "mainline.queue.unblocked") {
    return queueBlocked(type, b);
  }
  if (type === "mainline.ping") return ping(publicUrl);
  const repository = repositoryName(b.repository);
  return message({ title: `Mainline: ${type}${repository ? ` in ${repository}` : ""}` });
}
