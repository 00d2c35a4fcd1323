/**
 * The GitHub App's configuration (MAINLINE_GITHUB_*): on only when complete, a clear error naming
 * what is missing otherwise, a key given as PEM text or a path, and never the key in a message.
 */
import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  ConfigError,
  githubHostOf,
  githubWebUrlOf,
  loadGitHubConfig,
  loadServiceConfig,
} from "../../src/config.js";

const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 });
/** As GitHub hands it out: PKCS#1 ("BEGIN RSA PRIVATE KEY"). */
const PKCS1 = rsa.privateKey.export({ type: "pkcs1", format: "pem" }).toString();
const PKCS8 = rsa.privateKey.export({ type: "pkcs8", format: "pem" }).toString();
const dir = mkdtempSync(path.join(tmpdir(), "mainline-github-config-"));
const keyFile = path.join(dir, "app.private-key.pem");
writeFileSync(keyFile, PKCS1);

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const BASE = {
  MAINLINE_GITHUB_APP_ID: "123456",
  MAINLINE_GITHUB_PRIVATE_KEY: PKCS1,
  MAINLINE_GITHUB_WEBHOOK_SECRET: "a-webhook-secret",
};

/** The message of the ConfigError `load` throws. */
function refusal(load: () => unknown): string {
  try {
    load();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error("no error");
}

/** The base64 lines of a key: none may ever show in a message. */
function keyLines(pem: string): string[] {
  return pem.split("\n").filter((line) => line.length > 20 && !line.startsWith("-----"));
}

describe("MAINLINE_GITHUB_*", () => {
  it("is off when none is set, and GitHub repositories keep answering host_not_connected", () => {
    expect(loadGitHubConfig({})).toBeUndefined();
    expect(loadServiceConfig({}).github).toBeUndefined();
  });

  it("is on when the App id, key and secret are set, with github.com's API by default", () => {
    const config = loadGitHubConfig(BASE);
    expect(config).toMatchObject({
      appId: "123456",
      webhookSecret: "a-webhook-secret",
      apiUrl: "https://api.github.com",
      host: "github.com",
    });
    // GitHub's PKCS#1 key, kept as PKCS#8 (what the JWT library signs with).
    expect(config?.privateKey).toContain("-----BEGIN PRIVATE KEY-----");
    expect(loadServiceConfig(BASE).github?.appId).toBe("123456");
  });

  it("names what is missing in a partial configuration", () => {
    const message = refusal(() =>
      loadGitHubConfig({
        MAINLINE_GITHUB_APP_ID: "1",
        MAINLINE_GITHUB_API_URL: "https://x/api/v3",
      }),
    );
    expect(message).toContain("MAINLINE_GITHUB_PRIVATE_KEY");
    expect(message).toContain("MAINLINE_GITHUB_WEBHOOK_SECRET");
    expect(message).toContain("MAINLINE_GITHUB_APP_ID, MAINLINE_GITHUB_API_URL are set");
    expect(refusal(() => loadServiceConfig({ MAINLINE_GITHUB_WEBHOOK_SECRET: "s" }))).toContain(
      "missing",
    );
  });

  it("takes the key as PEM text (with \\n escapes too), PKCS#8, or a path to a PEM file", () => {
    const expected = loadGitHubConfig(BASE)?.privateKey;
    for (const key of [PKCS8, PKCS1.replace(/\n/g, "\\n"), keyFile, `  ${keyFile}\n`]) {
      expect(loadGitHubConfig({ ...BASE, MAINLINE_GITHUB_PRIVATE_KEY: key })?.privateKey).toBe(
        expected,
      );
    }
  });

  it("says clearly when the key is unusable, never showing it", () => {
    const cut = PKCS1.slice(0, 400);
    const headerless = keyLines(PKCS1).join("\n");
    const ec = generateKeyPairSync("ec", { namedCurve: "P-256" })
      .privateKey.export({ type: "pkcs8", format: "pem" })
      .toString();
    for (const key of [cut, headerless, ec, keyLines(PKCS1).join("")]) {
      const message = refusal(() =>
        loadGitHubConfig({ ...BASE, MAINLINE_GITHUB_PRIVATE_KEY: key }),
      );
      expect(message).toContain("MAINLINE_GITHUB_PRIVATE_KEY");
      for (const line of keyLines(key)) expect(message).not.toContain(line.slice(0, 16));
    }
    expect(refusal(() => loadGitHubConfig({ ...BASE, MAINLINE_GITHUB_PRIVATE_KEY: ec }))).toContain(
      "RSA",
    );
    const missing = path.join(dir, "nowhere.pem");
    const message = refusal(() =>
      loadGitHubConfig({ ...BASE, MAINLINE_GITHUB_PRIVATE_KEY: missing }),
    );
    expect(message).toContain("ENOENT");
    expect(message).toContain(missing);
  });

  it("tells the repositories' host from the API URL, or from MAINLINE_GITHUB_HOST", () => {
    expect(githubHostOf("https://api.github.com")).toBe("github.com");
    expect(githubHostOf("https://api.acme.ghe.com")).toBe("acme.ghe.com");
    expect(githubHostOf("https://github.example.com/api/v3")).toBe("github.example.com");
    expect(githubHostOf("https://github.example.com:8443/api/v3/")).toBe("github.example.com:8443");
    const ghes = loadGitHubConfig({
      ...BASE,
      MAINLINE_GITHUB_API_URL: "https://github.example.com/api/v3/",
    });
    expect(ghes).toMatchObject({
      apiUrl: "https://github.example.com/api/v3",
      host: "github.example.com",
    });
    expect(
      refusal(() => loadGitHubConfig({ ...BASE, MAINLINE_GITHUB_API_URL: "http://127.0.0.1:9" })),
    ).toContain("MAINLINE_GITHUB_HOST");
    expect(
      loadGitHubConfig({
        ...BASE,
        MAINLINE_GITHUB_API_URL: "http://127.0.0.1:9",
        MAINLINE_GITHUB_HOST: "GitHub.com",
      }),
    ).toMatchObject({ apiUrl: "http://127.0.0.1:9", host: "github.com" });
    expect(
      refusal(() => loadGitHubConfig({ ...BASE, MAINLINE_GITHUB_API_URL: "ftp://github.com" })),
    ).toContain("http(s)");
    expect(refusal(() => loadGitHubConfig({ ...BASE, MAINLINE_GITHUB_APP_ID: "app" }))).toContain(
      "MAINLINE_GITHUB_APP_ID",
    );
    expect(
      refusal(() => loadGitHubConfig({ ...BASE, MAINLINE_GITHUB_HOST: "github.com/evil path" })),
    ).toContain("MAINLINE_GITHUB_HOST");
  });

  it("takes the App's OAuth credentials, both or neither, and never shows the secret", () => {
    const secret = "0123456789abcdef0123456789abcdef01234567";
    expect(loadGitHubConfig(BASE)?.oauth).toBeUndefined();
    expect(
      loadGitHubConfig({
        ...BASE,
        MAINLINE_GITHUB_CLIENT_ID: "Iv23liAbCdEf",
        MAINLINE_GITHUB_CLIENT_SECRET: secret,
      }),
    ).toMatchObject({
      oauth: { clientId: "Iv23liAbCdEf", clientSecret: secret },
      webUrl: "https://github.com",
    });
    const half = refusal(() =>
      loadGitHubConfig({ ...BASE, MAINLINE_GITHUB_CLIENT_SECRET: secret }),
    );
    expect(half).toContain("MAINLINE_GITHUB_CLIENT_ID");
    expect(half).not.toContain(secret);
    const bad = refusal(() =>
      loadGitHubConfig({
        ...BASE,
        MAINLINE_GITHUB_CLIENT_ID: "Iv23liAbCdEf",
        MAINLINE_GITHUB_CLIENT_SECRET: "short secret",
      }),
    );
    expect(bad).toContain("MAINLINE_GITHUB_CLIENT_SECRET");
    expect(bad).not.toContain("short secret");
    // Alone, without the App, they are a partial configuration.
    expect(
      refusal(() => loadGitHubConfig({ MAINLINE_GITHUB_CLIENT_ID: "Iv23liAbCdEf" })),
    ).toContain("MAINLINE_GITHUB_APP_ID");
  });

  it("derives GitHub's web address (OAuth's pages) from the API URL", () => {
    expect(githubWebUrlOf("https://api.github.com")).toBe("https://github.com");
    expect(githubWebUrlOf("https://api.acme.ghe.com")).toBe("https://acme.ghe.com");
    expect(githubWebUrlOf("https://github.example.com/api/v3")).toBe("https://github.example.com");
    expect(githubWebUrlOf("http://127.0.0.1:9")).toBe("http://127.0.0.1:9");
  });

  it("reconciles every 60 s by default, as MAINLINE_GITHUB_RECONCILE_SECONDS says, or not at all", () => {
    expect(loadGitHubConfig(BASE)?.reconcileIntervalMs).toBe(60_000);
    const seconds = (value: string) =>
      loadGitHubConfig({ ...BASE, MAINLINE_GITHUB_RECONCILE_SECONDS: value })?.reconcileIntervalMs;
    expect(seconds("300")).toBe(300_000);
    expect(seconds("0")).toBe(0);
    for (const wrong of ["5", "1.5", "-10", "soon", "86401"]) {
      expect(refusal(() => seconds(wrong))).toContain("MAINLINE_GITHUB_RECONCILE_SECONDS must be");
    }
    // Alone, it is a partial configuration of the App.
    expect(refusal(() => loadGitHubConfig({ MAINLINE_GITHUB_RECONCILE_SECONDS: "60" }))).toContain(
      "configured only in part",
    );
  });

  it("takes the CI's poll interval in whole seconds (default: unset, the provider's 15 s)", () => {
    expect(loadGitHubConfig(BASE)?.ciPollIntervalMs).toBeUndefined();
    expect(
      loadGitHubConfig({ ...BASE, MAINLINE_GITHUB_CI_POLL_SECONDS: "30" })?.ciPollIntervalMs,
    ).toBe(30_000);
    for (const bad of ["0", "1.5", "-3", "3601", "soon"]) {
      expect(
        refusal(() => loadGitHubConfig({ ...BASE, MAINLINE_GITHUB_CI_POLL_SECONDS: bad })),
      ).toContain("MAINLINE_GITHUB_CI_POLL_SECONDS must be a whole number of seconds");
    }
    // On its own it is a partial configuration of the App.
    expect(refusal(() => loadGitHubConfig({ MAINLINE_GITHUB_CI_POLL_SECONDS: "30" }))).toContain(
      "configured only in part",
    );
  });

  it("takes the least time between an installation's writes in ms (default: unset, 1 s)", () => {
    expect(loadGitHubConfig(BASE)?.writeIntervalMs).toBeUndefined();
    expect(
      loadGitHubConfig({ ...BASE, MAINLINE_GITHUB_WRITE_INTERVAL_MS: "0" })?.writeIntervalMs,
    ).toBe(0);
    expect(
      loadGitHubConfig({ ...BASE, MAINLINE_GITHUB_WRITE_INTERVAL_MS: "2500" })?.writeIntervalMs,
    ).toBe(2500);
    for (const bad of ["-1", "1.5", "60001", "fast"]) {
      expect(
        refusal(() => loadGitHubConfig({ ...BASE, MAINLINE_GITHUB_WRITE_INTERVAL_MS: bad })),
      ).toContain("MAINLINE_GITHUB_WRITE_INTERVAL_MS must be a whole number of milliseconds");
    }
  });

  it("takes the base of a failed request's retries in ms (default: unset, 1 s)", () => {
    expect(loadGitHubConfig(BASE)?.retryBaseMs).toBeUndefined();
    expect(loadGitHubConfig({ ...BASE, MAINLINE_GITHUB_RETRY_BASE_MS: "0" })?.retryBaseMs).toBe(0);
    expect(loadGitHubConfig({ ...BASE, MAINLINE_GITHUB_RETRY_BASE_MS: "250" })?.retryBaseMs).toBe(
      250,
    );
    for (const bad of ["-1", "1.5", "60001", "soon"]) {
      expect(
        refusal(() => loadGitHubConfig({ ...BASE, MAINLINE_GITHUB_RETRY_BASE_MS: bad })),
      ).toContain("MAINLINE_GITHUB_RETRY_BASE_MS must be a whole number of milliseconds");
    }
  });

  it("takes the test branches' prefix (trunk-merge/ by default), refusing what is no prefix", () => {
    expect(loadGitHubConfig(BASE)?.testBranchPrefix).toBeUndefined();
    for (const prefix of ["mainline/merge/", "ci-queue/", "a.b_c-d/"]) {
      expect(
        loadGitHubConfig({ ...BASE, MAINLINE_GITHUB_TEST_BRANCH_PREFIX: prefix })?.testBranchPrefix,
      ).toBe(prefix);
    }
    for (const prefix of ["no-slash", "/abs/", "a//b/", "a/../b/", "trunk-temp/x/", "sp ace/"]) {
      const message = refusal(() =>
        loadGitHubConfig({ ...BASE, MAINLINE_GITHUB_TEST_BRANCH_PREFIX: prefix }),
      );
      expect(message, prefix).toContain("MAINLINE_GITHUB_TEST_BRANCH_PREFIX");
    }
  });
});
