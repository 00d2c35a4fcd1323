/**
 * Webhooks (docs/webhooks.md): the organization's endpoints of every kind (webhook, Slack, Slack
 * bot, Teams) with the form to add one (a webhook's secret shown once, after adding), and an
 * endpoint's page with its actions and recent deliveries, each with its attempts and a "Resend"
 * form. URLs are shown without their query string; a Slack or Teams URL only as its host.
 */
import { KIND_LABELS, isEndpointKind, urlIsCredential } from "../../notifications/kinds.js";
import type { DeliveryWithAttempts } from "../../notifications/records.js";
import type { EndpointView } from "../../notifications/service.js";
import { repositoryName } from "../../organizations/repositories.js";
import {
  badge,
  clockTime,
  formatDuration,
  muted,
  plural,
  relativeTime,
  scrollX,
} from "../format.js";
import { markup, type SafeHtml } from "../html.js";
import type { PageView } from "../layout.js";
import { urls } from "../urls.js";

/** What the add form held when it was refused (kept, so nothing has to be typed again). */
export interface EndpointDraft {
  kind: string;
  url: string;
  channel: string;
  /** As typed: owners separated by spaces or commas. */
  codeOwners: string;
  description: string;
  eventTypes: readonly string[];
}

export interface WebhooksView {
  org: string;
  endpoints: readonly EndpointView[];
  eventTypes: readonly string[];
  csrf: string | undefined;
  now: number;
  note?: string | undefined;
  /** Just added: the endpoint and its secret, shown this once. */
  created?: { endpoint: EndpointView; secret: string } | undefined;
  /** The add form refused: why, and what it held. */
  problem?: { message: string; draft: EndpointDraft } | undefined;
}

export interface EndpointPageView {
  org: string;
  endpoint: EndpointView;
  deliveries: readonly DeliveryWithAttempts[];
  totalDeliveries: number;
  csrf: string | undefined;
  now: number;
  note?: string | undefined;
}

/** The form field of each event type's checkbox (a form's repeated fields are not kept apart). */
export const eventField = (type: string) => `event:${type}`;

/** `https://hooks.example.com/path`: a query string may carry a token, so it is never shown. */
export function shownUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}${parsed.search === "" ? "" : "?…"}`;
  } catch {
    return url.split("?")[0] ?? "";
  }
}

/** Where an endpoint sends, as shown: its URL (a credential one only as its host) or channel. */
export function destinationOf(endpoint: EndpointView): string {
  if (endpoint.kind === "slack_bot") return `Slack channel ${endpoint.channel ?? ""}`;
  return urlIsCredential(endpoint.kind) ? endpoint.url : shownUrl(endpoint.url);
}

const kindLabel = (kind: string) => (isEndpointKind(kind) ? KIND_LABELS[kind] : kind);

const ownersOf = (endpoint: EndpointView): SafeHtml | string =>
  endpoint.codeOwners.length === 0
    ? muted("every owner")
    : markup`<ul class="plain">${endpoint.codeOwners.map((o) => markup`<li><code>${o}</code></li>`)}</ul>`;

function hidden(csrf: string, extra: Record<string, string> = {}): SafeHtml {
  return markup`<input type="hidden" name="csrf" value="${csrf}">${Object.entries(extra).map(
    ([k, v]) => markup`<input type="hidden" name="${k}" value="${v}">`,
  )}`;
}

const eventsOf = (endpoint: EndpointView): SafeHtml | string =>
  endpoint.eventTypes.length === 0
    ? muted("every type")
    : markup`<ul class="plain">${endpoint.eventTypes.map((t) => markup`<li><code>${t}</code></li>`)}</ul>`;

const repositoriesOf = (endpoint: EndpointView): SafeHtml | string =>
  endpoint.repositories.length === 0
    ? muted("every repository")
    : markup`<ul class="plain">${endpoint.repositories.map((r) => markup`<li>${repositoryName(r)}</li>`)}</ul>`;

function stateOf(endpoint: EndpointView, now: number): SafeHtml {
  if (!endpoint.enabled) {
    return markup`${badge("failed", "disabled")}${endpoint.disabledReason ? markup` <span class="small">${endpoint.disabledReason}</span>` : ""}${endpoint.disabledAt === null ? "" : markup` <span class="muted small">since ${clockTime(endpoint.disabledAt, now)}</span>`}`;
  }
  const failing =
    endpoint.failingSince === null
      ? ""
      : markup` <span class="small">failing since ${clockTime(endpoint.failingSince, now)}</span>`;
  return markup`${badge("passed", "enabled")}${failing}`;
}

function endpointsTable(view: WebhooksView): SafeHtml {
  if (view.endpoints.length === 0) {
    return markup`<p class="muted">No endpoint yet: add one below.</p>`;
  }
  const rows = view.endpoints.map(
    (e) => markup`<tr>
<td class="url"><a href="${urls.webhook(view.org, e.id)}">${destinationOf(e)}</a>${e.description ? markup`<br><span class="muted small">${e.description}</span>` : ""}</td>
<td>${kindLabel(e.kind)}</td>
<td>${eventsOf(e)}</td>
<td>${ownersOf(e)}</td>
<td>${repositoriesOf(e)}</td>
<td>${stateOf(e, view.now)}</td>
</tr>
`,
  );
  return scrollX(
    "Endpoints",
    markup`<table class="endpoints">
<caption class="visually-hidden">Endpoints (${plural(view.endpoints.length, "endpoint")})</caption>
<thead><tr><th scope="col">Destination</th><th scope="col">Kind</th><th scope="col">Event types</th><th scope="col">Code owners</th><th scope="col">Repositories</th><th scope="col">State</th></tr></thead>
<tbody>
${rows}</tbody>
</table>`,
  );
}

/** The kind select; the fields after it say which kind uses them (CSS hides the others). */
function kindSelect(selected: string): SafeHtml {
  const options = Object.entries(KIND_LABELS).map(
    ([kind, label]) =>
      markup`<option value="${kind}"${kind === selected ? markup` selected` : ""}>${label}</option>`,
  );
  return markup`<label for="webhook-kind">Kind</label>
<select id="webhook-kind" name="kind">${options}</select>`;
}

function destinationFields(draft: EndpointDraft | undefined): SafeHtml {
  return markup`<div class="kind-fields for-url">
<label for="webhook-url">URL</label>
<input type="url" id="webhook-url" name="url" maxlength="2000" placeholder="https://hooks.example.com/mainline" value="${draft?.url ?? ""}" aria-describedby="webhook-url-hint">
<p class="muted small" id="webhook-url-hint">Webhook: Mainline sends each event there as a signed POST. Slack: the incoming webhook's URL (https://hooks.slack.com/services/…). Teams: the URL of a Workflows trigger ("Send webhook alerts to a channel").</p>
</div>
<div class="kind-fields for-bot">
<label for="webhook-bot-token">Slack bot token</label>
<input type="password" id="webhook-bot-token" name="botToken" maxlength="300" autocomplete="off" placeholder="xoxb-…" aria-describedby="webhook-bot-hint">
<label for="webhook-channel">Slack channel</label>
<input type="text" id="webhook-channel" name="channel" maxlength="81" placeholder="C0123456789 or #name" value="${draft?.channel ?? ""}" aria-describedby="webhook-bot-hint">
<p class="muted small" id="webhook-bot-hint">Slack bot only: a bot with the <code>chat:write</code> scope, invited to the channel.</p>
</div>`;
}

function addForm(view: WebhooksView): SafeHtml | string {
  if (!view.csrf) return "";
  const draft = view.problem?.draft;
  const checked = new Set(draft?.eventTypes ?? []);
  const boxes = view.eventTypes.map(
    (type) =>
      markup`<li><label><input type="checkbox" name="${eventField(type)}" value="on"${checked.has(type) ? markup` checked` : ""}> <code>${type}</code></label></li>`,
  );
  const problem = view.problem
    ? markup`<p class="notice problem" role="alert" id="add-problem">Not added: ${view.problem.message}</p>`
    : "";
  return markup`<section aria-labelledby="add">
<h2 id="add">Add an endpoint</h2>
${problem}
<form class="stacked add-endpoint" method="post" action="${urls.webhooks(view.org)}"${view.problem ? markup` aria-describedby="add-problem"` : ""}>
${hidden(view.csrf)}
${kindSelect(draft?.kind ?? "webhook")}
${destinationFields(draft)}
<label for="webhook-owners">Code owners <span class="muted">(optional)</span></label>
<input type="text" id="webhook-owners" name="owners" maxlength="2000" placeholder="@acme/payments @alice" value="${draft?.codeOwners ?? ""}" aria-describedby="webhook-owners-hint">
<p class="muted small" id="webhook-owners-hint">Only tests one of these owns (CODEOWNERS). Pull requests and queues are not owned: their events go out whatever the owners.</p>
<label for="webhook-description">Description <span class="muted">(optional)</span></label>
<input type="text" id="webhook-description" name="description" maxlength="500" value="${draft?.description ?? ""}">
<fieldset class="event-types">
<legend>Event types <span class="muted">(none checked: every type for a webhook; for Slack and Teams, a test's status, failed or canceled pull requests, and the queue paused or cut off)</span></legend>
<ul class="plain">${boxes}</ul>
</fieldset>
<div><button type="submit" class="primary">Add endpoint</button></div>
</form>
</section>`;
}

function createdNotice(view: WebhooksView): SafeHtml | string {
  if (!view.created) return "";
  const { endpoint, secret } = view.created;
  if (endpoint.kind !== "webhook") {
    return markup`<section class="notice created" aria-labelledby="created" role="status">
<h2 id="created">${kindLabel(endpoint.kind)} added</h2>
<p><a href="${urls.webhook(view.org, endpoint.id)}">${destinationOf(endpoint)}</a> receives messages now. Send a test message from its page to see one arrive.</p>
</section>`;
  }
  return markup`<section class="notice created" aria-labelledby="created" role="status">
<h2 id="created">Endpoint added</h2>
<p><a href="${urls.webhook(view.org, endpoint.id)}">${shownUrl(endpoint.url)}</a> receives events now. Its signing secret, shown only this once (copy it into the receiver; the API's <code>revealSecret</code> shows it again):</p>
<p><code class="secret">${secret}</code></p>
</section>`;
}

export function renderWebhooks(view: WebhooksView): PageView {
  return {
    title: `${view.org} · Webhooks`,
    section: "webhooks",
    breadcrumbs: [{ label: "Webhooks" }],
    main: markup`<h1>Webhooks</h1>
<p class="muted">Mainline sends what happens (tests turning flaky, quarantine overrides, pull requests in the merge queue) to these addresses as signed <code>POST</code>s (<a href="https://www.standardwebhooks.com/" rel="noreferrer noopener">Standard Webhooks</a> libraries verify them), or as messages to Slack and Microsoft Teams channels.</p>
${view.note ? markup`<p class="notice" role="status">${view.note}</p>` : ""}
${createdNotice(view)}
<h2>Endpoints</h2>
${endpointsTable(view)}
${addForm(view)}`,
  };
}

function attemptsOf(delivery: DeliveryWithAttempts, now: number): SafeHtml {
  const items = delivery.attemptLog.map((a) => {
    const outcome =
      a.statusCode === null
        ? markup`<span class="error">${a.error ?? "no answer"}</span>`
        : a.error === null
          ? markup`HTTP ${a.statusCode}`
          : markup`HTTP ${a.statusCode}: <span class="error">${a.error}</span>`;
    return markup`<li>${clockTime(a.at, now)}: ${outcome} <span class="muted">in ${formatDuration(a.durationMs)}</span></li>`;
  });
  const next =
    delivery.state === "pending"
      ? markup`<li class="muted">next attempt ${relativeTime(delivery.nextAttemptAt, now)}</li>`
      : "";
  if (items.length === 0 && next === "") return muted("none");
  return markup`<ol class="plain attempts">${items}${next}</ol>`;
}

const DELIVERY_BADGES: Record<string, string> = {
  pending: "testing",
  succeeded: "passed",
  failed: "failed",
};

function deliveriesTable(view: EndpointPageView): SafeHtml {
  if (view.deliveries.length === 0) {
    return markup`<p class="muted">No delivery yet. Send a test event to try the endpoint.</p>`;
  }
  const { org, endpoint, csrf, now } = view;
  const rows = view.deliveries.map(
    (d) => markup`<tr>
<td><code>${d.eventType}</code><br><span class="muted small">${d.eventId}</span></td>
<td>${clockTime(d.createdAt, now)}</td>
<td>${badge(DELIVERY_BADGES[d.state] ?? "other", d.state)}</td>
<td>${attemptsOf(d, now)}</td>
<td>${csrf ? markup`<form method="post" action="${urls.webhookForm(org, endpoint.id, "resend")}">${hidden(csrf, { eventId: d.eventId })}<button type="submit">Resend<span class="visually-hidden"> ${d.eventType} ${d.eventId}</span></button></form>` : ""}</td>
</tr>
`,
  );
  const shown =
    view.totalDeliveries > view.deliveries.length
      ? markup`<p class="muted small">The newest ${view.deliveries.length} of ${view.totalDeliveries} deliveries; the API's <code>listDeliveries</code> pages through them all.</p>`
      : "";
  return markup`${scrollX(
    "Recent deliveries",
    markup`<table class="deliveries">
<caption class="visually-hidden">Recent deliveries, newest first</caption>
<thead><tr><th scope="col">Event</th><th scope="col">Created</th><th scope="col">State</th><th scope="col">Attempts</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody>
${rows}</tbody>
</table>`,
  )}${shown}`;
}

function endpointActions(view: EndpointPageView): SafeHtml | string {
  const { org, endpoint, csrf } = view;
  if (!csrf) return "";
  const form = (
    action: "test" | "enable" | "disable" | "delete",
    label: string,
    confirm?: string,
  ) =>
    markup`<form method="post" action="${urls.webhookForm(org, endpoint.id, action)}"${confirm ? markup` data-confirm="${confirm}"` : ""}>${hidden(csrf)}<button type="submit">${label}</button></form>`;
  return markup`<div class="actions">
${form("test", "Send test event")}
${endpoint.enabled ? form("disable", "Disable", "Stop sending events to this endpoint?") : form("enable", "Enable")}
${form("delete", "Delete", "Delete this endpoint and its deliveries?")}
</div>`;
}

export function renderEndpoint(view: EndpointPageView): PageView {
  const { endpoint, now } = view;
  const destination = destinationOf(endpoint);
  const label = endpoint.kind === "webhook" ? "Webhook endpoint" : kindLabel(endpoint.kind);
  return {
    title: `${label} ${destination}`,
    section: "webhooks",
    breadcrumbs: [{ label: "Webhooks", href: urls.webhooks(view.org) }, { label: destination }],
    main: markup`<h1>${label}</h1>
${view.note ? markup`<p class="notice" role="status">${view.note}</p>` : ""}
<dl class="endpoint">
<dt>${endpoint.kind === "slack_bot" ? "Channel" : "URL"}</dt><dd class="url"><code>${endpoint.kind === "slack_bot" ? (endpoint.channel ?? "") : destination}</code></dd>
<dt>Kind</dt><dd>${kindLabel(endpoint.kind)}</dd>
<dt>Id</dt><dd><code>${endpoint.id}</code></dd>
<dt>Description</dt><dd>${endpoint.description || muted("none")}</dd>
<dt>Event types</dt><dd>${eventsOf(endpoint)}</dd>
<dt>Code owners</dt><dd>${ownersOf(endpoint)}</dd>
<dt>Repositories</dt><dd>${repositoriesOf(endpoint)}</dd>
<dt>State</dt><dd>${stateOf(endpoint, now)}</dd>
<dt>Added</dt><dd>${clockTime(endpoint.createdAt, now)}</dd>
</dl>
${endpointActions(view)}
<h2>Recent deliveries</h2>
${deliveriesTable(view)}`,
  };
}
