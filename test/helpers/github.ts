/**
 * Mainline against the fake GitHub (test/helpers/fake-github/): the fake with Mainline's App
 * registered on it, the App's configuration as `mainline serve` reads it from its environment,
 * and a server (in-process or a real process) that GitHub delivers the App's webhooks to.
 */
import { loadGitHubConfig, type GitHubAppConfig } from "../../src/config.js";
import { gitHubAppEnv } from "./fake-github/app-env.js";
import { FakeGitHub, type CreatedApp } from "./fake-github/index.js";
import { startTestServer, type TestServer } from "./server.js";
import type { ServiceOptions } from "../../src/app.js";

export interface GitHubWorld {
  gh: FakeGitHub;
  app: CreatedApp;
  /** What `mainline serve` is given (MAINLINE_GITHUB_*), pointing at the fake. */
  env: Record<string, string>;
  config: GitHubAppConfig;
}

/** The fake GitHub with Mainline's App on it (no installation yet). */
export async function startGitHubWorld(
  options: Parameters<typeof FakeGitHub.start>[0] = {},
): Promise<GitHubWorld> {
  const gh = await FakeGitHub.start({ seed: 7, ...options });
  const app = gh.createApp({ slug: "mainline" });
  const env = {
    ...gitHubAppEnv(gh.url, app),
    // GitHub's one write a second is a courtesy to GitHub; the fake needs none.
    MAINLINE_GITHUB_WRITE_INTERVAL_MS: "0",
  };
  const config = loadGitHubConfig(env);
  if (!config) throw new Error("the GitHub configuration did not load");
  return { gh, app, env, config };
}

/** A server with the App, its webhooks pointed at it by the fake. */
export async function startGitHubServer(
  world: GitHubWorld,
  options: Omit<ServiceOptions, "dataDir" | "github"> & { org?: string } = {},
): Promise<TestServer> {
  const server = await startTestServer({
    githubSyncIntervalMs: 0,
    // Reconcile passes only when a test asks (they would add changes to what tests count).
    githubReconcileIntervalMs: 0,
    ...options,
    github: world.config,
    githubInbox: { pollIntervalMs: 50, ...options.githubInbox },
  });
  world.gh.setWebhookUrls(world.app.id, [`${server.url}/webhooks/github`]);
  // The sync at start is done: what the test does next is the only change.
  await server.services.github?.synced();
  return server;
}

/**
 * Waits until the fake's deliveries are answered, the server's inbox has handled them and the
 * merge queue has applied the commands they made (reads show those before, as acknowledged).
 */
export async function settle(world: GitHubWorld, server: TestServer): Promise<void> {
  await world.gh.settleWebhooks();
  await server.services.github?.inbox.idle();
  await server.services.github?.synced();
  await server.services.engine.idle();
}
