import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { isDatabaseUnavailable, RETRY_AFTER_SECONDS } from "../../lib/faults.js";
import { ApiError, isStorageFull, type ErrorDetail } from "../../lib/errors.js";
import { redactSecrets } from "../../lib/redact.js";
import { PATTERN_MESSAGES } from "../schemas.js";

/** What ajv reports for one failed rule (with `verbose: true`, it also carries the schema). */
interface AjvIssue {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
  parentSchema?: Record<string, unknown>;
}

/** `/requiredStatuses/2` + `name` → `requiredStatuses[2].name`. */
function fieldPath(instancePath: string, child?: string): string {
  const segments = instancePath.split("/").slice(1);
  if (child !== undefined) segments.push(child);
  let path = "";
  for (const raw of segments) {
    const segment = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    path += /^\d+$/.test(segment) ? `[${segment}]` : path ? `.${segment}` : segment;
  }
  return path || "body";
}

function describeIssue(issue: AjvIssue): ErrorDetail {
  const schema = issue.parentSchema ?? {};
  switch (issue.keyword) {
    case "required":
      return {
        path: fieldPath(issue.instancePath, String(issue.params.missingProperty)),
        message: "is required",
      };
    case "type": {
      const expected = String(issue.params.type);
      if (issue.instancePath === "" && expected === "object") {
        return { path: "body", message: "must be a JSON object" };
      }
      const article = /^[aeiou]/.test(expected) ? "an" : "a";
      return {
        path: fieldPath(issue.instancePath),
        message: `must be ${article} ${expected.replace(/,/g, " or ")}`,
      };
    }
    case "minimum":
    case "maximum": {
      const { minimum, maximum } = schema;
      const range =
        typeof minimum === "number" && typeof maximum === "number"
          ? `from ${minimum} to ${maximum}`
          : typeof minimum === "number"
            ? `of at least ${minimum}`
            : `of at most ${String(maximum)}`;
      const kind = schema.type === "integer" ? "a whole number" : "a number";
      return { path: fieldPath(issue.instancePath), message: `must be ${kind} ${range}` };
    }
    case "pattern":
      return {
        path: fieldPath(issue.instancePath),
        message: PATTERN_MESSAGES.get(String(issue.params.pattern)) ?? "has an invalid format",
      };
    case "enum":
      return {
        path: fieldPath(issue.instancePath),
        message: `must be one of ${(issue.params.allowedValues as unknown[]).map(String).join(", ")}`,
      };
    case "minLength":
      return {
        path: fieldPath(issue.instancePath),
        message:
          issue.params.limit === 1
            ? "must not be empty"
            : `must be at least ${String(issue.params.limit)} characters long`,
      };
    case "maxLength":
      return {
        path: fieldPath(issue.instancePath),
        message: `must be at most ${String(issue.params.limit)} characters long`,
      };
    case "maxItems":
      return {
        path: fieldPath(issue.instancePath),
        message: `must have at most ${String(issue.params.limit)} items`,
      };
    case "format":
      return {
        path: fieldPath(issue.instancePath),
        message: `must be a valid ${String(issue.params.format)}`,
      };
    default:
      return { path: fieldPath(issue.instancePath), message: issue.message ?? "is invalid" };
  }
}

/**
 * A failed union (`anyOf`) reports every branch. When a branch got further than the type check
 * (e.g. an array with a bad item), only that deeper issue matters; otherwise the branches' type
 * mismatches merge into one ("must be an array or null").
 */
function simplifyUnions(issues: AjvIssue[]): AjvIssue[] {
  const unionPaths = new Set(
    issues.filter((i) => i.keyword === "anyOf").map((i) => i.instancePath),
  );
  const kept: AjvIssue[] = [];
  for (const path of unionPaths) {
    const deeper = issues.some((i) => i.instancePath.startsWith(`${path}/`));
    const types = issues.filter((i) => i.instancePath === path && i.keyword === "type");
    const [first] = types;
    if (!deeper && first) {
      kept.push({
        ...first,
        params: { type: types.map((t) => String(t.params.type)).join(" or ") },
      });
    }
  }
  for (const issue of issues) {
    if (issue.keyword === "anyOf" || issue.keyword === "oneOf") continue;
    if (unionPaths.has(issue.instancePath) && issue.keyword === "type") continue;
    kept.push(issue);
  }
  return kept;
}

/** Turns ajv's issues into one clear sentence plus per-field details, without duplicates. */
export function validationError(issues: AjvIssue[]): ApiError {
  const seen = new Set<string>();
  const details: ErrorDetail[] = [];
  for (const issue of simplifyUnions(issues)) {
    const detail = describeIssue(issue);
    const key = `${detail.path}\u0000${detail.message}`;
    if (!seen.has(key)) {
      seen.add(key);
      details.push(detail);
    }
  }
  const first = details[0] ?? { path: "body", message: "is invalid" };
  const more =
    details.length > 1
      ? ` (and ${details.length - 1} more problem${details.length > 2 ? "s" : ""})`
      : "";
  return new ApiError(
    "invalid_request",
    `Invalid request: ${first.path} ${first.message}${more}.`,
    details,
  );
}

/** Fastify's own request errors (body parsing, content type, size), each with its own answer. */
function frameworkError(error: FastifyError, bodyLimit: number): ApiError | undefined {
  switch (error.code) {
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return new ApiError(
        "unsupported_media_type",
        "Unsupported Content-Type: send the body as application/json.",
      );
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return new ApiError(
        "payload_too_large",
        `The request body is larger than the ${Math.round(bodyLimit / 1024 / 1024)} MiB limit.`,
      );
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return new ApiError(
        "invalid_request",
        "The request body is empty but Content-Type is application/json: send a JSON object.",
      );
    case "FST_ERR_CTP_INVALID_JSON_BODY":
      return new ApiError("invalid_request", "Malformed JSON: the request body is not valid JSON.");
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return new ApiError("invalid_request", "The Content-Length header does not match the body.");
    default:
      break;
  }
  if (error instanceof SyntaxError || (error.statusCode === 400 && /JSON/i.test(error.message))) {
    return new ApiError("invalid_request", `Malformed JSON body: ${error.message}`);
  }
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    return new ApiError("invalid_request", error.message);
  }
  return undefined;
}

/** Messages may echo input (a URL, a value): whatever looks like a secret is redacted. */
export function sendError(reply: FastifyReply, error: ApiError): FastifyReply {
  // An answer given before the body was read whole (too large, disk full, refused mid-stream)
  // ends the connection: the rest of the body is never read, so a client still sending it must
  // see the connection close instead of waiting on it.
  if (error.status === 413 || error.status === 507 || !reply.request.raw.complete) {
    void reply.header("connection", "close");
  }
  // Every 503 is temporary (shutting down, database away): say when to come back.
  if (error.status === 503 && !reply.hasHeader("retry-after")) {
    void reply.header("retry-after", String(error.retryAfterSeconds ?? RETRY_AFTER_SECONDS));
  }
  const details = error.details?.map((detail) => ({
    ...detail,
    message: redactSecrets(detail.message),
  }));
  return reply
    .status(error.status)
    .type("application/json; charset=utf-8")
    .send({
      error: {
        code: error.code,
        message: redactSecrets(error.message),
        ...(details ? { details } : {}),
      },
    });
}

/**
 * The router's own refusals, before any route is found (fastify's `frameworkErrors`): a path
 * that is not valid percent-encoding, or a path parameter longer than the router takes.
 */
export function routerError(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  // No hook runs for these requests: the request id is set here.
  void reply.header("x-request-id", request.id);
  switch (error.code) {
    case "FST_ERR_BAD_URL":
      void sendError(
        reply,
        new ApiError("invalid_request", "The request path is not valid percent-encoded text."),
      );
      return;
    case "FST_ERR_MAX_PARAM_LENGTH":
      void sendError(
        reply,
        new ApiError("uri_too_long", "A part of the request path is longer than any valid id."),
      );
      return;
    default:
      request.log.error({ err: error }, "routing failed");
      void sendError(
        reply,
        new ApiError(
          "internal",
          `An unexpected error occurred; the server log has the details under request id ${request.id}.`,
        ),
      );
  }
}

/**
 * Requests Node's HTTP parser refuses before fastify sees them (headers or URL over 16 KiB,
 * malformed HTTP, a client too slow to send its request): the error envelope written on the
 * socket, which is then closed (fastify's `clientErrorHandler`).
 */
export function clientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  const answer =
    error.code === "ERR_HTTP_REQUEST_TIMEOUT"
      ? new ApiError("request_timeout", "The request was not received in time.")
      : error.code === "HPE_HEADER_OVERFLOW"
        ? new ApiError(
            "headers_too_large",
            "The request's address and headers are larger than the 16 KiB the server reads.",
          )
        : new ApiError("invalid_request", "The request is not well-formed HTTP.");
  const body = JSON.stringify({ error: { code: answer.code, message: answer.message } });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? "Error"}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Connection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

/**
 * Every failure leaves as the API's error envelope; a server fault is logged with its stack and
 * answered with a request id, never with the stack or SQL text.
 */
export function installErrorHandling(
  app: FastifyInstance,
  routeMethods: Map<string, Set<string>>,
): void {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    if (error instanceof ApiError) {
      // A refusal that says when to come back (a queue whose git host does not answer, which the
      // queue logs once) is no server fault: the request's own log line shows it.
      if (error.status >= 500 && error.retryAfterSeconds === undefined) {
        request.log.error({ err: error }, "request failed");
      }
      return sendError(reply, error);
    }
    if (error.validation) {
      return sendError(reply, validationError(error.validation));
    }
    const clientError = frameworkError(error, request.routeOptions.bodyLimit);
    if (clientError) return sendError(reply, clientError);
    if (isStorageFull(error)) {
      request.log.error({ err: error }, "storage full");
      return sendError(
        reply,
        new ApiError(
          "insufficient_storage",
          "The server's disk is full, so nothing was changed; retry once space is freed.",
        ),
      );
    }
    if (isDatabaseUnavailable(error)) {
      // Not a fault of this code: the database is away for now (lost connection, restart, lock
      // held too long, I/O error). The client may retry; nothing was acknowledged.
      request.log.warn({ err: error }, "database unavailable");
      return sendError(
        reply,
        new ApiError("unavailable", "The database is temporarily unavailable; retry in a moment."),
      );
    }
    request.log.error({ err: error }, "unexpected error");
    return sendError(
      reply,
      new ApiError(
        "internal",
        `An unexpected error occurred; the server log has the details under request id ${request.id}.`,
      ),
    );
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split("?")[0] ?? request.url;
    const allowed = routeMethods.get(path);
    if (allowed && !allowed.has(request.method)) {
      const allow = [...allowed].sort().join(", ");
      void reply.header("allow", allow);
      return sendError(
        reply,
        new ApiError(
          "method_not_allowed",
          `${request.method} is not allowed on ${path}; use ${allow}.`,
        ),
      );
    }
    return sendError(
      reply,
      new ApiError(
        "not_found",
        `No operation ${request.method} ${path}. The API reference is at /docs.`,
      ),
    );
  });
}
