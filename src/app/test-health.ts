/** Test health's stores and services: uploads, their processing, and the reads built on them. */
import type { DatabaseHandle } from "../db/connection.js";
import type { RepositoryStore } from "../db/stores/repositories.js";
import { RepositoryHealthStore } from "../db/stores/repository-health.js";
import { RepositoryTableStore } from "../db/stores/repository-table.js";
import { ServerSecretStore } from "../db/stores/server-secrets.js";
import { TestCaseStore } from "../db/stores/test-cases.js";
import { TestDetailsStore } from "../db/stores/test-details.js";
import { TestIngestStore } from "../db/stores/test-ingest.js";
import { TestListStore } from "../db/stores/test-lists.js";
import { TestOverviewStore } from "../db/stores/test-overview.js";
import { TestSettingsStore } from "../db/stores/test-settings.js";
import { TicketStore } from "../db/stores/tickets.js";
import { TestViewStore } from "../db/stores/test-views.js";
import { UploadStore } from "../db/stores/uploads.js";
import type { Clock } from "../lib/clock.js";
import { BundleStorage } from "../testhealth/ingest/bundle-storage.js";
import { UploadProcessor } from "../testhealth/ingest/processor.js";
import {
  IngestWorker,
  type WorkerLogger,
  type WorkerOptions,
} from "../testhealth/ingest/worker.js";
import { TestHealthOverview } from "../testhealth/overview.js";
import { Pager } from "../testhealth/pager.js";
import { PublicRepositoryIds } from "../testhealth/public-repository-ids.js";
import { RepositoryAccess } from "../testhealth/repository-access.js";
import { RepositoryHealthService } from "../testhealth/repository-health.js";
import { TestManagementService } from "../testhealth/test-management.js";
import { TestQueryService } from "../testhealth/test-queries.js";
import { DEFAULT_MAX_BUNDLE_BYTES, UploadService } from "../testhealth/upload-service.js";

export interface TestHealthOptions {
  clock: Clock;
  dataDir: string;
  logger: WorkerLogger;
  maxBundleBytes?: number | undefined;
  publicUploads?: { perHour?: number; maxBundleBytes?: number } | undefined;
  worker?: Partial<WorkerOptions> | undefined;
}

export interface TestHealth {
  uploads: UploadService;
  pager: Pager;
  access: RepositoryAccess;
  publicIds: PublicRepositoryIds;
  testQueries: TestQueryService;
  testManagement: TestManagementService;
  testOverview: TestHealthOverview;
  repositoryHealth: RepositoryHealthService;
  /** Background processing of uploads; started by `mainline serve` (and tests that need it). */
  worker: IngestWorker;
  stores: {
    testCases: TestCaseStore;
    testSettings: TestSettingsStore;
    ingest: TestIngestStore;
    uploads: UploadStore;
    testViews: TestViewStore;
    bundles: BundleStorage;
    tickets: TicketStore;
  };
}

export function createTestHealth(
  database: DatabaseHandle,
  repositories: RepositoryStore,
  organizationSlug: (organizationId: string) => Promise<string>,
  options: TestHealthOptions,
): TestHealth {
  const { db, dialect } = database;
  const { clock } = options;
  const testCases = new TestCaseStore(db);
  const testSettings = new TestSettingsStore(db);
  const ingest = new TestIngestStore(database);
  const uploadStore = new UploadStore(db, dialect);
  const secrets = new ServerSecretStore(db);
  const bundles = new BundleStorage(options.dataDir);
  const access = new RepositoryAccess(repositories);
  const processor = new UploadProcessor({
    uploads: uploadStore,
    ingest,
    settings: testSettings,
    bundles,
    clock,
    organizationSlug,
    repository: async (repositoryId) => {
      const repository = await repositories.findById(repositoryId);
      if (!repository) throw new Error(`repository ${repositoryId} vanished`);
      return repository;
    },
  });
  const worker = new IngestWorker(
    {
      uploads: uploadStore,
      ingest,
      settings: testSettings,
      processor,
      bundles,
      clock,
      logger: options.logger,
    },
    options.worker,
  );
  const publicIds = new PublicRepositoryIds({
    repositories,
    access,
    clock,
    ...options.publicUploads,
    organizationSlug,
  });
  const uploads = new UploadService({
    publicIds,
    testCases,
    uploads: uploadStore,
    settings: testSettings,
    secrets,
    bundles,
    access,
    clock,
    maxBundleBytes: options.maxBundleBytes ?? DEFAULT_MAX_BUNDLE_BYTES,
    onBundleStored: () => {
      worker.wake();
    },
  });
  const pager = new Pager(secrets, clock);
  const testViews = new TestViewStore(db, dialect);
  const testDetails = new TestDetailsStore(db, dialect);
  const tickets = new TicketStore(db, dialect);
  const testQueries = new TestQueryService({
    access,
    settings: testSettings,
    views: testViews,
    lists: new TestListStore(db, dialect),
    details: testDetails,
    uploads: uploadStore,
    tickets,
    pager,
    clock,
  });
  const testManagement = new TestManagementService({
    queries: testQueries,
    details: testDetails,
    clock,
    reclassify: (repositoryId) => {
      worker.reclassify(repositoryId);
    },
    ticketConnectionExists: async (organizationId, connectionId) =>
      (await tickets.findConnection(organizationId, connectionId)) !== undefined,
  });
  const testOverview = new TestHealthOverview({ overview: new TestOverviewStore(db), clock });
  const repositoryHealth = new RepositoryHealthService({
    access,
    settings: testSettings,
    overview: testOverview,
    records: new RepositoryHealthStore(db),
    table: new RepositoryTableStore(database),
    uploads: uploadStore,
    clock,
  });
  return {
    uploads,
    pager,
    access,
    publicIds,
    testQueries,
    testManagement,
    testOverview,
    repositoryHealth,
    worker,
    stores: {
      testCases,
      testSettings,
      ingest,
      uploads: uploadStore,
      testViews,
      bundles,
      tickets,
    },
  };
}
