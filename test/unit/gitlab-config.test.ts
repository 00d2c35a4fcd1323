import { describe, expect, it } from "vitest";
import { loadGitLabConfig } from "../../src/app/gitlab-config.js";
import { ConfigError } from "../../src/config.js";

describe("the GitLab instance's configuration (MAINLINE_GITLAB_*)", () => {
  it("is off without MAINLINE_GITLAB_URL, and names a stray setting that needs it", () => {
    expect(loadGitLabConfig({})).toBeUndefined();
    expect(() => loadGitLabConfig({ MAINLINE_GITLAB_CI_POLL_SECONDS: "5" })).toThrow(
      /MAINLINE_GITLAB_CI_POLL_SECONDS is set but MAINLINE_GITLAB_URL is not/,
    );
  });

  it("takes the instance's address, its host as repositories carry it, and the options", () => {
    expect(loadGitLabConfig({ MAINLINE_GITLAB_URL: "https://gitlab.example.com/" })).toEqual({
      url: "https://gitlab.example.com",
      host: "gitlab.example.com",
    });
    // An instance under a relative URL root keeps it; an API address is taken back to the root.
    expect(loadGitLabConfig({ MAINLINE_GITLAB_URL: "https://example.com/gitlab/api/v4" })).toEqual({
      url: "https://example.com/gitlab",
      host: "example.com",
    });
    expect(
      loadGitLabConfig({
        MAINLINE_GITLAB_URL: "http://127.0.0.1:8929",
        MAINLINE_GITLAB_HOST: "GitLab.Example.com",
        MAINLINE_GITLAB_TEST_BRANCH_PREFIX: "mainline/merge/",
        MAINLINE_GITLAB_CI_POLL_SECONDS: "5",
        MAINLINE_GITLAB_RETRY_BASE_MS: "0",
      }),
    ).toEqual({
      url: "http://127.0.0.1:8929",
      host: "gitlab.example.com",
      testBranchPrefix: "mainline/merge/",
      ciPollIntervalMs: 5000,
      retryBaseMs: 0,
    });
  });

  it("refuses what it cannot use, saying what it wants, never echoing credentials' use", () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ MAINLINE_GITLAB_URL: "gitlab.example.com" }, /http\(s\) address/],
      [{ MAINLINE_GITLAB_URL: "ftp://gitlab.example.com" }, /http\(s\) address/],
      [{ MAINLINE_GITLAB_URL: "https://bot:glpat-x@gitlab.example.com" }, /without credentials/],
      [{ MAINLINE_GITLAB_URL: "https://g.example.com", MAINLINE_GITLAB_HOST: "a b" }, /host name/],
      [
        { MAINLINE_GITLAB_URL: "https://g.example.com", MAINLINE_GITLAB_TEST_BRANCH_PREFIX: "x" },
        /ending with "\/"/,
      ],
      [
        { MAINLINE_GITLAB_URL: "https://g.example.com", MAINLINE_GITLAB_CI_POLL_SECONDS: "0" },
        /from 1 to 3600/,
      ],
    ];
    for (const [env, message] of cases) {
      expect(() => loadGitLabConfig(env)).toThrow(ConfigError);
      expect(() => loadGitLabConfig(env)).toThrow(message);
    }
  });

  it("takes an OAuth application's ID and secret together, never one alone", () => {
    const url = "https://gitlab.example.com";
    expect(
      loadGitLabConfig({
        MAINLINE_GITLAB_URL: url,
        MAINLINE_GITLAB_OAUTH_CLIENT_ID: "app-id",
        MAINLINE_GITLAB_OAUTH_CLIENT_SECRET: "gloas-secret",
      })?.oauth,
    ).toEqual({ clientId: "app-id", clientSecret: "gloas-secret" });
    expect(() =>
      loadGitLabConfig({ MAINLINE_GITLAB_URL: url, MAINLINE_GITLAB_OAUTH_CLIENT_ID: "app-id" }),
    ).toThrow(/MAINLINE_GITLAB_OAUTH_CLIENT_ID is set without MAINLINE_GITLAB_OAUTH_CLIENT_SECRET/);
    const spaced = () =>
      loadGitLabConfig({
        MAINLINE_GITLAB_URL: url,
        MAINLINE_GITLAB_OAUTH_CLIENT_ID: "app id",
        MAINLINE_GITLAB_OAUTH_CLIENT_SECRET: "top secret value",
      });
    expect(spaced).toThrow(/visible ASCII characters/);
    expect(spaced).not.toThrow(/top secret/);
  });
});
