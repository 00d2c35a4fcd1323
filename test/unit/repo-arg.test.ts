import { describe, expect, it } from "vitest";
import { parseRepoArg } from "../../src/cli/repo-arg.js";

describe("--repo", () => {
  it.each([
    ["acme/app", { host: "github.com", owner: "acme", name: "app" }],
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
    expect(() => parseRepoArg(input)).toThrow(/host\/owner\/name/);
  });
});
