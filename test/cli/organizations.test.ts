import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import {
  runCliInProcess,
  startServer,
  stopAllProcesses,
  type CliResult,
  type RunningServer,
} from "../helpers/process.js";
import { TOKEN_PATTERN, whoami } from "./support.js";

let database: TestDatabase;
let server: RunningServer;

beforeAll(async () => {
  database = await createTestDatabase();
  // A bootstrap organization keeps the first-start `default` organization out of the listings.
  server = await startServer({
    ...database.env,
    MAINLINE_BOOTSTRAP_ORG: "ops",
    MAINLINE_BOOTSTRAP_TOKEN: "ops-token-0123456789abcdef0123456789",
  });
});

afterAll(async () => {
  await server.stop();
  await stopAllProcesses();
  await database.cleanup();
});

const cli = (...args: string[]): Promise<CliResult> => runCliInProcess(args, database.env);

/** The token a successful `org create` / `token create` printed: its one and only stdout line. */
function printedToken(result: CliResult): string {
  expect(result.stderr).not.toMatch(/^mainline: /m);
  expect(result.code).toBe(0);
  const lines = result.stdout.split("\n");
  expect(lines).toHaveLength(2);
  expect(lines[1]).toBe("");
  const token = lines[0] ?? "";
  expect(token).toMatch(TOKEN_PATTERN);
  return token;
}

interface ListedOrg {
  slug: string;
  createdAt: string;
}
interface ListedToken {
  id: string;
  name: string | null;
  hint: string;
  createdAt: string;
  revokedAt: string | null;
}

async function listOrgs(): Promise<ListedOrg[]> {
  const result = await cli("org", "list", "--json");
  expect(result.code).toBe(0);
  return JSON.parse(result.stdout) as ListedOrg[];
}

async function listTokens(org: string): Promise<{ json: ListedToken[]; result: CliResult }> {
  const result = await cli("token", "list", "--org", org, "--json");
  expect(result.code).toBe(0);
  return { json: JSON.parse(result.stdout) as ListedToken[], result };
}

describe("org create", () => {
  it("refuses an invalid slug clearly and creates nothing", async () => {
    const result = await cli("org", "create", "Bad_Slug");
    expect(result.code).not.toBe(0);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain('mainline: Invalid organization slug "Bad_Slug"');
    expect(result.stderr).toContain("lowercase letters, digits and dashes");
    // Only the bootstrap organization the server was started with.
    expect((await listOrgs()).map((o) => o.slug)).toEqual(["ops"]);
  });

  it("refuses a slug the server's own paths use (the dashboard's /{org} would be hidden)", async () => {
    for (const slug of ["docs", "v1", "assets", "sign-in"]) {
      const result = await cli("org", "create", slug);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain(`mainline: The organization slug "${slug}" is reserved`);
    }
    expect((await listOrgs()).map((o) => o.slug)).toEqual(["ops"]);
  });

  it("prints one token that authenticates as the new organization", async () => {
    const result = await cli("org", "create", "acme");
    const token = printedToken(result);
    expect(result.stderr).toContain("Created organization acme");
    expect(await whoami(server.url, token)).toBe("acme");
  });

  it("issues another, different, working token when the organization exists", async () => {
    const first = printedToken(await cli("org", "create", "repeat"));
    const again = await cli("org", "create", "repeat", "--name", "second");
    const second = printedToken(again);
    expect(again.stderr).toContain("Organization exists: repeat");
    expect(second).not.toBe(first);
    expect(await whoami(server.url, first)).toBe("repeat");
    expect(await whoami(server.url, second)).toBe("repeat");
    const { json } = await listTokens("repeat");
    expect(json.map((t) => t.name).sort()).toEqual([null, "second"].sort());
  });

  it("org list shows every organization, as a table and as JSON", async () => {
    printedToken(await cli("org", "create", "listed"));
    const [orgs, table] = await Promise.all([listOrgs(), cli("org", "list")]);
    const slugs = orgs.map((o) => o.slug);
    // The organizations of this describe block's earlier tests (they run in order), each once,
    // and no first-start `default` beside the bootstrap one.
    expect([...slugs].sort()).toEqual(["acme", "listed", "ops", "repeat"]);
    for (const org of orgs) {
      expect(org.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^SLUG\s+CREATED$/);
    expect(lines.slice(1).map((line) => line.split(/\s+/)[0])).toEqual(slugs);
  });
});

describe("token create / list / revoke", () => {
  let first: string;
  let second: string;
  let secondId: string;

  beforeAll(async () => {
    first = printedToken(await cli("org", "create", "tokens"));
    const created = await cli("token", "create", "--org", "tokens", "--name", "ci-bot");
    second = printedToken(created);
    secondId = /New token (tok_\w+) for tokens/.exec(created.stderr)?.[1] ?? "";
    expect(secondId).not.toBe("");
  });

  it("token create prints a token that works for that organization", async () => {
    expect(second).not.toBe(first);
    expect(await whoami(server.url, second)).toBe("tokens");
  });

  it("token list shows ids, names and hints, never a whole token", async () => {
    const [{ json, result }, table] = await Promise.all([
      listTokens("tokens"),
      cli("token", "list", "--org", "tokens"),
    ]);
    expect(json).toHaveLength(2);
    const byId = new Map(json.map((t) => [t.id, t]));
    expect(byId.get(secondId)).toMatchObject({
      name: "ci-bot",
      hint: `${second.slice(0, 8)}…`,
      revokedAt: null,
    });
    expect(json.map((t) => t.hint).sort()).toEqual(
      [`${first.slice(0, 8)}…`, `${second.slice(0, 8)}…`].sort(),
    );
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^ID\s+NAME\s+STARTS WITH\s+CREATED\s+STATUS$/);
    expect(lines).toHaveLength(3);
    const row = lines.find((line) => line.startsWith(secondId));
    expect(row).toContain("ci-bot");
    expect(row).toContain(`${second.slice(0, 8)}…`);
    expect(row).toMatch(/active$/);
    for (const output of [result.stdout, table.stdout]) {
      expect(output).not.toContain(first);
      expect(output).not.toContain(second);
      expect(output).not.toContain(second.slice(0, 12));
    }
  });

  it("token revoke stops that token at once; the other keeps working", async () => {
    const revoked = await cli("token", "revoke", secondId);
    expect(revoked.code).toBe(0);
    expect(revoked.stderr).toContain(`Revoked ${secondId}.`);
    expect(await whoami(server.url, second)).toBe(401);
    expect(await whoami(server.url, first)).toBe("tokens");
    const [{ json }, table] = await Promise.all([
      listTokens("tokens"),
      cli("token", "list", "--org", "tokens"),
    ]);
    expect(json.find((t) => t.id === secondId)?.revokedAt).toMatch(/Z$/);
    expect(json.filter((t) => t.revokedAt === null)).toHaveLength(1);
    expect(table.stdout.split("\n").find((line) => line.startsWith(secondId))).toMatch(
      /revoked \d{4}-\d\d-\d\dT[\d:.]+Z$/,
    );
  });

  it("revoking an unknown token id fails clearly", async () => {
    const result = await cli("token", "revoke", "tok_doesnotexist");
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("mainline: No token with id tok_doesnotexist.");
  });

  it("token create and list for a missing organization fail clearly", async () => {
    const [created, listed] = await Promise.all([
      cli("token", "create", "--org", "missing"),
      cli("token", "list", "--org", "missing"),
    ]);
    expect(created.code).not.toBe(0);
    expect(created.stdout).toBe("");
    expect(created.stderr).toContain('No organization with slug "missing"');
    expect(listed.code).not.toBe(0);
    expect(listed.stderr).toContain('No organization with slug "missing"');
    expect((await listOrgs()).map((o) => o.slug)).not.toContain("missing");
  });

  it("token create without --org is a usage error", async () => {
    const result = await cli("token", "create");
    expect(result.code).not.toBe(0);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("required option '--org <slug>' not specified");
  });
});
