import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/server.js";

/**
 * A plain curl user: the README's shell examples, run verbatim with bash and curl against a real
 * server, in the order a newcomer would follow them. Keeps the README true.
 */
const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "../..");
const readme = readFileSync(path.join(root, "README.md"), "utf8");
const blocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] ?? "");
const curlBlocks = blocks.filter((b) => b.includes("curl ") && !b.includes("export "));
const cliQueueBlock = blocks.find((b) => b.includes("npx mainline queue"));

let server: TestServer;
beforeAll(async () => {
  // The organization a first start creates, as the README's examples assume.
  server = await startTestServer({ org: "default" });
  return () => server.close();
});

async function bash(script: string): Promise<string> {
  const home = mkdtempSync(path.join(tmpdir(), "mainline-readme-"));
  try {
    // One answer per line, so that each can be parsed; the README's commands stay as written.
    writeFileSync(path.join(home, ".curlrc"), 'write-out = "\\n"\n');
    const { stdout } = await run("bash", ["-euo", "pipefail", "-c", script], {
      cwd: home,
      env: { ...process.env, HOME: home, MAINLINE_URL: server.url, MAINLINE_TOKEN: server.token },
      timeout: 60_000,
    });
    return stdout;
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

describe("the README's examples", () => {
  it("has curl examples for every operation so far", () => {
    const all = curlBlocks.join("\n");
    for (const endpoint of [
      "whoami",
      "createQueue",
      "getQueue",
      "updateQueue",
      "deleteQueue",
      "/healthz",
      "/v1/status",
      "/metrics",
      "/openapi.json",
      "list-uploads",
      "list-failing-tests",
      "list-unhealthy-tests",
      "list-quarantined-tests",
    ]) {
      expect(all, endpoint).toContain(endpoint);
    }
  });

  it("run in order with curl, each answering without an error", async () => {
    const answers: unknown[] = [];
    for (const block of curlBlocks) {
      const output = await bash(block);
      for (const line of output.split("\n").filter((l) => l.startsWith("{"))) {
        const body = JSON.parse(line) as Record<string, unknown>;
        expect(body, block).not.toHaveProperty("error");
        answers.push(body);
      }
    }
    expect(answers).toContainEqual(
      expect.objectContaining({
        concurrency: 4,
        batch: true,
        state: "paused",
        requiredStatuses: ["build", "test"],
      }),
    );
    expect(answers).toContainEqual(
      expect.objectContaining({ requiredStatuses: null, state: "running" }),
    );
    expect(
      (
        await server.call("getQueue", {
          repo: { host: "github.com", owner: "acme", name: "app" },
          targetBranch: "main",
        })
      ).status,
    ).toBe(404);
  });

  it("run the CLI queue commands as written", async () => {
    expect(cliQueueBlock).toBeDefined();
    const tsx = path.join(root, "node_modules/tsx/dist/loader.mjs");
    const cli = `node --import ${tsx} ${path.join(root, "src/cli/main.ts")}`;
    const output = await bash((cliQueueBlock ?? "").replaceAll("npx mainline", cli));
    expect(output).toMatch(/concurrency\s+4/);
    expect(output).toMatch(/batch\s+true/);
  });
});
