import { describe, expect, it } from "vitest";
import { parseLocalRepoArg, parseRepoArg } from "../../src/cli/repo-arg.js";

describe("--repo", () => {
  it.each([
    ["acme/app", { host: "local", owner: "acme", name: "app" }],
    ["local/acme/app", { host: "local", owner: "acme", name: "app" }],
    ["github.com/acme/app", { host: "github.com", owner: "acme", name: "app" }],
    ["gitlab.com/group/sub/app", { host: "gitlab.com", owner: "group/sub", name: "app" }],
    ["https://github.com/acme/app", { host: "github.com", owner: "acme", name: "app" }],
    ["https://github.com/acme/app.git", { host: "github.com", owner: "acme", name: "app" }],
    [
      "https://user@ghe.example.com/acme/app/",
      { host: "ghe.example.com", owner: "acme", name: "app" },
    ],
    ["git@github.com:acme/app.git", { host: "github.com", owner: "acme", name: "app" }],
    [
      "ssh://git@gitlab.com/group/sub/app.git",
      { host: "gitlab.com", owner: "group/sub", name: "app" },
    ],
  ])("reads %s", (input, expected) => {
    expect(parseRepoArg(input)).toEqual(expected);
  });

  it.each(["app", ""])("refuses %j", (input) => {
    expect(() => parseRepoArg(input)).toThrow(/expected owner\/name .* or host\/owner\/name/);
  });

  it.each([
    ["github.com/acme", "github.com", "acme"],
    ["github.com/acme/", "github.com", "acme"],
    ["GitHub.com/acme", "GitHub.com", "acme"],
    ["git.example.org/platform", "git.example.org", "platform"],
    ["ghe.internal:8443/acme", "ghe.internal:8443", "acme"],
    ["localhost/acme", "localhost", "acme"],
    ["local/acme", "local", "acme"],
    ["https://github.com/acme", "github.com", "acme"],
    ["git@github.com:acme", "github.com", "acme"],
  ])("refuses %s: a host and an owner, no repository name", (input, host, owner) => {
    const message = `${host}/${owner} names a host (${host}) and an owner (${owner}) but no repository: expected host/owner/name, e.g. github.com/acme/app`;
    expect(() => parseRepoArg(input)).toThrow(message);
    // Never read as a local repository owned by the host, on commands for the local host too.
    expect(() => parseLocalRepoArg(input)).toThrow(message);
  });

  it("reads an owner with dots that is no host name, and a local owner written in full", () => {
    expect(parseRepoArg("acme.v2/app")).toEqual({ host: "local", owner: "acme.v2", name: "app" });
    expect(parseRepoArg("v1.2/app")).toEqual({ host: "local", owner: "v1.2", name: "app" });
    expect(parseLocalRepoArg("local/my.org/app")).toEqual({
      host: "local",
      owner: "my.org",
      name: "app",
    });
  });

  it("means the same repository for commands that only work on the local git host", () => {
    for (const input of ["acme/app", "local/acme/app", "LOCAL/acme/app"]) {
      expect(parseLocalRepoArg(input)).toEqual({ host: "local", owner: "acme", name: "app" });
      expect(parseRepoArg(input).host.toLowerCase()).toBe("local");
    }
  });

  it.each(["github.com/acme/app", "https://github.com/acme/app.git", "git@github.com:acme/app"])(
    "refuses another host where only the local git host will do: %s",
    (input) => {
      expect(() => parseLocalRepoArg(input)).toThrow(
        "github.com/acme/app is not on Mainline's local git host",
      );
    },
  );
});
