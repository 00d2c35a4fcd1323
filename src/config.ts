import path from "node:path";
import { MIN_SUPPLIED_TOKEN_LENGTH } from "./lib/tokens.js";
import { ORG_SLUG_PATTERN } from "./organizations/slug.js";
import { DEFAULT_SESSION_LIFETIMES, type SessionLifetimes } from "./organizations/sessions.js";
import { HOUR_MS, MINUTE_MS } from "./lib/time.js";

/** Everything `mainline serve` reads from its environment (README "Configuration"). */
export interface ServiceConfig {
  host: string;
  port: number;
  /** Undefined: the SQLite file `mainline.db` in the data directory. */
  databaseUrl: string | undefined;
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
  bootstrap: { organization: string; token: string } | undefined;
  /** How long a dashboard session lasts idle, and at most (ADR 0023). */
  sessionLifetimes: SessionLifetimes;
}

export class ConfigError extends Error {}

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed ? trimmed : undefined;
}

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
  const retentionText = nonEmpty(env.MAINLINE_RETENTION_DAYS) ?? "90";
  const retentionDays = Number(retentionText);
  if (!/^\d+$/.test(retentionText) || retentionDays < 8 || retentionDays > 36500) {
    throw new ConfigError(
      `MAINLINE_RETENTION_DAYS must be a whole number of days from 8 to 36500 (got "${retentionText}"); the API's windows need 7 days of runs.`,
    );
  }
  const bundleText = nonEmpty(env.MAINLINE_MAX_BUNDLE_MB) ?? "1024";
  const bundleMb = Number(bundleText);
  if (!/^\d+$/.test(bundleText) || bundleMb < 1) {
    throw new ConfigError(
      `MAINLINE_MAX_BUNDLE_MB must be a whole number of megabytes, at least 1 (got "${bundleText}").`,
    );
  }
  const parallelText = nonEmpty(env.MAINLINE_CI_PARALLELISM) ?? "2";
  const ciParallelism = Number(parallelText);
  if (!/^\d+$/.test(parallelText) || ciParallelism < 1 || ciParallelism > 256) {
    throw new ConfigError(
      `MAINLINE_CI_PARALLELISM must be a whole number of checks from 1 to 256 (got "${parallelText}").`,
    );
  }
  const leaseText = nonEmpty(env.MAINLINE_INGEST_LEASE_SECONDS) ?? "30";
  const leaseSeconds = Number(leaseText);
  if (!/^\d+$/.test(leaseText) || leaseSeconds < 1 || leaseSeconds > 3600) {
    throw new ConfigError(
      `MAINLINE_INGEST_LEASE_SECONDS must be a whole number of seconds from 1 to 3600 (got "${leaseText}").`,
    );
  }
  return {
    host,
    port,
    sessionLifetimes: sessionLifetimesFrom(env),
    databaseUrl: nonEmpty(env.DATABASE_URL),
    dataDir: dataDirFrom(env),
    publicUrl,
    explicitPublicUrl: nonEmpty(env.MAINLINE_PUBLIC_URL) === undefined ? undefined : publicUrl,
    logLevel,
    retentionDays,
    maxBundleBytes: bundleMb * 1024 * 1024,
    ciParallelism,
    ingestLeaseMs: leaseSeconds * 1000,
    bootstrap:
      bootstrapOrg && bootstrapToken
        ? { organization: bootstrapOrg, token: bootstrapToken }
        : undefined,
  };
}

/**
 * `MAINLINE_SESSION_IDLE_MINUTES` (default 1440: a day) and `MAINLINE_SESSION_MAX_HOURS`
 * (default 168: a week): when a dashboard session ends unused, and at the latest.
 */
export function sessionLifetimesFrom(env: NodeJS.ProcessEnv): SessionLifetimes {
  const idleText = nonEmpty(env.MAINLINE_SESSION_IDLE_MINUTES);
  const maxText = nonEmpty(env.MAINLINE_SESSION_MAX_HOURS);
  const idleMinutes = idleText === undefined ? undefined : Number(idleText);
  const maxHours = maxText === undefined ? undefined : Number(maxText);
  if (
    idleText !== undefined &&
    (!/^\d+$/.test(idleText) || !idleMinutes || idleMinutes > 525_600)
  ) {
    throw new ConfigError(
      `MAINLINE_SESSION_IDLE_MINUTES must be a whole number of minutes from 1 to 525600 (got "${idleText}").`,
    );
  }
  if (maxText !== undefined && (!/^\d+$/.test(maxText) || !maxHours || maxHours > 8760)) {
    throw new ConfigError(
      `MAINLINE_SESSION_MAX_HOURS must be a whole number of hours from 1 to 8760 (got "${maxText}").`,
    );
  }
  return {
    idleMs: idleMinutes === undefined ? DEFAULT_SESSION_LIFETIMES.idleMs : idleMinutes * MINUTE_MS,
    absoluteMs: maxHours === undefined ? DEFAULT_SESSION_LIFETIMES.absoluteMs : maxHours * HOUR_MS,
  };
}
