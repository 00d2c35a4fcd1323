import { createHmac, timingSafeEqual } from "node:crypto";
import { ApiError } from "./errors.js";

/**
 * Page tokens of the flaky-tests list endpoints: opaque, signed by the server, and bound to the
 * query they were minted for, so that a token from another endpoint, organization, repository or
 * filter — or a tampered one — is refused with `invalid_page_token`.
 */
export interface PageQueryScope {
  endpoint: string;
  organizationId: string;
  repositoryId: string;
  /** The query's filters, canonically serialized (e.g. `status=FLAKY`). */
  filters: string;
}

interface TokenPayload {
  /** Row offset of the page's first row. */
  o: number;
}

const VERSION = "p1";

function scopeText(scope: PageQueryScope): string {
  return [VERSION, scope.endpoint, scope.organizationId, scope.repositoryId, scope.filters].join(
    "\u0000",
  );
}

function signature(key: Uint8Array, scope: PageQueryScope, body: string): Buffer {
  return createHmac("sha256", key).update(scopeText(scope)).update("\u0000").update(body).digest();
}

export function mintPageToken(key: Uint8Array, scope: PageQueryScope, offset: number): string {
  const body = Buffer.from(JSON.stringify({ o: offset } satisfies TokenPayload)).toString(
    "base64url",
  );
  return `${VERSION}.${body}.${signature(key, scope, body).toString("base64url")}`;
}

/** The row offset a token points at; `""` (or no token) is the first page. */
export function readPageToken(
  key: Uint8Array,
  scope: PageQueryScope,
  token: string | undefined,
): number {
  if (token === undefined || token === "") return 0;
  const invalid = () =>
    new ApiError(
      "invalid_page_token",
      "page_query.page_token was not issued for this query; start again without a token.",
      [{ path: "page_query.page_token", message: "is not a token issued for this query" }],
    );
  const [version, body, mac] = token.split(".");
  if (version !== VERSION || !body || !mac || token.split(".").length !== 3) throw invalid();
  const expected = signature(key, scope, body);
  const given = Buffer.from(mac, "base64url");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid();
  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.from(body, "base64url").toString("utf8"));
  } catch {
    throw invalid();
  }
  const offset = (payload as Partial<TokenPayload> | null)?.o;
  if (typeof offset !== "number" || !Number.isSafeInteger(offset) || offset < 0) throw invalid();
  return offset;
}

export interface PageInfo {
  total_rows: number;
  total_pages: number;
  next_page_token: string;
  prev_page_token: string;
  last_page_token: string;
  page_index: number;
}

/**
 * The `page` object for a page starting at `offset`: all six fields always present; `""` for
 * next on the last page, prev on the first, and every token when there are no rows.
 */
export function pageInfo(
  key: Uint8Array,
  scope: PageQueryScope,
  offset: number,
  pageSize: number,
  totalRows: number,
): PageInfo {
  const totalPages = Math.ceil(totalRows / pageSize);
  if (totalRows === 0) {
    return {
      total_rows: 0,
      total_pages: 0,
      next_page_token: "",
      prev_page_token: "",
      last_page_token: "",
      page_index: 0,
    };
  }
  const token = (at: number) => mintPageToken(key, scope, at);
  const pageIndex = Math.floor(offset / pageSize);
  return {
    total_rows: totalRows,
    total_pages: totalPages,
    next_page_token: offset + pageSize < totalRows ? token(offset + pageSize) : "",
    prev_page_token: offset > 0 ? token(Math.max(0, offset - pageSize)) : "",
    last_page_token: token((totalPages - 1) * pageSize),
    page_index: pageIndex,
  };
}
