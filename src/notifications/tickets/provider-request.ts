/**
 * One request to a ticket provider: node's `fetch`, a timeout, no redirect followed, and the
 * outbound webhooks' address policy (`../addresses.ts`): unless allowed, no loopback, private or
 * link-local address, neither written in the URL nor resolved from its name (checked just before
 * the request). Never throws: a request that got no answer says why, and whether it may have
 * reached the provider.
 */
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { isInternalAddress } from "../addresses.js";

export interface ProviderRequest {
  method: "GET" | "POST";
  url: string;
  headers: Record<string, string>;
  body?: string;
  timeoutMs: number;
  allowPrivate: boolean;
}

/** Why no answer came: `sent` says whether the request may have reached the provider. */
export interface NoAnswer {
  answered: false;
  sent: boolean;
  /** Plain words, never the request's headers. */
  reason: string;
}

export interface Answer {
  answered: true;
  status: number;
  headers: Headers;
  text: string;
  /** The body parsed as JSON; undefined when it is not JSON. */
  json: unknown;
}

const MAX_ANSWER_CHARS = 1_000_000;

/** Why the URL's host may not be called; undefined when it may. */
async function refusedAddress(url: URL, allowPrivate: boolean): Promise<string | undefined> {
  if (allowPrivate) return undefined;
  const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
  if (host === "localhost" || host.endsWith(".localhost")) {
    return `${host} is a loopback name (MAINLINE_WEBHOOKS_ALLOW_PRIVATE=1 allows it)`;
  }
  const addresses =
    isIP(host) === 0
      ? (await lookup(host, { all: true }).catch(() => [])).map((a) => a.address)
      : [host];
  const internal = addresses.find((address) => isInternalAddress(address));
  return internal === undefined
    ? undefined
    : `${host} is an internal address (${internal}); MAINLINE_WEBHOOKS_ALLOW_PRIVATE=1 allows it`;
}

function causeCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; current && typeof current === "object" && depth < 4; depth++) {
    const { code, cause } = current as { code?: unknown; cause?: unknown };
    if (typeof code === "string") return code;
    current = cause;
  }
  return undefined;
}

/** Connection errors that happen before anything is sent. */
const NOT_SENT = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ERR_INVALID_URL",
  "UND_ERR_CONNECT_TIMEOUT",
]);

export async function providerRequest(request: ProviderRequest): Promise<Answer | NoAnswer> {
  let url: URL;
  try {
    url = new URL(request.url);
  } catch {
    return { answered: false, sent: false, reason: "the address is not a valid URL" };
  }
  const refused = await refusedAddress(url, request.allowPrivate);
  if (refused !== undefined) return { answered: false, sent: false, reason: refused };
  let response: Response;
  try {
    response = await fetch(url, {
      method: request.method,
      headers: request.headers,
      ...(request.body === undefined ? {} : { body: request.body }),
      redirect: "manual",
      signal: AbortSignal.timeout(request.timeoutMs),
    });
  } catch (error) {
    const name = (error as { name?: unknown }).name;
    if (name === "TimeoutError" || name === "AbortError") {
      return {
        answered: false,
        sent: true,
        reason: `no answer within ${request.timeoutMs} ms`,
      };
    }
    const code = causeCode(error) ?? "error";
    return {
      answered: false,
      sent: !NOT_SENT.has(code),
      reason: `the connection failed (${code})`,
    };
  }
  let text: string;
  try {
    text = (await response.text()).slice(0, MAX_ANSWER_CHARS);
  } catch {
    return { answered: false, sent: true, reason: "the answer was cut off" };
  }
  let json: unknown;
  try {
    json = text === "" ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { answered: true, status: response.status, headers: response.headers, text, json };
}

/** `Retry-After` in milliseconds (seconds or an HTTP date); null when absent or unreadable. */
export function retryAfterMs(headers: Headers, now = Date.now()): number | null {
  const value = headers.get("retry-after")?.trim();
  if (value === undefined || value === "") return null;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/** A provider's words, on one line, at most `max` characters, with `secret` nowhere in them. */
export function providerWords(text: string, secret: string | null, max = 500): string {
  let words = text.replace(/\s+/g, " ").trim();
  if (secret !== null && secret.length >= 4) words = words.split(secret).join("[redacted]");
  return words.length <= max ? words : `${words.slice(0, max - 1)}…`;
}
