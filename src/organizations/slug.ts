/** Organization slugs: what appears in URLs and in `org_url_slug`. */
export const ORG_SLUG_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;

/**
 * Slugs a new organization may not take: the first segment of the server's own paths, which would
 * hide the organization's dashboard home `/{org}`.
 */
export const RESERVED_SLUGS: ReadonlySet<string> = new Set([
  "v1",
  "docs",
  "metrics",
  "healthz",
  "assets",
  "uploader",
  "webhooks",
  "sign-in",
  "sign-out",
]);
