/**
 * One stored delivery, handed to its handlers (registry.ts). The installation the signed payload
 * names decides the organization: the delivery reaches only the organization that installation
 * is linked to, and only repositories the installation grants to it.
 */
import type { GitHubInstallationRecords } from "../../../organizations/github-installations.js";
import type { RepositoryRecords } from "../../../mergequeue/records.js";
import type { ClaimedDelivery } from "../../../mergequeue/webhook-delivery-records.js";
import type { OwnedRepoRef } from "../../../organizations/repositories.js";
import type { GitHubApp } from "../client.js";
import type { GitHubInstallations } from "../installations.js";
import type { RawDelivery, WebhookHandlers } from "./registry.js";
import type { DispatchOutcome } from "../../webhook-inbox.js";

export interface DispatchDeps {
  handlers: WebhookHandlers;
  app: Pick<GitHubApp, "installation">;
  installations: Pick<GitHubInstallations, "sync" | "syncRepositories">;
  store: Pick<GitHubInstallationRecords, "find" | "findRepository">;
  repositories: Pick<RepositoryRecords, "findById">;
}

/** The payload's fields every dispatch reads. */
interface Envelope {
  installation?: { id?: unknown } | null;
  repository?: { id?: unknown } | null;
}

export function parsePayload(text: string): Envelope & Record<string, unknown> {
  const parsed: unknown = JSON.parse(text);
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new Error("the delivery's payload is not a JSON object");
  }
  return parsed as Envelope & Record<string, unknown>;
}

export class WebhookDispatcher {
  constructor(private readonly deps: DispatchDeps) {}

  async dispatch(record: ClaimedDelivery): Promise<DispatchOutcome> {
    const { handlers } = this.deps;
    // Kept until the delivery is handled: missing only if someone deleted it by hand.
    if (record.payload === null) throw new Error("the delivery's payload is missing");
    const payload = parsePayload(record.payload);
    const delivery: RawDelivery = {
      id: record.deliveryId,
      name: record.event,
      event: record.event,
      action: record.action,
      payload,
      installationId: record.installationId,
    };
    for (const handler of handlers.installationHandlers(record.event, record.action)) {
      await handler(delivery);
    }
    const organizationHandlers = handlers.organizationHandlers(record.event, record.action);
    if (organizationHandlers.length === 0 || record.installationId === null) return "done";

    const installationId = record.installationId;
    let installation = await this.deps.store.find(installationId);
    // A delivery may come before anything else told us of its installation: read it first.
    installation ??= await this.deps.installations.sync(installationId);
    if (!installation || installation.deletedAt !== null) return "done";
    const organizationId = installation.organizationId;
    if (organizationId === null) return "parked";

    const repository = await this.repository(installationId, organizationId, payload);
    const scoped = {
      ...delivery,
      installation,
      organizationId,
      repository,
      client: this.deps.app.installation(installationId),
    };
    for (const handler of organizationHandlers) await handler(scoped);
    return "done";
  }

  /**
   * The payload's repository as the organization's repository: only one the delivery's own
   * installation grants, and grants to that organization. A repository it does not know yet (a
   * delivery ahead of the sync) is looked for once more after reading the installation's list.
   */
  private async repository(
    installationId: number,
    organizationId: string,
    payload: Envelope,
  ): Promise<OwnedRepoRef | undefined> {
    const githubId = payload.repository?.id;
    if (typeof githubId !== "number") return undefined;
    const find = async () => {
      const row = await this.deps.store.findRepository(githubId);
      if (!row || row.installationId !== installationId) return undefined;
      return row;
    };
    let row = await find();
    if (!row) {
      await this.deps.installations.syncRepositories(installationId);
      row = await find();
    }
    if (
      !row ||
      row.removedAt !== null ||
      row.organizationId !== organizationId ||
      row.repositoryId === null
    ) {
      return undefined;
    }
    const repository = await this.deps.repositories.findById(row.repositoryId);
    if (repository?.organizationId !== organizationId) return undefined;
    return {
      organizationId,
      host: repository.host,
      owner: repository.owner,
      name: repository.name,
    };
  }
}
