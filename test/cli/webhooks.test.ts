/**
 * `mainline webhooks` against a real `mainline serve`: add (the secret printed once), list, test,
 * deliveries with their attempts, resend, remove; a refused URL is a clear error.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCliInProcess, type RunningServer } from "../helpers/process.js";
import { failed, serveBootstrapped, succeeded, type BootstrappedServer } from "./support.js";

let running: BootstrappedServer;
let server: RunningServer;
let auth: string[];

beforeAll(async () => {
  running = await serveBootstrapped();
  server = running.server;
  auth = ["--url", server.url, "--token", running.token];
});
afterAll(() => running.close());

const cli = (...args: string[]) => runCliInProcess(["webhooks", ...args, ...auth]);

describe("mainline webhooks", () => {
  it("adds, lists, tests, shows deliveries, resends and removes an endpoint", async () => {
    // An address nobody answers at: the deliveries fail, and say so.
    const added = succeeded(
      await cli("add", "https://hooks.invalid/mainline", "--event", "pull_request.failed"),
    );
    const [endpointId, secretLine] = added.stdout.trim().split("\n");
    expect(endpointId).toMatch(/^we_/);
    expect(secretLine).toMatch(/^secret: whsec_/);

    const listed = succeeded(await cli("list"));
    expect(listed.stdout).toContain(endpointId);
    expect(listed.stdout).toContain("pull_request.failed");
    expect(listed.stdout).not.toContain("whsec_");

    const sent = succeeded(await cli("test", endpointId ?? ""));
    const [eventId] = sent.stdout.trim().split(" ");
    expect(eventId).toMatch(/^msg_/);

    let deliveries: { eventId: string; attempts: { error: string | null }[] }[] = [];
    for (let i = 0; i < 100 && !deliveries[0]?.attempts.length; i++) {
      const json = succeeded(await cli("deliveries", "--endpoint", endpointId ?? "", "--json"));
      deliveries = (JSON.parse(json.stdout) as { deliveries: typeof deliveries }).deliveries;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(deliveries[0]?.eventId).toBe(eventId);
    expect(deliveries[0]?.attempts[0]?.error).toBeTruthy();
    const table = succeeded(await cli("deliveries"));
    expect(table.stdout).toMatch(/mainline\.ping/);

    const resent = succeeded(await cli("resend", eventId ?? "", endpointId ?? ""));
    expect(resent.stdout.trim()).toMatch(/^dlv_/);
    const twice = succeeded(await cli("deliveries", "--event", eventId ?? "", "--json"));
    expect((JSON.parse(twice.stdout) as { deliveries: unknown[] }).deliveries).toHaveLength(2);

    succeeded(await cli("remove", endpointId ?? ""));
    const empty = succeeded(await cli("list"));
    expect(empty.stderr).toContain("No endpoints.");
    expect(failed(await cli("remove", endpointId ?? ""))).toMatch(/No webhook endpoint/);
  });

  it("refuses an internal address with the API's reason", async () => {
    const message = failed(await cli("add", "http://10.0.0.1/hook"));
    expect(message).toMatch(/loopback, private or link-local/);
  });
});
