/**
 * Octokit, set up as Mainline talks to GitHub: as the App (a JWT), as one of its installations (a
 * cached token) or as a user. Every client throttles as GitHub asks, retries 5xx, names Mainline in
 * its user agent and gives up on a request that hangs. No token, JWT or key may ever reach a log
 * line or an error's text.
 */
import { createAppAuth } from "@octokit/auth-app";
import Bottleneck from "bottleneck";
import type { Clock } from "../../lib/clock.js";
import { redactSecrets } from "../../lib/redact.js";
import { MINUTE_MS, SECOND_MS } from "../../lib/time.js";
import { ConditionalRequests, type ConditionalAnswer } from "./conditional.js";
import { GitHubOctokit, type GitHubClient } from "./octokit.js";
import { isUnsafeToRepeat, RequestGate, type RateLimitPause } from "./request-gate.js";
import { BoundedMap } from "../../lib/bounded-map.js";
import { InstallationTokenCache } from "./token-cache.js";
import { OutageBreaker } from "./outage.js";

/** GitHub asks integrators to space content-creating requests a second apart. */
const WRITE_INTERVAL_MS = SECOND_MS;

export type { RateLimitPause } from "./request-gate.js";

export type { GitHubClient } from "./octokit.js";

/** GitHub's REST API version Mainline is written against. */
const API_VERSION = "2022-11-28";
/** A request that has not answered in this time is abandoned (and retried if it may be). */
const REQUEST_TIMEOUT_MS = 30 * SECOND_MS;
/** Octokit's retries of a failed request (a 5xx, no answer) that is safe to repeat. */
const RETRIES = 3;
/**
 * Statuses whose meaning is ours to decide (a merge race, a conflict, a rate limit the throttle
 * handles): never retried blindly. GitHub's 5xx are.
 */
const DO_NOT_RETRY = [400, 401, 403, 404, 405, 409, 410, 422, 429, 451];

export interface GitHubLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface GitHubAppSettings {
  appId: string;
  /** PKCS#8 PEM. */
  privateKey: string;
  apiUrl: string;
  /** `mainline/<version>`: GitHub asks every client to name itself. */
  userAgent: string;
  clock: Clock;
  logger: GitHubLogger;
  /** Installations whose clients (and tokens) are kept at once (default 1,000). */
  maxInstallations?: number;
  /** A primary rate limit is waited out when it resets within this (default 60 s). */
  maxRateLimitWaitMs?: number;
  requestTimeoutMs?: number;
  /** The least time between two writes of one installation (default 1,000 ms; 0: a stand-in). */
  writeIntervalMs?: number;
  /** A failed request's retries wait this, 4× and 9× it (default 1,000 ms; 0: a stand-in). */
  retryBaseMs?: number;
}

/** Octokit's log, into ours, redacted. Octokit's debug and info chatter is dropped. */
function octokitLog(logger: GitHubLogger) {
  return {
    debug: () => undefined,
    info: () => undefined,
    warn: (message: string) => {
      logger.warn({}, `github: ${redactSecrets(message)}`);
    },
    error: (message: string) => {
      logger.error({}, `github: ${redactSecrets(message)}`);
    },
  };
}

/** `fetch` with a deadline per HTTP call (Octokit's retries each get their own). */
function fetchWithTimeout(timeoutMs: number): typeof fetch {
  return (input, init) =>
    fetch(input, { ...init, signal: init?.signal ?? AbortSignal.timeout(timeoutMs) });
}

/**
 * `fetch` through an installation's gate (its write lanes and rate-limit pauses): every HTTP call,
 * Octokit's retries included; the deadline starts when the request is sent.
 */
function fetchThrough(gate: RequestGate, timeoutMs: number): typeof fetch {
  const send = fetchWithTimeout(timeoutMs);
  return (input, init) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    const method = init?.method ?? (input instanceof Request ? input.method : "GET");
    return gate.send(method, new URL(url).pathname, () => send(input, init));
  };
}

/**
 * A write GitHub may carry out and still answer an error (a 5xx, a timeout) is never repeated by
 * Octokit: its caller reads what it meant to change first (docs/github.md, "Unknown outcomes").
 */
function noBlindRepeats(client: GitHubClient, outage: OutageBreaker): GitHubClient {
  client.hook.before("request", (options) => {
    const url = new URL(options.url, "https://api.github.invalid");
    // While GitHub seems down (`outage.ts`), no request waits through retries either.
    if (outage.open || isUnsafeToRepeat(options.method, url.pathname)) {
      options.request = { ...options.request, retries: 0 };
    }
  });
  return client;
}

export class GitHubApp {
  /** The App itself: a JWT on every request (`/app`, `/app/installations…`). */
  readonly app: GitHubClient;
  private readonly tokens: InstallationTokenCache;
  private readonly clients: BoundedMap<number, GitHubClient>;
  private readonly conditional = new ConditionalRequests();
  /** Whether GitHub answers at all: the App and every installation share it. */
  private readonly outage = new OutageBreaker(RETRIES + 1);
  /** Octokit's own write and notification lanes, left open: the gates space writes. */
  private readonly open: Bottleneck.Group;
  /** Each installation's gate (and the App's): write lanes, rate-limit pauses. */
  private readonly gates: BoundedMap<string, RequestGate>;

  constructor(private readonly settings: GitHubAppSettings) {
    this.open = new Bottleneck.Group({ id: "mainline-github-open", maxConcurrent: null });
    const max = settings.maxInstallations ?? 1000;
    this.gates = new BoundedMap(max + 1);
    this.tokens = new InstallationTokenCache(settings.clock, max);
    this.clients = new BoundedMap(max);
    this.app = this.client("app", {
      authStrategy: createAppAuth,
      auth: { appId: settings.appId, privateKey: settings.privateKey, cache: this.tokens },
    });
  }

  /**
   * The client of one installation: its token is created on first use, kept (one per
   * installation, at most `maxInstallations` of them) and created anew five minutes before it
   * expires.
   */
  installation(installationId: number): GitHubClient {
    const known = this.clients.get(installationId);
    if (known) return known;
    const client = this.client(`installation-${installationId}`, {
      authStrategy: createAppAuth,
      auth: {
        appId: this.settings.appId,
        privateKey: this.settings.privateKey,
        installationId,
        cache: this.tokens,
      },
    });
    this.clients.set(installationId, client);
    return client;
  }

  /** A client acting as the person whose token this is (never stored, never logged). */
  user(token: string): GitHubClient {
    return this.client("user", { auth: token, throttle: { enabled: false } });
  }

  /**
   * A GET that costs nothing when nothing changed: sent with the ETag of the last answer to the
   * same URL for the same installation (`If-None-Match`); a 304 answers the data kept from then.
   */
  conditionalGet<T>(
    installationId: number,
    route: string,
    parameters: Record<string, unknown> = {},
  ): Promise<ConditionalAnswer<T>> {
    return this.conditional.get<T>(
      this.installation(installationId),
      String(installationId),
      route,
      parameters,
    );
  }

  /** The rate-limit pause an installation is under, if any. */
  rateLimit(installationId: number): RateLimitPause | undefined {
    return this.gates.get(`installation-${String(installationId)}`)?.paused();
  }

  /** Forgets an installation's token (it was refused: suspended, uninstalled, permissions). */
  forget(installationId: number): void {
    this.tokens.forgetInstallation(installationId);
  }

  /** The gate of the App or of one installation (kept across its clients). */
  private gate(id: string): RequestGate {
    const known = this.gates.get(id);
    if (known) return known;
    const { logger } = this.settings;
    const gate = new RequestGate({
      writeIntervalMs: this.settings.writeIntervalMs ?? WRITE_INTERVAL_MS,
      maxWaitMs: this.settings.maxRateLimitWaitMs ?? MINUTE_MS,
      onPause: (pause) => {
        logger.warn(
          { client: id, kind: pause.kind, until: new Date(pause.until).toISOString() },
          "github: rate limited; every request of this installation waits until then",
        );
      },
    });
    this.gates.set(id, gate);
    return gate;
  }

  private client(id: string, options: Record<string, unknown>): GitHubClient {
    const { logger } = this.settings;
    const maxWait = this.settings.maxRateLimitWaitMs ?? MINUTE_MS;
    const timeoutMs = this.settings.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
    const gated = id !== "user";
    const client = new GitHubOctokit({
      baseUrl: this.settings.apiUrl,
      userAgent: this.settings.userAgent,
      headers: { "x-github-api-version": API_VERSION },
      log: octokitLog(logger),
      request: {
        fetch: this.outage.wrap(
          gated ? fetchThrough(this.gate(id), timeoutMs) : fetchWithTimeout(timeoutMs),
        ),
      },
      retry: {
        doNotRetry: DO_NOT_RETRY,
        retries: RETRIES,
        retryAfterBaseValue: this.settings.retryBaseMs ?? SECOND_MS,
      },
      throttle: {
        // Spacing and pauses are the gate's (per installation); Octokit's lanes are left open.
        id,
        write: this.open,
        notifications: this.open,
        onRateLimit: (
          retryAfter: number,
          request: { method: string; url: string },
          _o: unknown,
          count: number,
        ) => {
          const retrying = count < 2 && retryAfter * SECOND_MS <= maxWait;
          logger.warn(
            { client: id, method: request.method, url: request.url, retryAfter, retrying },
            "github: rate limit reached",
          );
          return retrying;
        },
        onSecondaryRateLimit: (
          retryAfter: number,
          request: { method: string; url: string },
          _o: unknown,
          count: number,
        ) => {
          const retrying = count < 3 && retryAfter * SECOND_MS <= maxWait;
          logger.warn(
            { client: id, method: request.method, url: request.url, retryAfter, retrying },
            "github: secondary rate limit reached",
          );
          return retrying;
        },
      },
      ...options,
    });
    return noBlindRepeats(client, this.outage);
  }
}

/** Every page of a list (GitHub's `page`/`per_page`, 100 at a time), gathered. */
export async function paginate<T>(
  client: GitHubClient,
  route: string,
  parameters: Record<string, unknown>,
  items: (data: unknown) => readonly T[],
): Promise<T[]> {
  const all: T[] = [];
  for (let page = 1; page <= 1000; page++) {
    const response = await client.request(route, { ...parameters, per_page: 100, page });
    const found = items(response.data);
    all.push(...found);
    const link = response.headers.link ?? "";
    if (!/\brel="next"/.test(link) || found.length === 0) break;
  }
  return all;
}
