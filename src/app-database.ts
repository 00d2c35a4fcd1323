/**
 * The part of the composition root that the CLI's administrative commands need: opening and
 * migrating the database, without loading the whole service.
 */
export {
  describeDatabaseUrl,
  openDatabase,
  redactUrl,
  type DatabaseHandle,
} from "./db/connection.js";
export { hasMainlineSchema, migrateToLatest } from "./db/migrate.js";
