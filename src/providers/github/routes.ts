/**
 * The GitHub App's operations for an organization's token (`/v1/github/*`): link an
 * installation of the App to the organization (with proof of control of the GitHub account),
 * unlink it, list the organization's installations. On a server without the App they answer
 * `host_not_connected` (409), so that the API is the same everywhere.
 */
import { Type } from "typebox";
import { principalOf } from "../../api/plugins/auth.js";
import { COMMON_ERRORS, EmptyObject, PATTERN_MESSAGES, errorResponses } from "../../api/schemas.js";
import type { ApiApp } from "../../api/types.js";
import { isoTime } from "../../lib/clock.js";
import { ApiError } from "../../lib/errors.js";
import type { GitHubInstallations, InstallationView } from "./installations.js";

const InstallationId = Type.Integer({
  minimum: 1,
  maximum: Number.MAX_SAFE_INTEGER,
  description:
    "The installation's id: the number at the end of its settings page's URL (`…/settings/installations/12345678`), or `mainline github installations`.",
  examples: [12345678],
});

/** What GitHub's tokens are made of (and what an HTTP header can carry). */
const TOKEN_PATTERN = "^[\\x21-\\x7e]+$";
PATTERN_MESSAGES.set(TOKEN_PATTERN, "must be a GitHub token: visible ASCII characters, no spaces");

const Time = Type.Union([Type.String({ format: "date-time" }), Type.Null()]);

const Installation = Type.Object({
  installationId: Type.Integer(),
  account: Type.Object({
    login: Type.String({ description: "The GitHub account the App is installed on." }),
    type: Type.String({ description: "`User`, `Organization` or `Enterprise`." }),
  }),
  repositorySelection: Type.String({ description: "`all` of the account's, or `selected` ones." }),
  suspendedAt: Time,
  uninstalledAt: Time,
  linkedAt: Time,
  repositories: Type.Array(
    Type.Object({
      host: Type.String(),
      owner: Type.String(),
      name: Type.String(),
      removedAt: Type.Union([Type.String({ format: "date-time" }), Type.Null()], {
        description: "When the installation stopped granting it; its data is kept.",
      }),
    }),
    { description: "The repositories it grants: the organization's repositories on GitHub." },
  ),
});

export function presentInstallation(view: InstallationView, host: string) {
  const { installation } = view;
  const time = (ms: number | null) => (ms === null ? null : isoTime(ms));
  return {
    installationId: installation.id,
    account: { login: installation.accountLogin, type: installation.accountType },
    repositorySelection: installation.repositorySelection,
    suspendedAt: time(installation.suspendedAt),
    uninstalledAt: time(installation.deletedAt),
    linkedAt: time(installation.linkedAt),
    repositories: view.repositories.map((repo) => ({
      host,
      owner: repo.owner,
      name: repo.name,
      removedAt: time(repo.removedAt),
    })),
  };
}

/** The GitHub App's side of this server, when it has one. */
export interface GitHubRoutesService {
  installations: Pick<GitHubInstallations, "link" | "unlink" | "listForOrganization">;
  host: string;
}

function notConfigured(): ApiError {
  return new ApiError(
    "host_not_connected",
    "This server has no GitHub App: its operator sets MAINLINE_GITHUB_APP_ID, MAINLINE_GITHUB_PRIVATE_KEY and MAINLINE_GITHUB_WEBHOOK_SECRET (docs/github.md).",
  );
}

export function registerGitHubRoutes(scope: ApiApp, github: GitHubRoutesService | undefined): void {
  const service = () => {
    if (!github) throw notConfigured();
    return github;
  };

  scope.post(
    "/v1/github/linkInstallation",
    {
      schema: {
        tags: ["GitHub"],
        summary: "Link a GitHub App installation to the organization",
        description:
          "Makes the repositories the installation grants this organization's repositories (host `github.com`, or the GitHub Enterprise Server's host). Proof of control: `githubToken` is a GitHub token of a person who controls the account the App is installed on (the account itself for a user account; an active owner for an organization: a classic token needs `read:org`). It is used for that check only, never stored or logged. 404: the App has no such installation; 403: the token does not prove control; 409 `installation_linked_elsewhere`: another organization has it (it never moves until unlinked there). Linking again is harmless.",
        body: Type.Object({
          installationId: InstallationId,
          githubToken: Type.String({
            minLength: 1,
            maxLength: 1000,
            pattern: TOKEN_PATTERN,
            description:
              "A GitHub token of an owner of the installation's account (`gh auth token` gives yours): visible ASCII characters.",
          }),
        }),
        response: {
          200: Type.Object({ installation: Installation }),
          ...errorResponses(...COMMON_ERRORS, 403, 404, 409),
        },
      },
    },
    async (request) => {
      const { installations, host } = service();
      const view = await installations.link(
        principalOf(request),
        request.body.installationId,
        request.body.githubToken,
      );
      return { installation: presentInstallation(view, host) };
    },
  );

  scope.post(
    "/v1/github/unlinkInstallation",
    {
      schema: {
        tags: ["GitHub"],
        summary: "Unlink a GitHub App installation from the organization",
        description:
          "Its repositories stop being usable by the merge queue (a clear error says why); their queues and data are kept and come back if the installation is linked again. 404 unless it is linked to this organization.",
        body: Type.Object({ installationId: InstallationId }),
        response: { 200: EmptyObject, ...errorResponses(...COMMON_ERRORS, 404, 409) },
      },
    },
    async (request) => {
      await service().installations.unlink(
        principalOf(request).organizationId,
        request.body.installationId,
      );
      return {};
    },
  );

  scope.post(
    "/v1/github/listInstallations",
    {
      schema: {
        tags: ["GitHub"],
        summary: "The organization's GitHub App installations",
        description:
          "The installations linked to this organization, with the repositories each grants (removed ones too, with when).",
        body: Type.Object({}),
        response: {
          200: Type.Object({ installations: Type.Array(Installation) }),
          ...errorResponses(...COMMON_ERRORS, 409),
        },
      },
    },
    async (request) => {
      const { installations, host } = service();
      const views = await installations.listForOrganization(principalOf(request).organizationId);
      return { installations: views.map((view) => presentInstallation(view, host)) };
    },
  );
}
