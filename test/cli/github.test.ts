/**
 * `mainline github setup`, in-process: the App to register on GitHub (its manifest, in GitHub's
 * format) and the steps, for github.com and GitHub Enterprise Server. The other `github`
 * commands are tested with the fake GitHub (test/github/linking.test.ts).
 */
import { describe, expect, it } from "vitest";
import { runCliInProcess } from "../helpers/process.js";

const setup = (args: string[], env: Record<string, string> = {}) =>
  runCliInProcess(["github", "setup", ...args], env, { replaceEnv: true });

interface Manifest {
  name: string;
  url: string;
  public: boolean;
  hook_attributes: { url: string; active: boolean };
  default_permissions: Record<string, string>;
  default_events: string[];
}

describe("mainline github setup", () => {
  it("prints the App manifest alone with --json, with the webhook URL of MAINLINE_PUBLIC_URL", async () => {
    const result = await setup(["--json"], { MAINLINE_PUBLIC_URL: "https://ci.example.com/" });
    expect(result.code).toBe(0);
    expect(result.stderr).toBe("");
    const manifest = JSON.parse(result.stdout) as Manifest;
    expect(manifest).toMatchObject({
      name: "mainline-ci-example-com",
      url: "https://ci.example.com",
      public: false,
      hook_attributes: { url: "https://ci.example.com/webhooks/github", active: true },
    });
    expect(manifest.default_permissions).toMatchObject({
      administration: "read",
      checks: "write",
      statuses: "write",
      contents: "write",
      issues: "write",
      metadata: "read",
      pull_requests: "write",
      workflows: "write",
      actions: "write",
    });
    expect(manifest.default_events).toContain("pull_request");
    expect(manifest.default_events).not.toContain("installation");
  });

  it("prints the steps: register (github.com), install, the four variables, link", async () => {
    const result = await setup(["--github-org", "acme-gh", "--name", "mainline-acme"], {
      MAINLINE_PUBLIC_URL: "https://ci.example.com",
    });
    expect(result.code).toBe(0);
    const text = result.stdout;
    expect(text).toContain(
      "https://github.com/organizations/acme-gh/settings/apps/new?name=mainline-acme",
    );
    expect(text).toContain("webhook_url=https%3A%2F%2Fci.example.com%2Fwebhooks%2Fgithub");
    for (const variable of [
      "MAINLINE_GITHUB_APP_ID",
      "MAINLINE_GITHUB_PRIVATE_KEY",
      "MAINLINE_GITHUB_WEBHOOK_SECRET",
      "MAINLINE_GITHUB_API_URL",
    ]) {
      expect(text).toContain(variable);
    }
    expect(text).toContain("mainline github link --installation <id> --org <slug>");
    expect(text).toContain("https://ci.example.com/v1/github/linkInstallation");
    expect(text).toContain("openssl rand -hex 32");
    expect(text).toMatch(/workflows\s+write\s+merge pull requests that change \.github\/workflows/);
    // The manifest closes the text, whole.
    const manifest = JSON.parse(text.slice(text.lastIndexOf("\n{\n"))) as Manifest;
    expect(manifest.name).toBe("mainline-acme");
  });

  it("registers on GitHub Enterprise Server when MAINLINE_GITHUB_API_URL names one", async () => {
    const result = await setup([], {
      MAINLINE_PUBLIC_URL: "https://ci.example.com",
      MAINLINE_GITHUB_API_URL: "https://github.example.com/api/v3",
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("https://github.example.com/settings/apps/new?");
    expect(result.stdout).toContain("MAINLINE_GITHUB_API_URL=https://github.example.com/api/v3");
  });

  it("says when MAINLINE_PUBLIC_URL is missing or wrong, and refuses a name GitHub would", async () => {
    const placeholder = await setup([]);
    expect(placeholder.code).toBe(0);
    expect(placeholder.stderr).toContain("MAINLINE_PUBLIC_URL is not set");
    const wrong = await setup([], { MAINLINE_PUBLIC_URL: "ci.example.com" });
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain("MAINLINE_PUBLIC_URL must be an absolute http(s) URL");
    const long = await setup(["--name", "x".repeat(35)], {
      MAINLINE_PUBLIC_URL: "https://ci.example.com",
    });
    expect(long.code).toBe(1);
    expect(long.stderr).toContain("at most 34 characters");
  });
});
