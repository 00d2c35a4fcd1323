/** Organization slugs (docs/contract.md §2): what appears in URLs and in `org_url_slug`. */
export const ORG_SLUG_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;
