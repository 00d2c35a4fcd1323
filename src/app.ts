import type { FastifyServerOptions } from "fastify";
import { buildServer } from "./api/server.js";
import type { ApiApp } from "./api/types.js";
import { openDatabase, type DatabaseHandle, type OpenDatabaseOptions } from "./db/connection.js";
import { migrateToLatest } from "./db/migrate.js";
import { MergeQueueStore } from "./db/stores/merge-queues.js";
import { OrganizationStore } from "./db/stores/organizations.js";
import { RepositoryStore } from "./db/stores/repositories.js";
import { systemClock, type Clock } from "./lib/clock.js";
import { MergeQueueService, emptyQueueContents } from "./mergequeue/queue-service.js";
import { OrganizationService } from "./organizations/service.js";
import { VERSION } from "./version.js";

/** The composition root: stores and services over one database. */
export interface Services {
  database: DatabaseHandle;
  organizations: OrganizationService;
  queues: MergeQueueService;
}

export function createServices(database: DatabaseHandle, clock: Clock = systemClock): Services {
  const { db } = database;
  return {
    database,
    organizations: new OrganizationService(new OrganizationStore(db), clock),
    queues: new MergeQueueService({
      repositories: new RepositoryStore(db),
      queues: new MergeQueueStore(db, database.dialect),
      contents: emptyQueueContents,
      clock,
    }),
  };
}

/** Opens the database and brings its schema up to date. */
export async function openMigratedDatabase(options: OpenDatabaseOptions): Promise<DatabaseHandle> {
  const database = openDatabase(options);
  try {
    await migrateToLatest(database);
    return database;
  } catch (error) {
    await database.close();
    throw error;
  }
}

/**
 * Graceful stop: no new requests, then the work of requests still running (even those whose
 * client hung up), then the database.
 */
export async function stopService(app: ApiApp, database: DatabaseHandle): Promise<void> {
  await app.close();
  await app.inFlight.idle();
  await database.close();
}

export function createHttpServer(
  services: Services,
  logger: FastifyServerOptions["logger"],
): Promise<ApiApp> {
  return buildServer({
    db: services.database.db,
    organizations: services.organizations,
    queues: services.queues,
    logger,
    version: VERSION,
  });
}
