/**
 * `mainline github …`: the GitHub App (docs/github.md). `setup` prints what to register on
 * GitHub and how; `installations`, `link` and `unlink` are the operator's, directly on the
 * database like the other administrative commands (an organization links its own installations
 * through the API, with proof of control of the GitHub account).
 */
import type { Command } from "commander";
import { loadGitHubConfig } from "../../config.js";
import { isoTime } from "../../lib/clock.js";
import { CliError } from "../client.js";
import type { CliContext } from "../context.js";
import { formatTable } from "../table.js";
import { withServices } from "./admin.js";
import type { Services } from "../../app.js";

type GitHub = NonNullable<Services["github"]>;
type InstallationView = Awaited<ReturnType<GitHub["installations"]["listAll"]>>[number];

/** The GitHub App's configuration from the environment, required. */
function requireGitHub(context: CliContext) {
  const config = loadGitHubConfig(context.env);
  if (!config) {
    throw new CliError(
      "GitHub is not configured: set MAINLINE_GITHUB_APP_ID, MAINLINE_GITHUB_PRIVATE_KEY and MAINLINE_GITHUB_WEBHOOK_SECRET as for mainline serve (mainline github setup says how to get them).",
      2,
    );
  }
  return config;
}

/** Runs `work` with the services and the GitHub provider over the existing database. */
function withGitHub<T>(context: CliContext, work: (github: GitHub) => Promise<T>): Promise<T> {
  const config = requireGitHub(context);
  return withServices(
    context,
    async (services) => {
      if (!services.github) throw new Error("the GitHub provider was not created");
      return work(services.github);
    },
    { github: config },
  );
}

function installationId(value: string): number {
  if (!/^[1-9]\d{0,15}$/.test(value)) {
    throw new CliError(
      `--installation must be the installation's id, a whole number (got "${value}").`,
    );
  }
  return Number(value);
}

function state(view: InstallationView): string {
  if (view.installation.deletedAt !== null) return "uninstalled";
  if (view.installation.suspendedAt !== null) return "suspended";
  return "active";
}

function asJson(view: InstallationView) {
  const time = (ms: number | null) => (ms === null ? null : isoTime(ms));
  return {
    installationId: view.installation.id,
    account: { login: view.installation.accountLogin, type: view.installation.accountType },
    organization: view.organizationSlug,
    state: state(view),
    repositorySelection: view.installation.repositorySelection,
    linkedAt: time(view.installation.linkedAt),
    syncedAt: time(view.installation.syncedAt),
    repositories: view.repositories.map((repo) => ({
      owner: repo.owner,
      name: repo.name,
      removedAt: time(repo.removedAt),
    })),
  };
}

function describe(view: InstallationView): string {
  const granted = view.repositories.filter((repo) => repo.removedAt === null);
  const names = granted.map((repo) => `${repo.owner}/${repo.name}`).join(", ");
  return `installation ${view.installation.id} (${view.installation.accountType} ${view.installation.accountLogin}, ${granted.length} repositor${granted.length === 1 ? "y" : "ies"}${names ? `: ${names}` : ""})`;
}

/** `MAINLINE_PUBLIC_URL`, as GitHub must reach it. */
function publicUrlOf(context: CliContext): { url: string; given: boolean } {
  const given = context.env.MAINLINE_PUBLIC_URL?.trim();
  if (!given) return { url: "https://mainline.example.com", given: false };
  let parsed: URL;
  try {
    parsed = new URL(given);
  } catch {
    throw new CliError(`MAINLINE_PUBLIC_URL must be an absolute http(s) URL (got "${given}").`, 2);
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
    throw new CliError(`MAINLINE_PUBLIC_URL must be an http(s) URL (got "${given}").`, 2);
  }
  return { url: given.replace(/\/+$/, ""), given: true };
}

/** A name GitHub takes (at most 34 characters), from where Mainline runs. */
function defaultAppName(publicUrl: string): string {
  const host = new URL(publicUrl).hostname
    .replace(/^mainline[.-]/, "")
    .replace(/[^A-Za-z0-9-]+/g, "-");
  return `mainline-${host}`.slice(0, 34).replace(/-+$/, "");
}

export function registerGitHubCommands(program: Command, context: CliContext): void {
  const github = program
    .command("github")
    .description("The GitHub App: set it up, see and link its installations");
  registerSetup(github, context);
  registerInstallations(github, context);
  registerLink(github, context);
  registerUnlink(github, context);
}

/** `mainline github setup`: the App to register, and the steps to connect it. */
function registerSetup(github: Command, context: CliContext): void {
  github
    .command("setup")
    .description("Print the GitHub App to register (its manifest) and the steps to connect it")
    .option("--name <name>", "the App's name on GitHub (unique there; at most 34 characters)")
    .option("--github-org <login>", "register the App under this GitHub organization")
    .option("--json", "print only the App manifest (GitHub's format)")
    .action(async (options: { name?: string; githubOrg?: string; json?: boolean }) => {
      const app = await import("../../app.js");
      const { url: publicUrl, given } = publicUrlOf(context);
      const apiUrl = context.env.MAINLINE_GITHUB_API_URL?.trim() || "https://api.github.com";
      let webUrl: string;
      try {
        webUrl = app.webUrlOf(apiUrl);
      } catch {
        throw new CliError(`MAINLINE_GITHUB_API_URL must be an absolute URL (got "${apiUrl}").`, 2);
      }
      const name = options.name ?? defaultAppName(publicUrl);
      if (name.length > 34)
        throw new CliError("--name must be at most 34 characters (GitHub's limit).");
      const manifest = app.appManifest({ name, publicUrl });
      if (options.json) {
        context.stdout.write(`${JSON.stringify(manifest, null, 2)}\n`);
        return;
      }
      if (!given) {
        context.stderr.write(
          "MAINLINE_PUBLIC_URL is not set: the webhook URL below is a placeholder. Set it to the address GitHub reaches Mainline at and run this again.\n",
        );
      }
      const ghes = apiUrl !== "https://api.github.com";
      const permissions = Object.entries(app.APP_PERMISSIONS).map(
        ([permission, { access, why }]) => `  ${permission.padEnd(15)} ${access.padEnd(6)} ${why}`,
      );
      const events = Object.entries(app.APP_EVENTS).map(
        ([event, why]) => `  ${event.padEnd(23)} ${why}`,
      );
      context.stdout.write(
        [
          `Mainline as a GitHub App (${webUrl}), in five steps. docs/github.md says more.`,
          "",
          `1. Register the App${options.githubOrg ? ` under the GitHub organization ${options.githubOrg}` : " (add --github-org <login> to register it under a GitHub organization)"}: open`,
          "",
          `   ${app.registrationUrl(webUrl, manifest, options.githubOrg)}`,
          "",
          "   GitHub's form opens filled in with the name, homepage, webhook URL, permissions and",
          `   events below. Type a webhook secret in it (make one with: openssl rand -hex 32), keep`,
          "   it, and create the App.",
          ghes
            ? `   (GitHub Enterprise Server, from MAINLINE_GITHUB_API_URL ${apiUrl}.)`
            : "   (GitHub Enterprise Server: set MAINLINE_GITHUB_API_URL=https://HOST/api/v3 first.)",
          "2. On the App's settings page, note its App ID and generate a private key (a .pem",
          "   file is downloaded).",
          "3. Give mainline serve these, and restart it:",
          "",
          "   MAINLINE_GITHUB_APP_ID=<the App ID>",
          "   MAINLINE_GITHUB_PRIVATE_KEY=/path/to/the-downloaded.pem   (or the PEM text itself)",
          "   MAINLINE_GITHUB_WEBHOOK_SECRET=<the secret of step 1>",
          ghes
            ? `   MAINLINE_GITHUB_API_URL=${apiUrl}`
            : "   MAINLINE_GITHUB_API_URL=https://HOST/api/v3                (GitHub Enterprise Server only)",
          "",
          '   For "Sign in with GitHub" on the dashboard (optional), also the App\'s Client ID and a',
          "   client secret generated on its settings page:",
          "",
          "   MAINLINE_GITHUB_CLIENT_ID=<the Client ID, Iv…>",
          "   MAINLINE_GITHUB_CLIENT_SECRET=<the client secret>",
          `   (its callback URL, already in the form: ${app.signInCallbackUrl(publicUrl)})`,
          "",
          `4. Install the App ("Install App" on its settings page) on the accounts whose`,
          "   repositories Mainline serves: all their repositories, or selected ones.",
          "5. Link each installation to a Mainline organization. As the operator:",
          "",
          "   mainline github installations                  # shows each installation's id",
          "   mainline github link --installation <id> --org <slug>",
          "",
          "   or by the organization itself, with a GitHub token of an owner of the account:",
          "",
          `   curl -H "x-api-token: $MAINLINE_TOKEN" -H "content-type: application/json" \\`,
          `     -d '{"installationId": <id>, "githubToken": "'"$(gh auth token)"'"}' \\`,
          `     ${publicUrl}/v1/github/linkInstallation`,
          "",
          "   Its repositories are then the organization's: queues, uploads and the API find them.",
          "",
          "Permissions:",
          ...permissions,
          "",
          `Events (GitHub also sends ${app.ALWAYS_DELIVERED_EVENTS.join(" and ")} to every App):`,
          ...events,
          "",
          `Webhook URL: ${app.webhookUrl(publicUrl)}`,
          "",
          "The App manifest (GitHub's format; --json prints it alone):",
          JSON.stringify(manifest, null, 2),
          "",
        ].join("\n"),
      );
    });
}

/** `mainline github installations`: each installation and its organization. */
function registerInstallations(github: Command, context: CliContext): void {
  github
    .command("installations")
    .description("List the App's installations (read from GitHub first) and what each is linked to")
    .option("--json", "print JSON")
    .action(async (options: { json?: boolean }) => {
      const views = await withGitHub(context, async (provider) => {
        try {
          await provider.installations.syncAll(0);
        } catch (error) {
          context.stderr.write(
            `mainline: GitHub could not be read (${(error as Error).message}); showing what is stored.\n`,
          );
        }
        return provider.installations.listAll();
      });
      if (options.json) {
        context.stdout.write(`${JSON.stringify(views.map(asJson))}\n`);
        return;
      }
      context.stdout.write(
        formatTable([
          ["INSTALLATION", "ACCOUNT", "TYPE", "ORGANIZATION", "STATE", "REPOSITORIES"],
          ...views.map((view) => [
            String(view.installation.id),
            view.installation.accountLogin,
            view.installation.accountType,
            view.organizationSlug ?? "(not linked)",
            state(view),
            String(view.repositories.filter((repo) => repo.removedAt === null).length),
          ]),
        ]),
      );
    });
}

/** `mainline github link`: an installation's repositories become an organization's. */
function registerLink(github: Command, context: CliContext): void {
  github
    .command("link")
    .description(
      "Link an installation to an organization: its repositories become the organization's",
    )
    .requiredOption(
      "--installation <id>",
      "the installation's id (see mainline github installations)",
    )
    .requiredOption("--org <slug>", "the Mainline organization")
    .action(async (options: { installation: string; org: string }) => {
      const id = installationId(options.installation);
      const view = await withGitHub(context, (provider) =>
        provider.installations.linkAsOperator(id, options.org),
      );
      context.stderr.write(`Linked ${describe(view)} to ${options.org}.\n`);
    });
}

/** `mainline github unlink`: an installation leaves its organization. */
function registerUnlink(github: Command, context: CliContext): void {
  github
    .command("unlink")
    .description(
      "Unlink an installation: its repositories stop being usable by the queue (data kept)",
    )
    .requiredOption("--installation <id>", "the installation's id")
    .action(async (options: { installation: string }) => {
      const id = installationId(options.installation);
      const from = await withGitHub(context, (provider) =>
        provider.installations.unlinkAsOperator(id),
      );
      context.stderr.write(`Unlinked installation ${id} from ${from}.\n`);
    });
}
