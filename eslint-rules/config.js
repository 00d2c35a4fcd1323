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
  { name: "app", pattern: "src/config.ts" },
  { name: "domain", pattern: "src/organizations/**" },
  { name: "domain", pattern: "src/testhealth/**" },
  { name: "domain", pattern: "src/mergequeue/**" },
  { name: "db", pattern: "src/db/**" },
  { name: "providers", pattern: "src/providers/**" },
  // The local git host and the built-in CI runner, until they move under src/providers/local/.
  { name: "providers", pattern: "src/githost/**" },
  { name: "providers", pattern: "src/ci/**" },
  { name: "api", pattern: "src/api/**" },
  { name: "web", pattern: "src/web/**" },
  { name: "cli", pattern: "src/cli/**" },
];

/** HTTP helpers a provider's own routes, or a client, may share with the API layer. */
const API_SHARED = ["src/api/schemas.ts", "src/api/types.ts", "src/api/plugins/**"];

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
export const EXCEPTIONS = {
  "src/api/flakytests/context.ts":
    "routes get narrowed test-health services instead of the Services bag and stores",
  "src/api/flakytests/lists.ts":
    "routes call the test-health query service instead of the Services bag and stores",
  "src/api/flakytests/test-detail-schemas.ts":
    "the test-detail records come from src/testhealth/, not the store",
  "src/api/flakytests/test-page.ts":
    "the page gets a narrowed test-health service and moves to src/web/",
  "src/api/flakytests/tests.ts":
    "routes call the test-health management service instead of the Services bag and stores",
  "src/api/flakytests/uploads.ts": "upload records come from src/testhealth/, not the store",
  "src/api/local/ci.ts": "the local runner's routes move into src/providers/local/",
  "src/api/local/pull-requests.ts": "the local host's routes move into src/providers/local/",
  "src/api/mergequeue/presenters.ts":
    "MergeQueueRecord moves from the store to src/mergequeue/records.ts",
  "src/api/server.ts": "the server gets narrowed dependencies instead of the Services bag",
  "src/ci/service.ts":
    "the runner gets its stores through ports (src/mergequeue/), injected by app.ts",
  "src/ci/test-results.ts": "test-health stores reach the runner through ports, injected by app.ts",
  "src/cli/commands/admin.ts":
    "administrative commands open and migrate the database through the composition root",
  "src/cli/commands/pr.ts": "the local pull-request view becomes a wire type the CLI may share",
  "src/githost/local/changes.ts":
    "host changes become queue commands through the host-independent path in src/mergequeue/",
  "src/githost/local/service.ts":
    "the local host gets its stores through ports, injected by app.ts",
  "src/mergequeue/engine.ts": "merge-queue records and store ports live in src/mergequeue/",
  "src/mergequeue/pull-request-service.ts":
    "merge-queue records and store ports live in src/mergequeue/",
  "src/mergequeue/queue-service.ts": "merge-queue records and store ports live in src/mergequeue/",
  "src/organizations/service.ts":
    "the organization store is reached through a port of src/organizations/",
  "src/testhealth/ingest/classify-tests.ts":
    "test health gets its services and ports (records and store interfaces in src/testhealth/)",
  "src/testhealth/ingest/processor.ts":
    "test health gets its services and ports (records and store interfaces in src/testhealth/)",
  "src/testhealth/ingest/worker.ts":
    "test health gets its services and ports (records and store interfaces in src/testhealth/)",
  "src/testhealth/pager.ts":
    "test health gets its services and ports (records and store interfaces in src/testhealth/)",
  "src/testhealth/public-repository-ids.ts":
    "test health gets its services and ports (records and store interfaces in src/testhealth/)",
  "src/testhealth/repository-access.ts":
    "test health gets its services and ports (records and store interfaces in src/testhealth/)",
  "src/testhealth/test-presenter.ts": "the presenter moves to src/api/ beside its routes",
  "src/testhealth/upload-service.ts":
    "test health gets its services and ports (records and store interfaces in src/testhealth/)",
};

/** The flat-config block that enforces the rule (also used by test/unit/architecture.test.ts). */
export const layersConfig = {
  files: ["src/**/*.ts"],
  plugins: { layers },
  rules: {
    "layers/direction": ["error", { layers: LAYERS, allow: ALLOW, exceptions: EXCEPTIONS }],
    "layers/no-cycles": ["error", { layers: LAYERS, allow: ALLOW, exceptions: EXCEPTIONS }],
  },
};
