import { formatTable } from "../table.js";
import type { Command } from "commander";
import type { Services } from "../../app.js";
import { dataDirFrom } from "../../config.js";
import { isoTime } from "../../lib/clock.js";
import { OrganizationError } from "../../organizations/service.js";
import { CliError } from "../client.js";

/** Runs an administrative command directly against the database named by the environment. */
async function withServices<T>(work: (services: Services) => Promise<T>): Promise<T> {
  // Loaded on use so that the CLI starts quickly for every other command.
  const { createServices, openMigratedDatabase } = await import("../../app.js");
  const database = await openMigratedDatabase({
    url: process.env.DATABASE_URL,
    dataDir: dataDirFrom(process.env),
  });
  try {
    return await work(createServices(database));
  } catch (error) {
    if (error instanceof OrganizationError) throw new CliError(error.message);
    throw error;
  } finally {
    await database.close();
  }
}

export function registerAdminCommands(program: Command): void {
  program
    .command("migrate")
    .description("Apply pending database migrations (serve also does this at start)")
    .action(async () => {
      const [{ openDatabase }, { migrateToLatest }] = await Promise.all([
        import("../../db/connection.js"),
        import("../../db/migrate.js"),
      ]);
      const database = openDatabase({
        url: process.env.DATABASE_URL,
        dataDir: dataDirFrom(process.env),
      });
      try {
        const { applied } = await migrateToLatest(database);
        process.stderr.write(
          applied.length
            ? `Applied: ${applied.join(", ")}\n`
            : `Up to date (${database.location}).\n`,
        );
      } finally {
        await database.close();
      }
    });

  const org = program.command("org").description("Manage organizations (directly on the database)");
  org
    .command("create <slug>")
    .description(
      "Create an organization if needed and print a new API token (the only stdout line)",
    )
    .option("--name <name>", "a label for the token")
    .action(async (slug: string, options: { name?: string }) => {
      const issued = await withServices((s) =>
        s.organizations.createOrganizationWithToken(slug, options.name),
      );
      process.stderr.write(
        `${issued.organizationCreated ? "Created organization" : "Organization exists:"} ${issued.organization.slug}; new token ${issued.tokenId} (shown once):\n`,
      );
      process.stdout.write(`${issued.token}\n`);
    });
  org
    .command("list")
    .description("List organizations")
    .option("--json", "print JSON")
    .action(async (options: { json?: boolean }) => {
      const orgs = await withServices((s) => s.organizations.listOrganizations());
      if (options.json) {
        process.stdout.write(
          JSON.stringify(orgs.map((o) => ({ slug: o.slug, createdAt: isoTime(o.createdAt) }))) +
            "\n",
        );
        return;
      }
      process.stdout.write(
        formatTable([["SLUG", "CREATED"], ...orgs.map((o) => [o.slug, isoTime(o.createdAt)])]),
      );
    });

  const token = program
    .command("token")
    .description("Manage API tokens (directly on the database)");
  token
    .command("create")
    .description("Issue a new API token for an organization and print it (the only stdout line)")
    .requiredOption("--org <slug>", "the organization")
    .option("--name <name>", "a label for the token")
    .action(async (options: { org: string; name?: string }) => {
      const issued = await withServices((s) =>
        s.organizations.issueToken(options.org, options.name),
      );
      process.stderr.write(
        `New token ${issued.tokenId} for ${issued.organization.slug} (shown once):\n`,
      );
      process.stdout.write(`${issued.token}\n`);
    });
  token
    .command("list")
    .description("List an organization's tokens (never the secrets)")
    .requiredOption("--org <slug>", "the organization")
    .option("--json", "print JSON")
    .action(async (options: { org: string; json?: boolean }) => {
      const tokens = await withServices((s) => s.organizations.listTokens(options.org));
      const view = tokens.map((t) => ({
        id: t.id,
        name: t.name,
        hint: `${t.tokenHint}…`,
        createdAt: isoTime(t.createdAt),
        revokedAt: t.revokedAt === null ? null : isoTime(t.revokedAt),
      }));
      if (options.json) {
        process.stdout.write(JSON.stringify(view) + "\n");
        return;
      }
      process.stdout.write(
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
      const revoked = await withServices((s) => s.organizations.revokeToken(tokenId));
      process.stderr.write(`Revoked ${revoked.id}.\n`);
    });
}
