/**
 * Where installation tokens are kept between requests, for @octokit/auth-app (whose own cache keeps
 * a token 59 minutes whatever its `expires_at`): each until five minutes before GitHub says it
 * expires, one per installation and set of permissions, at most `max` (least recently used go).
 */
import type { Clock } from "../../lib/clock.js";
import { MINUTE_MS } from "../../lib/time.js";
import { BoundedMap } from "../../lib/bounded-map.js";

/** A token is created anew this long before GitHub says it expires. */
export const TOKEN_REFRESH_MARGIN_MS = 5 * MINUTE_MS;

/**
 * The cache @octokit/auth-app reads and writes (`get`/`set` of its own strings). Its keys begin
 * with the installation id; its values are `token|createdAt|expiresAt|…`.
 */
export class InstallationTokenCache {
  private readonly entries: BoundedMap<string, string>;

  constructor(
    private readonly clock: Clock,
    max: number,
  ) {
    this.entries = new BoundedMap(max);
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: string): string | undefined {
    const value = this.entries.get(key);
    if (value === undefined) return undefined;
    const expiresAt = Date.parse(value.split("|")[2] ?? "");
    if (!Number.isFinite(expiresAt) || expiresAt - TOKEN_REFRESH_MARGIN_MS <= this.clock.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return value;
  }

  set(key: string, value: string): void {
    this.entries.set(key, value);
  }

  /** Drops every token of an installation. */
  forgetInstallation(installationId: number): void {
    for (const key of this.entries.keys()) {
      if (key === String(installationId) || key.startsWith(`${installationId}|`)) {
        this.entries.delete(key);
      }
    }
  }
}
