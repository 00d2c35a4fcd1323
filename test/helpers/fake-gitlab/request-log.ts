/**
 * Every request the fake answered (API and git): method, path, the route template it matched, its
 * status, whose token it carried, and the fault that shaped it. Tests assert on it (no request
 * with a bad token, how many merges were tried); benchmarks count requests.
 */

export interface LoggedRequest {
  seq: number;
  atMs: number;
  method: string;
  /** The path as requested (API paths without `/api/v4`). */
  path: string;
  /** The route template (`/projects/:id/merge_requests/:iid/merge`), or `git`. */
  route: string;
  status: number;
  /** The token's user, or null (no token, or a token refused). */
  user: string | null;
  /** The credential as judged: none, token, rejected. */
  credential: "none" | "token" | "rejected";
  fault: string | null;
  durationMs: number;
}

export class RequestLog {
  readonly entries: LoggedRequest[] = [];

  record(entry: Omit<LoggedRequest, "seq">): void {
    this.entries.push({ seq: this.entries.length + 1, ...entry });
  }

  /** Entries matching a method and a route template or a path prefix. */
  filter(
    filter: { method?: string; route?: string; pathPrefix?: string; since?: number } = {},
  ): LoggedRequest[] {
    return this.entries
      .slice(filter.since ?? 0)
      .filter(
        (e) =>
          (filter.method === undefined || e.method === filter.method) &&
          (filter.route === undefined || e.route === filter.route) &&
          (filter.pathPrefix === undefined || e.path.startsWith(filter.pathPrefix)),
      );
  }

  count(filter: Parameters<RequestLog["filter"]>[0] = {}): number {
    return this.filter(filter).length;
  }
}
