import { ConfigError, nonEmpty, optionalWholeNumber } from "./config-values.js";

/** The GitLab instance this server's organizations connect to (MAINLINE_GITLAB_*). */
export interface GitLabConfig {
  /** The instance's address, without a trailing slash (`https://gitlab.example.com`). */
  url: string;
  /** The host name its repositories carry in `repo.host` (the URL's host, or MAINLINE_GITLAB_HOST). */
  host: string;
  /** The prefix of the test branches CI tests (MAINLINE_GITLAB_TEST_BRANCH_PREFIX, `trunk-merge/`). */
  testBranchPrefix?: string | undefined;
  /** How often the queue reads its test pipelines again (MAINLINE_GITLAB_CI_POLL_SECONDS, 15). */
  ciPollIntervalMs?: number | undefined;
  /** Between reconcile passes (MAINLINE_GITLAB_RECONCILE_SECONDS, 60; 0: off). */
  reconcileIntervalMs?: number | undefined;
  /** The client's retries wait this, 4× and 9× it (MAINLINE_GITLAB_RETRY_BASE_MS, 1,000). */
  retryBaseMs?: number | undefined;
  /**
   * The OAuth application organizations may connect through instead of pasting a token
   * (MAINLINE_GITLAB_OAUTH_CLIENT_ID and MAINLINE_GITLAB_OAUTH_CLIENT_SECRET, both or neither).
   */
  oauth?: { clientId: string; clientSecret: string } | undefined;
}

const HOST = /^[a-z0-9.-]{1,253}(:\d{1,5})?$/;
const BRANCH_PREFIX = /^[A-Za-z0-9][A-Za-z0-9._-]{0,60}(\/[A-Za-z0-9][A-Za-z0-9._-]{0,60}){0,3}\/$/;

/**
 * The GitLab instance's configuration, or undefined when MAINLINE_GITLAB_URL is not set (then
 * GitLab repositories answer `host_not_connected`). Another MAINLINE_GITLAB_* setting without it,
 * or a value that does not parse, is an error.
 */
export function loadGitLabConfig(env: NodeJS.ProcessEnv): GitLabConfig | undefined {
  const raw = nonEmpty(env.MAINLINE_GITLAB_URL);
  if (raw === undefined) {
    const stray = Object.keys(env).filter(
      (name) => name.startsWith("MAINLINE_GITLAB_") && nonEmpty(env[name]) !== undefined,
    );
    if (stray.length > 0) {
      throw new ConfigError(
        `${stray.join(", ")} ${stray.length === 1 ? "is" : "are"} set but MAINLINE_GITLAB_URL is not: set it to the GitLab instance's address, such as https://gitlab.com or https://gitlab.example.com (docs/gitlab.md).`,
      );
    }
    return undefined;
  }
  const url = instanceUrl(raw);
  const explicitHost = nonEmpty(env.MAINLINE_GITLAB_HOST)?.toLowerCase();
  if (explicitHost !== undefined && !HOST.test(explicitHost)) {
    throw new ConfigError(
      `MAINLINE_GITLAB_HOST must be a host name such as gitlab.example.com (got "${explicitHost.slice(0, 80)}").`,
    );
  }
  const testBranchPrefix = nonEmpty(env.MAINLINE_GITLAB_TEST_BRANCH_PREFIX);
  if (
    testBranchPrefix !== undefined &&
    (!BRANCH_PREFIX.test(testBranchPrefix) || testBranchPrefix.includes(".."))
  ) {
    throw new ConfigError(
      `MAINLINE_GITLAB_TEST_BRANCH_PREFIX must be a branch name prefix ending with "/", such as trunk-merge/ (letters, digits, ".", "_", "-") (got "${testBranchPrefix.slice(0, 80)}").`,
    );
  }
  const pollSeconds = optionalWholeNumber(env, "MAINLINE_GITLAB_CI_POLL_SECONDS", {
    min: 1,
    max: 3600,
    unit: "seconds",
  });
  const reconcileSeconds = optionalWholeNumber(env, "MAINLINE_GITLAB_RECONCILE_SECONDS", {
    min: 0,
    max: 86_400,
    unit: "seconds",
  });
  const retryBaseMs = optionalWholeNumber(env, "MAINLINE_GITLAB_RETRY_BASE_MS", {
    min: 0,
    max: 60_000,
    unit: "milliseconds",
  });
  const oauth = oauthApplication(env);
  return {
    url,
    ...(oauth === undefined ? {} : { oauth }),
    host: explicitHost ?? new URL(url).host.toLowerCase(),
    ...(testBranchPrefix === undefined ? {} : { testBranchPrefix }),
    ...(pollSeconds === undefined ? {} : { ciPollIntervalMs: pollSeconds * 1000 }),
    ...(reconcileSeconds === undefined ? {} : { reconcileIntervalMs: reconcileSeconds * 1000 }),
    ...(retryBaseMs === undefined ? {} : { retryBaseMs }),
  };
}

const CLIENT_VALUE = /^[\x21-\x7e]{1,255}$/;

function oauthApplication(env: NodeJS.ProcessEnv): GitLabConfig["oauth"] {
  const clientId = nonEmpty(env.MAINLINE_GITLAB_OAUTH_CLIENT_ID);
  const clientSecret = nonEmpty(env.MAINLINE_GITLAB_OAUTH_CLIENT_SECRET);
  if (clientId === undefined && clientSecret === undefined) return undefined;
  if (clientId === undefined || clientSecret === undefined) {
    throw new ConfigError(
      `${clientId === undefined ? "MAINLINE_GITLAB_OAUTH_CLIENT_SECRET" : "MAINLINE_GITLAB_OAUTH_CLIENT_ID"} is set without ${clientId === undefined ? "MAINLINE_GITLAB_OAUTH_CLIENT_ID" : "MAINLINE_GITLAB_OAUTH_CLIENT_SECRET"}: an OAuth application needs both, its Application ID and its Secret (docs/gitlab.md).`,
    );
  }
  if (!CLIENT_VALUE.test(clientId) || !CLIENT_VALUE.test(clientSecret)) {
    throw new ConfigError(
      "MAINLINE_GITLAB_OAUTH_CLIENT_ID and MAINLINE_GITLAB_OAUTH_CLIENT_SECRET must be the application's ID and secret as GitLab shows them: visible ASCII characters, no spaces.",
    );
  }
  return { clientId, clientSecret };
}

function instanceUrl(raw: string): string {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    parsed = new URL("invalid:");
  }
  if (
    (parsed.protocol !== "https:" && parsed.protocol !== "http:") ||
    parsed.username !== "" ||
    parsed.password !== "" ||
    parsed.search !== "" ||
    parsed.hash !== ""
  ) {
    throw new ConfigError(
      `MAINLINE_GITLAB_URL must be the GitLab instance's http(s) address, such as https://gitlab.example.com, without credentials (got "${raw.slice(0, 80)}").`,
    );
  }
  // An instance under a relative URL root (https://example.com/gitlab) keeps its path.
  return `${parsed.origin}${parsed.pathname.replace(/\/+$/, "").replace(/\/api\/v4$/, "")}`;
}
