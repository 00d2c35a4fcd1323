/** The CLI run in-process: everything it reads and writes is the context's, not the process's. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { CliContext } from "../../src/cli/context.js";
import { runCli } from "../../src/cli/program.js";
import { freePort } from "../helpers/process.js";

function context(argv: string[], env: CliContext["env"], cwd = process.cwd()) {
  const output = { stdout: "", stderr: "" };
  const run: CliContext = {
    argv,
    env,
    cwd,
    stdout: { write: (text: string) => (output.stdout += text) },
    stderr: { write: (text: string) => (output.stderr += text) },
    ownsProcess: false,
    exitCode: undefined,
  };
  return { run, output };
}

const saved = process.env.MAINLINE_TOKEN;
afterEach(() => {
  if (saved === undefined) delete process.env.MAINLINE_TOKEN;
  else process.env.MAINLINE_TOKEN = saved;
});

describe("runCli in-process", () => {
  it("reads option variables from the context's environment, never the process's", async () => {
    process.env.MAINLINE_TOKEN = "from-the-process";
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;

    const without = context(["queue", "get", "--repo", "acme/app"], { MAINLINE_URL: url });
    expect(await runCli(without.run)).toEqual({ code: 1, failed: true });
    expect(without.output.stderr).toContain("mainline: No API token");
    expect(without.output.stdout).toBe("");

    const withToken = context(["queue", "get", "--repo", "acme/app"], {
      MAINLINE_URL: url,
      MAINLINE_TOKEN: "from-the-context",
    });
    expect(await runCli(withToken.run)).toEqual({ code: 1, failed: true });
    expect(withToken.output.stderr).toContain(`mainline: Cannot reach Mainline at ${url} `);
  });

  it("a usage error, help and serve end the run with their codes, not the process", async () => {
    const usage = context(["pr", "submit"], {});
    expect(await runCli(usage.run)).toEqual({ code: 1, failed: true });
    expect(usage.output.stderr).toContain(
      "required option '--repo <host/owner/name>' not specified",
    );

    // serve takes over the process's signals and exit: never in-process.
    const serve = context(["serve"], { PORT: String(await freePort()) });
    expect(await runCli(serve.run)).toEqual({ code: 1, failed: true });
    expect(serve.output.stderr).toBe("mainline: serve runs only as a process of its own.\n");

    const help = context(["pr", "--help"], {});
    expect(await runCli(help.run)).toEqual({ code: 0, failed: false });
    expect(help.output.stdout).toMatch(/^Usage: mainline pr /);
    expect(help.output.stderr).toBe("");
  });

  it("mainline test: the command runs in the context's directory, its output and exit code are the run's", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "mainline-in-process-"));
    try {
      const script = 'console.log(process.cwd()); console.error("to stderr"); process.exit(3)';
      const { run, output } = context(
        ["test", "--junit", "reports/*.xml", "--", process.execPath, "-e", script],
        { PATH: process.env.PATH },
        dir,
      );
      const exitCodeBefore = process.exitCode;
      expect(await runCli(run)).toEqual({ code: 3, failed: false });
      expect(process.exitCode).toBe(exitCodeBefore);
      expect(output.stdout).toBe(`${dir}\n`);
      expect(output.stderr).toContain("to stderr\n");
      expect(output.stderr).toContain("mainline: warning: no results uploaded");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
