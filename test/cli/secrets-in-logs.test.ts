/**
 * No secret in the server's log or in an error body (issue 13, item 5): a real `mainline serve`
 * process logging at trace level goes through every flow that hands out or takes a secret (API
 * tokens, the signed upload URL and its PUT, refused and malformed requests), then its whole
 * output is searched for each secret it saw.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CliError } from "../../src/cli/client.js";
import { putBundle } from "../../src/cli/upload/protocol.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import {
  runCliInProcess,
  startServer,
  stopAllProcesses,
  waitFor,
  type RunningServer,
} from "../helpers/process.js";
import { bundle, junit } from "../helpers/uploads.js";
import { post, succeeded, TOKEN_PATTERN } from "./support.js";

const REPO = { host: "github.com", owner: "acme", name: "app" };
const BOOTSTRAP_TOKEN = `mlt_${randomBytes(32).toString("base64url")}`;

let database: TestDatabase;
let started: RunningServer | undefined;

function runningServer(): RunningServer {
  if (!started) throw new Error("the server did not start");
  return started;
}
/** Every secret the run handed out or was sent; none may show in the log. */
const secrets = new Set<string>([BOOTSTRAP_TOKEN]);
/** Bodies of error answers; none may show a secret either. */
const errorBodies: string[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  started = await startServer(
    { ...database.env, MAINLINE_BOOTSTRAP_ORG: "acme", MAINLINE_BOOTSTRAP_TOKEN: BOOTSTRAP_TOKEN },
    { logLevel: "trace", timeoutMs: 60_000 },
  );
});

afterAll(async () => {
  await started?.stop();
  await stopAllProcesses();
  await database.cleanup();
});

async function put(url: string, body: Uint8Array): Promise<{ status: number; text: string }> {
  const response = await fetch(url, { method: "PUT", body });
  const text = await response.text();
  if (response.status >= 400) errorBodies.push(text);
  return { status: response.status, text };
}

function signatureOf(url: string): string {
  const signature = new URL(url).searchParams.get("signature") ?? "";
  expect(signature.length).toBeGreaterThan(20);
  return signature;
}

describe("secrets and the server's log", () => {
  it("never logs a token or an upload URL's signature, nor echoes one in an error", async () => {
    const server = runningServer();
    const created = succeeded(
      await runCliInProcess(["token", "create", "--org", "acme", "--name", "bot"], database.env),
    );
    const token = created.stdout.trim();
    expect(token).toMatch(TOKEN_PATTERN);
    secrets.add(token);

    expect((await post(server.url, "whoami", {}, token)).status).toBe(200);
    expect((await post(server.url, "whoami", {}, BOOTSTRAP_TOKEN)).status).toBe(200);
    const wrongToken = `mlt_${randomBytes(32).toString("base64url")}`;
    secrets.add(wrongToken);
    const refused = await post(server.url, "whoami", {}, wrongToken);
    expect(refused.status).toBe(401);
    errorBodies.push(JSON.stringify(refused.body));

    // The signed upload URL: its PUT, a replay of it, a tampered one, an expired one.
    const upload = await post(
      server.url,
      "metrics/createBundleUpload",
      { repo: REPO, orgUrlSlug: "acme" },
      token,
    );
    expect(upload.status).toBe(200);
    const { id, url } = upload.body as { id: string; url: string };
    const signature = signatureOf(url);
    secrets.add(signature);
    const body = await bundle({
      files: [junit([{ name: "adds" }, { name: "fails", status: "failed" }])],
    });
    expect((await put(url, body)).status).toBe(200);
    expect((await put(url, body)).status).toBe(409);
    const tamperedSignature = `${signature.startsWith("A") ? "B" : "A"}${signature.slice(1)}`;
    secrets.add(tamperedSignature);
    expect((await put(url.replace(signature, tamperedSignature), body)).status).toBe(403);
    const expired = url.replace(/expires=\d+/, "expires=1");
    expect((await put(expired, body)).status).toBeGreaterThanOrEqual(400);

    // A second URL that is never used, and secrets in places where they do not belong.
    const unused = await post(
      server.url,
      "metrics/createBundleUpload",
      { repo: REPO, orgUrlSlug: "acme" },
      token,
    );
    secrets.add(signatureOf((unused.body as { url: string }).url));
    const inQuery = await fetch(`${server.url}/v1/nowhere?token=${token}&signature=${signature}`);
    expect(inQuery.status).toBe(404);
    errorBodies.push(await inQuery.text());
    const malformed = await fetch(`${server.url}/v1/metrics/createBundleUpload`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-token": token },
      body: `{"repo": ${token}}`,
    });
    expect(malformed.status).toBe(400);
    errorBodies.push(await malformed.text());
    const badField = await post(
      server.url,
      "metrics/createBundleUpload",
      { repo: { host: token, owner: signature, name: 5 }, orgUrlSlug: token },
      token,
    );
    expect(badField.status).toBe(400);
    errorBodies.push(JSON.stringify(badField.body));

    // The dashboard: the sign-in form's token field, the session ids it hands out, forms.
    // (Its forms' anti-forgery token is shown on the session's own pages, never in the log.)
    const { csrf } = await dashboardFlows(server.url, token);

    // The bundle is processed (the worker logs it) before the log is read.
    await waitFor(() => server.stdout.includes('"upload processed"'), "the upload processed");
    expect((await server.stop()).code).toBe(0);

    const log = `${server.stdout}\n${server.stderr}`;
    expect(log).not.toContain(csrf);
    for (const secret of secrets) {
      expect(log).not.toContain(secret);
      for (const text of errorBodies) expect(text).not.toContain(secret);
    }
    // The log did record the requests, with what a reader needs of the upload URL.
    expect(server.stdout).toContain(`"url":"/v1/uploads/${id}?expires=`);
    expect(server.stdout).toContain("signature=[redacted]");
    expect(server.stdout).toContain('"url":"/v1/whoami"');
    expect(errorBodies.length).toBeGreaterThanOrEqual(10);
    expect(server.stdout).toContain('"url":"/sign-in"');
  }, 120_000);

  it("keeps signatures and passwords out of the CLI's messages", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "mainline-secrets-"));
    try {
      const file = path.join(dir, "bundle.tar.gz");
      writeFileSync(file, "x");
      const signature = randomBytes(32).toString("base64url");
      const error = await putBundle(
        `ftp://example.invalid/v1/uploads/u1?expires=1&signature=${signature}`,
        file,
      ).then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(error).toBeInstanceOf(CliError);
      expect((error as CliError).message).toContain("signature=[redacted]");
      expect((error as CliError).message).not.toContain(signature);

      // A password in --url, echoed when the server cannot be reached.
      const password = randomBytes(12).toString("hex");
      const unreachable = await runCliInProcess([
        "queue",
        "get",
        "--repo",
        "acme/app",
        "--url",
        `http://bot:${password}@127.0.0.1:1`,
        "--token",
        BOOTSTRAP_TOKEN,
      ]);
      expect(unreachable.code).not.toBe(0);
      expect(unreachable.stderr).toContain(
        "Cannot reach Mainline at http://bot:[redacted]@127.0.0.1:1",
      );
      expect(`${unreachable.stdout}${unreachable.stderr}`).not.toContain(password);
      expect(`${unreachable.stdout}${unreachable.stderr}`).not.toContain(BOOTSTRAP_TOKEN);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

/** `name=value` of each Set-Cookie of an answer. */
function setCookies(response: Response): Map<string, string> {
  return new Map(
    response.headers.getSetCookie().map((line) => {
      const pair = line.split(";")[0] ?? "";
      const at = pair.indexOf("=");
      return [pair.slice(0, at), pair.slice(at + 1)];
    }),
  );
}

/**
 * Signs in to the dashboard (and fails to: a wrong token that is not shaped like ours, a forged
 * form), reads a page, signs out: every session id and token met goes to `secrets`, every
 * refusal's page to `errorBodies`.
 */
async function dashboardFlows(url: string, token: string): Promise<{ csrf: string }> {
  const form = async () => {
    const page = await fetch(`${url}/sign-in`);
    const html = await page.text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? "";
    return { cookie: `mainline_signin=${setCookies(page).get("mainline_signin") ?? ""}`, csrf };
  };
  const post = async (path: string, cookie: string, fields: Record<string, string>) => {
    const response = await fetch(`${url}${path}`, {
      method: "POST",
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(fields).toString(),
      redirect: "manual",
    });
    if (response.status >= 400) errorBodies.push(await response.text());
    return response;
  };
  const unshaped = randomBytes(32).toString("hex");
  secrets.add(unshaped);
  const wrong = await form();
  expect((await post("/sign-in", wrong.cookie, { csrf: wrong.csrf, token: unshaped })).status).toBe(
    401,
  );
  const forged = await post("/sign-in", "", { csrf: "forged", token });
  expect(forged.status).toBe(403);

  const signed = await form();
  const answer = await post("/sign-in", signed.cookie, { csrf: signed.csrf, token });
  expect(answer.status).toBe(303);
  const sessionId = setCookies(answer).get("mainline_session") ?? "";
  expect(sessionId).toMatch(/^mls_/);
  secrets.add(sessionId);
  const cookie = `mainline_session=${sessionId}`;
  const home = await fetch(`${url}/acme`, { headers: { cookie } });
  expect(home.status).toBe(200);
  const csrf = /name="csrf" value="([^"]+)"/.exec(await home.text())?.[1] ?? "";
  // A session id in a place it does not belong is redacted too.
  expect((await fetch(`${url}/v1/nowhere?session=${sessionId}`)).status).toBe(404);
  expect((await post("/sign-out", cookie, { csrf: "wrong" })).status).toBe(403);
  expect((await post("/sign-out", cookie, { csrf })).status).toBe(303);
  expect((await post("/sign-out", cookie, { csrf })).status).toBe(401);
  return { csrf };
}
