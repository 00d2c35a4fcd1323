/**
 * GitLab's webhooks at `/webhooks/gitlab/{key}`: the secret compared as GitLab sends it, 4xx only
 * for what a person must fix (GitLab disables a hook for good after a 4xx), a delivery stored once
 * however often GitLab sends it (`Idempotency-Key`), and a connection's address and secret kept
 * when its token is rotated.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGitLabServer, startGitLabWorld, type GitLabWorld } from "../helpers/gitlab.js";
import type { TestServer } from "../helpers/server.js";

const PROJECT = "hooks/app";
let world: GitLabWorld;
let server: TestServer;
let token: string;

interface Connection {
  connection: {
    username: string;
    scopes: string[];
    webhook: { url: string | null; path: string; secret: string; events: string[] };
  };
}

beforeAll(async () => {
  world = await startGitLabWorld();
  await world.gl.createProject({ path: PROJECT });
  token = world.gl.createProjectToken(PROJECT, { accessLevel: 40 }).token;
  server = await startGitLabServer(world);
}, 60_000);

afterAll(async () => {
  await server.close();
  await world.gl.close();
});

const push = {
  object_kind: "push",
  ref: "refs/heads/main",
  after: "a".repeat(40),
  project: { path_with_namespace: PROJECT },
};

async function deliver(path: string, headers: Record<string, string>, body: unknown) {
  return server.request(path, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

describe("GitLab's webhooks", () => {
  it("refuses a token GitLab refuses or that lacks a scope, and stores nothing", async () => {
    const refused = await server.call<{ error: { message: string } }>("gitlab/connect", {
      token: "glpat-unknown",
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/GitLab refused the token \(401\)/);
    const readOnly = world.gl.createProjectToken(PROJECT, {
      accessLevel: 40,
      scopes: ["read_api"],
    });
    const narrow = await server.call<{ error: { message: string } }>("gitlab/connect", {
      token: readOnly.token,
    });
    expect(narrow.status).toBe(400);
    expect(narrow.body.error.message).toMatch(/lacks the scopes api, write_repository/);
    expect((await server.call("gitlab/getConnection", {})).status).toBe(404);
  });

  it("says what the operator sets when no OAuth application is configured", async () => {
    const start = await server.call<{ error: { message: string } }>("gitlab/authorize", {});
    expect(start.status).toBe(409);
    expect(start.body.error.message).toMatch(/MAINLINE_GITLAB_OAUTH_CLIENT_ID/);
    const back = await fetch(`${server.url}/gitlab/oauth/callback?code=c&state=s`);
    expect(back.status).toBe(409);
    expect(await back.text()).toMatch(/no GitLab OAuth application/);
  });

  it("keys deliveries by Idempotency-Key and checks the secret in constant time", async () => {
    const first = await server.call<Connection>("gitlab/connect", { token });
    expect(first.status, first.text).toBe(200);
    const { path, secret, events } = first.body.connection.webhook;
    expect(first.body.connection.scopes).toEqual(["api", "write_repository"]);
    expect(events).toEqual([
      "push_events",
      "merge_requests_events",
      "note_events",
      "pipeline_events",
    ]);
    // The token is never shown back.
    expect(first.text).not.toContain(token);

    const unknown = await deliver(
      "/webhooks/gitlab/nosuchkey0000",
      { "x-gitlab-token": secret },
      push,
    );
    expect(unknown.status).toBe(404);
    const wrong = await deliver(path, { "x-gitlab-token": `${secret}x` }, push);
    expect(wrong.status).toBe(401);
    const missing = await deliver(path, {}, push);
    expect(missing.status).toBe(401);
    const notJson = await deliver(path, { "x-gitlab-token": secret }, "{not json");
    expect(notJson.status).toBe(400);

    const headers = {
      "x-gitlab-token": secret,
      "idempotency-key": "0b9a3f1e-1111-4c2e-9a55-aaaaaaaaaaaa",
    };
    const stored = await deliver(path, headers, push);
    expect(stored.status).toBe(202);
    expect(stored.body).toEqual({ accepted: true, duplicate: false });
    const again = await deliver(path, headers, push);
    expect(again.body).toEqual({ accepted: true, duplicate: true });

    // A new token (rotation): the same address and secret.
    const rotated = world.gl.createProjectToken(PROJECT, { accessLevel: 40 }).token;
    const second = await server.call<Connection>("gitlab/connect", { token: rotated });
    expect(second.status, second.text).toBe(200);
    expect(second.body.connection.webhook.path).toBe(path);
    expect(second.body.connection.webhook.secret).toBe(secret);
    expect(second.body.connection.username).not.toBe(first.body.connection.username);

    // Disconnected: the address is gone with it.
    expect((await server.call("gitlab/disconnect", {})).status).toBe(200);
    expect((await deliver(path, { "x-gitlab-token": secret }, push)).status).toBe(404);
    expect((await server.call("gitlab/disconnect", {})).status).toBe(404);
  });

  it("registers the project's hook itself at createQueue when it knows its address", async () => {
    const { gl } = world;
    await gl.createProject({ path: "hooks/registered" });
    await gl.createProject({ path: "hooks/developer" });
    const maintainer = gl.createProjectToken("hooks/registered", { accessLevel: 40 }).token;
    const public_ = await startGitLabServer(world, {
      org: "hooks",
      publicUrl: "https://mainline.example.com",
    });
    try {
      const connected = await public_.call<Connection>("gitlab/connect", { token: maintainer });
      expect(connected.status, connected.text).toBe(200);
      const { url, secret } = connected.body.connection.webhook;
      expect(url).toMatch(/^https:\/\/mainline\.example\.com\/webhooks\/gitlab\/[\w-]+$/);
      const repo = { host: "gitlab.example.com", owner: "hooks", name: "registered" };
      for (let k = 0; k < 2; k++) {
        const created = await public_.call("createQueue", {
          repo,
          targetBranch: k === 0 ? "main" : "release",
        });
        expect(created.status, created.text).toBe(200);
      }
      // One hook, however many queues: the events the queue needs, the secret GitLab will send.
      const hooks = [...gl.world.project("hooks/registered").hooks.values()];
      expect(hooks.map((hook) => hook.url)).toEqual([url]);
      expect(hooks[0]?.token).toBe(secret);
      expect(hooks[0]?.events).toMatchObject({
        push_events: true,
        merge_requests_events: true,
        note_events: true,
        pipeline_events: true,
      });
      // A token that may not add hooks (not a Maintainer there): the queue is made all the same,
      // and a Maintainer adds the hook from what getConnection shows.
      const developer = gl.createProjectToken("hooks/developer", { accessLevel: 30 }).token;
      expect((await public_.call("gitlab/connect", { token: developer })).status).toBe(200);
      const made = await public_.call("createQueue", {
        repo: { ...repo, name: "developer" },
        targetBranch: "main",
      });
      expect(made.status, made.text).toBe(200);
      expect(gl.world.project("hooks/developer").hooks.size).toBe(0);
    } finally {
      await public_.close();
    }
  });
});
