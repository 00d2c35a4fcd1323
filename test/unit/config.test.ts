import path from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadServiceConfig } from "../../src/config.js";
import { describeDatabaseUrl, redactUrl } from "../../src/db/connection.js";

describe("service configuration", () => {
  it("has defaults for everything", () => {
    expect(loadServiceConfig({})).toEqual({
      host: "127.0.0.1",
      port: 8080,
      databaseUrl: undefined,
      databasePoolSize: 20,
      dataDir: path.resolve("mainline-data"),
      publicUrl: "http://127.0.0.1:8080",
      explicitPublicUrl: undefined,
      logLevel: "info",
      retentionDays: 90,
      maxBundleBytes: 1024 * 1024 * 1024,
      ciParallelism: 2,
      ingestLeaseMs: 30_000,
      queueLeaseMs: 30_000,
      bootstrap: undefined,
      sessionLifetimes: { idleMs: 24 * 3_600_000, absoluteMs: 7 * 24 * 3_600_000 },
      webhooks: {
        // Svix's schedule: immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h.
        schedule: [0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000],
        timeoutMs: 15_000,
        disableAfterMs: 5 * 24 * 3_600_000,
        allowPrivate: false,
        slackApiUrl: "https://slack.com/api",
      },
      tickets: {
        pollMs: 300_000,
        refreshMs: 900_000,
        timeoutMs: 15_000,
        linearApiUrl: "https://api.linear.app/graphql",
      },
    });
  });

  it("refuses a retention shorter than the API's 7-day windows, and a zero bundle limit", () => {
    expect(() => loadServiceConfig({ MAINLINE_RETENTION_DAYS: "7" })).toThrow(/8 to 36500/);
    expect(() => loadServiceConfig({ MAINLINE_RETENTION_DAYS: "ninety" })).toThrow(/whole number/);
    expect(() => loadServiceConfig({ MAINLINE_MAX_BUNDLE_MB: "0" })).toThrow(/at least 1/);
    expect(() => loadServiceConfig({ MAINLINE_CI_PARALLELISM: "0" })).toThrow(/1 to 256/);
    expect(() => loadServiceConfig({ MAINLINE_CI_PARALLELISM: "two" })).toThrow(/whole number/);
    expect(() => loadServiceConfig({ MAINLINE_INGEST_LEASE_SECONDS: "0" })).toThrow(/1 to 3600/);
    expect(() => loadServiceConfig({ MAINLINE_INGEST_LEASE_SECONDS: "1.5" })).toThrow(/whole/);
    expect(() => loadServiceConfig({ MAINLINE_QUEUE_LEASE_SECONDS: "3601" })).toThrow(
      'MAINLINE_QUEUE_LEASE_SECONDS must be a whole number of seconds from 1 to 3600 (got "3601").',
    );
    expect(() => loadServiceConfig({ MAINLINE_QUEUE_LEASE_SECONDS: "-5" })).toThrow(/whole/);
    expect(() => loadServiceConfig({ MAINLINE_SESSION_IDLE_MINUTES: "0" })).toThrow(/1 to 525600/);
    expect(() => loadServiceConfig({ MAINLINE_SESSION_MAX_HOURS: "a day" })).toThrow(/1 to 8760/);
    expect(() => loadServiceConfig({ MAINLINE_DATABASE_POOL_SIZE: "0" })).toThrow(/1 to 1000/);
    expect(() => loadServiceConfig({ MAINLINE_DATABASE_POOL_SIZE: "ten" })).toThrow(/whole/);
    expect(() => loadServiceConfig({ MAINLINE_TICKETS_POLL_MS: "10" })).toThrow(
      /MAINLINE_TICKETS_POLL_MS must be a whole number of milliseconds from 100 to 86400000/,
    );
    expect(() => loadServiceConfig({ MAINLINE_TICKETS_TIMEOUT_MS: "0" })).toThrow(/1 to 120000/);
    expect(() => loadServiceConfig({ MAINLINE_LINEAR_API_URL: "linear" })).toThrow(
      /MAINLINE_LINEAR_API_URL must be an absolute http\(s\) URL/,
    );
  });

  it("reads every variable", () => {
    const config = loadServiceConfig({
      HOST: "0.0.0.0",
      PORT: "9000",
      DATABASE_URL: "postgres://db/mainline",
      MAINLINE_DATABASE_POOL_SIZE: "40",
      MAINLINE_DATA_DIR: "/var/lib/mainline",
      MAINLINE_PUBLIC_URL: "https://mainline.example.com/",
      LOG_LEVEL: "DEBUG",
      MAINLINE_RETENTION_DAYS: "30",
      MAINLINE_MAX_BUNDLE_MB: "64",
      MAINLINE_CI_PARALLELISM: "8",
      MAINLINE_INGEST_LEASE_SECONDS: "5",
      MAINLINE_QUEUE_LEASE_SECONDS: "7",
      MAINLINE_SESSION_IDLE_MINUTES: "30",
      MAINLINE_SESSION_MAX_HOURS: "12",
      MAINLINE_BOOTSTRAP_ORG: "ci",
      MAINLINE_BOOTSTRAP_TOKEN: "t".repeat(32),
      MAINLINE_WEBHOOKS_RETRY_SCHEDULE: "0, 250ms,5s,2m,1h,1d",
      MAINLINE_WEBHOOKS_TIMEOUT_MS: "3000",
      MAINLINE_WEBHOOKS_DISABLE_AFTER: "12h",
      MAINLINE_WEBHOOKS_ALLOW_PRIVATE: "1",
      MAINLINE_SLACK_API_URL: "https://slack-proxy.example.com/api/",
      MAINLINE_TICKETS_POLL_MS: "250",
      MAINLINE_TICKETS_REFRESH_MS: "60000",
      MAINLINE_TICKETS_TIMEOUT_MS: "2000",
      MAINLINE_LINEAR_API_URL: "https://linear.example.com/graphql",
    });
    expect(config).toEqual({
      host: "0.0.0.0",
      port: 9000,
      databaseUrl: "postgres://db/mainline",
      databasePoolSize: 40,
      dataDir: "/var/lib/mainline",
      publicUrl: "https://mainline.example.com",
      explicitPublicUrl: "https://mainline.example.com",
      logLevel: "debug",
      retentionDays: 30,
      maxBundleBytes: 64 * 1024 * 1024,
      ciParallelism: 8,
      ingestLeaseMs: 5_000,
      queueLeaseMs: 7_000,
      bootstrap: { organization: "ci", token: "t".repeat(32) },
      sessionLifetimes: { idleMs: 30 * 60_000, absoluteMs: 12 * 3_600_000 },
      webhooks: {
        schedule: [0, 250, 5_000, 120_000, 3_600_000, 86_400_000],
        timeoutMs: 3_000,
        disableAfterMs: 12 * 3_600_000,
        allowPrivate: true,
        slackApiUrl: "https://slack-proxy.example.com/api",
      },
      tickets: {
        pollMs: 250,
        refreshMs: 60_000,
        timeoutMs: 2_000,
        linearApiUrl: "https://linear.example.com/graphql",
      },
    });
  });

  it("links to localhost when listening on all interfaces", () => {
    expect(loadServiceConfig({ HOST: "0.0.0.0", PORT: "81" }).publicUrl).toBe(
      "http://localhost:81",
    );
    expect(loadServiceConfig({ HOST: "::1" }).publicUrl).toBe("http://[::1]:8080");
  });

  it.each([
    [{ PORT: "http" }, /PORT/],
    [{ PORT: "70000" }, /PORT/],
    [{ PORT: "-1" }, /PORT/],
    [{ LOG_LEVEL: "loud" }, /LOG_LEVEL/],
    [{ MAINLINE_PUBLIC_URL: "not a url" }, /MAINLINE_PUBLIC_URL/],
    [{ MAINLINE_PUBLIC_URL: "ftp://x" }, /MAINLINE_PUBLIC_URL/],
    [{ MAINLINE_BOOTSTRAP_ORG: "ci" }, /MAINLINE_BOOTSTRAP_ORG and MAINLINE_BOOTSTRAP_TOKEN/],
    [
      { MAINLINE_BOOTSTRAP_TOKEN: "x".repeat(40) },
      /MAINLINE_BOOTSTRAP_ORG and MAINLINE_BOOTSTRAP_TOKEN/,
    ],
    [{ MAINLINE_BOOTSTRAP_ORG: "ci", MAINLINE_BOOTSTRAP_TOKEN: "x".repeat(31) }, /at least 32/],
    [
      { MAINLINE_BOOTSTRAP_ORG: "Not_A_Slug", MAINLINE_BOOTSTRAP_TOKEN: "x".repeat(40) },
      /MAINLINE_BOOTSTRAP_ORG must be/,
    ],
    [
      { MAINLINE_WEBHOOKS_RETRY_SCHEDULE: "0,5s,soon" },
      /MAINLINE_WEBHOOKS_RETRY_SCHEDULE has "soon"/,
    ],
    [{ MAINLINE_WEBHOOKS_RETRY_SCHEDULE: "0,5" }, /MAINLINE_WEBHOOKS_RETRY_SCHEDULE has "5"/],
    [{ MAINLINE_WEBHOOKS_RETRY_SCHEDULE: "0,8d" }, /at most 7d/],
    [{ MAINLINE_WEBHOOKS_RETRY_SCHEDULE: "0,-5s" }, /MAINLINE_WEBHOOKS_RETRY_SCHEDULE/],
    [{ MAINLINE_WEBHOOKS_RETRY_SCHEDULE: "0,,5s" }, /MAINLINE_WEBHOOKS_RETRY_SCHEDULE has ""/],
    [{ MAINLINE_WEBHOOKS_RETRY_SCHEDULE: Array(21).fill("1s").join(",") }, /1 to 20 durations/],
    [{ MAINLINE_WEBHOOKS_TIMEOUT_MS: "0" }, /MAINLINE_WEBHOOKS_TIMEOUT_MS .*1 to 120000/],
    [{ MAINLINE_WEBHOOKS_TIMEOUT_MS: "120001" }, /MAINLINE_WEBHOOKS_TIMEOUT_MS/],
    [{ MAINLINE_WEBHOOKS_TIMEOUT_MS: "15s" }, /MAINLINE_WEBHOOKS_TIMEOUT_MS .*whole number/],
    [{ MAINLINE_WEBHOOKS_DISABLE_AFTER: "forever" }, /MAINLINE_WEBHOOKS_DISABLE_AFTER must be/],
    [{ MAINLINE_WEBHOOKS_DISABLE_AFTER: "5" }, /MAINLINE_WEBHOOKS_DISABLE_AFTER must be/],
    [{ MAINLINE_WEBHOOKS_DISABLE_AFTER: "0" }, /MAINLINE_WEBHOOKS_DISABLE_AFTER .*1m to 365d/],
    [{ MAINLINE_WEBHOOKS_DISABLE_AFTER: "366d" }, /MAINLINE_WEBHOOKS_DISABLE_AFTER .*1m to 365d/],
    [{ MAINLINE_WEBHOOKS_ALLOW_PRIVATE: "yes" }, /MAINLINE_WEBHOOKS_ALLOW_PRIVATE must be 1/],
    [{ MAINLINE_WEBHOOKS_ALLOW_PRIVATE: "true" }, /MAINLINE_WEBHOOKS_ALLOW_PRIVATE must be 1/],
    [
      { MAINLINE_SLACK_API_URL: "slack.com/api" },
      /MAINLINE_SLACK_API_URL must be an http\(s\) URL/,
    ],
    [{ MAINLINE_SLACK_API_URL: "ftp://slack.com/api" }, /MAINLINE_SLACK_API_URL/],
  ])("refuses %j", (env, message) => {
    expect(() => loadServiceConfig(env)).toThrow(ConfigError);
    expect(() => loadServiceConfig(env)).toThrow(message);
  });
});

describe("DATABASE_URL", () => {
  it("selects the dialect and location", () => {
    expect(describeDatabaseUrl({ url: undefined, dataDir: "/d" })).toEqual({
      dialect: "sqlite",
      target: "/d/mainline.db",
    });
    expect(describeDatabaseUrl({ url: " ", dataDir: "/d" })).toEqual({
      dialect: "sqlite",
      target: "/d/mainline.db",
    });
    expect(describeDatabaseUrl({ url: "sqlite:/x/y.db", dataDir: "/d" })).toEqual({
      dialect: "sqlite",
      target: "/x/y.db",
    });
    expect(describeDatabaseUrl({ url: "sqlite::memory:", dataDir: "/d" })).toEqual({
      dialect: "sqlite",
      target: ":memory:",
    });
    expect(describeDatabaseUrl({ url: "postgresql://u@h/db", dataDir: "/d" })).toEqual({
      dialect: "postgres",
      target: "postgresql://u@h/db",
    });
  });

  it("refuses other schemes, without echoing credentials", () => {
    expect(() => describeDatabaseUrl({ url: "mysql://root:hunter2@h/db", dataDir: "/d" })).toThrow(
      /postgres:\/\/ or sqlite:/,
    );
    expect(() =>
      describeDatabaseUrl({ url: "mysql://root:hunter2@h/db", dataDir: "/d" }),
    ).not.toThrow(/hunter2/);
  });

  it("hides passwords in logged URLs", () => {
    expect(redactUrl("postgres://me:s3cret@db:5432/x")).toBe("postgres://me:***@db:5432/x");
  });
});
