/**
 * Recorded real payloads (@octokit/webhooks-examples, contributed from GitHub's deliveries) of
 * every event the connection reads: each is taken by the receiver of a real server (signed as
 * GitHub signs) and stored with its event, action and installation, then handled without a
 * failure; and each goes through the connection's handlers, which read from it what GitHub
 * puts there (the installation to sync, the pull request's number, the pushed branch).
 */
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HostChange } from "../../src/mergequeue/host-changes.js";
import { registerConnectionHandlers } from "../../src/providers/github/webhooks/handlers.js";
import { WebhookHandlers } from "../../src/providers/github/webhooks/registry.js";
import {
  settle,
  startGitHubServer,
  startGitHubWorld,
  type GitHubWorld,
} from "../helpers/github.js";
import type { TestServer } from "../helpers/server.js";

interface Example {
  action?: string;
  installation?: { id: number };
  repository?: { id: number; name: string; owner: { login: string } };
  number?: number;
  pull_request?: { number: number };
  ref?: string;
}
interface Definition {
  name: string;
  examples: Example[];
}

const EVENTS = [
  "installation",
  "installation_repositories",
  "repository",
  "pull_request",
  "push",
  "ping",
];
const require = createRequire(import.meta.url);
const definitions = JSON.parse(
  readFileSync(require.resolve("@octokit/webhooks-examples"), "utf8"),
) as Definition[];
const examples = definitions
  .filter((definition) => EVENTS.includes(definition.name))
  .flatMap((definition) =>
    definition.examples.map((payload, index) => ({ event: definition.name, index, payload })),
  );

let world: GitHubWorld;
let server: TestServer;

beforeAll(async () => {
  world = await startGitHubWorld();
  server = await startGitHubServer(world);
}, 30_000);

afterAll(async () => {
  await server.close();
  await world.gh.close();
});

describe("recorded payloads of GitHub's webhooks", () => {
  it("cover every event the connection reads", () => {
    expect([...new Set(examples.map((e) => e.event))].sort()).toEqual([...EVENTS].sort());
    expect(examples.length).toBeGreaterThan(50);
  });

  it("are stored by the receiver with their event, action and installation, and handled", async () => {
    for (const { event, index, payload } of examples) {
      const body = JSON.stringify(payload);
      const answer = await server.request("/webhooks/github", {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-github-event": event,
          "x-github-delivery": `example-${event}-${index}`,
          "x-hub-signature-256": `sha256=${createHmac("sha256", world.app.webhookSecret).update(body).digest("hex")}`,
        },
        body,
      });
      expect(answer.status, `${event} #${index}: ${answer.text}`).toBe(202);
    }
    await settle(world, server);
    const rows = await server.database.handle.db
      .selectFrom("webhookDeliveries")
      .select(["deliveryId", "event", "action", "installationId", "state", "error"])
      .execute();
    expect(rows).toHaveLength(examples.length);
    for (const { event, index, payload } of examples) {
      const row = rows.find((r) => r.deliveryId === `example-${event}-${index}`);
      expect(row, `${event} #${index}`).toMatchObject({
        event,
        action: payload.action ?? null,
        installationId: payload.installation?.id ?? null,
        // None failed: no handler read a field GitHub does not send. (Their installations are
        // not the App's here, so they end there.)
        state: "processed",
        error: null,
      });
    }
  }, 60_000);

  it("give the connection's handlers what they read: the installation, the number, the branch", async () => {
    const handlers = new WebhookHandlers();
    const synced: number[] = [];
    const changes: HostChange[] = [];
    registerConnectionHandlers(handlers, {
      installations: {
        sync: (id) => {
          synced.push(id);
          return Promise.resolve(undefined);
        },
      },
      store: { findRepository: () => Promise.resolve(undefined) },
      changes: {
        apply: (change) => {
          changes.push(change);
          return Promise.resolve();
        },
      },
    });
    const repo = { organizationId: "org", host: "github.com", owner: "o", name: "r" };
    for (const { event, payload } of examples) {
      const action = payload.action ?? null;
      synced.length = 0;
      changes.length = 0;
      const delivery = {
        id: "d",
        name: event,
        event,
        action,
        payload,
        installationId: payload.installation?.id ?? null,
      };
      for (const handler of handlers.installationHandlers(event, action)) await handler(delivery);
      const scoped = {
        ...delivery,
        installation: {} as never,
        organizationId: "org",
        repository: payload.repository ? repo : undefined,
        client: {} as never,
      };
      for (const handler of handlers.organizationHandlers(event, action)) await handler(scoped);

      if (event === "installation" || event === "installation_repositories") {
        expect(synced).toEqual([payload.installation?.id]);
      } else if (event === "repository") {
        expect(synced).toEqual(payload.installation ? [payload.installation.id] : []);
      } else if (event === "pull_request") {
        expect(changes).toEqual([
          { type: "pull_request_changed", repo, number: payload.pull_request?.number },
        ]);
        expect(payload.pull_request?.number).toBe(payload.number);
      } else if (event === "push") {
        const ref = payload.ref ?? "";
        expect(changes).toEqual(
          ref.startsWith("refs/heads/")
            ? [
                {
                  type: "branch_moved",
                  repo,
                  branch: ref.slice("refs/heads/".length),
                  // Where the push says the branch went: GitHub's recorded `after`.
                  headSha: (payload as { after?: string }).after,
                  pullRequests: [],
                },
              ]
            : [],
        );
      } else {
        expect([synced, changes]).toEqual([[], []]);
      }
    }
  });
});
