/**
 * The error vocabulary of the API (docs/contract.md §1). Domain code throws `ApiError`s; the HTTP
 * layer turns them into `{"error": {"code", "message", "details"?}}` with the mapped status.
 */
export const ERROR_STATUS = {
  invalid_request: 400,
  invalid_page_token: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
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

  constructor(code: ErrorCode, message: string, details?: ErrorDetail[]) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.details = details;
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }

  static invalid(path: string, message: string): ApiError {
    return new ApiError("invalid_request", `${path} ${message}`, [{ path, message }]);
  }
}
