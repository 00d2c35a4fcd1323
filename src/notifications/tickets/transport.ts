/**
 * One HTTP call of a ticket client: node's `fetch` with the connection's deadline, no redirect
 * followed, and the address policy of outbound webhooks (`../addresses.ts`): https only, and no
 * loopback, private or link-local address unless the connection allows them (then http too). The
 * name is resolved and checked before the call; `fetch` resolves it again when it connects, so a
 * name whose answers change between the two (DNS rebinding) is not caught here. Never throws:
 * what went wrong is an outcome, in words without the credential.
 */
import { lookup } from "node:dns/promises";
import { redactSecrets, REDACTED } from "../../lib/redact.js";
import { isInternalAddress, urlRefusal } from "../addresses.js";
import type { TicketConnection, TicketError, TicketErrorKind } from "./types.js";

export interface TicketHttpRequest {
  method: "GET" | "POST";
  url: string;
  headers: Record<string, string>;
  /** JSON text, for a POST. */
  body?: string;
}

export type TicketHttpOutcome =
  | { kind: "answered"; status: number; headers: Headers; text: string }
  /** Nothing was sent: the address was refused, the name did not resolve, the connection failed. */
  | { kind: "not_sent"; message: string }
  /** Sent, and no whole answer came (a timeout, a reset): the request may have been carried out. */
  | { kind: "lost"; message: string };

/** Connection errors that happen before a byte of the request left (undici's and the system's). */
const NOT_SENT_CODES = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EADDRNOTAVAIL",
  "UND_ERR_CONNECT_TIMEOUT",
  "CERT_HAS_EXPIRED",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

/** Why the connection's address may not be called now; undefined when it may. */
export async function addressRefusal(
  url: string,
  allowPrivate: boolean,
): Promise<string | undefined> {
  const refusal = urlRefusal(url, { allowPrivate, selfOrigins: () => [] });
  if (refusal !== undefined) return `the address ${refusal}`;
  const parsed = new URL(url);
  if (parsed.protocol !== "https:" && !allowPrivate) {
    return "the address must be an https URL (http only where private addresses are allowed)";
  }
  if (allowPrivate) return undefined;
  try {
    const addresses = await lookup(parsed.hostname.replace(/^\[|\]$/g, ""), { all: true });
    const internal = addresses.find((a) => isInternalAddress(a.address));
    if (internal !== undefined) {
      return `${parsed.hostname} resolves to an internal address (${internal.address}), not allowed`;
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "error";
    return `${parsed.hostname} could not be resolved (${code})`;
  }
  return undefined;
}

function errorCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current !== undefined && current !== null; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string") return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** One call; the connection's credential is kept out of every message. */
export async function ticketRequest(
  connection: Pick<TicketConnection, "timeoutMs" | "allowPrivate" | "credential">,
  request: TicketHttpRequest,
): Promise<TicketHttpOutcome> {
  const refusal = await addressRefusal(request.url, connection.allowPrivate);
  if (refusal !== undefined) {
    return { kind: "not_sent", message: scrub(refusal, connection.credential) };
  }
  let sent = false;
  try {
    const response = await fetch(request.url, {
      method: request.method,
      headers: request.headers,
      ...(request.body === undefined ? {} : { body: request.body }),
      redirect: "manual",
      signal: AbortSignal.timeout(connection.timeoutMs),
    });
    sent = true;
    const text = await response.text();
    return { kind: "answered", status: response.status, headers: response.headers, text };
  } catch (error) {
    const name = (error as { name?: unknown }).name;
    if (name === "TimeoutError" || name === "AbortError") {
      return { kind: "lost", message: `no answer within ${String(connection.timeoutMs)} ms` };
    }
    const code = errorCode(error) ?? "error";
    if (!sent && NOT_SENT_CODES.has(code)) {
      return { kind: "not_sent", message: `the connection failed (${code})` };
    }
    return {
      kind: "lost",
      message: sent ? `the answer was cut off (${code})` : `the connection broke (${code})`,
    };
  }
}

/** `text` without the credential, any secret `redactSecrets` knows, or more than 500 characters. */
export function scrub(text: string, credential: string): string {
  let clean = text;
  if (credential.length >= 4) clean = clean.split(credential).join(REDACTED);
  clean = redactSecrets(clean).replace(/\s+/g, " ").trim();
  return clean.length > 500 ? `${clean.slice(0, 497)}...` : clean;
}

/** `Retry-After` (seconds or an HTTP date) in milliseconds from now. */
export function retryAfterMs(headers: Headers, nowMs = Date.now()): number | null {
  const value = headers.get("retry-after")?.trim();
  if (value === undefined || value === "") return null;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - nowMs);
}

export function ticketError(
  kind: TicketErrorKind,
  status: number | null,
  message: string,
  retryAfter: number | null = null,
): TicketError {
  return { kind, status, message, retryAfterMs: retryAfter };
}

/**
 * The error of a call that had no answer: nothing was sent (`unavailable`), or it was sent and the
 * answer was lost, which on a create means it may have been carried out (`unknown_outcome`).
 */
export function noAnswerError(
  provider: string,
  outcome: Exclude<TicketHttpOutcome, { kind: "answered" }>,
  create: boolean,
): TicketError {
  if (outcome.kind === "not_sent") {
    return ticketError("unavailable", null, `${provider} could not be reached: ${outcome.message}`);
  }
  return create
    ? ticketError(
        "unknown_outcome",
        null,
        `${provider} did not answer: ${outcome.message}; the issue may have been created`,
      )
    : ticketError("unavailable", null, `${provider} did not answer: ${outcome.message}`);
}

/** A 5xx, or an answer that cannot be read: on a create it may have happened. */
export function troubleError(status: number, what: string, create: boolean): TicketError {
  return create
    ? ticketError("unknown_outcome", status, `${what}; the issue may have been created`)
    : ticketError("unavailable", status, what);
}

/** A redirect is never followed (the credential would go along): it is the connection's mistake. */
export function redirectMessage(provider: string, status: number, headers: Headers): string {
  const location = headers.get("location");
  const where = location === null ? "" : ` to ${location.split("?")[0] ?? ""}`;
  return `${provider} answered a redirect (${String(status)})${where}, which Mainline does not follow; check the connection's URL`;
}
