import { createPrivateKey } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { MIN_SUPPLIED_TOKEN_LENGTH } from "./lib/tokens.js";
import { webUrlOf } from "./providers/github/manifest.js";
import { ORG_SLUG_PATTERN } from "./organizations/slug.js";
import { DEFAULT_SESSION_LIFETIMES, type SessionLifetimes } from "./organizations/sessions.js";
import { DAY_MS, HOUR_MS, MINUTE_MS, SECOND_MS } from "./lib/time.js";
import { DEFAULT_RETRY_SCHEDULE, parseDuration, parseSchedule } from "./notifications/schedule.js";
import { DEFAULT_SLACK_API_URL } from "./notifications/kinds.js";
import { ConfigError, nonEmpty, optionalWholeNumber, wholeNumber } from "./app/config-values.js";
import { loadGitLabConfig, type GitLabConfig } from "./app/gitlab-config.js";

export { ConfigError } from "./app/config-values.js";

/** Everything `mainline serve` reads from its environment (README "Configuration"). */
export interface ServiceConfig {
  host: string;
  port: number;
  /** Undefined: the SQLite file `mainline.db` in the data directory. */
  databaseUrl: string | undefined;
  /** PostgreSQL: connections this process opens at most (MAINLINE_DATABASE_POOL_SIZE). */
  databasePoolSize: number;
  dataDir: string;
  publicUrl: string;
  /** MAINLINE_PUBLIC_URL when set: upload URLs use it; otherwise the address a request came to. */
  explicitPublicUrl: string | undefined;
  logLevel: string;
  /** Raw test runs older than this many days are pruned (aggregates stay). */
  retentionDays: number;
  /** Largest bundle a `PUT` may store. */
  maxBundleBytes: number;
  /** Checks the built-in CI runner runs at once. */
  ciParallelism: number;
  /** How long an upload claimed by the ingestion worker stays its own without renewal. */
  ingestLeaseMs: number;
  /**
   * How long the merge queue's claims stay a process's without renewal (a queue's driver, the
   * built-in runner's checks, GitHub's webhook deliveries and cursor): how soon another takes over.
   */
  queueLeaseMs: number;
  /**
   * The longest any queue's batch waits to fill, whatever its `batchingMaxWaitTimeMinutes`
   * (MAINLINE_BATCH_WAIT_LIMIT_SECONDS); undefined: each queue's own setting.
   */
  batchWaitLimitMs: number | undefined;
  bootstrap: { organization: string; token: string } | undefined;
  /** How long a dashboard session lasts idle, and at most. */
  sessionLifetimes: SessionLifetimes;
  /** The GitHub App; undefined when it is not configured. */
  github: GitHubAppConfig | undefined;
  /** The GitLab instance organizations connect to (MAINLINE_GITLAB_*), when set. */
  gitlab: GitLabConfig | undefined;
  /** Outbound webhooks' delivery (MAINLINE_WEBHOOKS_*; docs/webhooks.md). */
  webhooks: WebhookConfig;
  /** Tickets (MAINLINE_TICKETS_*, MAINLINE_LINEAR_API_URL; docs/tickets.md). */
  tickets: TicketConfig;
}

export interface TicketConfig {
  pollMs: number;
  refreshMs: number;
  timeoutMs: number;
  linearApiUrl: string;
}

export interface WebhookConfig {
  schedule: number[];
  timeoutMs: number;
  disableAfterMs: number;
  allowPrivate: boolean;
  /** Slack's Web API base for Slack bot endpoints (MAINLINE_SLACK_API_URL). */
  slackApiUrl: string;
}

/** The GitHub App Mainline acts as (MAINLINE_GITHUB_*). */
export interface GitHubAppConfig {
  /** The App's id (or its client id), the JWT's issuer. */
  appId: string;
  /** The App's private key, as PKCS#8 PEM (GitHub hands out PKCS#1; both are accepted). */
  privateKey: string;
  webhookSecret: string;
  /** The REST API's base URL, without a trailing slash. */
  apiUrl: string;
  /** The host name its repositories carry in `repo.host` (`github.com`, a GHES host). */
  host: string;
  /**
   * The App's OAuth credentials, for "Sign in with GitHub"; undefined when they are not set (the
   * sign-in page then offers tokens only). The secret is never logged.
   */
  oauth?: { clientId: string; clientSecret: string } | undefined;
  /** GitHub's web address (`https://github.com`, `https://HOST` for GHES): OAuth's pages. */
  webUrl: string;
  /** Between reconcile passes (MAINLINE_GITHUB_RECONCILE_SECONDS; default 60 s; 0: off). */
  reconcileIntervalMs: number;
  /** How often the queue's CI on GitHub reads its watched runs' checks again (default 15 s). */
  ciPollIntervalMs?: number | undefined;
  /**
   * The prefix of the test branches CI tests (MAINLINE_GITHUB_TEST_BRANCH_PREFIX, default
   * `trunk-merge/`); they are assembled out of CI's sight under `trunk-temp/`.
   */
  testBranchPrefix?: string | undefined;
  /**
   * The least time between two writes of one installation (MAINLINE_GITHUB_WRITE_INTERVAL_MS,
   * default 1,000: GitHub asks integrators to space content-creating requests a second apart).
   * 0 only against a stand-in of GitHub.
   */
  writeIntervalMs?: number | undefined;
  /**
   * The GitHub client's retries of a failed request wait this, 4× and 9× it
   * (MAINLINE_GITHUB_RETRY_BASE_MS, default 1,000). 0 only against a stand-in of GitHub.
   */
  retryBaseMs?: number | undefined;
}

/**
 * PostgreSQL connections per process. A connection stays taken until the event loop has read its
 * answer, so under load the pool is busier than the database is: at 50 concurrent clients on two
 * cores, 20 connections answered ~20 % more requests a second than pg's default of 10 (measured
 * under mixed load). Two processes at the default use 40 of PostgreSQL's default `max_connections`
 * of 100.
 */
export const DEFAULT_DATABASE_POOL_SIZE = 20;

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

export function dataDirFrom(env: NodeJS.ProcessEnv): string {
  return path.resolve(nonEmpty(env.MAINLINE_DATA_DIR) ?? "./mainline-data");
}

export function loadServiceConfig(env: NodeJS.ProcessEnv): ServiceConfig {
  const host = nonEmpty(env.HOST) ?? "127.0.0.1";
  const portText = nonEmpty(env.PORT) ?? "8080";
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535) {
    throw new ConfigError(`PORT must be a whole number from 0 to 65535 (got "${portText}").`);
  }
  const logLevel = (nonEmpty(env.LOG_LEVEL) ?? "info").toLowerCase();
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")} (got "${logLevel}").`);
  }
  const shownHost = host === "0.0.0.0" || host === "::" ? "localhost" : host;
  const publicUrl = (
    nonEmpty(env.MAINLINE_PUBLIC_URL) ??
    `http://${shownHost.includes(":") ? `[${shownHost}]` : shownHost}:${port}`
  ).replace(/\/+$/, "");
  let parsed: URL;
  try {
    parsed = new URL(publicUrl);
  } catch {
    throw new ConfigError(
      `MAINLINE_PUBLIC_URL must be an absolute http(s) URL (got "${publicUrl}").`,
    );
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new ConfigError(`MAINLINE_PUBLIC_URL must be an http(s) URL (got "${publicUrl}").`);
  }
  const bootstrapOrg = nonEmpty(env.MAINLINE_BOOTSTRAP_ORG);
  const bootstrapToken = nonEmpty(env.MAINLINE_BOOTSTRAP_TOKEN);
  if ((bootstrapOrg === undefined) !== (bootstrapToken === undefined)) {
    throw new ConfigError(
      "Set both MAINLINE_BOOTSTRAP_ORG and MAINLINE_BOOTSTRAP_TOKEN, or neither.",
    );
  }
  if (bootstrapOrg !== undefined && !ORG_SLUG_PATTERN.test(bootstrapOrg)) {
    throw new ConfigError(
      `MAINLINE_BOOTSTRAP_ORG must be 1-63 lowercase letters, digits and dashes (got "${bootstrapOrg}").`,
    );
  }
  if (bootstrapToken !== undefined && bootstrapToken.length < MIN_SUPPLIED_TOKEN_LENGTH) {
    throw new ConfigError(
      `MAINLINE_BOOTSTRAP_TOKEN must be at least ${MIN_SUPPLIED_TOKEN_LENGTH} characters long (generate one with: openssl rand -hex 32).`,
    );
  }
  const retentionDays = wholeNumber(env, "MAINLINE_RETENTION_DAYS", {
    fallback: 90,
    min: 8,
    max: 36500,
    unit: "days",
    why: "the API's windows need 7 days of runs",
  });
  const bundleMb = wholeNumber(env, "MAINLINE_MAX_BUNDLE_MB", {
    fallback: 1024,
    min: 1,
    unit: "megabytes",
  });
  const ciParallelism = wholeNumber(env, "MAINLINE_CI_PARALLELISM", {
    fallback: 2,
    min: 1,
    max: 256,
    unit: "checks",
  });
  const leaseSeconds = wholeNumber(env, "MAINLINE_INGEST_LEASE_SECONDS", LEASE_SECONDS);
  const queueLeaseSeconds = wholeNumber(env, "MAINLINE_QUEUE_LEASE_SECONDS", LEASE_SECONDS);
  const batchWaitLimitSeconds = optionalWholeNumber(env, "MAINLINE_BATCH_WAIT_LIMIT_SECONDS", {
    min: 0,
    max: 86_400,
    unit: "seconds",
  });
  const databasePoolSize = wholeNumber(env, "MAINLINE_DATABASE_POOL_SIZE", {
    fallback: DEFAULT_DATABASE_POOL_SIZE,
    min: 1,
    max: 1000,
    unit: "connections",
  });
  return {
    host,
    port,
    sessionLifetimes: sessionLifetimesFrom(env),
    databaseUrl: nonEmpty(env.DATABASE_URL),
    databasePoolSize,
    dataDir: dataDirFrom(env),
    publicUrl,
    explicitPublicUrl: nonEmpty(env.MAINLINE_PUBLIC_URL) === undefined ? undefined : publicUrl,
    logLevel,
    retentionDays,
    maxBundleBytes: bundleMb * 1024 * 1024,
    ciParallelism,
    ingestLeaseMs: leaseSeconds * 1000,
    queueLeaseMs: queueLeaseSeconds * 1000,
    batchWaitLimitMs:
      batchWaitLimitSeconds === undefined ? undefined : batchWaitLimitSeconds * 1000,
    bootstrap:
      bootstrapOrg && bootstrapToken
        ? { organization: bootstrapOrg, token: bootstrapToken }
        : undefined,
    github: loadGitHubConfig(env),
    gitlab: loadGitLabConfig(env),
    webhooks: loadWebhookConfig(env),
    tickets: loadTicketConfig(env),
  };
}

/**
 * MAINLINE_TICKETS_POLL_MS (the loop's pause between passes, 100 ms to a day, default 5 min),
 * MAINLINE_TICKETS_REFRESH_MS (how old a linked ticket's state may get, 1 s to a week, default
 * 15 min), MAINLINE_TICKETS_TIMEOUT_MS (a provider request's timeout, 1 to 120000, default 15000),
 * MAINLINE_LINEAR_API_URL (default https://api.linear.app/graphql).
 */
export function loadTicketConfig(env: NodeJS.ProcessEnv): TicketConfig {
  const pollMs = wholeNumber(env, "MAINLINE_TICKETS_POLL_MS", {
    fallback: 5 * MINUTE_MS,
    min: 100,
    max: DAY_MS,
    unit: "milliseconds",
  });
  const refreshMs = wholeNumber(env, "MAINLINE_TICKETS_REFRESH_MS", {
    fallback: 15 * MINUTE_MS,
    min: SECOND_MS,
    max: 7 * DAY_MS,
    unit: "milliseconds",
  });
  const timeoutMs = wholeNumber(env, "MAINLINE_TICKETS_TIMEOUT_MS", {
    fallback: 15 * SECOND_MS,
    min: 1,
    max: 120_000,
    unit: "milliseconds",
  });
  const linearText = nonEmpty(env.MAINLINE_LINEAR_API_URL) ?? "https://api.linear.app/graphql";
  let linear: URL | undefined;
  try {
    linear = new URL(linearText);
  } catch {
    linear = undefined;
  }
  if (!linear || !/^https?:$/.test(linear.protocol) || linear.hash !== "") {
    throw new ConfigError(
      `MAINLINE_LINEAR_API_URL must be an absolute http(s) URL such as https://api.linear.app/graphql (got "${linearText.slice(0, 200)}").`,
    );
  }
  return { pollMs, refreshMs, timeoutMs, linearApiUrl: linear.href };
}

/**
 * MAINLINE_WEBHOOKS_RETRY_SCHEDULE (durations, default Svix's `0,5s,5m,30m,2h,5h,10h,10h`),
 * MAINLINE_WEBHOOKS_TIMEOUT_MS (1 to 120000, default 15000), MAINLINE_WEBHOOKS_DISABLE_AFTER (a
 * duration from 1m to 365d, default 5d), MAINLINE_WEBHOOKS_ALLOW_PRIVATE (1: endpoints may be internal addresses),
 * MAINLINE_SLACK_API_URL (an http(s) URL, default https://slack.com/api).
 */
export function loadWebhookConfig(env: NodeJS.ProcessEnv): WebhookConfig {
  const scheduleText = nonEmpty(env.MAINLINE_WEBHOOKS_RETRY_SCHEDULE);
  const schedule =
    scheduleText === undefined ? [...DEFAULT_RETRY_SCHEDULE] : parseSchedule(scheduleText);
  if (typeof schedule === "string") {
    throw new ConfigError(
      `MAINLINE_WEBHOOKS_RETRY_SCHEDULE ${schedule} (got "${(scheduleText ?? "").slice(0, 80)}"); e.g. 0,5s,5m,30m,2h,5h,10h,10h.`,
    );
  }
  const timeoutMs = wholeNumber(env, "MAINLINE_WEBHOOKS_TIMEOUT_MS", {
    fallback: 15_000,
    min: 1,
    max: 120_000,
    unit: "milliseconds",
  });
  const disableText = nonEmpty(env.MAINLINE_WEBHOOKS_DISABLE_AFTER);
  const disableAfterMs = disableText === undefined ? 5 * DAY_MS : parseDuration(disableText);
  if (disableAfterMs === undefined || disableAfterMs < MINUTE_MS || disableAfterMs > 365 * DAY_MS) {
    throw new ConfigError(
      `MAINLINE_WEBHOOKS_DISABLE_AFTER must be a duration from 1m to 365d such as 5d, 12h or 30m (got "${(disableText ?? "").slice(0, 80)}").`,
    );
  }
  const allowText = nonEmpty(env.MAINLINE_WEBHOOKS_ALLOW_PRIVATE) ?? "0";
  if (allowText !== "0" && allowText !== "1") {
    throw new ConfigError(
      `MAINLINE_WEBHOOKS_ALLOW_PRIVATE must be 1 (endpoints may be internal addresses) or 0 (got "${allowText.slice(0, 80)}").`,
    );
  }
  const slackApiUrl = nonEmpty(env.MAINLINE_SLACK_API_URL) ?? DEFAULT_SLACK_API_URL;
  if (!/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/i.test(slackApiUrl)) {
    throw new ConfigError(
      `MAINLINE_SLACK_API_URL must be an http(s) URL such as https://slack.com/api (got "${slackApiUrl.slice(0, 80)}").`,
    );
  }
  return {
    schedule,
    timeoutMs,
    disableAfterMs,
    allowPrivate: allowText === "1",
    slackApiUrl: slackApiUrl.replace(/\/+$/, ""),
  };
}

const LEASE_SECONDS = { fallback: 30, min: 1, max: 3600, unit: "seconds" };

/**
 * `MAINLINE_SESSION_IDLE_MINUTES` (default 1440: a day) and `MAINLINE_SESSION_MAX_HOURS`
 * (default 168: a week): when a dashboard session ends unused, and at the latest.
 */
export function sessionLifetimesFrom(env: NodeJS.ProcessEnv): SessionLifetimes {
  const idleMinutes = optionalWholeNumber(env, "MAINLINE_SESSION_IDLE_MINUTES", {
    min: 1,
    max: 525_600,
    unit: "minutes",
  });
  const maxHours = optionalWholeNumber(env, "MAINLINE_SESSION_MAX_HOURS", {
    min: 1,
    max: 8760,
    unit: "hours",
  });
  return {
    idleMs: idleMinutes === undefined ? DEFAULT_SESSION_LIFETIMES.idleMs : idleMinutes * MINUTE_MS,
    absoluteMs: maxHours === undefined ? DEFAULT_SESSION_LIFETIMES.absoluteMs : maxHours * HOUR_MS,
  };
}
const GITHUB_REQUIRED = [
  "MAINLINE_GITHUB_APP_ID",
  "MAINLINE_GITHUB_PRIVATE_KEY",
  "MAINLINE_GITHUB_WEBHOOK_SECRET",
] as const;
const GITHUB_OPTIONAL = [
  "MAINLINE_GITHUB_API_URL",
  "MAINLINE_GITHUB_HOST",
  "MAINLINE_GITHUB_CLIENT_ID",
  "MAINLINE_GITHUB_CLIENT_SECRET",
  "MAINLINE_GITHUB_RECONCILE_SECONDS",
  "MAINLINE_GITHUB_CI_POLL_SECONDS",
  "MAINLINE_GITHUB_TEST_BRANCH_PREFIX",
  "MAINLINE_GITHUB_WRITE_INTERVAL_MS",
  "MAINLINE_GITHUB_RETRY_BASE_MS",
] as const;
const DEFAULT_GITHUB_API_URL = "https://api.github.com";

/**
 * The GitHub App's configuration, or undefined when none of its variables is set. A partial
 * configuration, a key that does not parse or an API URL whose host cannot be told are errors;
 * no message ever shows the key.
 */
export function loadGitHubConfig(env: NodeJS.ProcessEnv): GitHubAppConfig | undefined {
  const set = [...GITHUB_REQUIRED, ...GITHUB_OPTIONAL].filter((name) => nonEmpty(env[name]));
  if (set.length === 0) return undefined;
  const missing = GITHUB_REQUIRED.filter((name) => !nonEmpty(env[name]));
  if (missing.length > 0) {
    throw new ConfigError(
      `The GitHub App is configured only in part: ${set.join(", ")} ${set.length === 1 ? "is" : "are"} set, but ${missing.join(", ")} ${missing.length === 1 ? "is" : "are"} missing. Set all of ${GITHUB_REQUIRED.join(", ")} (docs/github.md), or none.`,
    );
  }
  const appId = nonEmpty(env.MAINLINE_GITHUB_APP_ID) ?? "";
  if (!/^(\d{1,18}|Iv[0-9A-Za-z.]{1,60})$/.test(appId)) {
    throw new ConfigError(
      `MAINLINE_GITHUB_APP_ID must be the App's id (a whole number, as its settings page shows it) or its client id (Iv…) (got "${appId.slice(0, 80)}").`,
    );
  }
  const apiUrl = githubApiUrl(nonEmpty(env.MAINLINE_GITHUB_API_URL) ?? DEFAULT_GITHUB_API_URL);
  const explicitHost = nonEmpty(env.MAINLINE_GITHUB_HOST)?.toLowerCase();
  if (explicitHost !== undefined && !/^[a-z0-9.-]{1,253}(:\d{1,5})?$/.test(explicitHost)) {
    throw new ConfigError(
      `MAINLINE_GITHUB_HOST must be a host name such as github.com or github.example.com (got "${explicitHost.slice(0, 80)}").`,
    );
  }
  const host = explicitHost ?? githubHostOf(apiUrl);
  const pollSeconds = optionalWholeNumber(env, "MAINLINE_GITHUB_CI_POLL_SECONDS", {
    min: 1,
    max: 3600,
    unit: "seconds",
  });
  const testBranchPrefix = nonEmpty(env.MAINLINE_GITHUB_TEST_BRANCH_PREFIX);
  if (
    testBranchPrefix !== undefined &&
    (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,60}(\/[A-Za-z0-9][A-Za-z0-9._-]{0,60}){0,3}\/$/.test(
      testBranchPrefix,
    ) ||
      testBranchPrefix.includes("..") ||
      testBranchPrefix.startsWith("trunk-temp/"))
  ) {
    throw new ConfigError(
      `MAINLINE_GITHUB_TEST_BRANCH_PREFIX must be a branch name prefix ending with "/", such as trunk-merge/ or mainline/merge/ (letters, digits, ".", "_", "-"; not under trunk-temp/) (got "${testBranchPrefix.slice(0, 80)}").`,
    );
  }
  const writeIntervalMs = optionalWholeNumber(env, "MAINLINE_GITHUB_WRITE_INTERVAL_MS", {
    min: 0,
    max: 60_000,
    unit: "milliseconds",
  });
  const retryBaseMs = optionalWholeNumber(env, "MAINLINE_GITHUB_RETRY_BASE_MS", {
    min: 0,
    max: 60_000,
    unit: "milliseconds",
  });
  return {
    appId,
    privateKey: githubPrivateKey(env.MAINLINE_GITHUB_PRIVATE_KEY ?? ""),
    webhookSecret: nonEmpty(env.MAINLINE_GITHUB_WEBHOOK_SECRET) ?? "",
    apiUrl,
    host,
    oauth: githubOAuth(env),
    webUrl: githubWebUrlOf(apiUrl),
    reconcileIntervalMs: githubReconcileInterval(env),
    ...(pollSeconds === undefined ? {} : { ciPollIntervalMs: pollSeconds * 1000 }),
    ...(testBranchPrefix === undefined ? {} : { testBranchPrefix }),
    ...(writeIntervalMs === undefined ? {} : { writeIntervalMs }),
    ...(retryBaseMs === undefined ? {} : { retryBaseMs }),
  };
}

/** MAINLINE_GITHUB_RECONCILE_SECONDS: 0 (no reconcile loop) or 10 to 86,400; default 60. */
function githubReconcileInterval(env: NodeJS.ProcessEnv): number {
  const text = nonEmpty(env.MAINLINE_GITHUB_RECONCILE_SECONDS);
  if (text === undefined) return 60 * SECOND_MS;
  const seconds = /^\d{1,6}$/.test(text) ? Number(text) : Number.NaN;
  if (!(seconds === 0 || (seconds >= 10 && seconds <= 86_400))) {
    throw new ConfigError(
      `MAINLINE_GITHUB_RECONCILE_SECONDS must be 0 (no reconcile loop) or a whole number of seconds from 10 to 86400 (got "${text.slice(0, 80)}").`,
    );
  }
  return seconds * SECOND_MS;
}

/** The App's OAuth credentials (both or neither); the secret is never shown in a message. */
function githubOAuth(env: NodeJS.ProcessEnv): GitHubAppConfig["oauth"] {
  const clientId = nonEmpty(env.MAINLINE_GITHUB_CLIENT_ID);
  const clientSecret = nonEmpty(env.MAINLINE_GITHUB_CLIENT_SECRET);
  if (clientId === undefined && clientSecret === undefined) return undefined;
  if (clientId === undefined || clientSecret === undefined) {
    throw new ConfigError(
      `Sign-in with GitHub needs both MAINLINE_GITHUB_CLIENT_ID and MAINLINE_GITHUB_CLIENT_SECRET (the App's client id and a client secret, from its settings page); only ${clientId === undefined ? "MAINLINE_GITHUB_CLIENT_SECRET" : "MAINLINE_GITHUB_CLIENT_ID"} is set.`,
    );
  }
  if (!/^[A-Za-z0-9._-]{4,100}$/.test(clientId)) {
    throw new ConfigError(
      `MAINLINE_GITHUB_CLIENT_ID must be the App's client id, such as Iv23li… (got "${clientId.slice(0, 80)}").`,
    );
  }
  if (!/^[A-Za-z0-9._-]{20,200}$/.test(clientSecret)) {
    throw new ConfigError(
      "MAINLINE_GITHUB_CLIENT_SECRET is not a client secret (GitHub's are 40 hexadecimal characters): generate one on the App's settings page.",
    );
  }
  return { clientId, clientSecret };
}

/**
 * GitHub's web address for an API URL: https://github.com for https://api.github.com (and
 * https://SUB.ghe.com for api.SUB.ghe.com), https://HOST for GHES's https://HOST/api/v3, and the
 * API URL's own origin otherwise (a fake or a proxy serving both).
 */
export const githubWebUrlOf = webUrlOf;

function githubApiUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(
      `MAINLINE_GITHUB_API_URL must be an absolute http(s) URL such as https://api.github.com or https://github.example.com/api/v3 (got "${value.slice(0, 200)}").`,
    );
  }
  if ((url.protocol !== "https:" && url.protocol !== "http:") || url.search || url.hash) {
    throw new ConfigError(
      `MAINLINE_GITHUB_API_URL must be an http(s) URL without query or fragment, such as https://api.github.com (got "${value.slice(0, 200)}").`,
    );
  }
  return `${url.origin}${url.pathname}`.replace(/\/+$/, "");
}

/**
 * The host repositories carry: github.com for api.github.com (and SUBDOMAIN.ghe.com for
 * api.SUBDOMAIN.ghe.com), HOST for GitHub Enterprise Server's https://HOST/api/v3.
 */
export function githubHostOf(apiUrl: string): string {
  const url = new URL(apiUrl);
  const path = url.pathname.replace(/\/+$/, "");
  if (path === "" && url.hostname.startsWith("api.")) return url.host.slice("api.".length);
  if (path === "/api/v3") return url.host;
  throw new ConfigError(
    `Cannot tell the repositories' host from MAINLINE_GITHUB_API_URL ${apiUrl}: it is neither https://api.github.com nor a GitHub Enterprise Server URL ending in /api/v3. Set MAINLINE_GITHUB_HOST to the host name repositories carry (for example github.com).`,
  );
}

/** Looks like a file path (so an error may show it); a mangled key never does. */
const KEY_PATH = /^[/.][^\s]{0,1000}$|^[^\s]{1,1000}\.pem$/;

/**
 * The App's private key as PKCS#8 PEM: `value` is the PEM text itself (line breaks may be written
 * as `\n`) or the path of a PEM file. Errors never show the key.
 */
function githubPrivateKey(raw: string): string {
  const value = raw.trim();
  let pem: string;
  if (value.startsWith("-----BEGIN")) {
    pem = value.replace(/\\n/g, "\n");
  } else {
    const shown = KEY_PATH.test(value) ? ` ${value}` : "";
    if (!KEY_PATH.test(value) && (value.length > 1000 || /\s/.test(value))) {
      throw new ConfigError(
        "MAINLINE_GITHUB_PRIVATE_KEY is neither PEM text (it must begin with -----BEGIN) nor the path of a PEM file.",
      );
    }
    try {
      pem = readFileSync(value, "utf8");
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? "unreadable";
      throw new ConfigError(
        `MAINLINE_GITHUB_PRIVATE_KEY names a file that cannot be read (${code}):${shown || " the value is neither PEM text nor a readable path"}.`,
      );
    }
  }
  try {
    const key = createPrivateKey(pem);
    if (key.asymmetricKeyType !== "rsa") {
      throw new Error(`it is a ${key.asymmetricKeyType ?? "non-RSA"} key, and GitHub Apps use RSA`);
    }
    return key.export({ type: "pkcs8", format: "pem" }).toString();
  } catch (error) {
    // OpenSSL's reasons name the decoder that failed, never the key's bytes.
    const reason = (error as Error).message.split("\n")[0] ?? "unreadable";
    throw new ConfigError(
      `MAINLINE_GITHUB_PRIVATE_KEY is not a usable private key (${reason}): use the .pem file GitHub generates on the App's settings page.`,
    );
  }
}
