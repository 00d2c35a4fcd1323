/**
 * The dependency direction of docs/ARCHITECTURE.md ("The rule") is enforced by two local ESLint
 * rules (eslint-rules/layers.js, configured in eslint-rules/config.js, run by `npm run lint`).
 * These tests run them in-process: a forbidden import fails with both layers named, an allowed
 * one passes, a cycle is reported, a stale exception is reported. That today's src/ passes them
 * is the lint's job (`npm run lint` in .ci/run), not repeated here.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { ESLint, type Linter } from "eslint";
import tseslint from "typescript-eslint";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

interface LayersModule {
  layersConfig: Linter.Config;
  LAYERS: { name: string; pattern: string }[];
  ALLOW: Record<string, string[]>;
  EXCEPTIONS: Record<string, string>;
}

// A computed specifier: the module is plain JavaScript, loaded as ESLint loads it.
const configUrl = pathToFileURL(path.join(root, "eslint-rules/config.js")).href;
const layers = (await import(configUrl)) as LayersModule;

const parserOnly: Linter.Config = {
  files: ["**/*.ts"],
  languageOptions: { parser: tseslint.parser },
};

function eslintAt(cwd: string, config: Linter.Config = layers.layersConfig): ESLint {
  return new ESLint({ cwd, overrideConfigFile: true, overrideConfig: [parserOnly, config] });
}

async function lint(file: string, text: string, cwd = root): Promise<Linter.LintMessage[]> {
  const [result] = await eslintAt(cwd).lintText(text, { filePath: path.join(cwd, file) });
  return result?.messages ?? [];
}

describe("the layer rule", () => {
  it("rejects a domain module that imports storage, naming both layers and the rule", async () => {
    const messages = await lint(
      "src/mergequeue/x.ts",
      'import type { QueueListing } from "../db/stores/merge-queues.js";\nexport type X = QueueListing;\n',
    );
    expect(messages).toHaveLength(1);
    expect(messages[0]?.ruleId).toBe("layers/direction");
    expect(messages[0]?.severity).toBe(2);
    expect(messages[0]?.message).toContain("domain (src/mergequeue/x.ts) may not import db");
    expect(messages[0]?.message).toContain("src/db/stores/merge-queues.ts");
    expect(messages[0]?.message).toContain("docs/ARCHITECTURE.md");
  });

  it("accepts a domain module that imports lib and another domain module", async () => {
    const messages = await lint(
      "src/mergequeue/x.ts",
      [
        'import { isoTime } from "../lib/clock.js";',
        'import type { RepoRef } from "../organizations/repositories.js";',
        "export const at = (ref: RepoRef, ms: number): string => `${ref.name} ${isoTime(ms)}`;",
        "",
      ].join("\n"),
    );
    expect(messages).toEqual([]);
  });

  it("checks every kind of import: re-exports, dynamic imports and import types", async () => {
    const messages = await lint(
      "src/lib/x.ts",
      [
        'export { LOCAL_HOST } from "../organizations/repositories.js";',
        'export * from "../db/schema.js";',
        'export const load = () => import("../app.js");',
        'export type T = import("../api/types.js").ApiApp;',
        "",
      ].join("\n"),
    );
    expect(messages.map((m) => m.ruleId)).toEqual(Array(4).fill("layers/direction"));
    expect(messages.map((m) => /may not import (\w+)/.exec(m.message)?.[1])).toEqual([
      "domain",
      "db",
      "app",
      "api",
    ]);
  });

  it("lets a provider use the API's shared helpers but not its routes or storage", async () => {
    const allowed = await lint(
      "src/providers/local/routes.ts",
      'import type { ApiApp } from "../../api/types.js";\nimport { errorResponses } from "../../api/schemas.js";\nexport type A = ApiApp;\nexport const e = errorResponses;\n',
    );
    expect(allowed).toEqual([]);
    const forbidden = await lint(
      "src/providers/local/routes.ts",
      'import { buildServer } from "../../api/server.js";\nimport { RepositoryStore } from "../../db/stores/repositories.js";\nexport const x = [buildServer, RepositoryStore];\n',
    );
    expect(forbidden.map((m) => /may not import (\w+)/.exec(m.message)?.[1])).toEqual([
      "api",
      "db",
    ]);
  });

  it("keeps HTTP out of the providers", async () => {
    const messages = await lint(
      "src/api/mergequeue/x.ts",
      'import { LocalCiRunner } from "../../providers/local/ci/runner.js";\nexport const r = LocalCiRunner;\n',
    );
    expect(messages).toHaveLength(1);
    expect(messages[0]?.message).toContain(
      "api (src/api/mergequeue/x.ts) may not import providers",
    );
  });

  it("lets only the composition root import the concrete stores", async () => {
    const text =
      'import { RepositoryStore } from "./db/stores/repositories.js";\nexport const s = RepositoryStore;\n';
    expect(await lint("src/app.ts", text)).toEqual([]);
    const fromCli = await lint("src/cli/x.ts", text.replace("./db/", "../db/"));
    expect(fromCli[0]?.message).toContain("cli (src/cli/x.ts) may not import db");
  });

  it("reports a file that is in no layer", async () => {
    const messages = await lint("src/elsewhere/x.ts", "export const x = 1;\n");
    expect(messages[0]?.message).toContain("src/elsewhere/x.ts is in no layer");
  });
});

describe("the known exceptions", () => {
  it("name files that exist, each with the reason it is still there", () => {
    for (const [file, reason] of Object.entries(layers.EXCEPTIONS)) {
      expect(existsSync(path.join(root, file)), file).toBe(true);
      expect(reason.length, file).toBeGreaterThan(10);
    }
  });
});

describe("in a scratch repository", () => {
  let scratch: string;
  beforeAll(() => {
    scratch = mkdtempSync(path.join(tmpdir(), "mainline-layers-"));
    mkdirSync(path.join(scratch, "src/lib"), { recursive: true });
    mkdirSync(path.join(scratch, "src/testhealth"), { recursive: true });
    // a → b → c → a, the last edge type-only; d imports a but is on no cycle.
    writeFileSync(
      path.join(scratch, "src/lib/a.ts"),
      'import { b } from "./b.js";\nexport const a = b;\n',
    );
    writeFileSync(
      path.join(scratch, "src/lib/b.ts"),
      'import { c } from "./c.js";\nexport const b = c;\n',
    );
    writeFileSync(
      path.join(scratch, "src/lib/c.ts"),
      'import type { a } from "./a.js";\nexport const c = 1;\nexport type C = typeof a;\n',
    );
    writeFileSync(
      path.join(scratch, "src/lib/d.ts"),
      'import { a } from "./a.js";\nexport const d = a;\n',
    );
    writeFileSync(path.join(scratch, "src/testhealth/clean.ts"), "export const clean = 1;\n");
  });
  afterAll(() => {
    rmSync(scratch, { recursive: true, force: true });
  });

  it("reports an import cycle, type-only edges included, with its path", async () => {
    const results = await eslintAt(scratch).lintFiles(["src/**/*.ts"]);
    const byFile = new Map(
      results.map((r) => [
        path.relative(scratch, r.filePath).split(path.sep).join("/"),
        r.messages,
      ]),
    );
    for (const file of ["src/lib/a.ts", "src/lib/b.ts", "src/lib/c.ts"]) {
      const messages = byFile.get(file) ?? [];
      expect(
        messages.map((m) => m.ruleId),
        file,
      ).toEqual(["layers/no-cycles"]);
    }
    expect(byFile.get("src/lib/a.ts")?.[0]?.message).toContain(
      "src/lib/a.ts → src/lib/b.ts → src/lib/c.ts → src/lib/a.ts",
    );
    expect(byFile.get("src/lib/d.ts")).toEqual([]);
  });

  it("reports an exception whose file no longer breaks the rule", async () => {
    const options = {
      layers: layers.LAYERS,
      allow: layers.ALLOW,
      exceptions: { "src/testhealth/clean.ts": "was importing storage" },
    };
    const config: Linter.Config = {
      ...layers.layersConfig,
      rules: { "layers/direction": ["error", options] },
    };
    const [result] = await eslintAt(scratch, config).lintFiles(["src/testhealth/clean.ts"]);
    expect(result?.messages.map((m) => m.message)).toEqual([
      "src/testhealth/clean.ts no longer breaks the layer rule: remove it from the exceptions in eslint-rules/config.js.",
    ]);
  });
});
