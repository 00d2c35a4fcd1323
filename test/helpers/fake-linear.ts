import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import {
  buildSchema,
  execute,
  getVariableValues,
  GraphQLError,
  Kind,
  parse,
  validate,
  type DocumentNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from "graphql";
import { randomHex, seededRandom } from "../../src/lib/seeded-random.js";

/**
 * A fake of Linear's GraphQL API (`POST /graphql`) for the ticket client, a real HTTP server.
 * Every request is checked against Linear's published schema (test/fixtures/linear/): the query is
 * parsed and validated, its variables coerced, exactly as a GraphQL server does, and refused the
 * way Linear refuses (HTTP 400, `errors[]` with `extensions.code`) before anything runs; a request
 * refused so is recorded in `rejected`, which a test asserts is empty. It then runs the operations
 * a ticket client uses with graphql's own executor, against an in-memory workspace: `issueCreate`,
 * `issues(filter:)` (team, project and string comparators on title and description), `issue(id:)`
 * (by UUID or identifier). Authentication: a personal API key as the bare `Authorization` header,
 * an OAuth token as `Bearer …`. Every answer carries Linear's rate-limit headers; faults script
 * the failures a client must survive.
 */

const SCHEMA_FILE = join(import.meta.dirname, "..", "fixtures", "linear", "schema.graphql.gz");

let schemaCache: GraphQLSchema | null = null;

/** Linear's schema, built once per process (about a third of a second). */
export function linearSchema(): GraphQLSchema {
  schemaCache ??= buildSchema(gunzipSync(readFileSync(SCHEMA_FILE)).toString("utf8"));
  return schemaCache;
}

/** Root fields the fake runs; any other is refused as unimplemented (a test would need more of it). */
const IMPLEMENTED = new Set(["issueCreate", "issues", "issue"]);

export interface LinearTeam {
  id: string;
  key: string;
  name: string;
  nextNumber: number;
}

export interface LinearProject {
  id: string;
  name: string;
  teamIds: string[];
}

export interface LinearState {
  id: string;
  name: string;
  type: "triage" | "backlog" | "unstarted" | "started" | "completed" | "canceled";
}

export interface LinearIssue {
  id: string;
  identifier: string;
  number: number;
  title: string;
  description: string | null;
  team: LinearTeam;
  project: LinearProject | null;
  state: LinearState;
  createdAt: string;
  updatedAt: string;
}

export type LinearFault =
  /** A key Linear refuses (as a wrong key is answered). */
  | { kind: "auth"; status?: number }
  /** The key may not do this (`FORBIDDEN`). */
  | { kind: "forbidden"; status?: number }
  /** `RATELIMITED`, with the budget's headers: spent, refilled `resetInMs` from now. */
  | { kind: "ratelimited"; status?: number; resetInMs?: number; retryAfterSec?: number }
  /** An error page before anything happened. */
  | { kind: "server"; status?: number }
  /** The operation happens, then the answer is an error page (a create whose outcome is unknown). */
  | { kind: "done-then-error"; status?: number }
  /** The answer comes this late (the operation happens). */
  | { kind: "delay"; ms: number };

export interface LoggedLinearRequest {
  authorization: string | undefined;
  query: string;
  variables: Record<string, unknown>;
  operationName: string | null;
  status: number;
}

interface Json {
  [key: string]: unknown;
}

function graphqlError(
  message: string,
  code: string,
  type: string,
  userPresentableMessage?: string,
): Json {
  return {
    message,
    extensions: {
      code,
      type,
      userError: true,
      ...(userPresentableMessage === undefined ? {} : { userPresentableMessage }),
    },
  };
}

/** What Linear answers a request without a valid key. */
export const AUTHENTICATION_ERROR = graphqlError(
  "Authentication required, not authenticated",
  "AUTHENTICATION_ERROR",
  "authentication error",
  "You need to authenticate to access this operation.",
);

/** An error a resolver throws, carried to the answer as Linear's `errors[]` entry. */
function inputError(message: string, userPresentableMessage: string): GraphQLError {
  return new GraphQLError(message, {
    extensions: {
      code: "INPUT_ERROR",
      type: "invalid input",
      userError: true,
      userPresentableMessage,
    },
  });
}

const STATES: Omit<LinearState, "id">[] = [
  { name: "Backlog", type: "backlog" },
  { name: "Todo", type: "unstarted" },
  { name: "In Progress", type: "started" },
  { name: "Done", type: "completed" },
  { name: "Canceled", type: "canceled" },
];

const REQUESTS_LIMIT = 5_000;
const COMPLEXITY_LIMIT = 3_000_000;

export class FakeLinear {
  readonly teams: LinearTeam[] = [];
  readonly projects: LinearProject[] = [];
  readonly issues: LinearIssue[] = [];
  readonly requests: LoggedLinearRequest[] = [];
  /** Requests the schema refused (syntax, validation, variables): a client's mistakes. */
  readonly rejected: { query: string; errors: string[] }[] = [];
  url = "";
  private server: Server | null = null;
  private readonly random: () => number;
  private readonly apiKeys = new Set<string>();
  private readonly oauthTokens = new Set<string>();
  private readonly readOnly = new Set<string>();
  private readonly states = new Map<string, LinearState[]>();
  private faults: LinearFault[] = [];
  private requestsUsed = 0;
  private clock = Date.parse("2026-03-02T09:00:00.000Z");

  private constructor(seed: number) {
    this.random = seededRandom(seed);
  }

  static async start(options: { seed?: number } = {}): Promise<FakeLinear> {
    const fake = new FakeLinear(options.seed ?? 1);
    linearSchema();
    const server = createServer((req, res) => {
      void fake.handle(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    fake.server = server;
    fake.url = `http://127.0.0.1:${String((server.address() as AddressInfo).port)}/graphql`;
    return fake;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (server === null) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => {
      server.close(() => {
        resolve();
      });
    });
  }

  // ---- the workspace --------------------------------------------------------------------------

  private uuid(): string {
    const hex = randomHex(this.random, 32);
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20)}`;
  }

  private now(): string {
    this.clock += 1_000;
    return new Date(this.clock).toISOString();
  }

  /** A personal API key (`lin_api_…`), sent bare; `readOnly`: it may read but not create issues. */
  createApiKey(options: { readOnly?: boolean } = {}): string {
    const key = `lin_api_${randomHex(this.random, 40)}`;
    this.apiKeys.add(key);
    if (options.readOnly === true) this.readOnly.add(key);
    return key;
  }

  /** An OAuth access token, sent as `Bearer …`. */
  createOAuthToken(): string {
    const token = `lin_oauth_${randomHex(this.random, 64)}`;
    this.oauthTokens.add(token);
    return token;
  }

  createTeam(key: string, name = key): LinearTeam {
    const team: LinearTeam = { id: this.uuid(), key, name, nextNumber: 1 };
    this.teams.push(team);
    this.states.set(
      team.id,
      STATES.map((s) => ({ ...s, id: this.uuid() })),
    );
    return team;
  }

  createProject(name: string, teams: LinearTeam[]): LinearProject {
    const project: LinearProject = { id: this.uuid(), name, teamIds: teams.map((t) => t.id) };
    this.projects.push(project);
    return project;
  }

  /** An issue by identifier (`ENG-3`) or id. */
  issue(idOrIdentifier: string): LinearIssue {
    const found = this.issues.find(
      (i) => i.id === idOrIdentifier || i.identifier === idOrIdentifier,
    );
    if (found === undefined) throw new Error(`no Linear issue ${idOrIdentifier}`);
    return found;
  }

  /** Moves an issue to its team's state of that type (as a person would in Linear). */
  moveIssue(idOrIdentifier: string, type: LinearState["type"]): void {
    const issue = this.issue(idOrIdentifier);
    const state = this.states.get(issue.team.id)?.find((s) => s.type === type);
    if (state === undefined) throw new Error(`no ${type} state`);
    issue.state = state;
    issue.updatedAt = this.now();
  }

  completeIssue(idOrIdentifier: string): void {
    this.moveIssue(idOrIdentifier, "completed");
  }

  /** The next requests fail so, one fault per request, in order. */
  failNext(...faults: LinearFault[]): void {
    this.faults.push(...faults);
  }

  // ---- HTTP -----------------------------------------------------------------------------------

  private rateHeaders(spent = false, resetInMs = 60 * 60 * 1000): Record<string, string> {
    const reset = String(Date.now() + resetInMs);
    return {
      "x-ratelimit-requests-limit": String(REQUESTS_LIMIT),
      "x-ratelimit-requests-remaining": String(spent ? 0 : REQUESTS_LIMIT - this.requestsUsed),
      "x-ratelimit-requests-reset": reset,
      "x-ratelimit-complexity-limit": String(COMPLEXITY_LIMIT),
      "x-ratelimit-complexity-remaining": String(
        spent ? 0 : COMPLEXITY_LIMIT - this.requestsUsed * 10,
      ),
      "x-ratelimit-complexity-reset": reset,
      "x-complexity": "10",
    };
  }

  private send(
    res: ServerResponse,
    status: number,
    body: unknown,
    headers: Record<string, string> = {},
  ): void {
    res.writeHead(status, {
      "content-type": "application/json; charset=utf-8",
      ...this.rateHeaders(),
      ...headers,
    });
    res.end(JSON.stringify(body));
  }

  private sendErrorPage(res: ServerResponse, status: number): void {
    res.writeHead(status, { "content-type": "text/html; charset=utf-8" });
    res.end(`<html><body><h1>${String(status)}</h1>Linear is having trouble.</body></html>`);
  }

  private authorized(header: string | undefined): boolean {
    if (header === undefined) return false;
    if (header.startsWith("Bearer ")) return this.oauthTokens.has(header.slice(7));
    return this.apiKeys.has(header);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    const log: LoggedLinearRequest = {
      authorization: req.headers.authorization,
      query: "",
      variables: {},
      operationName: null,
      status: 0,
    };
    this.requests.push(log);
    this.requestsUsed++;
    const answer = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      log.status = status;
      this.send(res, status, body, headers);
    };
    if (new URL(req.url ?? "/", "http://x").pathname !== "/graphql" || req.method !== "POST") {
      answer(404, { errors: [{ message: "Not found" }] });
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      body = null;
    }
    if (typeof body !== "object" || body === null || typeof (body as Json).query !== "string") {
      answer(400, {
        errors: [graphqlError("Must provide query string.", "BAD_REQUEST", "graphql error")],
      });
      return;
    }
    const request = body as Json;
    log.query = request.query as string;
    log.variables = (request.variables ?? {}) as Record<string, unknown>;
    log.operationName = typeof request.operationName === "string" ? request.operationName : null;

    const fault = this.faults.shift();
    if (fault?.kind === "auth") {
      answer(fault.status ?? 401, { errors: [AUTHENTICATION_ERROR] });
      return;
    }
    if (!this.authorized(req.headers.authorization)) {
      answer(401, { errors: [AUTHENTICATION_ERROR] });
      return;
    }
    if (fault?.kind === "ratelimited") {
      const resetInMs = fault.resetInMs ?? 30_000;
      answer(
        fault.status ?? 429,
        {
          errors: [
            {
              message: `Rate limit exceeded. Only ${String(REQUESTS_LIMIT)} requests are allowed per 1 hour.`,
              extensions: {
                code: "RATELIMITED",
                type: "ratelimited",
                userError: true,
                statusCode: 429,
              },
            },
          ],
        },
        {
          ...this.rateHeaders(true, resetInMs),
          ...(fault.retryAfterSec === undefined
            ? {}
            : { "retry-after": String(fault.retryAfterSec) }),
        },
      );
      return;
    }
    if (fault?.kind === "server") {
      log.status = fault.status ?? 500;
      this.sendErrorPage(res, log.status);
      return;
    }
    if (fault?.kind === "delay") await new Promise((resolve) => setTimeout(resolve, fault.ms));

    const result = this.run(log, req.headers.authorization ?? "", fault?.kind === "forbidden");
    if (fault?.kind === "forbidden" && result.status === 200) {
      answer(fault.status ?? 200, {
        data: null,
        errors: [
          graphqlError(
            "Forbidden",
            "FORBIDDEN",
            "forbidden",
            "You don't have permission to perform this action.",
          ),
        ],
      });
      return;
    }
    if (fault?.kind === "done-then-error") {
      log.status = fault.status ?? 502;
      this.sendErrorPage(res, log.status);
      return;
    }
    answer(result.status, result.body);
  }

  /** Parse, validate, coerce, execute: a GraphQL server's steps, with Linear's answers. */
  private run(
    log: LoggedLinearRequest,
    authorization: string,
    forbidden: boolean,
  ): { status: number; body: unknown } {
    const schema = linearSchema();
    const refuse = (errors: readonly GraphQLError[], code: string) => {
      this.rejected.push({ query: log.query, errors: errors.map((e) => e.message) });
      return {
        status: 400,
        body: {
          errors: errors.map((e) => ({
            message: e.message,
            ...(e.locations === undefined ? {} : { locations: e.locations }),
            extensions: { code, type: "graphql error", userError: true },
          })),
        },
      };
    };
    let document: DocumentNode;
    try {
      document = parse(log.query);
    } catch (error) {
      return refuse([error as GraphQLError], "GRAPHQL_PARSE_FAILED");
    }
    const invalid = validate(schema, document);
    if (invalid.length > 0) return refuse(invalid, "GRAPHQL_VALIDATION_FAILED");
    const operations = document.definitions.filter(
      (d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION,
    );
    const operation =
      log.operationName === null
        ? operations.length === 1
          ? operations[0]
          : undefined
        : operations.find((o) => o.name?.value === log.operationName);
    if (operation === undefined) {
      return refuse(
        [new GraphQLError("Could not determine what operation to execute.")],
        "BAD_REQUEST",
      );
    }
    const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], log.variables);
    if ("errors" in coerced) return refuse(coerced.errors, "BAD_USER_INPUT");
    for (const selection of operation.selectionSet.selections) {
      if (
        selection.kind === Kind.FIELD &&
        !IMPLEMENTED.has(selection.name.value) &&
        selection.name.value !== "__typename"
      ) {
        return refuse(
          [new GraphQLError(`The fake Linear does not implement ${selection.name.value}`)],
          "NOT_IMPLEMENTED",
        );
      }
    }
    if (forbidden) return { status: 200, body: null };
    const result = execute({
      schema,
      document,
      operationName: log.operationName,
      variableValues: log.variables,
      rootValue: this.resolvers(authorization),
    });
    if ("then" in result) throw new Error("the fake's resolvers are synchronous");
    const errors = (result.errors ?? []).map((e) => ({
      message: e.message,
      path: e.path,
      extensions: e.extensions,
    }));
    return {
      status: 200,
      body: errors.length > 0 ? { data: result.data ?? null, errors } : { data: result.data },
    };
  }

  private resolvers(authorization: string): Record<string, unknown> {
    const view = (issue: LinearIssue) => ({
      ...issue,
      url: `https://linear.app/acme/issue/${issue.identifier}/${slug(issue.title)}`,
      branchName: `${issue.identifier.toLowerCase()}-${slug(issue.title)}`,
      priority: 0,
      team: { ...issue.team, createdAt: issue.createdAt, updatedAt: issue.createdAt },
    });
    return {
      issueCreate: (args: { input: Record<string, unknown> }) => {
        if (this.readOnly.has(authorization)) {
          throw new GraphQLError("Forbidden", {
            extensions: {
              code: "FORBIDDEN",
              type: "forbidden",
              userError: true,
              userPresentableMessage: "This API key may not create issues.",
            },
          });
        }
        const input = args.input;
        const team = this.teams.find((t) => t.id === input.teamId);
        if (team === undefined)
          throw inputError("Entity not found: Team", "Could not find referenced Team.");
        let project: LinearProject | null = null;
        if (typeof input.projectId === "string") {
          project = this.projects.find((p) => p.id === input.projectId) ?? null;
          if (project === null) {
            throw inputError("Entity not found: Project", "Could not find referenced Project.");
          }
          if (!project.teamIds.includes(team.id)) {
            throw inputError(
              "Argument Validation Error",
              "The project is not in the issue's team.",
            );
          }
        }
        const title = typeof input.title === "string" ? input.title : "";
        if (title.trim() === "") {
          throw inputError("Argument Validation Error", "An issue needs a title.");
        }
        const states = this.states.get(team.id) ?? [];
        const state = states.find((s) => s.type === "unstarted") ?? states[0];
        if (state === undefined) throw new Error("a team without states");
        const now = this.now();
        const number = team.nextNumber++;
        const issue: LinearIssue = {
          id: this.uuid(),
          identifier: `${team.key}-${String(number)}`,
          number,
          title,
          description: typeof input.description === "string" ? input.description : null,
          team,
          project,
          state,
          createdAt: now,
          updatedAt: now,
        };
        this.issues.push(issue);
        return { success: true, lastSyncId: this.issues.length, issue: view(issue) };
      },
      issues: (args: {
        filter?: Json | null;
        first?: number | null;
        includeArchived?: boolean | null;
      }) => {
        const first = Math.min(args.first ?? 50, 250);
        const chosen = this.issues
          .filter((issue) => args.filter == null || matchesIssue(issue, args.filter))
          .sort((a, b) => (a.createdAt < b.createdAt ? 1 : -1));
        const nodes = chosen.slice(0, first).map(view);
        return {
          nodes,
          edges: nodes.map((node) => ({ node, cursor: node.id })),
          pageInfo: {
            hasNextPage: chosen.length > first,
            hasPreviousPage: false,
            startCursor: nodes[0]?.id ?? null,
            endCursor: nodes.at(-1)?.id ?? null,
          },
        };
      },
      issue: (args: { id: string }) => {
        const issue = this.issues.find((i) => i.id === args.id || i.identifier === args.id);
        if (issue === undefined)
          throw inputError("Entity not found: Issue", "Could not find referenced Issue.");
        return view(issue);
      },
    };
  }
}

function slug(text: string): string {
  return (
    text
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-|-$/g, "")
      .slice(0, 60) || "issue"
  );
}

/** Linear's string comparators, the ones a ticket client may use. */
function matchesString(value: string | null, comparator: Json): boolean {
  for (const [op, operand] of Object.entries(comparator)) {
    if (operand === null || operand === undefined) continue;
    const text = value ?? "";
    const ok = (() => {
      switch (op) {
        case "eq":
          return value === operand;
        case "neq":
          return value !== operand;
        case "in":
          return (operand as string[]).includes(text);
        case "nin":
          return !(operand as string[]).includes(text);
        case "contains":
          return value !== null && text.includes(operand as string);
        case "notContains":
          return !text.includes(operand as string);
        case "containsIgnoreCase":
          return value !== null && text.toLowerCase().includes((operand as string).toLowerCase());
        case "startsWith":
          return value !== null && text.startsWith(operand as string);
        case "endsWith":
          return value !== null && text.endsWith(operand as string);
        case "null":
          return (value === null) === operand;
        default:
          throw new GraphQLError(`The fake Linear does not implement the comparator ${op}`);
      }
    })();
    if (!ok) return false;
  }
  return true;
}

function matchesIssue(issue: LinearIssue, filter: Json): boolean {
  for (const [key, value] of Object.entries(filter)) {
    if (value === null || value === undefined) continue;
    const comparator = value as Json;
    const ok = (() => {
      switch (key) {
        case "title":
          return matchesString(issue.title, comparator);
        case "description":
          return matchesString(issue.description, comparator);
        case "id":
          return matchesString(issue.id, comparator);
        case "team":
          return matchesString(issue.team.id, (comparator.id ?? {}) as Json);
        case "project":
          return matchesString(issue.project?.id ?? null, (comparator.id ?? {}) as Json);
        case "and":
          return (value as Json[]).every((f) => matchesIssue(issue, f));
        case "or":
          return (value as Json[]).some((f) => matchesIssue(issue, f));
        default:
          throw new GraphQLError(`The fake Linear does not implement the issue filter ${key}`);
      }
    })();
    if (!ok) return false;
  }
  return true;
}
