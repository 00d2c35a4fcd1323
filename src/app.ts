/**
 * The composition root's entry (`src/app/`): the services by area, the provider registry, the
 * HTTP server over them, and how they stop.
 */
export {
  createServices,
  type CoreServiceOptions,
  type ServiceLogger,
  type ServiceOptions,
  type Services,
} from "./app/services.js";
export { createHttpServer, serverDependencies, stopService } from "./app/server.js";
export { openMigratedDatabase, type UpgradeLogger } from "./app/database.js";
export { DatabaseServedElsewhere, lockDatabaseForServe, type ServeLock } from "./db/serve-lock.js";
export { PROVIDERS, startProviders, type HostProviders } from "./app/providers.js";
export type { HostProvider } from "./providers/host-provider.js";

/** The GitHub App's manifest and registration link, for `mainline github setup`. */
export {
  ALWAYS_DELIVERED_EVENTS,
  APP_EVENTS,
  APP_PERMISSIONS,
  appManifest,
  registrationUrl,
  signInCallbackUrl,
  webUrlOf,
  webhookUrl,
} from "./providers/github/index.js";
