/** Opening the database for the server: its schema, then the data directory's layout. */
import { openDatabase, type DatabaseHandle, type OpenDatabaseOptions } from "../db/connection.js";
import { migrateToLatest } from "../db/migrate.js";
import { RepositoryStore } from "../db/stores/repositories.js";
import { upgradeLocalRepositoryLayout } from "../providers/local/git/layout-upgrade.js";

/** What `openMigratedDatabase` reports of the upgrade of the data directory's layout. */
export interface UpgradeLogger {
  info(message: string): void;
  error(message: string): void;
}

const stderrUpgradeLogger: UpgradeLogger = {
  info: (message) => {
    process.stderr.write(`${message}\n`);
  },
  error: (message) => {
    process.stderr.write(`${message}\n`);
  },
};

/**
 * Opens the database, brings its schema up to date, then the data directory's layout (local
 * repositories of the old shared layout move into their organization's tree).
 */
export async function openMigratedDatabase(
  options: OpenDatabaseOptions,
  logger: UpgradeLogger = stderrUpgradeLogger,
): Promise<DatabaseHandle> {
  const database = openDatabase(options);
  try {
    await migrateToLatest(database);
    const repositories = new RepositoryStore(database.db);
    await upgradeLocalRepositoryLayout(options.dataDir, {
      owner: (ref) => repositories.oldestAnywhere(ref),
      logger,
    });
    return database;
  } catch (error) {
    await database.close();
    throw error;
  }
}
