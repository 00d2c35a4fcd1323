/** The HTTP server over the services, and the order in which everything stops. */
import type { FastifyServerOptions } from "fastify";
import { buildServer, type ServerDependencies } from "../api/server.js";
import type { ApiApp } from "../api/types.js";
import { pingDatabase, type DatabaseHandle } from "../db/connection.js";
import type { MergeQueueEngine } from "../mergequeue/engine.js";
import type { HostProvider } from "../providers/host-provider.js";
import type { IngestWorker } from "../testhealth/ingest/worker.js";
import { VERSION } from "../version.js";
import { providerRoutes, stopProviders, webhookRoutes } from "./providers.js";
import type { Services } from "./services.js";

/**
 * Stops everything in order: requests (and the work of those still running, even when their
 * client hung up), the upload worker, the providers, last started first (GitHub's webhook inbox,
 * then the local runner: before the engine, so that no change or result is handed to an engine
 * that stopped listening; they resume at the next start), the merge-queue engine, the database.
 */
export async function stopService(
  app: ApiApp,
  database: DatabaseHandle,
  worker?: IngestWorker,
  engine?: MergeQueueEngine,
  providers: readonly Pick<HostProvider, "stop">[] = [],
): Promise<void> {
  await app.close();
  await app.inFlight.idle();
  await worker?.stop();
  await stopProviders(providers);
  await engine?.stop();
  await database.close();
}

/** What the HTTP server is given of the services: each part only what its routes call. */
export function serverDependencies(
  services: Services,
  logger: FastifyServerOptions["logger"],
): ServerDependencies {
  return {
    pingDatabase: () => pingDatabase(services.database.db),
    organizations: services.organizations,
    sessions: services.sessions,
    queues: services.queues,
    pullRequests: services.pullRequests,
    failFirst: services.failFirst,
    forkedRuns: services.github?.forkedRuns,
    queueDashboard: services.queueDashboard,
    configCheck: services.configCheck,
    ciLog: (principal, address, runId, check) =>
      services.local.ciRuns.log(principal, address, runId, check),
    uploads: services.uploads,
    testHealth: {
      queries: services.testQueries,
      management: services.testManagement,
      access: services.access,
      publicIds: services.publicIds,
      overview: services.testOverview,
      repositoryHealth: services.repositoryHealth,
      clock: services.clock,
    },
    providerRoutes: providerRoutes(services),
    webhookRoutes: webhookRoutes(services.providers),
    webhooks: { service: services.webhooks.service, pager: services.pager },
    tickets: { connections: services.tickets.connections, service: services.tickets.service },
    publicUrl: services.publicUrl,
    githubSignIn: services.github?.signIn,
    logger,
    version: VERSION,
  };
}

export function createHttpServer(
  services: Services,
  logger: FastifyServerOptions["logger"],
): Promise<ApiApp> {
  // The webhook worker and the tickets' loop stop with the server: after the requests, before
  // the database closes.
  return buildServer({
    ...serverDependencies(services, logger),
    onClose: async () => {
      await services.webhooks.stop();
      await services.tickets.stop();
    },
  });
}
