/**
 * "Sign in with GitHub": the App's user authorization web flow. The code GitHub sends back becomes
 * a user token, which tells who the user is and which of the App's installations they reach; those
 * linked to an organization are the organizations they may enter. The user token is used for these
 * calls only: never stored, never logged.
 */
import type { GitHubInstallationRecords } from "../../organizations/github-installations.js";
import type { OrganizationRecords } from "../../organizations/records.js";

const REQUEST_TIMEOUT_MS = 15_000;
/** Pages of `/user/installations` read at most (100 each): far beyond any real user. */
const MAX_PAGES = 10;

/** An organization a GitHub user may enter, and the installation that gives it. */
export interface GitHubSignInChoice {
  organizationId: string;
  organizationSlug: string;
  installationId: number;
  /** The GitHub account the installation is on. */
  accountLogin: string;
}

export interface GitHubSignInResult {
  user: { id: number; login: string };
  choices: GitHubSignInChoice[];
}

/** Why a callback could not be turned into a user: said to the browser, never with a secret. */
export class GitHubSignInError extends Error {
  constructor(
    readonly reason: "bad_code" | "github_unavailable",
    message: string,
  ) {
    super(message);
  }
}

export interface GitHubSignInSettings {
  clientId: string;
  clientSecret: string;
  apiUrl: string;
  /** GitHub's web address (the authorize and token endpoints). */
  webUrl: string;
  userAgent: string;
}

export class GitHubSignIn {
  constructor(
    private readonly deps: {
      settings: GitHubSignInSettings;
      installations: Pick<GitHubInstallationRecords, "find">;
      organizations: Pick<OrganizationRecords, "findById">;
      fetch?: typeof fetch;
    },
  ) {}

  /** GitHub's authorize page for this App, coming back to `redirectUri` with `state`. */
  authorizeUrl(redirectUri: string, state: string): string {
    const url = new URL(`${this.deps.settings.webUrl}/login/oauth/authorize`);
    url.searchParams.set("client_id", this.deps.settings.clientId);
    url.searchParams.set("redirect_uri", redirectUri);
    url.searchParams.set("state", state);
    return url.toString();
  }

  /** The user a callback's code names, and the organizations they may enter. */
  async complete(code: string, redirectUri: string): Promise<GitHubSignInResult> {
    const userToken = await this.exchange(code, redirectUri);
    const user = await this.api<{ id?: unknown; login?: unknown }>(userToken, "/user");
    if (typeof user.id !== "number" || typeof user.login !== "string") {
      throw new GitHubSignInError(
        "github_unavailable",
        "GitHub's answer for the user was not understood.",
      );
    }
    const installationIds: { id: number; account: string }[] = [];
    for (let page = 1; page <= MAX_PAGES; page++) {
      const answer = await this.api<{ installations?: unknown }>(
        userToken,
        `/user/installations?per_page=100&page=${page}`,
      );
      const list = Array.isArray(answer.installations) ? answer.installations : [];
      for (const item of list as { id?: unknown; account?: { login?: unknown } | null }[]) {
        if (typeof item.id === "number") {
          const account = typeof item.account?.login === "string" ? item.account.login : "";
          installationIds.push({ id: item.id, account });
        }
      }
      if (list.length < 100) break;
    }
    const choices: GitHubSignInChoice[] = [];
    for (const { id, account } of installationIds) {
      const installation = await this.deps.installations.find(id);
      if (!installation?.organizationId || installation.deletedAt !== null) continue;
      const organization = await this.deps.organizations.findById(installation.organizationId);
      if (!organization) continue;
      if (choices.some((c) => c.organizationId === organization.id)) continue;
      choices.push({
        organizationId: organization.id,
        organizationSlug: organization.slug,
        installationId: id,
        accountLogin: installation.accountLogin || account,
      });
    }
    choices.sort((a, b) => a.organizationSlug.localeCompare(b.organizationSlug));
    return { user: { id: user.id, login: user.login }, choices };
  }

  private get fetch(): typeof fetch {
    return this.deps.fetch ?? fetch;
  }

  /** The code for a user token (GitHub answers its errors as 200s with `error`). */
  private async exchange(code: string, redirectUri: string): Promise<string> {
    const { settings } = this.deps;
    let body: { access_token?: unknown; error?: unknown };
    try {
      const response = await this.fetch(`${settings.webUrl}/login/oauth/access_token`, {
        method: "POST",
        headers: {
          accept: "application/json",
          "content-type": "application/json",
          "user-agent": settings.userAgent,
        },
        body: JSON.stringify({
          client_id: settings.clientId,
          client_secret: settings.clientSecret,
          code,
          redirect_uri: redirectUri,
        }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      body = (await response.json()) as typeof body;
    } catch (error) {
      throw new GitHubSignInError(
        "github_unavailable",
        `GitHub could not be reached to finish the sign-in (${error instanceof Error ? error.name : "error"}).`,
      );
    }
    if (typeof body.access_token === "string" && body.access_token !== "") return body.access_token;
    if (body.error === "incorrect_client_credentials") {
      throw new GitHubSignInError(
        "github_unavailable",
        "GitHub refused this server's client id or secret (MAINLINE_GITHUB_CLIENT_ID, MAINLINE_GITHUB_CLIENT_SECRET).",
      );
    }
    throw new GitHubSignInError(
      "bad_code",
      "GitHub did not accept the sign-in code: it was used already or has expired.",
    );
  }

  private async api<T>(userToken: string, path: string): Promise<T> {
    const { settings } = this.deps;
    let response: Response;
    try {
      response = await this.fetch(`${settings.apiUrl}${path}`, {
        headers: {
          accept: "application/vnd.github+json",
          authorization: `Bearer ${userToken}`,
          "user-agent": settings.userAgent,
          "x-github-api-version": "2022-11-28",
        },
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      throw new GitHubSignInError(
        "github_unavailable",
        `GitHub could not be reached to finish the sign-in (${error instanceof Error ? error.name : "error"}).`,
      );
    }
    if (!response.ok) {
      throw new GitHubSignInError(
        "github_unavailable",
        `GitHub answered ${response.status} to ${path.split("?")[0] ?? path}.`,
      );
    }
    return (await response.json()) as T;
  }
}
