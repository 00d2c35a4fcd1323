import type { Credential, FakeResponse, RequestContext } from "./http.js";

/**
 * Every request the fake answered, with the operation it was (GitHub's operationId), its status,
 * the credential it carried, and the fault that shaped it. Benchmarks count API requests per
 * merged pull request from it; tests assert that no request used a bad token.
 */

export interface LoggedRequest {
  seq: number;
  atMs: number;
  method: string;
  path: string;
  operationId: string;
  status: number;
  credential: Credential["kind"];
  /** Why a credential was refused (unknown, expired, malformed token; bad JWT claims). */
  rejected: string | null;
  installationId: number | null;
  appId: number | null;
  login: string | null;
  fault: string | null;
  durationMs: number;
  requestId: string;
}

export class RequestLog {
  readonly entries: LoggedRequest[] = [];

  record(
    ctx: RequestContext,
    response: FakeResponse,
    fault: string | undefined,
    atMs: number,
    endMs: number,
  ): void {
    const cred = ctx.credential;
    this.entries.push({
      seq: this.entries.length + 1,
      atMs,
      method: ctx.method,
      path: ctx.path,
      operationId: ctx.route.operationId,
      status: response.status,
      credential: cred.kind,
      rejected: cred.kind === "rejected" ? cred.reason : null,
      installationId: cred.kind === "installation" ? cred.installationId : null,
      appId: cred.kind === "installation" || cred.kind === "app" ? cred.appId : null,
      login: cred.kind === "user" ? cred.login : null,
      fault: fault ?? null,
      durationMs: endMs - atMs,
      requestId: ctx.requestId,
    });
  }

  /** A position to count from (`count({ since })`). */
  mark(): number {
    return this.entries.length;
  }

  filter(
    filter: { operationId?: string; method?: string; since?: number; installationId?: number } = {},
  ): LoggedRequest[] {
    return this.entries
      .slice(filter.since ?? 0)
      .filter(
        (e) =>
          (filter.operationId === undefined || e.operationId === filter.operationId) &&
          (filter.method === undefined || e.method === filter.method) &&
          (filter.installationId === undefined || e.installationId === filter.installationId),
      );
  }

  count(filter: Parameters<RequestLog["filter"]>[0] = {}): number {
    return this.filter(filter).length;
  }

  /** Requests per operationId (e.g. `{ "pulls/merge": 3, "git/create-ref": 6 }`). */
  byOperation(since = 0): Record<string, number> {
    const out: Record<string, number> = {};
    for (const e of this.entries.slice(since)) out[e.operationId] = (out[e.operationId] ?? 0) + 1;
    return out;
  }

  /** Requests that carried an unknown, expired or malformed token (JWT claim rejections excluded). */
  badTokenRequests(): LoggedRequest[] {
    return this.entries.filter((e) => e.rejected !== null && e.rejected !== "jwt");
  }

  assertNoBadTokens(): void {
    const bad = this.badTokenRequests();
    if (bad.length > 0) {
      const first = bad[0];
      throw new Error(
        `${bad.length} request(s) used a bad token; first: ${first?.method ?? ""} ${first?.path ?? ""} (${first?.rejected ?? ""})`,
      );
    }
  }
}
