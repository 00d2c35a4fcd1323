/**
 * The error vocabulary of the API. Domain code throws `ApiError`s; the HTTP layer turns them into
 * `{"error": {"code", "message", "details"?}}` with the mapped status.
 */
export const ERROR_STATUS = {
  invalid_request: 400,
  invalid_page_token: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  conflict: 409,
  /** The repository's git host has no provider configured on this server. */
  host_not_connected: 409,
  /** A GitHub App installation is linked to another organization (it never moves by itself). */
  installation_linked_elsewhere: 409,
  payload_too_large: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  headers_too_large: 431,
  rate_limited: 429,
  internal: 500,
  /** A ticket provider (Jira, Linear, GitHub) refused or failed a call; the message says what. */
  ticket_provider_error: 502,
  unavailable: 503,
  insufficient_storage: 507,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ErrorDetail {
  /** Dotted path of the offending field, e.g. `page_query.page_size` or `requiredStatuses[2]`. */
  path: string;
  message: string;
}

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly details: ErrorDetail[] | undefined;
  /** A 503's `Retry-After`, in seconds, when the error knows better than the default. */
  readonly retryAfterSeconds: number | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    details?: ErrorDetail[],
    options: { retryAfterSeconds?: number } = {},
  ) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.details = details;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }

  static invalid(path: string, message: string): ApiError {
    return new ApiError("invalid_request", `${path} ${message}`, [{ path, message }]);
  }
}

/** Error codes of a full disk or exhausted quota: errno, SQLite and PostgreSQL (`disk_full`). */
const STORAGE_FULL_CODES = new Set(["ENOSPC", "EDQUOT", "SQLITE_FULL", "53100"]);
const STORAGE_FULL_TEXT = /No space left on device|Disk quota exceeded/i;

/**
 * Whether a failure comes from the disk being full: an errno or database code, or a child
 * process (git) that said so on its standard error. Looks through `cause` chains.
 */
export function isStorageFull(error: unknown): boolean {
  for (let current = error, depth = 0; current && depth < 5; depth++) {
    if (typeof current !== "object") return false;
    const { code, stderr, cause } = current as {
      code?: unknown;
      stderr?: unknown;
      cause?: unknown;
    };
    if (typeof code === "string" && STORAGE_FULL_CODES.has(code)) return true;
    if (typeof stderr === "string" && STORAGE_FULL_TEXT.test(stderr)) return true;
    current = cause;
  }
  return false;
}
