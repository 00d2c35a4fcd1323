/**
 * The server's Node options (SERVE_NODE_ARGS) are on every command line that starts it: V8 reads
 * them only at start, so one that is forgotten silently runs with Node's defaults.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { SERVE_NODE_ARGS } from "../../src/lib/node-support.js";
import { REPO_ROOT } from "../helpers/process.js";

const read = (file: string) => readFileSync(path.join(REPO_ROOT, file), "utf8");

describe("the server's Node options", () => {
  it("are in bin/mainline.js's shebang and in `npm start`", () => {
    const shebang = read("bin/mainline.js").split("\n")[0] ?? "";
    const start = (JSON.parse(read("package.json")) as { scripts: { start: string } }).scripts
      .start;
    for (const option of SERVE_NODE_ARGS) {
      expect(shebang).toMatch(/^#!\/usr\/bin\/env -S node /);
      expect(shebang.split(" ")).toContain(option);
      expect(start.split(" ")).toContain(option);
    }
  });

  it("are taken by this Node (an unknown option would stop the server at start)", () => {
    expect(SERVE_NODE_ARGS.length).toBeGreaterThan(0);
    for (const option of SERVE_NODE_ARGS) {
      expect(process.allowedNodeEnvironmentFlags.has(option.split("=")[0] ?? "")).toBe(true);
    }
  });
});
