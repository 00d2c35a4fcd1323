import { existsSync } from "node:fs";
import { formatTable } from "../table.js";
import type { Command } from "commander";
import type { ServiceOptions, Services } from "../../app.js";
import { ConfigError, dataDirFrom, sessionLifetimesFrom } from "../../config.js";
import type { DatabaseHandle } from "../../app-database.js";
import { isoTime } from "../../lib/clock.js";
import { OrganizationError } from "../../organizations/service.js";
import { CliError } from "../client.js";
import type { CliContext } from "../context.js";

/** Where the database is and what named it, for messages. */
function databaseSource(env: CliContext["env"]): string {
  if (env.DATABASE_URL?.trim()) return "from DATABASE_URL";
  if (env.MAINLINE_DATA_DIR?.trim()) return "in MAINLINE_DATA_DIR";
  return "in the default data directory ./mainline-data, relative to the current directory";
}

/**
 * Opens the database named by the environment for a command that must not create one: a typo in
 * MAINLINE_DATA_DIR, or a command run in the wrong directory, would otherwise make a new empty
 * database and answer from it. `serve` and `migrate` are the commands that create it.
 */
async function openExistingDatabase(context: CliContext): Promise<DatabaseHandle> {
  const [{ describeDatabaseUrl, openDatabase, redactUrl }, { hasMainlineSchema, migrateToLatest }] =
    await Promise.all([import("../../app-database.js"), import("../../app-database.js")]);
  const options = { url: context.env.DATABASE_URL, dataDir: dataDirFrom(context.env) };
  let described: ReturnType<typeof describeDatabaseUrl>;
  try {
    described = describeDatabaseUrl(options);
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  const shown = described.dialect === "postgres" ? redactUrl(described.target) : described.target;
  const refuse = (what: string) =>
    new CliError(
      `${what} (${databaseSource(context.env)}). Nothing was created. To create it there, run \`mainline migrate\` (or \`mainline serve\`); to use another, set MAINLINE_DATA_DIR or DATABASE_URL.`,
      2,
    );
  if (described.dialect === "sqlite" && described.target !== ":memory:") {
    if (!existsSync(described.target)) throw refuse(`No Mainline database at ${shown}`);
  }
  const database = openDatabase(options);
  try {
    if (!(await hasMainlineSchema(database))) {
      throw refuse(`The database at ${shown} has no Mainline schema`);
    }
    // An existing database of an older version is brought up to date, as serve would.
    await migrateToLatest(database);
    return database;
  } catch (error) {
    await database.close();
    throw error;
  }
}

/** Runs an administrative command directly against the existing database named by the environment. */
export async function withServices<T>(
  context: CliContext,
  work: (services: Services) => Promise<T>,
  options: ServiceOptions = {},
): Promise<T> {
  // Loaded on use so that the CLI starts quickly for every other command.
  const { createServices } = await import("../../app.js");
  const database = await openExistingDatabase(context);
  try {
    return await work(
      createServices(database, {
        sessionLifetimes: sessionLifetimesFrom(context.env),
        ...options,
      }),
    );
  } catch (error) {
    if (error instanceof OrganizationError) throw new CliError(error.message);
    throw error;
  } finally {
    await database.close();
  }
}

export function registerAdminCommands(program: Command, context: CliContext): void {
  registerMigrate(program, context);
  registerOrgCommands(program, context);
  registerTokenCommands(program, context);
  registerSessionCommands(program, context);
}

/** `mainline migrate`: the database brought up to date (created if need be). */
function registerMigrate(program: Command, context: CliContext): void {
  program
    .command("migrate")
    .description(
      "Apply pending database migrations, creating the database if there is none (serve also does this at start)",
    )
    .action(async () => {
      const [{ openDatabase }, { migrateToLatest }] = await Promise.all([
        import("../../app-database.js"),
        import("../../app-database.js"),
      ]);
      const database = openDatabase({
        url: context.env.DATABASE_URL,
        dataDir: dataDirFrom(context.env),
      });
      try {
        const { applied } = await migrateToLatest(database);
        context.stderr.write(
          applied.length
            ? `Applied: ${applied.join(", ")}\n`
            : `Up to date (${database.location}).\n`,
        );
      } finally {
        await database.close();
      }
    });
}

/** `mainline org create|list`. */
function registerOrgCommands(program: Command, context: CliContext): void {
  const org = program.command("org").description("Manage organizations (directly on the database)");
  org
    .command("create <slug>")
    .description(
      "Create an organization if needed and print a new API token (the only stdout line)",
    )
    .option("--name <name>", "a label for the token")
    .action(async (slug: string, options: { name?: string }) => {
      const issued = await withServices(context, (s) =>
        s.organizations.createOrganizationWithToken(slug, options.name),
      );
      context.stderr.write(
        `${issued.organizationCreated ? "Created organization" : "Organization exists:"} ${issued.organization.slug}; new token ${issued.tokenId} (shown once):\n`,
      );
      context.stdout.write(`${issued.token}\n`);
    });
  org
    .command("list")
    .description("List organizations")
    .option("--json", "print JSON")
    .action(async (options: { json?: boolean }) => {
      const orgs = await withServices(context, (s) => s.organizations.listOrganizations());
      if (options.json) {
        context.stdout.write(
          JSON.stringify(orgs.map((o) => ({ slug: o.slug, createdAt: isoTime(o.createdAt) }))) +
            "\n",
        );
        return;
      }
      context.stdout.write(
        formatTable([["SLUG", "CREATED"], ...orgs.map((o) => [o.slug, isoTime(o.createdAt)])]),
      );
    });
}

/** `mainline token create|list|revoke`. */
function registerTokenCommands(program: Command, context: CliContext): void {
  const token = program
    .command("token")
    .description("Manage API tokens (directly on the database)");
  token
    .command("create")
    .description("Issue a new API token for an organization and print it (the only stdout line)")
    .requiredOption("--org <slug>", "the organization")
    .option("--name <name>", "a label for the token")
    .action(async (options: { org: string; name?: string }) => {
      const issued = await withServices(context, (s) =>
        s.organizations.issueToken(options.org, options.name),
      );
      context.stderr.write(
        `New token ${issued.tokenId} for ${issued.organization.slug} (shown once):\n`,
      );
      context.stdout.write(`${issued.token}\n`);
    });
  token
    .command("list")
    .description("List an organization's tokens (never the secrets)")
    .requiredOption("--org <slug>", "the organization")
    .option("--json", "print JSON")
    .action(async (options: { org: string; json?: boolean }) => {
      const tokens = await withServices(context, (s) => s.organizations.listTokens(options.org));
      const view = tokens.map((t) => ({
        id: t.id,
        name: t.name,
        hint: `${t.tokenHint}…`,
        createdAt: isoTime(t.createdAt),
        revokedAt: t.revokedAt === null ? null : isoTime(t.revokedAt),
      }));
      if (options.json) {
        context.stdout.write(JSON.stringify(view) + "\n");
        return;
      }
      context.stdout.write(
        formatTable([
          ["ID", "NAME", "STARTS WITH", "CREATED", "STATUS"],
          ...view.map((t) => [
            t.id,
            t.name ?? "",
            t.hint,
            t.createdAt,
            t.revokedAt ? `revoked ${t.revokedAt}` : "active",
          ]),
        ]),
      );
    });
  token
    .command("revoke <token-id>")
    .description("Revoke a token by its id (see `token list`); it stops working at once")
    .action(async (tokenId: string) => {
      const revoked = await withServices(context, (s) => s.organizations.revokeToken(tokenId));
      context.stderr.write(`Revoked ${revoked.id}.\n`);
    });
}

/** `mainline session list|revoke`. */
function registerSessionCommands(program: Command, context: CliContext): void {
  const session = program
    .command("session")
    .description("Dashboard sign-in sessions (directly on the database)");
  session
    .command("list")
    .description("List an organization's dashboard sessions, newest first (never their secrets)")
    .requiredOption("--org <slug>", "the organization")
    .option("--json", "print JSON")
    .action(async (options: { org: string; json?: boolean }) => {
      const sessions = await withServices(context, (s) => s.sessions.list(options.org));
      const view = sessions.map((x) => ({
        id: x.id,
        state: x.state,
        tokenId: x.tokenId,
        tokenName: x.tokenName,
        githubLogin: x.githubLogin,
        createdAt: isoTime(x.createdAt),
        lastSeenAt: isoTime(x.lastSeenAt),
        expiresAt: isoTime(x.expiresAt),
        revokedAt: x.revokedAt === null ? null : isoTime(x.revokedAt),
      }));
      if (options.json) {
        context.stdout.write(JSON.stringify(view) + "\n");
        return;
      }
      context.stdout.write(
        formatTable([
          ["ID", "STATE", "TOKEN", "CREATED", "LAST SEEN", "EXPIRES"],
          ...view.map((x) => [
            x.id,
            x.state.replaceAll("_", " "),
            x.tokenId === null
              ? `GitHub: ${x.githubLogin ?? "?"}`
              : x.tokenName
                ? `${x.tokenId} (${x.tokenName})`
                : x.tokenId,
            x.createdAt,
            x.lastSeenAt,
            x.expiresAt,
          ]),
        ]),
      );
    });
  session
    .command("revoke <session-id>")
    .description("End a dashboard session by its id (see `session list`); it is signed out at once")
    .requiredOption("--org <slug>", "the organization")
    .action(async (sessionId: string, options: { org: string }) => {
      const revoked = await withServices(context, (s) => s.sessions.revoke(options.org, sessionId));
      context.stderr.write(`Revoked ${revoked.id} (signed out).\n`);
    });
}
