/**
 * What the GitHub benchmarks share: a repository `acme/widgets` on the fake GitHub whose CI passes
 * every push to `trunk-merge/**` at once, good pull requests that each change their own file, and
 * a `mainline serve` with the App configured against the fake, installed, linked and given a queue.
 */
import type { FakeGitHub } from "../../test/helpers/fake-github/index.js";
import { gitHubAppEnv } from "../../test/helpers/fake-github/app-env.js";
import { Api } from "./api.js";
import { startServer, type RunningServer } from "./server.js";

export const OWNER = "acme";
export const NAME = "widgets";
export const QUEUE = {
  repo: { host: "github.com", owner: OWNER, name: NAME },
  targetBranch: "main",
};

type FakeApp = ReturnType<FakeGitHub["createApp"]>;

/** The organization, its admin `alice` and the repository, whose CI check `ci` always passes. */
export async function prepareRepository(gh: FakeGitHub): Promise<void> {
  gh.createOrganization(OWNER);
  gh.createUser("alice");
  gh.addOrgMember(OWNER, "alice", "admin");
  await gh.createRepository({ owner: OWNER, name: NAME, files: { "README.md": "widgets\n" } });
  gh.configureCi(`${OWNER}/${NAME}`, [
    {
      name: "test",
      on: { push: { branches: ["trunk-merge/**"] } },
      checks: [{ name: "ci", outcome: "pass" }],
    },
  ]);
}

/** `count` pull requests that each add a file of their own, opened; their numbers. */
export async function openGoodPullRequests(gh: FakeGitHub, count: number): Promise<number[]> {
  const numbers: number[] = [];
  for (let k = 1; k <= count; k++) {
    const branch = `change-${String(k)}`;
    await gh.commit(`${OWNER}/${NAME}`, {
      branch,
      from: "main",
      files: { [`${branch}.txt`]: `change ${String(k)}\n` },
      by: "alice",
    });
    numbers.push(await gh.openPullRequest(`${OWNER}/${NAME}`, { head: branch, by: "alice" }));
  }
  await gh.settleWebhooks();
  return numbers;
}

/**
 * A server with the App against the fake GitHub, the App installed on `acme` and linked, and the
 * queue of `main` created with comments and status checks on and `settings` over them.
 */
export async function startLinkedServer(options: {
  gh: FakeGitHub;
  app: FakeApp;
  token: string;
  dataDir: string;
  settings: Record<string, unknown>;
  builtEntry?: string;
}): Promise<{ server: RunningServer; api: Api }> {
  const { gh, app, token } = options;
  const server = await startServer({
    token,
    dataDir: options.dataDir,
    ...(options.builtEntry === undefined ? {} : { builtEntry: options.builtEntry }),
    env: gitHubAppEnv(gh.url, app),
  });
  try {
    gh.setWebhookUrls(app.id, [`${server.baseUrl}/webhooks/github`]);
    const installationId = gh.installApp(app.id, { account: OWNER, repositories: "all" }).id;
    const api = new Api(server.baseUrl, token);
    await gh.settleWebhooks();
    await api.call("github/linkInstallation", {
      installationId,
      githubToken: gh.createUserToken("alice"),
    });
    await api.call("createQueue", QUEUE);
    await api.call("updateQueue", {
      ...QUEUE,
      commentsEnabled: true,
      statusCheckEnabled: true,
      testingTimeoutMinutes: 0,
      ...options.settings,
    });
    return { server, api };
  } catch (error) {
    await server.stop();
    throw error;
  }
}
