/**
 * Mainline against the fake GitLab (test/helpers/fake-gitlab/): the fake, the instance's
 * configuration as `mainline serve` reads it from its environment, a server (in-process) whose
 * organization is connected with a project access token, and the project's webhook pointed at it.
 */
import { loadGitLabConfig, type GitLabConfig } from "../../src/app/gitlab-config.js";
import type { ServiceOptions } from "../../src/app.js";
import { FakeGitLab } from "./fake-gitlab/index.js";
import { startTestServer, type TestServer } from "./server.js";

/** The host GitLab repositories carry in tests (the fake listens on 127.0.0.1). */
export const GITLAB_HOST = "gitlab.example.com";

export interface GitLabWorld {
  gl: FakeGitLab;
  /** What `mainline serve` is given (MAINLINE_GITLAB_*), pointing at the fake. */
  env: Record<string, string>;
  config: GitLabConfig;
}

export async function startGitLabWorld(
  options: Parameters<typeof FakeGitLab.start>[0] = {},
): Promise<GitLabWorld> {
  const gl = await FakeGitLab.start({ seed: 7, ...options });
  const env = {
    MAINLINE_GITLAB_URL: gl.url,
    MAINLINE_GITLAB_HOST: GITLAB_HOST,
    // Retries spaced for GitLab.com are for GitLab.com; the fake needs none.
    MAINLINE_GITLAB_RETRY_BASE_MS: "0",
    MAINLINE_GITLAB_CI_POLL_SECONDS: "1",
  };
  const config = loadGitLabConfig(env);
  if (!config) throw new Error("the GitLab configuration did not load");
  return { gl, env, config };
}

export async function startGitLabServer(
  world: GitLabWorld,
  options: Omit<ServiceOptions, "dataDir" | "gitlab"> & { org?: string } = {},
): Promise<TestServer> {
  return startTestServer({
    ...options,
    // Reconcile passes only when a test asks (they would add reads to what tests count).
    gitlab: { ...world.config, reconcileIntervalMs: 0 },
    gitlabInbox: { pollIntervalMs: 50, ...options.gitlabInbox },
    gitlabGitHost: { mergeabilityWaitMs: 20, retryDelayMs: 10, ...options.gitlabGitHost },
  });
}

interface ConnectionAnswer {
  connection: { webhook: { path: string; secret: string } };
}

/**
 * Connects the server's organization with `token` and adds the project's webhook to the server
 * by hand, as a Maintainer does when Mainline has no public address.
 */
export async function connectProject(
  world: GitLabWorld,
  server: TestServer,
  project: string,
  token: string,
): Promise<{ hookId: number; secret: string }> {
  const answer = await server.call<ConnectionAnswer>("gitlab/connect", { token });
  if (answer.status !== 200) throw new Error(`connect: ${String(answer.status)} ${answer.text}`);
  const { path, secret } = answer.body.connection.webhook;
  const hookId = world.gl.addHook(project, {
    url: `${server.url}${path}`,
    token: secret,
    events: ["push", "merge_requests", "note", "pipeline"],
  });
  return { hookId, secret };
}

/** Waits until the fake's pushes, pipelines and deliveries are done and the server handled them. */
export async function settleGitLab(world: GitLabWorld, server: TestServer): Promise<void> {
  await world.gl.settle();
  await server.services.gitlab?.inbox.idle();
  await server.services.engine.idle();
}

/** A submission as getSubmittedPullRequest shows it (with its timeline). */
export interface SubmittedItem {
  state: string;
  timeline?: { reason: string; toState?: string; detail?: string | null }[];
}

/**
 * Merge requests of one project and its queue: open one on a new branch off the target, and read
 * what the queue says of it.
 */
export function mergeRequestsOf(
  get: () => { world: GitLabWorld; server: TestServer },
  project: string,
  queue: { repo: { host: string; owner: string; name: string }; targetBranch: string },
  prefix = "change",
) {
  let branches = 0;
  const item = async (number: number): Promise<SubmittedItem | undefined> => {
    const answer = await get().server.call<SubmittedItem>("getSubmittedPullRequest", {
      ...queue,
      pr: { number },
      includeTimeline: true,
    });
    return answer.status === 200 ? answer.body : undefined;
  };
  return {
    async open(files: Record<string, string>, author = "alice"): Promise<number> {
      const branch = `${prefix}-${String((branches += 1))}`;
      const { gl } = get().world;
      await gl.commit(project, branch, files, { author, from: queue.targetBranch });
      const { iid } = await gl.createMergeRequest({
        project,
        sourceBranch: branch,
        targetBranch: queue.targetBranch,
        title: `${prefix} ${String(branches)}`,
        author,
      });
      return iid;
    },
    async submit(number: number): Promise<void> {
      const answer = await get().server.call("submitPullRequest", { ...queue, pr: { number } });
      if (answer.status !== 200) throw new Error(`submit: ${String(answer.status)} ${answer.text}`);
    },
    item,
    async state(number: number): Promise<string | undefined> {
      return (await item(number))?.state;
    },
    /** The submission once it concluded (merged, failed or cancelled). */
    async settled(number: number, timeout = 90_000): Promise<SubmittedItem> {
      const deadline = Date.now() + timeout;
      for (;;) {
        const now = await item(number);
        if (now && /^(merged|failed|cancelled)$/.test(now.state)) return now;
        if (Date.now() > deadline) throw new Error(`!${String(number)} is still ${now?.state}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    },
  };
}

/** A check that fails when a text file at the root says "bad". */
export const FAILS_ON_BAD = `"! grep -l bad *.txt 2>/dev/null | grep -q ."`;

/** A `.gitlab-ci.yml` whose one job runs `script` on the queue's test branches only. */
export function testBranchPipeline(...script: string[]): string {
  return `workflow:
  rules:
    - if: $CI_COMMIT_BRANCH =~ /^trunk-merge\\//
test:
  script:
${script.map((line) => `    - ${line}`).join("\n")}
`;
}

/** Mainline's OAuth application on the fake, before the server's address is known. */
export function createMainlineOAuthApp(gl: FakeGitLab): { applicationId: string; secret: string } {
  return gl.createOAuthApplication({
    name: "Mainline",
    redirectUri: "https://mainline.invalid/gitlab/oauth/callback",
    scopes: ["api", "write_repository"],
  });
}

/**
 * GitLab's side of an authorization: `as` (signed in, by the fake's session cookie) opens the
 * authorize address and approves it (or denies it); the callback address GitLab sends them to.
 */
export async function approveOnGitLab(
  gl: FakeGitLab,
  url: string,
  options: { as?: string; deny?: boolean } = {},
): Promise<string> {
  const address = new URL(url);
  if (options.deny === true) address.searchParams.set("fake_decision", "deny");
  const answer = await fetch(address, {
    redirect: "manual",
    headers: { cookie: gl.browserCookie(options.as ?? "mainline-bot") },
  });
  if (answer.status !== 302) throw new Error(`authorize: ${String(answer.status)}`);
  return answer.headers.get("location") ?? "";
}
