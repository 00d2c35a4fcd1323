/**
 * A fake Microsoft Teams Workflows trigger ("Send webhook alerts to a channel") of the tests'
 * own, a real HTTP server: `POST /workflows/<id>/triggers/manual/paths/invoke?…&sig=…` answers
 * 202 Accepted (the flow runs later) for a body that is a `message` with Adaptive Card
 * attachments, each card valid against Microsoft's published Adaptive Card 1.4 JSON Schema
 * (test/fixtures/adaptive-cards, checked with ajv) and of `version` at most 1.4 (Workflows fail
 * later ones); anything else answers 400 with a Logic Apps-style error. An unknown workflow
 * answers 404. Faults a test queues (429 with Retry-After, 5xx) are answered first.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Ajv, type AnySchemaObject, type ValidateFunction } from "ajv";
import addFormats from "ajv-formats";
import { jsonObject, startFakeServer, type FakeAnswer, type FakeServer } from "./fake-http.js";

const CARD_TYPE = "application/vnd.microsoft.card.adaptive";

let validator: ValidateFunction | undefined;

/** Microsoft's Adaptive Card 1.4 schema (draft-06) compiled once. */
export function adaptiveCardSchema(): ValidateFunction {
  if (validator) return validator;
  const schema = JSON.parse(
    readFileSync(
      new URL("../fixtures/adaptive-cards/adaptive-card-1.4.json", import.meta.url),
      "utf8",
    ),
  ) as AnySchemaObject;
  // Its `id` (draft-04 style) and `version`/`features` annotations are not validation keywords.
  const ajv = new Ajv({ strict: false, allErrors: true });
  ajv.addMetaSchema(
    createRequire(import.meta.url)("ajv/dist/refs/json-schema-draft-06.json") as AnySchemaObject,
  );
  addFormats.default(ajv);
  delete schema.id;
  validator = ajv.compile(schema);
  return validator;
}

/** Why a card would not post; empty when it would. */
export function cardProblems(card: unknown): string[] {
  const validate = adaptiveCardSchema();
  const problems = validate(card)
    ? []
    : (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message ?? "invalid"}`);
  const version = (card as { version?: unknown } | null)?.version;
  if (typeof version !== "string" || !/^1\.[0-4]$/.test(version)) {
    problems.push(`version ${String(version)}: Workflows render Adaptive Cards up to 1.4`);
  }
  return problems;
}

export interface TeamsPost {
  workflow: string;
  cards: Record<string, unknown>[];
  /** Every TextBlock's text and every fact, joined by newlines: what a reader sees. */
  shown: string;
}

export interface TeamsFault {
  status: number;
  retryAfter?: number;
}

export interface FakeTeams {
  url: string;
  server: FakeServer;
  /** Messages accepted (202), in order. */
  posts: TeamsPost[];
  /** A new workflow trigger; its URL (with its `sig` credential). */
  addWorkflow(): string;
  fail(...faults: TeamsFault[]): void;
  close(): Promise<void>;
}

function shownOf(node: unknown): string[] {
  if (Array.isArray(node)) return node.flatMap(shownOf);
  if (typeof node !== "object" || node === null) return [];
  const element = node as Record<string, unknown>;
  const own =
    element.type === "TextBlock" && typeof element.text === "string"
      ? [element.text]
      : typeof element.title === "string" && typeof element.value === "string"
        ? [`${element.title}: ${element.value}`]
        : [];
  return [...own, ...Object.values(element).flatMap(shownOf)];
}

const refused = (message: string): FakeAnswer => ({
  status: 400,
  body: { error: { code: "InvalidRequestContent", message } },
});

export async function startFakeTeams(): Promise<FakeTeams> {
  const workflows = new Set<string>();
  const faults: TeamsFault[] = [];
  const posts: TeamsPost[] = [];
  const server = await startFakeServer((request) => {
    const match = /^\/workflows\/([a-f0-9]+)\/triggers\/manual\/paths\/invoke$/.exec(request.path);
    const workflow = match?.[1];
    if (request.method !== "POST" || workflow === undefined || !workflows.has(workflow)) {
      return { status: 404, body: { error: { code: "WorkflowNotFound", message: "Not found." } } };
    }
    if (request.query.get("sig") !== workflow.slice(0, 16)) {
      return {
        status: 401,
        body: {
          error: { code: "DirectApiAuthorizationRequired", message: "The signature is invalid." },
        },
      };
    }
    const fault = faults.shift();
    if (fault) {
      return {
        status: fault.status,
        body: {
          error: {
            code: fault.status === 429 ? "WorkflowRequestsThrottled" : "ServiceUnavailable",
            message: "Try again later.",
          },
        },
        ...(fault.retryAfter === undefined
          ? {}
          : { headers: { "retry-after": String(fault.retryAfter) } }),
      };
    }
    const body = jsonObject(request.text);
    if (!body) return refused("The request content is not valid JSON.");
    if (
      body.type !== "message" ||
      !Array.isArray(body.attachments) ||
      body.attachments.length === 0
    ) {
      return refused("The body must be a message with attachments.");
    }
    const cards: Record<string, unknown>[] = [];
    for (const attachment of body.attachments as unknown[]) {
      const a = (attachment ?? {}) as Record<string, unknown>;
      if (a.contentType !== CARD_TYPE)
        return refused(`An attachment's contentType must be ${CARD_TYPE}.`);
      const problems = cardProblems(a.content);
      if (problems.length > 0)
        return refused(`The Adaptive Card is invalid: ${problems.join("; ")}`);
      cards.push(a.content as Record<string, unknown>);
    }
    posts.push({ workflow, cards, shown: shownOf(cards).join("\n") });
    return { status: 202, body: "" };
  });
  return {
    url: server.url,
    server,
    posts,
    addWorkflow() {
      const id = randomBytes(16).toString("hex");
      workflows.add(id);
      return `${server.url}/workflows/${id}/triggers/manual/paths/invoke?api-version=1&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig=${id.slice(0, 16)}`;
    },
    fail(...more) {
      faults.push(...more);
    },
    close: () => server.close(),
  };
}
