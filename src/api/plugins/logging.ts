/**
 * What the server's log may show: every URL, error message and stack, and the text of every log
 * line, passes through `redactSecrets`, and credential headers are censored (fastify's defaults
 * would log the signed upload URL's signature and messages that echo input).
 */
import type { Socket } from "node:net";
import type { FastifyRequest, FastifyServerOptions } from "fastify";
import { stdSerializers } from "pino";
import { REDACTED, redactSecrets } from "../../lib/redact.js";

const CREDENTIAL_HEADERS = [
  "x-api-token",
  "authorization",
  "cookie",
  "proxy-authorization",
  "x-hub-signature",
  "x-hub-signature-256",
];

/** Paths (fast-redact syntax) censored in every log line. */
export const REDACTED_LOG_PATHS = [
  ...CREDENTIAL_HEADERS.flatMap((name) => [
    `req.headers["${name}"]`,
    `request.headers["${name}"]`,
    `headers["${name}"]`,
  ]),
  `res.headers["set-cookie"]`,
  `reply.headers["set-cookie"]`,
];

function serializeRequest(request: FastifyRequest): Record<string, unknown> {
  return {
    method: request.method,
    url: redactSecrets(request.url),
    version: request.headers["accept-version"],
    host: request.host,
    remoteAddress: request.ip,
    // Injected requests (tests) may have no socket.
    remotePort: (request.socket as Socket | undefined)?.remotePort,
  };
}

type SerializedError = ReturnType<typeof stdSerializers.err>;

/** pino's error serializer, then every string it kept (message, stack, causes) redacted. */
function serializeError(error: Error): SerializedError {
  return redactStrings(stdSerializers.err(error), 0) as SerializedError;
}

function redactStrings(value: unknown, depth: number): unknown {
  if (typeof value === "string") return redactSecrets(value);
  if (value === null || typeof value !== "object" || depth > 4) return value;
  if (Array.isArray(value)) return value.map((item) => redactStrings(item, depth + 1));
  const copy: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) copy[key] = redactStrings(item, depth + 1);
  return copy;
}

/** The server's logger options: the caller's, with our serializers and redaction on top. */
export function redactingLogger(
  logger: FastifyServerOptions["logger"],
): NonNullable<FastifyServerOptions["logger"]> {
  if (logger === undefined || logger === false) return false;
  const base = logger === true ? {} : logger;
  return {
    ...base,
    serializers: { ...base.serializers, req: serializeRequest, err: serializeError },
    redact: { paths: REDACTED_LOG_PATHS, censor: REDACTED },
    hooks: {
      // The message itself: fastify logs some errors with their own message as the line's text.
      logMethod(args, method) {
        const redacted = args.map((arg: unknown) =>
          typeof arg === "string" ? redactSecrets(arg) : arg,
        ) as Parameters<typeof method>;
        method.apply(this, redacted);
      },
    },
  };
}
