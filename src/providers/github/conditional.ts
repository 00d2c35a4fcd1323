/**
 * Conditional requests: a GET sent with the ETag of its last answer gets a 304, which costs no rate
 * limit, when nothing changed. ETags and their data are kept per installation and URL, for a
 * bounded number of URLs (least recently used forgotten); a caller keeps only the part it needs
 * (`project`), not GitHub's megabyte of JSON.
 */
import { BoundedMap } from "../../lib/bounded-map.js";
import type { GitHubClient } from "./octokit.js";

export interface ConditionalAnswer<T> {
  data: T;
  /** False when GitHub answered 304: `data` is what it answered last time. */
  changed: boolean;
}

interface Kept {
  etag: string;
  data: unknown;
}

export class ConditionalRequests {
  private readonly kept: BoundedMap<string, Kept>;

  constructor(maxUrls = 2000) {
    this.kept = new BoundedMap(maxUrls);
  }

  get<T>(
    client: GitHubClient,
    scope: string,
    route: string,
    parameters: Record<string, unknown>,
  ): Promise<ConditionalAnswer<T>> {
    return this.getProjected(client, scope, route, parameters, ({ data }) => data as T);
  }

  /**
   * The same, keeping (and answering) only `project` of GitHub's answer: its data and headers
   * (`link`, for the next page). A 304 answers what `project` made of the last full answer.
   */
  async getProjected<T>(
    client: GitHubClient,
    scope: string,
    route: string,
    parameters: Record<string, unknown>,
    project: (answer: { data: unknown; headers: Record<string, unknown> }) => T,
  ): Promise<ConditionalAnswer<T>> {
    const { url } = client.request.endpoint(route, parameters);
    const key = `${scope} ${url}`;
    const previous = this.kept.get(key);
    try {
      const response = await client.request(route, {
        ...parameters,
        headers: previous ? { "if-none-match": previous.etag } : {},
      });
      const data = project({
        data: response.data,
        headers: response.headers,
      });
      const etag = response.headers.etag;
      if (typeof etag === "string" && etag !== "") {
        this.kept.set(key, { etag, data });
      } else {
        this.kept.delete(key);
      }
      return { data, changed: true };
    } catch (error) {
      if (previous && statusOf(error) === 304) {
        return { data: previous.data as T, changed: false };
      }
      throw error;
    }
  }
}

/** The HTTP status of an Octokit request error (304 included: Octokit throws on it). */
export function statusOf(error: unknown): number | undefined {
  const status = (error as { status?: unknown } | null)?.status;
  return typeof status === "number" ? status : undefined;
}
