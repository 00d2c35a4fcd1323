/**
 * Standard Webhooks signing (spec v1.0.0): HMAC-SHA256 over `id.timestamp.body` with the secret's
 * decoded bytes, base64, prefixed `v1,`. Secrets are `whsec_` + base64 of 24 random bytes.
 */
import { createHmac, randomBytes } from "node:crypto";

export const SECRET_PREFIX = "whsec_";

export function generateSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(24).toString("base64")}`;
}

/** A secret given by a user: `whsec_` + base64 of 24 to 64 bytes. */
export function isValidSecret(secret: string): boolean {
  if (!secret.startsWith(SECRET_PREFIX)) return false;
  const encoded = secret.slice(SECRET_PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || encoded.length % 4 !== 0) return false;
  const bytes = Buffer.from(encoded, "base64").length;
  return bytes >= 24 && bytes <= 64;
}

/** The `webhook-signature` header of one attempt (`timestamp` in seconds). */
export function signature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), "base64");
  const digest = createHmac("sha256", key)
    .update(`${id}.${String(timestamp)}.${body}`)
    .digest("base64");
  return `v1,${digest}`;
}
