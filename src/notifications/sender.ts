/**
 * One webhook request: a POST of the body with the Standard Webhooks headers, no redirect
 * followed, a timeout, and the address checked after the name resolved (so that a name pointing
 * at an internal address is refused at connection time too). Never throws: errors are outcomes.
 */
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import http from "node:http";
import https from "node:https";
import { isIP, type LookupFunction } from "node:net";
import { isInternalAddress } from "./addresses.js";

export interface WebhookRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  allowPrivate: boolean;
}

export interface WebhookResponse {
  statusCode: number | null;
  /** Why no status arrived (timeout, refused address, connection error). */
  error: string | null;
  /** The first kilobyte of the answer. */
  excerpt: string | null;
  /** `Retry-After` in milliseconds, when given in seconds or as a date. */
  retryAfterMs: number | null;
  durationMs: number;
}

export const EXCERPT_BYTES = 1024;

export type Send = (request: WebhookRequest) => Promise<WebhookResponse>;

export const sendWebhook: Send = (request) => {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise((resolve) => {
    let settled = false;
    const finish = (response: Omit<WebhookResponse, "durationMs">) => {
      if (settled) return;
      settled = true;
      resolve({ ...response, durationMs: elapsed() });
    };
    const fail = (error: string) => {
      finish({ statusCode: null, error, excerpt: null, retryAfterMs: null });
    };
    let url: URL;
    try {
      url = new URL(request.url);
    } catch {
      fail("invalid URL");
      return;
    }
    const literal = url.hostname.replace(/^\[|\]$/g, "");
    if (!request.allowPrivate && isIP(literal) !== 0 && isInternalAddress(literal)) {
      fail(`the address ${literal} is internal, not allowed`);
      return;
    }
    const client = url.protocol === "https:" ? https : http;
    const req = client.request(
      url,
      {
        method: "POST",
        headers: { ...request.headers, "content-length": String(Buffer.byteLength(request.body)) },
        lookup: checkedLookup(request.allowPrivate),
        timeout: request.timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (chunk: Buffer) => {
          if (size < EXCERPT_BYTES) chunks.push(chunk);
          size += chunk.length;
        });
        res.on("end", () => {
          finish({
            statusCode: res.statusCode ?? null,
            error: null,
            excerpt: Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString("utf8"),
            retryAfterMs: retryAfter(res.headers["retry-after"]),
          });
        });
        res.on("error", () => {
          finish({
            statusCode: res.statusCode ?? null,
            error: "the answer was cut off",
            excerpt: null,
            retryAfterMs: null,
          });
        });
      },
    );
    const deadline = setTimeout(() => {
      fail(`no answer within ${String(request.timeoutMs)} ms`);
      req.destroy();
    }, request.timeoutMs);
    req.on("close", () => {
      clearTimeout(deadline);
    });
    req.on("timeout", () => {
      fail(`no answer within ${String(request.timeoutMs)} ms`);
      req.destroy();
    });
    req.on("error", (error: NodeJS.ErrnoException) => {
      fail(
        error.code === "EINTERNAL" ? error.message : `connection failed (${error.code ?? "error"})`,
      );
    });
    req.end(request.body);
  });
};

/** DNS lookup that refuses internal addresses unless they are allowed. */
function checkedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) {
        callback(error, "", 4);
        return;
      }
      const refused = addresses.find((a) => !allowPrivate && isInternalAddress(a.address));
      if (refused) {
        const problem = Object.assign(
          new Error(`the name resolves to an internal address (${refused.address}), not allowed`),
          { code: "EINTERNAL" },
        );
        callback(problem, "", 4);
        return;
      }
      if (options.all) {
        callback(null, addresses);
        return;
      }
      const first = addresses[0];
      if (!first) {
        callback(Object.assign(new Error("no address"), { code: "ENOTFOUND" }), "", 4);
        return;
      }
      callback(null, first.address, first.family);
    });
  };
}

function retryAfter(header: string | string[] | undefined): number | null {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - Date.now());
}
