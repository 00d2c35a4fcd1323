import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/** API tokens: `mlt_` + 32 random bytes (base64url). Only the SHA-256 hash is stored. */
export const TOKEN_PREFIX = "mlt_";
/** Tokens supplied by an operator (MAINLINE_BOOTSTRAP_TOKEN) must be at least this long. */
export const MIN_SUPPLIED_TOKEN_LENGTH = 32;

export function generateToken(): string {
  return TOKEN_PREFIX + randomBytes(32).toString("base64url");
}

export function hashToken(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

/** Constant-time comparison of two hex digests of equal length. */
export function digestsEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, "hex");
  const right = Buffer.from(b, "hex");
  return left.length === right.length && timingSafeEqual(left, right);
}

/** What a listing may show of a token without revealing it: its first characters. */
export function tokenHint(token: string): string {
  return token.slice(0, TOKEN_PREFIX.length + 4);
}

/** Short public identifiers such as `tok_3kq9x2m7p1ab`, for listing and revoking. */
export function publicId(prefix: string): string {
  const alphabet = "0123456789abcdefghijkmnpqrstuvwxyz";
  const bytes = randomBytes(12);
  let id = "";
  for (const byte of bytes) id += alphabet.charAt(byte % alphabet.length);
  return `${prefix}_${id}`;
}
