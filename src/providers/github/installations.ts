/**
 * The App's installations: read from GitHub, kept in step in storage, and linked to organizations.
 * A linked installation's repositories are its organization's; an organization's token links one
 * only with proof that its caller controls the GitHub account (`proof.ts`); the operator links from
 * the command line.
 */
import { ApiError } from "../../lib/errors.js";
import type { Clock } from "../../lib/clock.js";
import { MINUTE_MS } from "../../lib/time.js";
import type {
  GitHubInstallationFacts,
  GitHubInstallationRecord,
  GitHubInstallationRecords,
  GitHubRepositoryFacts,
  GitHubRepositoryRecord,
  RepositorySyncOutcome,
} from "../../organizations/github-installations.js";
import type { OrganizationRecords } from "../../organizations/records.js";
import type { Principal } from "../../organizations/service.js";
import type { DeliveryRecords } from "../../mergequeue/webhook-delivery-records.js";
import { paginate, type GitHubApp, type GitHubLogger } from "./client.js";
import { statusOf } from "./conditional.js";
import { proveControl } from "./proof.js";

export const GITHUB_SOURCE = "github";

/** An installation as GitHub's API and webhooks describe it (the fields read here). */
export interface GitHubInstallationPayload {
  id: number;
  account?: { id?: number; login?: string; slug?: string; type?: string } | null;
  target_type?: string;
  repository_selection?: string;
  suspended_at?: string | null;
}

/** Pure: the facts kept of an installation. */
export function installationFacts(payload: GitHubInstallationPayload): GitHubInstallationFacts {
  const account = payload.account ?? {};
  const suspended = payload.suspended_at ? Date.parse(payload.suspended_at) : NaN;
  return {
    id: payload.id,
    accountId: account.id ?? 0,
    accountLogin: account.login ?? account.slug ?? "",
    accountType: payload.target_type ?? account.type ?? "Enterprise",
    repositorySelection: payload.repository_selection ?? "selected",
    suspendedAt: Number.isFinite(suspended) ? suspended : null,
  };
}

/** Pure: a repository of `GET /installation/repositories`. */
export function repositoryFacts(repo: {
  id: number;
  name: string;
  full_name?: string;
  owner?: { login?: string } | null;
}): GitHubRepositoryFacts {
  const owner = repo.owner?.login ?? repo.full_name?.split("/")[0] ?? "";
  return { githubId: repo.id, owner, name: repo.name };
}

/** An installation with its repositories, as the API and the CLI show it. */
export interface InstallationView {
  installation: GitHubInstallationRecord;
  /** The slug of the organization it is linked to. */
  organizationSlug: string | null;
  repositories: GitHubRepositoryRecord[];
}

export interface GitHubInstallationsDeps {
  app: GitHubApp;
  store: GitHubInstallationRecords;
  deliveries: Pick<DeliveryRecords, "unpark">;
  organizations: Pick<OrganizationRecords, "findById" | "findBySlug">;
  /** The host name the App's repositories carry (`github.com`, a GHES host). */
  host: string;
  clock: Clock;
  logger: GitHubLogger;
  /** Deliveries waiting for this installation's link are ready (wake the worker). */
  linked?: (installationId: number) => void;
}

export class GitHubInstallations {
  constructor(private readonly deps: GitHubInstallationsDeps) {}

  /** What GitHub says of an installation now (the App's JWT); undefined when it has none. */
  async fetch(installationId: number): Promise<GitHubInstallationFacts | undefined> {
    try {
      const { data } = await this.deps.app.app.request("GET /app/installations/{installation_id}", {
        installation_id: installationId,
      });
      return installationFacts(data as GitHubInstallationPayload);
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw error;
    }
  }

  /**
   * Reads an installation again from GitHub and stores what it says: gone → marked deleted (its
   * repositories removed, their data kept); otherwise its facts, then its repositories (not
   * while suspended: GitHub gives a suspended installation no token). Undefined when gone.
   */
  async sync(installationId: number): Promise<GitHubInstallationRecord | undefined> {
    const { store, clock } = this.deps;
    const facts = await this.fetch(installationId);
    if (!facts) {
      if (await store.find(installationId)) {
        await store.markDeleted(installationId, clock.now());
        this.deps.app.forget(installationId);
        this.deps.logger.info({ installation: installationId }, "github: installation removed");
      }
      return undefined;
    }
    const installation = await store.upsert(facts, clock.now());
    if (installation.suspendedAt === null) await this.syncRepositories(installation.id);
    else this.deps.app.forget(installationId);
    return (await store.find(installationId)) ?? installation;
  }

  /** Makes the stored repositories of an installation those GitHub lists for it. */
  async syncRepositories(installationId: number): Promise<RepositorySyncOutcome> {
    const client = this.deps.app.installation(installationId);
    const listed = await paginate(client, "GET /installation/repositories", {}, (data) =>
      (data as { repositories: Parameters<typeof repositoryFacts>[0][] }).repositories.map(
        repositoryFacts,
      ),
    );
    const outcome = await this.deps.store.syncRepositories(
      installationId,
      listed,
      this.deps.host,
      this.deps.clock.now(),
    );
    if (outcome.added.length + outcome.renamed.length + outcome.removed.length > 0) {
      this.deps.logger.info(
        {
          installation: installationId,
          added: outcome.added.map((r) => `${r.owner}/${r.name}`),
          renamed: outcome.renamed.map(
            (r) => `${r.from.owner}/${r.from.name} → ${r.to.owner}/${r.to.name}`,
          ),
          removed: outcome.removed.map((r) => `${r.owner}/${r.name}`),
        },
        "github: installation repositories changed",
      );
    }
    return outcome;
  }

  /**
   * Every installation of the App, read again: new ones stored (unlinked), gone ones marked
   * deleted, each one's repositories synced unless another process did so within `freshMs`.
   */
  async syncAll(freshMs = 10 * MINUTE_MS): Promise<void> {
    const { app, store, clock, logger } = this.deps;
    const listed = await paginate(app.app, "GET /app/installations", {}, (data) =>
      (data as GitHubInstallationPayload[]).map(installationFacts),
    );
    const ids = new Set(listed.map((facts) => facts.id));
    for (const known of await store.list()) {
      if (!ids.has(known.id) && known.deletedAt === null) {
        await store.markDeleted(known.id, clock.now());
        app.forget(known.id);
      }
    }
    for (const facts of listed) {
      const installation = await store.upsert(facts, clock.now());
      if (installation.suspendedAt !== null) continue;
      if (installation.syncedAt !== null && clock.now() - installation.syncedAt < freshMs) continue;
      try {
        await this.syncRepositories(installation.id);
      } catch (error) {
        // One installation's trouble (a token refused) does not stop the others'.
        logger.warn(
          { installation: installation.id, status: statusOf(error), err: error },
          "github: could not read an installation's repositories",
        );
      }
    }
  }

  /**
   * Links an installation to the caller's organization, with proof that the caller controls the
   * GitHub account it is installed on (`githubToken`: used for that check only). 404 when the
   * App has no such installation; 403 without proof; 409 when another organization has it.
   */
  async link(
    principal: Principal,
    installationId: number,
    githubToken: string,
  ): Promise<InstallationView> {
    const facts = await this.require(installationId);
    await proveControl(this.deps.app.user(githubToken), {
      id: facts.accountId,
      login: facts.accountLogin,
      type: facts.accountType,
    });
    return this.linkTo(facts, principal.organizationId);
  }

  /** The operator's link (`mainline github link`): no proof asked, never moves a linked one. */
  async linkAsOperator(
    installationId: number,
    organizationSlug: string,
  ): Promise<InstallationView> {
    const organization = await this.deps.organizations.findBySlug(organizationSlug);
    if (!organization) {
      throw new ApiError("not_found", `No organization "${organizationSlug}".`);
    }
    return this.linkTo(await this.require(installationId), organization.id);
  }

  /** Unlinks an installation from the caller's organization (404 unless linked to it). */
  async unlink(organizationId: string, installationId: number): Promise<void> {
    const unlinked = await this.deps.store.unlink(
      installationId,
      organizationId,
      this.deps.clock.now(),
    );
    if (!unlinked) throw notLinkedHere(installationId);
    this.deps.logger.info({ installation: installationId }, "github: installation unlinked");
  }

  /** The operator's unlink: from whichever organization has it. */
  async unlinkAsOperator(installationId: number): Promise<string> {
    const installation = await this.deps.store.find(installationId);
    if (!installation?.organizationId) {
      throw new ApiError(
        "not_found",
        `Installation ${installationId} is not linked to any organization.`,
      );
    }
    await this.unlink(installation.organizationId, installationId);
    const organization = await this.deps.organizations.findById(installation.organizationId);
    return organization?.slug ?? installation.organizationId;
  }

  /** The installations linked to an organization, with their repositories. */
  async listForOrganization(organizationId: string): Promise<InstallationView[]> {
    const installations = await this.deps.store.listForOrganization(organizationId);
    return Promise.all(installations.map((installation) => this.view(installation)));
  }

  /** Every stored installation (the operator's view). */
  async listAll(): Promise<InstallationView[]> {
    return Promise.all(
      (await this.deps.store.list()).map((installation) => this.view(installation)),
    );
  }

  private async view(installation: GitHubInstallationRecord): Promise<InstallationView> {
    const organization =
      installation.organizationId === null
        ? undefined
        : await this.deps.organizations.findById(installation.organizationId);
    return {
      installation,
      organizationSlug: organization?.slug ?? null,
      repositories: await this.deps.store.repositories(installation.id),
    };
  }

  private async require(installationId: number): Promise<GitHubInstallationFacts> {
    let facts: GitHubInstallationFacts | undefined;
    try {
      facts = await this.fetch(installationId);
    } catch (error) {
      this.deps.logger.warn(
        { installation: installationId, status: statusOf(error), err: error },
        "github: could not read an installation",
      );
      throw new ApiError(
        "unavailable",
        "GitHub did not answer with the installation; nothing was linked. Retry in a moment.",
      );
    }
    if (!facts) {
      throw new ApiError(
        "not_found",
        `This server's GitHub App has no installation ${installationId}: install the App on the account first (its id is in the installation's settings URL).`,
      );
    }
    return facts;
  }

  private async linkTo(
    facts: GitHubInstallationFacts,
    organizationId: string,
  ): Promise<InstallationView> {
    const { store, clock, logger } = this.deps;
    const elsewhere = new ApiError(
      "installation_linked_elsewhere",
      `Installation ${facts.id} (on ${facts.accountLogin}) is linked to another Mainline organization; it is unlinked there first (by that organization or the operator). Nothing was changed.`,
    );
    const stored = await store.find(facts.id);
    if (stored?.organizationId != null && stored.organizationId !== organizationId) throw elsewhere;
    await store.upsert(facts, clock.now());
    // The compare-and-set decides when two organizations link it at once.
    const outcome = await store.link(facts.id, organizationId, clock.now());
    if (outcome.outcome === "elsewhere") throw elsewhere;
    if (outcome.outcome === "linked") {
      logger.info(
        { installation: facts.id, organization: organizationId },
        "github: installation linked",
      );
    }
    if (facts.suspendedAt === null) {
      try {
        await this.syncRepositories(facts.id);
      } catch (error) {
        // Linked all the same: the next sync (a webhook, the periodic one) brings them.
        logger.warn(
          { installation: facts.id, status: statusOf(error), err: error },
          "github: linked, but its repositories could not be read yet",
        );
      }
    }
    if ((await this.deps.deliveries.unpark(GITHUB_SOURCE, facts.id, clock.now())) > 0) {
      this.deps.linked?.(facts.id);
    }
    const installation = await store.find(facts.id);
    if (!installation) throw new Error(`installation ${facts.id} vanished`);
    return this.view(installation);
  }
}

function notLinkedHere(installationId: number): ApiError {
  return new ApiError(
    "not_found",
    `Installation ${installationId} is not linked to this organization.`,
  );
}
