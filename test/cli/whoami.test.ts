import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestDatabase } from "../helpers/database.js";
import { freePort, runCliInProcess, type RunningServer } from "../helpers/process.js";
import { failed, serveBootstrapped, succeeded, type BootstrappedServer } from "./support.js";

let running: BootstrappedServer;
let database: TestDatabase;
let server: RunningServer;
let TOKEN: string;

beforeAll(async () => {
  running = await serveBootstrapped();
  ({ database, server, token: TOKEN } = running);
});
afterAll(() => running.close());

/** The organization's tokens as `mainline token list --json` shows them (on the database). */
async function tokens(): Promise<{ id: string; name: string | null }[]> {
  const listed = succeeded(
    await runCliInProcess(["token", "list", "--org", "acme", "--json"], database.env),
  );
  return JSON.parse(listed.stdout) as { id: string; name: string | null }[];
}

describe("mainline whoami", () => {
  it("shows the server, the organization, the token's id and scope; never the token", async () => {
    const [bootstrap] = await tokens();
    const result = succeeded(
      await runCliInProcess(["whoami", "--url", server.url, "--token", TOKEN]),
    );
    expect(result.stdout).toMatch(new RegExp(`^url +${server.url} \\(from --url\\)$`, "m"));
    expect(result.stdout).toMatch(/^organization +acme$/m);
    expect(result.stdout).toMatch(
      new RegExp(`^token +${bootstrap?.id ?? "?"} \\(${TOKEN.slice(0, 8)}…, from --token\\)$`, "m"),
    );
    expect(result.stdout).toMatch(/^scope +the organization's whole API/m);
    expect(result.stdout + result.stderr).not.toContain(TOKEN);
  });

  it("says where the URL and token came from: MAINLINE_URL and MAINLINE_TOKEN; --json", async () => {
    const created = succeeded(
      await runCliInProcess(["token", "create", "--org", "acme", "--name", "ci"], database.env),
    );
    const token = created.stdout.trim();
    const ci = (await tokens()).find((t) => t.name === "ci");
    const env = { MAINLINE_URL: server.url, MAINLINE_TOKEN: token };
    const text = succeeded(await runCliInProcess(["whoami"], env));
    expect(text.stdout).toMatch(new RegExp(`^url +${server.url} \\(from MAINLINE_URL\\)$`, "m"));
    expect(text.stdout).toMatch(
      new RegExp(`^token +${ci?.id ?? "?"} .*from MAINLINE_TOKEN\\)$`, "m"),
    );

    const json = succeeded(await runCliInProcess(["whoami", "--json"], env));
    expect(JSON.parse(json.stdout)).toEqual({
      url: server.url,
      organization: "acme",
      tokenId: ci?.id,
      tokenHint: `${token.slice(0, 8)}…`,
      scope: expect.stringMatching(/^the organization's whole API/) as unknown,
    });
    expect(json.stdout + text.stdout).not.toContain(token);
  });

  it("not logged in (no token): a clear error naming what to set", async () => {
    const stderr = failed(await runCliInProcess(["whoami"], { MAINLINE_URL: server.url }));
    expect(stderr).toContain(
      `mainline: Not logged in: no API token for ${server.url}. Pass --token or set MAINLINE_TOKEN`,
    );
  });

  it("a token the server rejects (unknown, revoked): a clear error, never the token", async () => {
    const unknown = `mlt_${randomBytes(32).toString("base64url")}`;
    const stderr = failed(
      await runCliInProcess(["whoami", "--url", server.url, "--token", unknown]),
    );
    expect(stderr).toContain(`mainline: ${server.url} rejected the API token`);
    expect(stderr).toContain("The API token is not valid or has been revoked.");
    expect(stderr).not.toContain(unknown);

    const created = succeeded(
      await runCliInProcess(["token", "create", "--org", "acme", "--name", "gone"], database.env),
    );
    const revokedToken = created.stdout.trim();
    const gone = (await tokens()).find((t) => t.name === "gone");
    succeeded(await runCliInProcess(["token", "revoke", gone?.id ?? ""], database.env));
    const revoked = failed(
      await runCliInProcess(["whoami"], { MAINLINE_URL: server.url, MAINLINE_TOKEN: revokedToken }),
    );
    expect(revoked).toContain("rejected the API token");
    expect(revoked).toContain("(from MAINLINE_TOKEN)");
    expect(revoked).not.toContain(revokedToken);
  });

  it("no server at the address: 'Cannot reach Mainline'", async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const stderr = failed(await runCliInProcess(["whoami", "--url", url, "--token", TOKEN]));
    expect(stderr).toContain(`mainline: Cannot reach Mainline at ${url}`);
  });
});
