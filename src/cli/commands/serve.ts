import { setFlagsFromString } from "node:v8";
import type { Command } from "commander";
import type { ServeLock, Services } from "../../app.js";
import { loadServiceConfig, type ServiceConfig } from "../../config.js";
import { VERSION } from "../../version.js";
import { CliError } from "../client.js";
import type { CliContext } from "../context.js";

/** The heap may grow to 1.8× what the last full collection left (measured: docs/benchmarks.md). */
const HEAP_GROWING_PERCENT = 80;

const SHUTDOWN_GRACE_MS = 10_000;

const ENVIRONMENT_HELP = `
Environment:
  PORT                      TCP port (default 8080)
  HOST                      address to listen on (default 127.0.0.1)
  DATABASE_URL              postgres://… or sqlite:<file> (default: SQLite in the data directory)
  MAINLINE_DATA_DIR         data directory (default ./mainline-data)
  MAINLINE_PUBLIC_URL       address users reach the service at (default http://HOST:PORT)
  LOG_LEVEL                 fatal|error|warn|info|debug|trace|silent (default info)
  MAINLINE_RETENTION_DAYS   raw test runs older than this are pruned (default 90, min 8)
  MAINLINE_MAX_BUNDLE_MB    largest test-results bundle accepted (default 1024)
  MAINLINE_CI_PARALLELISM   checks the built-in CI runner runs at once (default 2)
  MAINLINE_INGEST_LEASE_SECONDS  how soon another process resumes the uploads of one that
                            died while processing them (default 30)
  MAINLINE_QUEUE_LEASE_SECONDS  how soon another process takes over the merge queues, checks
                            and GitHub deliveries of one that died (default 30)
  MAINLINE_BATCH_WAIT_LIMIT_SECONDS  the longest any queue's batch waits to fill (default:
                            each queue's batchingMaxWaitTimeMinutes)
  MAINLINE_BOOTSTRAP_ORG    with MAINLINE_BOOTSTRAP_TOKEN (32+ characters): make sure that
  MAINLINE_BOOTSTRAP_TOKEN  organization exists and accepts that token
  MAINLINE_GITHUB_APP_ID, MAINLINE_GITHUB_PRIVATE_KEY (PEM text or a path),
  MAINLINE_GITHUB_WEBHOOK_SECRET  the GitHub App (all three, or none; see mainline github setup)
  MAINLINE_GITHUB_API_URL   GitHub's API (default https://api.github.com; GHES: https://HOST/api/v3)
  MAINLINE_GITHUB_HOST      the host repositories carry (default: from the API URL)
  MAINLINE_GITHUB_WRITE_INTERVAL_MS  least ms between an installation's writes (default 1000)
  MAINLINE_GITHUB_RETRY_BASE_MS  a failed GitHub request is retried after 1, 4 and 9 times
                            this (default 1000)
  MAINLINE_WEBHOOKS_RETRY_SCHEDULE  outbound webhooks: waits before each attempt
                            (default 0,5s,5m,30m,2h,5h,10h,10h; see docs/webhooks.md)
  MAINLINE_WEBHOOKS_TIMEOUT_MS  how long a delivery waits for an answer (default 15000)
  MAINLINE_WEBHOOKS_DISABLE_AFTER  an endpoint failing this long is disabled (default 5d)
  MAINLINE_WEBHOOKS_ALLOW_PRIVATE  1: endpoints may be loopback or private addresses (default 0);
                            also ticket connections (an intranet Jira)
  MAINLINE_TICKETS_POLL_MS  tickets: the automatic rules' and state reads' loop runs this often
                            (default 300000; see docs/tickets.md)
  MAINLINE_TICKETS_REFRESH_MS  a linked ticket's state is read again after this (default 900000)
  MAINLINE_TICKETS_TIMEOUT_MS  a ticket provider's request times out after this (default 15000)
  MAINLINE_LINEAR_API_URL   Linear's GraphQL API (default https://api.linear.app/graphql)
  MAINLINE_SLACK_API_URL    where Slack bot endpoints post (default https://slack.com/api)`;

/** Long-running, with the process's signals: only ever tested as a real process. */
export function registerServe(program: Command, context: CliContext): void {
  program
    .command("serve")
    .description("Start the HTTP service (configured by environment variables)")
    .addHelpText("after", ENVIRONMENT_HELP)
    .action(async () => {
      // It handles the process's signals and exits the process: it must be the process.
      if (!context.ownsProcess) throw new CliError("serve runs only as a process of its own.");
      const startedAt = Date.now();
      const config = loadServiceConfig(context.env);
      // A long-running server that parses large reports makes garbage fast; V8's default lets
      // the heap grow to several times what is live before a full collection. A smaller
      // growing factor keeps the peak near the live size, for a few percent more GC time.
      setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
      // Loaded here so that other commands (and --help) start without the server's modules.
      const {
        createHttpServer,
        createServices,
        lockDatabaseForServe,
        openMigratedDatabase,
        startProviders,
        stopService,
      } = await import("../../app.js");
      // SQLite: one serving process. Taken before the database is opened (or migrated).
      const serveLock = await refuseIfServedElsewhere(() =>
        lockDatabaseForServe({ url: config.databaseUrl, dataDir: config.dataDir }, startedAt),
      );
      let log: {
        info(o: object, m: string): void;
        warn(o: object, m: string): void;
        error(o: object, m: string): void;
      } | null = null;
      const database = await openMigratedDatabase({
        url: config.databaseUrl,
        dataDir: config.dataDir,
        poolSize: config.databasePoolSize,
        // The pool replaces the connection; requests that were using it answered 503.
        onConnectionError: (error) => log?.warn({ err: error }, "database connection lost"),
      });
      const services = createServices(database, {
        dataDir: config.dataDir,
        publicUrl: config.explicitPublicUrl,
        maxBundleBytes: config.maxBundleBytes,
        ciParallelism: config.ciParallelism,
        sessionLifetimes: config.sessionLifetimes,
        worker: { retentionDays: config.retentionDays, leaseMs: config.ingestLeaseMs },
        leaseMs: config.queueLeaseMs,
        engine: { batchWaitLimitMs: config.batchWaitLimitMs },
        webhooks: {
          ...config.webhooks,
          publicUrl: config.publicUrl,
          listenOrigins: () => [
            `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${String(config.port)}`,
          ],
        },
        tickets: {
          ...config.tickets,
          githubApiUrl: config.github?.apiUrl ?? "https://api.github.com",
        },
        ...(config.github ? { github: config.github } : {}),
        ...(config.gitlab ? { gitlab: config.gitlab } : {}),
        logger: {
          info: (fields, message) => log?.info(fields, message),
          warn: (fields, message) => log?.warn(fields, message),
          error: (fields, message) => log?.error(fields, message),
        },
      });

      if (config.bootstrap) {
        await services.organizations.ensureBootstrap(
          config.bootstrap.organization,
          config.bootstrap.token,
        );
      }

      const app = await createHttpServer(services, { level: config.logLevel });
      log = app.log;
      app.log.info(
        { database: database.location, dialect: database.dialect, version: VERSION },
        "database ready",
      );

      let stopping = false;
      const shutdown = (signal: string) => {
        if (stopping) {
          app.log.warn({ signal }, "second signal: exiting now");
          process.exit(1);
        }
        stopping = true;
        app.log.info({ signal }, "shutting down: finishing requests in flight");
        const force = setTimeout(() => {
          app.log.error("shutdown took too long; exiting");
          process.exit(1);
        }, SHUTDOWN_GRACE_MS);
        force.unref();
        // With the server and the database closed nothing is left to run, and the process ends
        // by itself once the log lines are written; exiting here could cut the last ones off.
        stopService(app, database, services.worker, services.engine, services.providers).then(
          () => {
            serveLock.release();
            app.log.info("stopped");
          },
          (error: unknown) => {
            app.log.error({ err: error }, "shutdown failed");
            process.exitCode = 1;
          },
        );
      };
      process.on("SIGTERM", () => {
        shutdown("SIGTERM");
      });
      process.on("SIGINT", () => {
        shutdown("SIGINT");
      });

      // PostgreSQL: tokens, repositories and queues are cached once other processes' changes
      // are heard (ADR 0017); until then, and whenever that connection is lost, they are read.
      await database.listenForChanges();
      await listen(app, config);
      // Only a start that serves shows the first start's token: one that could not listen
      // showed nothing, and the next start shows it.
      if (!config.bootstrap) await announceFirstStart(services, config, context, startedAt);
      database.checkpointInBackground();
      // Bundles stored before a crash or restart are processed now.
      services.worker.start();
      // Queues resume where they were: timers, commands and CI results waiting in storage.
      services.engine.start();
      // The hosts' work resumes: built-in CI runs a stop or crash interrupted, pushes are
      // watched, webhook deliveries stored before a crash or restart are handled.
      await startProviders(services.providers);
      // Outbound webhooks stored before a crash or restart are delivered.
      services.webhooks.dispatcher.start();
      // Tickets: creates a crash interrupted are resumed, rules applied, states read back.
      services.tickets.loop.start();
    });
}

/**
 * The serve lock, or a clear refusal when another process serves the SQLite database: which
 * process, and what to do instead.
 */
async function refuseIfServedElsewhere(take: () => ServeLock): Promise<ServeLock> {
  const { DatabaseServedElsewhere } = await import("../../app.js");
  try {
    return take();
  } catch (error) {
    if (!(error instanceof DatabaseServedElsewhere)) throw error;
    const holder = error.holder;
    const who = holder
      ? `Another mainline serve (pid ${String(holder.pid)}, started ${new Date(holder.startedAt).toISOString()})`
      : "Another mainline serve";
    throw new CliError(
      `${who} is serving the SQLite database ${error.file}; nothing was started or changed. ` +
        "SQLite is served by one process at a time: stop that one first, or, to run several " +
        "processes, use PostgreSQL (DATABASE_URL=postgres://…).",
    );
  }
}

/** Listens on HOST:PORT; a port taken or not allowed stops the start with a clear message. */
async function listen(
  app: { listen(options: { host: string; port: number }): Promise<string> },
  config: ServiceConfig,
): Promise<void> {
  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const where = `port ${String(config.port)} on ${config.host}`;
    if (code === "EADDRINUSE") {
      throw new CliError(
        `Cannot listen on ${where}: the port is already in use (another mainline serve, or another program). Stop that process, or start on a free port with PORT=<port>.`,
      );
    }
    if (code === "EACCES" || code === "EADDRNOTAVAIL") {
      throw new CliError(
        `Cannot listen on ${where} (${code}): choose another PORT, or a HOST this machine has.`,
      );
    }
    throw error;
  }
}

/**
 * On a first start (no bootstrap settings, an empty database), once the server listens: the
 * `default` organization's token, printed once; recorded as shown only after it was printed.
 */
async function announceFirstStart(
  services: Pick<Services, "organizations">,
  config: ServiceConfig,
  context: CliContext,
  startedAt: number,
): Promise<void> {
  const issued = await services.organizations.issueFirstStartToken(startedAt);
  if (!issued) return;
  const created = issued.organizationCreated
    ? `created the organization "${issued.organization.slug}"`
    : `the organization "${issued.organization.slug}" has a new token, since no start showed one before`;
  context.stderr.write(
    [
      "",
      `First start: ${created}. Its API token (shown only this once):`,
      "",
      `    ${issued.token}`,
      "",
      "Use it in the x-api-token header, for example:",
      `    curl -H "x-api-token: ${issued.token}" -H "content-type: application/json" -d '{}' ${config.publicUrl}/v1/whoami`,
      "More tokens: `mainline token create --org default`. API reference: " +
        `${config.publicUrl}/docs`,
      `Dashboard: ${config.publicUrl}/ (sign in with this token).`,
      "",
      "",
    ].join("\n"),
  );
  await services.organizations.firstStartTokenShown(issued.tokenId);
}
