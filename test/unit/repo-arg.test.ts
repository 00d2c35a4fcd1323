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

  it.each(["app", "", "https://github.com/acme"])("refuses %j", (input) => {
    expect(() => parseRepoArg(input)).toThrow(/expected owner\/name .* or host\/owner\/name/);
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
