/**
 * A small client of GitLab's REST API v4 over fetch (docs/gitlab.md, "Requests"): one token, a
 * timeout on every request, and retries only where a retry cannot do a thing twice. Reads are
 * tried again after a 429, a 5xx or a lost connection; a write only after a 429 (GitLab did not
 * do it) or a connection that was never made. A write that failed otherwise may have been carried
 * out: the caller reads back what it wrote before anything depends on it.
 */
import { SECOND_MS } from "../../lib/time.js";

export type GitLabMethod = "GET" | "POST" | "PUT" | "DELETE";

/** GitLab answered with an error status. */
export class GitLabError extends Error {
  constructor(
    readonly method: GitLabMethod,
    readonly path: string,
    readonly status: number,
    /** GitLab's `message` or `error`, or the start of a body that is not JSON. */
    readonly detail: string,
  ) {
    super(`GitLab answered ${String(status)} to ${method} ${path}: ${detail}`);
  }
}

/** No answer: GitLab could not be reached, or did not answer in time (a write may have happened). */
export class GitLabUnreachable extends Error {
  constructor(
    readonly method: GitLabMethod,
    readonly path: string,
    readonly reason: string,
    /** The connection was never made: nothing reached GitLab. */
    readonly notSent: boolean,
  ) {
    super(`GitLab could not be reached for ${method} ${path}: ${reason}`);
  }
}

/**
 * A token that changes: an OAuth application's access token, renewed every two hours. It travels
 * as `Authorization: Bearer` (GitLab takes only personal, project and group access tokens in
 * `PRIVATE-TOKEN`).
 */
export interface GitLabTokenSource {
  /** The token to send now. */
  current(): Promise<string>;
  /** After GitLab refused `stale` (401): a newer token to try once more, or none. */
  renew(stale: string): Promise<string | undefined>;
}

export interface GitLabClientOptions {
  /** The instance's address (`https://gitlab.example.com`). */
  url: string;
  /** An access token (sent as `PRIVATE-TOKEN`), or an OAuth grant's renewing token. */
  token: string | GitLabTokenSource;
  userAgent: string;
  /** Retries wait this, 4× and 9× it, unless GitLab says how long (default 1 s). */
  retryBaseMs?: number;
  /** Per request (default 30 s). */
  timeoutMs?: number;
  /** Every answer (or none), for counting and logs; never sees the token. */
  onRequest?: (event: { method: GitLabMethod; path: string; status: number | null }) => void;
}

export interface GitLabRequest {
  query?: Record<string, string | number | boolean | undefined>;
  body?: Record<string, unknown>;
}

export interface GitLabAnswer<T> {
  status: number;
  data: T;
  headers: Headers;
}

const ATTEMPTS = 3;
/** The longest wait GitLab's rate limit may impose before the client gives up on the request. */
const MAX_WAIT_MS = 60 * SECOND_MS;
const NOT_SENT = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"]);

export class GitLabClient {
  private readonly retryBaseMs: number;
  private readonly timeoutMs: number;

  constructor(private readonly options: GitLabClientOptions) {
    this.retryBaseMs = options.retryBaseMs ?? SECOND_MS;
    this.timeoutMs = options.timeoutMs ?? 30 * SECOND_MS;
  }

  get<T>(path: string, query?: GitLabRequest["query"]): Promise<GitLabAnswer<T>> {
    return this.request<T>("GET", path, query ? { query } : {});
  }

  /** A read whose 404 means "there is none". */
  async find<T>(path: string, query?: GitLabRequest["query"]): Promise<T | undefined> {
    try {
      return (await this.get<T>(path, query)).data;
    } catch (error) {
      if (error instanceof GitLabError && error.status === 404) return undefined;
      throw error;
    }
  }

  async request<T>(
    method: GitLabMethod,
    path: string,
    request: GitLabRequest = {},
  ): Promise<GitLabAnswer<T>> {
    const idempotent = method === "GET";
    let renewed = false;
    for (let attempt = 1; ; attempt++) {
      let response: Response;
      const token = await this.token();
      try {
        response = await this.send(method, path, request, token);
      } catch (error) {
        const failure = unreachable(method, path, error);
        this.options.onRequest?.({ method, path, status: null });
        if (attempt < ATTEMPTS && (idempotent || failure.notSent)) {
          await sleep(this.retryBaseMs * attempt * attempt);
          continue;
        }
        throw failure;
      }
      this.options.onRequest?.({ method, path, status: response.status });
      if (response.ok) {
        const text = await response.text();
        const data = (text === "" ? null : parseBody(text)) as T;
        return { status: response.status, data, headers: response.headers };
      }
      const detail = await errorDetail(response);
      if (response.status === 401 && !renewed && typeof this.options.token !== "string") {
        // A refused OAuth token was not used: another process may have renewed it, or it expired
        // early. Once, with the renewed one (GitLab did nothing, so a write may be sent again).
        renewed = true;
        const fresh = await this.options.token.renew(token);
        if (fresh !== undefined && fresh !== token) {
          attempt--;
          continue;
        }
      }
      const wait = this.retryWait(response, attempt);
      const retryable = response.status === 429 || (idempotent && response.status >= 500);
      if (attempt < ATTEMPTS && retryable && wait <= MAX_WAIT_MS) {
        await sleep(wait);
        continue;
      }
      throw new GitLabError(method, path, response.status, detail);
    }
  }

  private token(): Promise<string> {
    const { token } = this.options;
    return typeof token === "string" ? Promise.resolve(token) : token.current();
  }

  private async send(method: GitLabMethod, path: string, request: GitLabRequest, token: string) {
    const url = new URL(`${this.options.url}/api/v4${path}`);
    for (const [name, value] of Object.entries(request.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    return fetch(url, {
      method,
      headers: {
        ...(typeof this.options.token === "string"
          ? { "private-token": token }
          : { authorization: `Bearer ${token}` }),
        "user-agent": this.options.userAgent,
        accept: "application/json",
        ...(request.body ? { "content-type": "application/json" } : {}),
      },
      ...(request.body ? { body: JSON.stringify(request.body) } : {}),
      signal: AbortSignal.timeout(this.timeoutMs),
      redirect: "error",
    });
  }

  /** What GitLab asks to wait (`Retry-After`, `RateLimit-Reset`), else the client's own spacing. */
  private retryWait(response: Response, attempt: number): number {
    const retryAfter = Number(response.headers.get("retry-after"));
    if (Number.isFinite(retryAfter) && retryAfter > 0) return retryAfter * SECOND_MS;
    const reset = Number(response.headers.get("ratelimit-reset"));
    if (Number.isFinite(reset) && reset > 0) return Math.max(0, reset * SECOND_MS - Date.now());
    return this.retryBaseMs * attempt * attempt;
  }
}

/** A project's id in a path: its full path, URL-encoded (`group%2Fsub%2Fapp`). */
export function projectId(owner: string, name: string): string {
  return encodeURIComponent(`${owner}/${name}`);
}

export function unreachable(method: GitLabMethod, path: string, error: unknown): GitLabUnreachable {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const code = cause?.code ?? (error as { name?: string }).name ?? "";
  const reason = code === "TimeoutError" ? "no answer in time" : (cause?.message ?? String(error));
  return new GitLabUnreachable(method, path, reason, NOT_SENT.has(code));
}

function parseBody(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

async function errorDetail(response: Response): Promise<string> {
  const text = await response.text().catch(() => "");
  const body = parseBody(text);
  if (body !== null && typeof body === "object") {
    const { message, error } = body as { message?: unknown; error?: unknown };
    const said = message ?? error;
    if (said !== undefined)
      return (typeof said === "string" ? said : JSON.stringify(said)).slice(0, 300);
  }
  return text.replace(/\s+/g, " ").slice(0, 200) || response.statusText;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
