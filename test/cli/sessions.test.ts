import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCliInProcess, type CliResult } from "../helpers/process.js";
import { createTestApp, type TestApp } from "../helpers/app.js";
import { inject, signIn } from "../helpers/dashboard.js";
import { failed, succeeded } from "./support.js";

/**
 * `mainline session list|revoke`: an operator sees an organization's dashboard sessions (never a
 * session id or token) and ends one; the browser holding it is signed out at once.
 */

let server: TestApp;

beforeAll(async () => {
  server = await createTestApp();
});

afterAll(async () => {
  await server.close();
});

const cli = (...args: string[]): Promise<CliResult> => runCliInProcess(args, server.database.env);

interface ListedSession {
  id: string;
  state: string;
  tokenId: string;
  tokenName: string | null;
  createdAt: string;
  lastSeenAt: string;
  expiresAt: string;
  revokedAt: string | null;
}

describe("mainline session", () => {
  it("lists an organization's sessions and revokes one", async () => {
    const laptop = await server.services.organizations.issueToken("acme", "laptop");
    const first = await signIn(server.app, laptop.token);
    const second = await signIn(server.app, server.token);
    const other = await server.services.organizations.createOrganizationWithToken("globex");
    const theirs = await signIn(server.app, other.token);

    const listed = JSON.parse(
      succeeded(await cli("session", "list", "--org", "acme", "--json")).stdout,
    ) as ListedSession[];
    expect(listed).toHaveLength(2);
    expect(listed.map((s) => s.state)).toEqual(["active", "active"]);
    expect(new Set(listed.map((s) => s.tokenName))).toEqual(new Set([null, "laptop"]));
    const text = JSON.stringify(listed);
    for (const secret of [first.sessionId, second.sessionId, laptop.token, server.token]) {
      expect(text).not.toContain(secret);
    }
    const table = succeeded(await cli("session", "list", "--org", "acme")).stdout;
    expect(table).toMatch(/^ID\s+STATE\s+TOKEN\s+CREATED\s+LAST SEEN\s+EXPIRES/);
    expect(table).toContain(`${laptop.tokenId} (laptop)`);

    const target = listed.find((s) => s.tokenName === "laptop");
    // Another organization's session is not the operator's to name under this one.
    const globexSession = (await server.services.sessions.list("globex"))[0]?.id ?? "";
    expect(failed(await cli("session", "revoke", globexSession, "--org", "acme"))).toContain(
      `No session ${globexSession} in organization "acme".`,
    );
    expect((await inject(server.app, { path: "/globex", cookie: theirs.cookie })).status).toBe(200);

    const revoked = succeeded(await cli("session", "revoke", target?.id ?? "", "--org", "acme"));
    expect(revoked.stderr).toContain(`Revoked ${target?.id ?? ""}`);
    expect((await inject(server.app, { path: "/acme", cookie: first.cookie })).status).toBe(303);
    expect((await inject(server.app, { path: "/acme", cookie: second.cookie })).status).toBe(200);
    const after = JSON.parse(
      succeeded(await cli("session", "list", "--org", "acme", "--json")).stdout,
    ) as ListedSession[];
    expect(after.find((s) => s.id === target?.id)?.state).toBe("revoked");
    expect(failed(await cli("session", "list", "--org", "nope"))).toContain(
      'No organization with slug "nope".',
    );
  });
});
