// @ts-check
/**
 * The layers of src/ and which may import which (docs/ARCHITECTURE.md, "The rule"). The first
 * layer whose pattern matches a file is its layer. An allow entry is a layer's name or, with a
 * slash, a file glob of another layer that may be reached in part only.
 */
import layers from "./layers.js";

/** @type {{ name: string, pattern: string }[]} */
export const LAYERS = [
  { name: "lib", pattern: "src/lib/**" },
  // The version is a constant every layer may print.
  { name: "lib", pattern: "src/version.ts" },
  // The composition root; config.ts reads the environment for it (and for the CLI).
  { name: "app", pattern: "src/app.ts" },
  { name: "app", pattern: "src/app/**" },
  { name: "app", pattern: "src/config.ts" },
  // What the CLI's administrative commands need of storage, without loading the whole app.
  { name: "app", pattern: "src/app-database.ts" },
  { name: "domain", pattern: "src/organizations/**" },
  { name: "domain", pattern: "src/testhealth/**" },
  { name: "domain", pattern: "src/mergequeue/**" },
  { name: "domain", pattern: "src/notifications/**" },
  { name: "db", pattern: "src/db/**" },
  { name: "providers", pattern: "src/providers/**" },
  { name: "api", pattern: "src/api/**" },
  { name: "web", pattern: "src/web/**" },
  { name: "cli", pattern: "src/cli/**" },
];

/** HTTP helpers a provider's own routes, or a client, may share with the API layer. */
const API_SHARED = [
  "src/api/schemas.ts",
  "src/api/types.ts",
  "src/api/plugins/**",
  // The queue address (repo + target branch) the local runner's runs are looked up by.
  "src/api/mergequeue/schemas.ts",
];

/** @type {Record<string, string[]>} */
export const ALLOW = {
  lib: [],
  domain: ["lib"],
  db: ["lib", "domain"],
  providers: ["lib", "domain", ...API_SHARED],
  api: ["lib", "domain", "web"],
  web: ["lib", "domain"],
  cli: ["lib", "domain", "app", "src/api/schemas.ts", "src/api/types.ts"],
  app: ["lib", "domain", "db", "providers", "api", "web", "cli"],
};

/**
 * Files that still break the rule while issue 16's restructuring is merged, each with what removes
 * its forbidden imports. Lint fails on an entry whose file no longer breaks the rule, so the list
 * only shrinks; no new entry is to be added.
 * @type {Record<string, string>}
 */
export const EXCEPTIONS = {};

/** The flat-config block that enforces the rule (also used by test/unit/architecture.test.ts). */
export const layersConfig = {
  files: ["src/**/*.ts"],
  plugins: { layers },
  rules: {
    "layers/direction": ["error", { layers: LAYERS, allow: ALLOW, exceptions: EXCEPTIONS }],
    "layers/no-cycles": ["error", { layers: LAYERS, allow: ALLOW, exceptions: EXCEPTIONS }],
  },
};
