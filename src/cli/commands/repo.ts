import { Option, type Command } from "commander";
import { repositoryName, type RepoRef } from "../../organizations/repositories.js";
import { CliError, callApi, type ClientOptions } from "../client.js";
import { spawnInContext, type CliContext } from "../context.js";
import { parseLocalRepoArg, parseRepoArg } from "../repo-arg.js";
import { whoami } from "../upload/protocol.js";

/** --url and --token, as every remote command takes them. */
export function serverOptions(command: Command): Command {
  return command
    .addOption(
      new Option("--url <url>", "Mainline's address")
        .env("MAINLINE_URL")
        .default("http://127.0.0.1:8080"),
    )
    .addOption(new Option("--token <token>", "API token").env("MAINLINE_TOKEN"));
}

/** Pushes every branch and tag of the repository at `from` to `remote`. */
function pushEverything(context: CliContext, from: string, remote: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawnInContext(
      context,
      "git",
      [
        "-C",
        from,
        "push",
        "--quiet",
        remote,
        "refs/heads/*:refs/heads/*",
        "refs/tags/*:refs/tags/*",
      ],
      { stdin: "ignore" },
    );
    child.on("error", reject);
    child.on("close", (code) => {
      if (code === 0) resolve();
      else reject(new CliError(`git push from ${from} failed (exit code ${String(code)})`));
    });
  });
}

export function registerRepoCommands(program: Command, context: CliContext): void {
  const repo = program
    .command("repo")
    .description(
      "Repositories: on Mainline's local git host, and public ids for uploads from forks (through the HTTP API)",
    );

  serverOptions(
    repo
      .command("create")
      .description("Create a bare repository on the local git host and print the path to push to"),
  )
    .argument("<owner/name>", "the repository, e.g. acme/app", parseLocalRepoArg)
    .option("--from <path>", "seed it with every branch and tag of this git repository")
    .action(async (ref: RepoRef, o: ClientOptions & { from?: string }) => {
      const { remoteUrl } = await callApi<{ remoteUrl: string }>(o, "local/createRepository", {
        repo: ref,
      });
      if (o.from !== undefined) await pushEverything(context, o.from, remoteUrl);
      context.stdout.write(`${remoteUrl}\n`);
      context.stderr.write(
        `Created ${repositoryName(ref)}${o.from === undefined ? "" : ` from ${o.from}`}. Push to it with: git push ${remoteUrl} <branch>\n`,
      );
    });

  serverOptions(
    repo
      .command("public-id")
      .description(
        "Print the repository's public id (Trunk's --public-repo-id): it lets CI of pull requests from forks, which has no token, upload test results for this repository and nothing else",
      ),
  )
    .argument(
      "<repo>",
      "host/owner/name (github.com/acme/app), or owner/name on the local git host",
      parseRepoArg,
    )
    .option("--rotate", "replace it with a new one; the old one stops working at once")
    .action(async (ref: RepoRef, o: ClientOptions & { rotate?: boolean }) => {
      const org = await whoami(o);
      const operation = o.rotate ? "rotate-public-repo-id" : "get-public-repo-id";
      const answer = await callApi<{ public_repo_id: string }>(o, `flaky-tests/${operation}`, {
        repo: ref,
        org_url_slug: org,
      });
      context.stdout.write(`${answer.public_repo_id}\n`);
      if (o.rotate) {
        context.stderr.write(
          `New public id for ${repositoryName(ref)}; the previous one no longer works.\n`,
        );
      }
    });
}
