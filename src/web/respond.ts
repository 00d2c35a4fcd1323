/**
 * How every dashboard answer leaves: HTML with strict security headers. The content security
 * policy allows nothing but this server's own scripts, styles, images (and `data:` images),
 * connections and form targets; no framing, no `<base>`, no referrer. Pages are private and
 * change with every request: `no-store`.
 */
import type { FastifyReply } from "fastify";

export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join("; ");

/** The headers of every page, redirect and error page of the dashboard. */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  "cache-control": "no-store",
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
};

export function sendHtml(reply: FastifyReply, status: number, html: string): FastifyReply {
  return reply.status(status).headers(PAGE_HEADERS).type("text/html; charset=utf-8").send(html);
}

/** 303 See Other: after a form, and to the sign-in page. */
export function redirect(reply: FastifyReply, location: string): FastifyReply {
  return reply
    .status(303)
    .headers({ ...PAGE_HEADERS, location })
    .type("text/plain; charset=utf-8")
    .send(`See ${location}`);
}
