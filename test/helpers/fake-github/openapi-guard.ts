import { Ajv, type ValidateFunction } from "ajv";
import addFormats from "ajv-formats";
import {
  restDescription,
  webhooksDescription,
  type OpenApiOperation,
  type OpenApiParameter,
} from "./spec.js";

/**
 * Validates what the fake sends against GitHub's own descriptions: every response body against
 * the operation's schema in `@octokit/openapi` (OpenAPI 3.0, whose `nullable` is rewritten for Ajv
 * first), every webhook payload against `@octokit/openapi-webhooks`, and the requests of the routes
 * that ask for it (`checkRequest`: query parameters and JSON body against the operation's
 * parameters and request body). Violations are recorded; a test asserts there are none.
 */

export interface SchemaViolation {
  kind: "response" | "webhook" | "request";
  /** operationId (responses) or `event.action` (webhooks). */
  name: string;
  status: number | null;
  errors: string[];
}

type Json = Record<string, unknown>;

/**
 * Places where GitHub's description contradicts itself, so that no answer can satisfy it: errors
 * there are not counted. Each names the operation, the path of the value, and why.
 */
const ERRATA: { operation: string; path: RegExp; why: string }[] = [
  {
    operation: "apps/list-installations",
    path: /^\/\d+\/account$/,
    why: "the inlined schema requires `account` to be a user *and* an enterprise (allOf); components.installation says anyOf",
  },
];

/** OpenAPI 3.0 → JSON Schema for Ajv: `nullable` becomes a null type, refs point into `root`. */
function rewrite(node: unknown, root: string): unknown {
  if (Array.isArray(node)) return node.map((n) => rewrite(n, root));
  if (node === null || typeof node !== "object") return node;
  const out: Json = {};
  for (const [key, value] of Object.entries(node as Json)) {
    if (key === "discriminator" || key === "example" || key === "examples" || key.startsWith("x-"))
      continue;
    if (key === "$ref" && typeof value === "string" && value.startsWith("#/"))
      out.$ref = `${root}${value}`;
    else out[key] = rewrite(value, root);
  }
  if (out.nullable === true) {
    delete out.nullable;
    if (typeof out.type === "string") {
      out.type = [out.type, "null"];
      if (Array.isArray(out.enum) && !out.enum.includes(null))
        out.enum = [...(out.enum as unknown[]), null];
      return out;
    }
    if (Array.isArray(out.type)) {
      if (!out.type.includes("null")) out.type = [...(out.type as unknown[]), "null"];
      return out;
    }
    return { anyOf: [out, { type: "null" }] };
  }
  delete out.nullable;
  return out;
}

/** Compiled once per process and shared by every fake: compiling GitHub's schemas is costly. */
const shared = {
  ajv: null as Ajv | null,
  operations: new Map<string, Record<string, unknown>>(),
  requests: new Map<string, OpenApiOperation>(),
  validators: new Map<string, ValidateFunction | null>(),
};

export class SchemaGuard {
  readonly violations: SchemaViolation[] = [];
  /** How many bodies were checked (a test asserts the guard saw what it should). */
  checked = 0;
  /** What was validated: operationId → statuses, and webhook `event-action` keys. */
  readonly covered = new Map<string, Set<number>>();
  readonly coveredWebhooks = new Set<string>();
  private readonly operations = shared.operations;
  private readonly validators = shared.validators;

  /** Loads and compiles the descriptions (once per process; a few hundred milliseconds). */
  setup(): Ajv {
    if (shared.ajv !== null) return shared.ajv;
    const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true });
    addFormats.default(ajv);
    for (const format of [
      "int64",
      "int32",
      "double",
      "timestamp",
      "repo.nwo",
      "binary",
      "uri-template",
    ]) {
      ajv.addFormat(format, true);
    }
    // GitHub's own bot addresses (`41898282+github-actions[bot]@users.noreply.github.com`) are not
    // RFC 5322 addresses, yet GitHub sends them where the schema says `format: email`.
    ajv.addFormat("email", /^[^\s@]+@[^\s@]+$/);
    const rest = restDescription();
    ajv.addSchema({ $id: "rest", components: rewrite(rest.components, "rest") as Json });
    for (const [, methods] of Object.entries(rest.paths)) {
      for (const op of Object.values(methods)) {
        if (typeof op === "object" && typeof op.operationId === "string") {
          this.operations.set(op.operationId, op.responses ?? {});
          shared.requests.set(op.operationId, op);
        }
      }
    }
    const hooks = webhooksDescription();
    ajv.addSchema({ $id: "webhooks", components: rewrite(hooks.components, "webhooks") as Json });
    shared.ajv = ajv;
    return ajv;
  }

  private responseValidator(operationId: string, status: number): ValidateFunction | null {
    const key = `${operationId} ${status}`;
    if (this.validators.has(key)) return this.validators.get(key) ?? null;
    const ajv = this.setup();
    const rest = restDescription();
    let response = this.operations.get(operationId)?.[String(status)] as Json | undefined;
    if (response !== undefined && typeof response.$ref === "string") {
      response = rest.components.responses[response.$ref.split("/").pop() ?? ""] as
        Json | undefined;
    }
    const content = response?.content as Record<string, { schema?: unknown }> | undefined;
    const schema = content?.["application/json"]?.schema;
    const validator = schema === undefined ? null : ajv.compile(rewrite(schema, "rest") as Json);
    this.validators.set(key, validator);
    return validator;
  }

  /** Whether the description documents this status for the operation (undocumented ones are not checked). */
  documents(operationId: string, status: number): boolean {
    this.setup();
    return this.operations.get(operationId)?.[String(status)] !== undefined;
  }

  checkResponse(operationId: string, status: number, body: unknown): void {
    if (body === undefined || operationId === "unknown") return;
    const validate = this.responseValidator(operationId, status);
    if (validate === null) return;
    this.checked++;
    const statuses = this.covered.get(operationId) ?? new Set<number>();
    statuses.add(status);
    this.covered.set(operationId, statuses);
    if (!validate(body)) {
      const errors = (validate.errors ?? []).filter(
        (e) => !ERRATA.some((x) => x.operation === operationId && x.path.test(e.instancePath)),
      );
      if (errors.length > 0) {
        this.violations.push({
          kind: "response",
          name: operationId,
          status,
          errors: describe(errors),
        });
      }
    }
  }

  /**
   * Checks a request against the operation's description: each query parameter it describes (an
   * array parameter, such as `labels`, is one comma-separated string on the wire) and the JSON
   * body. Returns the problems (also recorded as violations: a client sent what GitHub refuses).
   */
  checkRequest(operationId: string, query: URLSearchParams, body: unknown): string[] {
    const ajv = this.setup();
    const op = shared.requests.get(operationId);
    if (op === undefined) return [`no description of ${operationId}`];
    const problems: string[] = [];
    const rest = restDescription();
    for (const raw of op.parameters ?? []) {
      const parameter: OpenApiParameter | undefined =
        "$ref" in raw ? rest.components.parameters[raw.$ref.split("/").pop() ?? ""] : raw;
      if (parameter?.in !== "query" || parameter.schema === undefined) continue;
      const value = query.get(parameter.name);
      if (value === null) continue;
      const schema = rewrite(parameter.schema, "rest") as Json;
      const typed =
        schema.type === "integer" || schema.type === "number"
          ? Number(value)
          : schema.type === "boolean"
            ? value === "true"
              ? true
              : value === "false"
                ? false
                : value
            : value;
      const key = `request ${operationId} ${parameter.name}`;
      let validate = this.validators.get(key);
      if (validate === undefined) {
        validate = ajv.compile(schema);
        this.validators.set(key, validate);
      }
      if (validate !== null && !validate(typed)) {
        problems.push(...describe(validate.errors ?? []).map((e) => `?${parameter.name}: ${e}`));
      }
    }
    const bodySchema = op.requestBody?.content?.["application/json"]?.schema;
    if (bodySchema !== undefined) {
      const key = `request ${operationId} body`;
      let validate = this.validators.get(key);
      if (validate === undefined) {
        validate = ajv.compile(rewrite(bodySchema, "rest") as Json);
        this.validators.set(key, validate);
      }
      if (validate !== null && !validate(body)) {
        problems.push(...describe(validate.errors ?? []).map((e) => `body ${e}`));
      }
    }
    this.checked++;
    if (problems.length > 0) {
      this.violations.push({ kind: "request", name: operationId, status: null, errors: problems });
    }
    return problems;
  }

  checkWebhook(event: string, action: string | null, payload: unknown): void {
    const base = event.replace(/_/g, "-");
    const key = action === null ? base : `${base}-${action.replace(/_/g, "-")}`;
    const cacheKey = `webhook ${key}`;
    if (!this.validators.has(cacheKey)) {
      const ajv = this.setup();
      const hook = webhooksDescription().webhooks[key];
      const schema = hook?.post.requestBody.content["application/json"]?.schema;
      this.validators.set(
        cacheKey,
        schema === undefined ? null : ajv.compile(rewrite(schema, "webhooks") as Json),
      );
    }
    const validate = this.validators.get(cacheKey) ?? null;
    if (validate === null) {
      this.violations.push({
        kind: "webhook",
        name: key,
        status: null,
        errors: ["no schema for this event and action"],
      });
      return;
    }
    this.checked++;
    this.coveredWebhooks.add(key);
    if (!validate(payload)) {
      this.violations.push({
        kind: "webhook",
        name: key,
        status: null,
        errors: describe(validate.errors ?? []),
      });
    }
  }

  /** Throws with every violation (for a test's `afterAll`). */
  assertValid(): void {
    if (this.violations.length === 0) return;
    const lines = this.violations
      .slice(0, 20)
      .map(
        (v) =>
          `${v.kind} ${v.name}${v.status === null ? "" : ` ${v.status}`}: ${v.errors.slice(0, 5).join("; ")}`,
      );
    throw new Error(`${this.violations.length} schema violation(s):\n${lines.join("\n")}`);
  }
}

function describe(errors: NonNullable<ValidateFunction["errors"]>): string[] {
  return errors.map(
    (e) => `${e.instancePath || "/"} ${e.message ?? ""} ${JSON.stringify(e.params)}`,
  );
}
