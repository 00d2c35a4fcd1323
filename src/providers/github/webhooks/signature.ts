/**
 * GitHub's webhook signature: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>`, keyed
 * with the App's webhook secret. Computed over the exact bytes received (a body re-encoded as
 * text could differ from them), compared in constant time.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

const PREFIX = "sha256=";

/** The header GitHub sends with `body`. */
export function signBody(secret: string, body: Buffer | string): string {
  return PREFIX + createHmac("sha256", secret).update(body).digest("hex");
}

/** Whether `header` is the signature of `body` under `secret`. */
export function verifySignature(secret: string, body: Buffer, header: string | undefined): boolean {
  if (header === undefined) return false;
  const expected = Buffer.from(signBody(secret, body));
  const given = Buffer.from(header.trim().toLowerCase());
  // The length of a signature is no secret; the bytes are compared in constant time.
  return given.length === expected.length && timingSafeEqual(given, expected);
}
