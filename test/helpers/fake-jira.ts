/**
 * A fake Jira for the tests: a real HTTP server speaking Jira Cloud's REST API v3 (Basic
 * `email:token`, descriptions in Atlassian Document Format) or Jira Data Center's v2 (Bearer
 * personal access token, wiki markup), for the calls Mainline makes: create an issue, search by
 * JQL (`labels = "…"`), read an issue's status. Every Cloud request's query and body, and every
 * answer the fake gives, is checked against Atlassian's published OpenAPI description
 * (test/fixtures/jira/openapi-extract.json), every ADF description against the ADF JSON schema
 * (test/fixtures/jira/adf-schema.json): what does not match lands in `violations`, which tests
 * assert empty. Faults: 401, 403, 404, 429 with Retry-After, 503, "created, then answered 502",
 * no answer at all.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { readFileSync } from "node:fs";
import path from "node:path";
import { Ajv, type ValidateFunction } from "ajv";
import { REPO_ROOT } from "./process.js";

export type JiraFlavour = "cloud" | "dc";

export type JiraFault =
  | { kind: 401 | 403 | 404 | 503 }
  | { kind: 429; retryAfterSeconds: number }
  /** The issue is created, then the answer is a 502 (a proxy lost it). */
  | { kind: "created-then-502" }
  /** No answer at all (the request hangs until the client gives up); `created`: after creating. */
  | { kind: "hang"; created: boolean };

export type JiraCall = "create" | "search" | "get";

export interface FakeIssue {
  id: string;
  key: string;
  project: string;
  issueType: string;
  summary: string;
  labels: string[];
  /** ADF (Cloud) or wiki markup (Data Center), as sent. */
  description: unknown;
  status: "To Do" | "In Progress" | "Done";
}

export interface LoggedRequest {
  method: string;
  path: string;
  call: JiraCall | undefined;
  status: number | undefined;
  body: unknown;
}

export interface FakeJira {
  url: string;
  flavour: JiraFlavour;
  issues: FakeIssue[];
  requests: LoggedRequest[];
  /** Requests or answers that do not match Atlassian's published descriptions. */
  violations: string[];
  /** The next `call` (or any call) meets this fault, once. */
  fault(fault: JiraFault, call?: JiraCall): void;
  setStatus(key: string, status: FakeIssue["status"]): void;
  /** Deletes an issue (searches and reads no longer find it). */
  remove(key: string): void;
  close(): Promise<void>;
}

export interface FakeJiraOptions {
  flavour: JiraFlavour;
  /** Cloud: the account's e-mail address. */
  email?: string;
  /** Cloud: the API token; Data Center: the personal access token. */
  token: string;
  /** Project keys and their issue types (default ENG with Bug and Task). */
  projects?: Record<string, string[]>;
}

const STATUS_CATEGORIES = {
  "To Do": { id: 2, key: "new", colorName: "blue-gray", name: "To Do" },
  "In Progress": { id: 4, key: "indeterminate", colorName: "yellow", name: "In Progress" },
  Done: { id: 3, key: "done", colorName: "green", name: "Done" },
} as const;

interface Operation {
  method: string;
  path: string;
  parameters: { name: string; in: string; required: boolean; schema: Record<string, unknown> }[];
  requestBody: unknown;
  responses: Record<string, unknown>;
}

interface Described {
  operations: Record<string, Operation>;
  validate(ref: unknown, value: unknown): string | undefined;
  adf: ValidateFunction;
}

/** OpenAPI 3.0's `nullable` as JSON Schema's `type: [..., "null"]`. */
function jsonSchemaOf(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(jsonSchemaOf);
  if (!value || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) out[key] = jsonSchemaOf(inner);
  if (out.nullable === true && typeof out.type === "string") out.type = [out.type, "null"];
  delete out.nullable;
  return out;
}

let described: Described | undefined;

/** Atlassian's descriptions, compiled once per test file. */
export function jiraDescriptions(): Described {
  if (described) return described;
  const fixtures = path.join(REPO_ROOT, "test/fixtures/jira");
  const extract = JSON.parse(readFileSync(path.join(fixtures, "openapi-extract.json"), "utf8")) as {
    operations: Record<string, Operation>;
    components: unknown;
  };
  const adf = JSON.parse(readFileSync(path.join(fixtures, "adf-schema.json"), "utf8")) as {
    schema: object;
  };
  const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
  ajv.addSchema({ $id: "jira", components: jsonSchemaOf(extract.components) });
  const cache = new Map<string, ValidateFunction>();
  described = {
    operations: extract.operations,
    validate(ref, value) {
      if (!ref || typeof ref !== "object") return undefined;
      const key = JSON.stringify(ref);
      let check = cache.get(key);
      if (!check) {
        const schema = jsonSchemaOf(ref) as Record<string, unknown>;
        const target =
          typeof schema.$ref === "string" ? { $ref: `jira${schema.$ref}` } : { ...schema };
        check = ajv.compile(target);
        cache.set(key, check);
      }
      return check(value) ? undefined : ajv.errorsText(check.errors);
    },
    adf: ajv.compile(adf.schema),
  };
  return described;
}

/** A query value as its parameter's schema reads it (arrays: repeated or comma-separated). */
function queryValue(values: string[], schema: Record<string, unknown>): unknown {
  const scalar = (text: string, type: unknown): unknown => {
    if (type === "integer" || type === "number")
      return /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : text;
    if (type === "boolean") return text === "true" ? true : text === "false" ? false : text;
    return text;
  };
  if (schema.type === "array") {
    const items = (schema.items ?? {}) as Record<string, unknown>;
    return values.flatMap((v) => v.split(",")).map((v) => scalar(v, items.type));
  }
  return scalar(values[0] ?? "", schema.type);
}

/** Problems of a request's query against its operation's parameters. */
function queryProblems(d: Described, operation: Operation, query: URLSearchParams): string[] {
  const problems: string[] = [];
  const known = new Map(
    operation.parameters.filter((p) => p.in === "query").map((p) => [p.name, p]),
  );
  for (const name of new Set(query.keys())) {
    const parameter = known.get(name);
    if (!parameter) {
      problems.push(`query parameter ${name} is not in the description`);
      continue;
    }
    const problem = d.validate(parameter.schema, queryValue(query.getAll(name), parameter.schema));
    if (problem) problems.push(`query parameter ${name}: ${problem}`);
  }
  for (const parameter of known.values()) {
    if (parameter.required && !query.has(parameter.name)) {
      problems.push(`query parameter ${parameter.name} is required`);
    }
  }
  return problems;
}

const ALLOWED_DC_SEARCH = new Set([
  "jql",
  "startAt",
  "maxResults",
  "validateQuery",
  "fields",
  "expand",
  "properties",
  "fieldsByKeys",
]);

export async function startFakeJira(options: FakeJiraOptions): Promise<FakeJira> {
  const d = jiraDescriptions();
  const { flavour } = options;
  const api = flavour === "cloud" ? "/rest/api/3" : "/rest/api/2";
  const projects = options.projects ?? { ENG: ["Bug", "Task"] };
  const faults: { fault: JiraFault; call: JiraCall | undefined }[] = [];
  const hanging = new Set<http.ServerResponse>();
  /** Issues made so far, in all and per project (ids and keys are never reused). */
  const counters = new Map<string, number>();
  let issueCount = 0;
  const fake: FakeJira = {
    url: "",
    flavour,
    issues: [],
    requests: [],
    violations: [],
    fault(fault, call) {
      faults.push({ fault, call });
    },
    setStatus(key, status) {
      const issue = fake.issues.find((i) => i.key === key);
      if (!issue) throw new Error(`no issue ${key}`);
      issue.status = status;
    },
    remove(key) {
      const at = fake.issues.findIndex((i) => i.key === key);
      if (at === -1) throw new Error(`no issue ${key}`);
      fake.issues.splice(at, 1);
    },
    close: () => Promise.resolve(),
  };

  const expected =
    flavour === "cloud"
      ? `Basic ${Buffer.from(`${options.email ?? ""}:${options.token}`).toString("base64")}`
      : `Bearer ${options.token}`;

  function issueJson(issue: FakeIssue) {
    const category = STATUS_CATEGORIES[issue.status];
    return {
      id: issue.id,
      key: issue.key,
      self: `${fake.url}${api}/issue/${issue.id}`,
      fields: {
        status: {
          self: `${fake.url}${api}/status/${category.id}`,
          description: "",
          iconUrl: `${fake.url}/images/icons/statuses/generic.png`,
          name: issue.status,
          id: String(category.id),
          statusCategory: { self: `${fake.url}${api}/statuscategory/${category.id}`, ...category },
        },
      },
    };
  }

  function validationFor(call: JiraCall): Operation | undefined {
    if (flavour !== "cloud") return undefined;
    const name = {
      create: "createIssue",
      get: "getIssue",
      search: "searchAndReconsileIssuesUsingJql",
    }[call];
    return d.operations[name];
  }

  function answer(
    res: http.ServerResponse,
    logged: LoggedRequest,
    status: number,
    body: unknown,
    headers: Record<string, string> = {},
  ) {
    logged.status = status;
    const operation = logged.call ? validationFor(logged.call) : undefined;
    const schema = operation?.responses[String(status)];
    if (operation && schema) {
      const problem = d.validate(schema, body);
      if (problem) fake.violations.push(`answer ${status} to ${logged.call}: ${problem}`);
    }
    res.writeHead(status, { "content-type": "application/json;charset=UTF-8", ...headers });
    res.end(JSON.stringify(body));
  }

  function create(body: unknown): { status: number; body: unknown } {
    const fields = (body as { fields?: Record<string, unknown> } | undefined)?.fields ?? {};
    const errors: Record<string, string> = {};
    const project = (fields.project as { key?: unknown } | undefined)?.key;
    const types = typeof project === "string" ? projects[project] : undefined;
    if (!types) errors.project = "valid project is required";
    const issueType = (fields.issuetype as { name?: unknown } | undefined)?.name;
    if (types && (typeof issueType !== "string" || !types.includes(issueType))) {
      errors.issuetype = "Specify a valid issue type";
    }
    const summary = fields.summary;
    if (typeof summary !== "string" || summary.trim() === "") {
      errors.summary = "You must specify a summary of the issue.";
    } else if (summary.length > 255) {
      errors.summary = "Summary must be less than 255 characters.";
    } else if (/[\r\n]/.test(summary)) {
      errors.summary = "The summary is invalid because it contains newline characters.";
    }
    const labels = fields.labels ?? [];
    const spaced: unknown = Array.isArray(labels)
      ? (labels as unknown[]).find((l) => typeof l !== "string" || /\s/.test(l))
      : "";
    if (spaced !== undefined)
      errors.labels = `The label '${typeof spaced === "string" ? spaced : JSON.stringify(spaced)}' contains spaces which is invalid.`;
    const description = fields.description;
    if (flavour === "cloud") {
      if (description !== undefined && (typeof description !== "object" || description === null)) {
        errors.description = "Operation value must be an Atlassian Document";
      } else if (description !== undefined && !d.adf(description)) {
        fake.violations.push(
          `description is not valid ADF: ${JSON.stringify(d.adf.errors?.slice(0, 3))}`,
        );
        errors.description = "Operation value must be an Atlassian Document";
      }
    } else if (description !== undefined && typeof description !== "string") {
      errors.description = "Operation value must be a string";
    }
    if (Object.keys(errors).length > 0) return { status: 400, body: { errorMessages: [], errors } };
    const number = (counters.get(String(project)) ?? 0) + 1;
    counters.set(String(project), number);
    issueCount += 1;
    const issue: FakeIssue = {
      id: String(10000 + issueCount),
      key: `${String(project)}-${number}`,
      project: String(project),
      issueType: String(issueType),
      summary: String(summary),
      labels: labels as string[],
      description,
      status: "To Do",
    };
    fake.issues.push(issue);
    return {
      status: 201,
      body: { id: issue.id, key: issue.key, self: `${fake.url}${api}/issue/${issue.id}` },
    };
  }

  function search(query: URLSearchParams): { status: number; body: unknown } {
    const jql = query.get("jql") ?? "";
    const match = /^labels\s*=\s*"([^"]+)"$/.exec(jql.trim());
    if (!match) {
      return {
        status: 400,
        body: {
          errorMessages: [`The fake understands only labels = "…" (got ${jql})`],
          errors: {},
        },
      };
    }
    const max = Number(query.get("maxResults") ?? 50);
    const found = fake.issues
      .filter((i) => i.labels.includes(match[1] ?? ""))
      .slice(0, max)
      .map(issueJson);
    return flavour === "cloud"
      ? { status: 200, body: { issues: found, isLast: true } }
      : { status: 200, body: { startAt: 0, maxResults: max, total: found.length, issues: found } };
  }

  function route(method: string, pathname: string): { call: JiraCall; id?: string } | undefined {
    if (method === "POST" && pathname === `${api}/issue`) return { call: "create" };
    const search = flavour === "cloud" ? `${api}/search/jql` : `${api}/search`;
    if (method === "GET" && pathname === search) return { call: "search" };
    const issue = new RegExp(`^${api}/issue/([^/]+)$`).exec(pathname);
    if (method === "GET" && issue) return { call: "get", id: decodeURIComponent(issue[1] ?? "") };
    return undefined;
  }

  function checkRequest(call: JiraCall, query: URLSearchParams, body: unknown) {
    const operation = validationFor(call);
    if (operation) {
      for (const problem of queryProblems(d, operation, query))
        fake.violations.push(`${call}: ${problem}`);
      if (call === "create") {
        const problem = d.validate(operation.requestBody, body);
        if (problem) fake.violations.push(`create body: ${problem}`);
      }
    } else if (call === "search") {
      for (const name of query.keys()) {
        if (!ALLOWED_DC_SEARCH.has(name))
          fake.violations.push(`search: query parameter ${name} is not Jira's`);
      }
    }
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://fake");
      const text = Buffer.concat(chunks).toString("utf8");
      let body: unknown;
      try {
        body = text === "" ? undefined : JSON.parse(text);
      } catch {
        body = text;
      }
      const method = req.method ?? "GET";
      const routed = route(method, url.pathname);
      const logged: LoggedRequest = {
        method,
        path: `${url.pathname}${url.search}`,
        call: routed?.call,
        status: undefined,
        body,
      };
      fake.requests.push(logged);
      if (!routed) {
        answer(res, logged, 404, { errorMessages: ["Not found"], errors: {} });
        return;
      }
      if (req.headers.authorization !== expected) {
        answer(res, logged, 401, {
          errorMessages: [
            "You are not authenticated. Authentication required to perform this operation.",
          ],
          errors: {},
        });
        return;
      }
      checkRequest(routed.call, url.searchParams, body);
      const at = faults.findIndex((f) => f.call === undefined || f.call === routed.call);
      const fault = at === -1 ? undefined : faults.splice(at, 1)[0]?.fault;
      if (fault) {
        switch (fault.kind) {
          case 401:
            answer(res, logged, 401, {
              errorMessages: [
                "You are not authenticated. Authentication required to perform this operation.",
              ],
              errors: {},
            });
            return;
          case 403:
            answer(res, logged, 403, {
              errorMessages: ["You do not have permission to create issues in this project."],
              errors: {},
            });
            return;
          case 404:
            answer(res, logged, 404, {
              errorMessages: ["Issue does not exist or you do not have permission to see it."],
              errors: {},
            });
            return;
          case 429:
            answer(
              res,
              logged,
              429,
              { errorMessages: ["Rate limit exceeded."], errors: {} },
              { "retry-after": String(fault.retryAfterSeconds) },
            );
            return;
          case 503:
            logged.status = 503;
            res.writeHead(503, { "content-type": "text/html" });
            res.end("<html><body>Service Unavailable</body></html>");
            return;
          case "created-then-502":
            if (routed.call === "create") create(body);
            logged.status = 502;
            res.writeHead(502, { "content-type": "text/html" });
            res.end("<html><body>502 Bad Gateway</body></html>");
            return;
          case "hang":
            if (fault.created && routed.call === "create") create(body);
            hanging.add(res);
            return;
        }
      }
      if (routed.call === "create") {
        const made = create(body);
        answer(res, logged, made.status, made.body);
      } else if (routed.call === "search") {
        const found = search(url.searchParams);
        answer(res, logged, found.status, found.body);
      } else {
        const issue = fake.issues.find((i) => i.id === routed.id || i.key === routed.id);
        if (issue) answer(res, logged, 200, issueJson(issue));
        else
          answer(res, logged, 404, {
            errorMessages: ["Issue does not exist or you do not have permission to see it."],
            errors: {},
          });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.close = () =>
    new Promise<void>((resolve) => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      server.close(() => {
        resolve();
      });
    });
  return fake;
}
