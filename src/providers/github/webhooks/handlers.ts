/**
 * The handlers the connection itself registers: installation events keep installations and
 * their repositories in step (re-read from GitHub: the payload is only the hint), pushes and
 * pull-request events become host-neutral changes for the queues (`mergequeue/host-changes.ts`),
 * which read the branch or pull request again themselves.
 */
import type { HostChanges } from "../../../mergequeue/host-changes.js";
import type { GitHubInstallationRecords } from "../../../organizations/github-installations.js";
import type { GitHubInstallations } from "../installations.js";
import type { WebhookHandlers } from "./registry.js";

export interface ConnectionHandlerDeps {
  installations: Pick<GitHubInstallations, "sync">;
  store: Pick<GitHubInstallationRecords, "findRepository">;
  changes: Pick<HostChanges, "apply">;
}

export function registerConnectionHandlers(
  handlers: WebhookHandlers,
  deps: ConnectionHandlerDeps,
): void {
  const { installations, store, changes } = deps;

  // Installed, uninstalled, suspended, permissions accepted, repositories added or removed.
  handlers.forInstallation("installation", async (delivery) => {
    await installations.sync(delivery.payload.installation.id);
  });
  handlers.forInstallation("installation_repositories", async (delivery) => {
    await installations.sync(delivery.payload.installation.id);
  });

  // Renamed, transferred, deleted, archived, made private…: the installation that had the
  // repository (a transfer takes it to another one) and the delivery's are read again.
  handlers.forInstallation("repository", async (delivery) => {
    const ids = new Set<number>();
    if (delivery.installationId !== null) ids.add(delivery.installationId);
    const known = await store.findRepository(delivery.payload.repository.id);
    if (known) ids.add(known.installationId);
    for (const id of ids) await installations.sync(id);
  });

  handlers.forOrganization("pull_request", async (delivery) => {
    if (!delivery.repository) return;
    await changes.apply({
      type: "pull_request_changed",
      repo: delivery.repository,
      number: delivery.payload.pull_request.number,
    });
  });

  // A review changes whether a pull request may merge (required approvals): the queue reads it
  // again, as it does after any change to it.
  handlers.forOrganization("pull_request_review", async (delivery) => {
    if (!delivery.repository) return;
    await changes.apply({
      type: "pull_request_changed",
      repo: delivery.repository,
      number: delivery.payload.pull_request.number,
    });
  });

  // A pushed pull-request head also comes as `pull_request.synchronize` (forks' pushes only
  // that way), so a push names no pull requests: it moves the branch for the queues targeting it.
  handlers.forOrganization("push", async (delivery) => {
    const { ref } = delivery.payload;
    if (!delivery.repository || !ref.startsWith("refs/heads/")) return;
    await changes.apply({
      type: "branch_moved",
      repo: delivery.repository,
      branch: ref.slice("refs/heads/".length),
      headSha: delivery.payload.after,
      pullRequests: [],
    });
  });
}
