#!/usr/bin/env node
/**
 * Writes the fixtures the fake Jira validates requests and answers with
 * (test/helpers/fake-jira.ts), from Atlassian's published descriptions:
 *
 * - test/fixtures/jira/openapi-extract.json: the Jira Cloud platform REST API v3 operations Mainline
 *   calls (createIssue, getIssue, searchAndReconsileIssuesUsingJql), each with its parameters, its
 *   request body and answers' schemas, and the component schemas they reach (refs kept, so that
 *   recursive schemas stay finite).
 * - test/fixtures/jira/adf-schema.json: the Atlassian Document Format JSON schema (v1, full).
 *
 * Sources (bare git mirrors brought by the `fetch` tool; an npm tarball):
 *   node scripts/extract-jira-openapi.mjs \
 *     --salto /work/.mirror/salto-io+jira-swaggers/repo \
 *     --jql /work/.mirror/cfdude+mcp-jira/repo \
 *     --adf /path/to/package/dist/json-schema/v1/full.json   # of @atlaskit/adf-schema
 *   npx prettier --write test/fixtures/jira
 *
 * salto-io/jira-swaggers (commit e9edd0e, 2022) holds Atlassian's description as it was then,
 * before `GET /rest/api/3/search/jql` existed (Atlassian added it in 2024 and removed
 * `/rest/api/3/search` in 2025); that operation comes from the copy of the same published file in
 * cfdude/mcp-jira (commit 3f2bc64, 2025).
 */
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const SOURCES = {
  salto: {
    repository: "salto-io/jira-swaggers",
    commit: "e9edd0efc751bbc5b2a2c33f8755f9ed04e14158",
    file: "platform-swagger.v3.json",
    operations: ["createIssue", "getIssue"],
  },
  jql: {
    repository: "cfdude/mcp-jira",
    commit: "3f2bc64b6930f5bed3bc0fc637904ab88f4e280a",
    file: "swagger-v3.v3.json",
    operations: ["searchAndReconsileIssuesUsingJql"],
  },
};
const ADF = {
  package: "@atlaskit/adf-schema",
  version: "57.7.22",
  file: "dist/json-schema/v1/full.json",
};

function argument(name) {
  const at = process.argv.indexOf(`--${name}`);
  const value = at === -1 ? undefined : process.argv[at + 1];
  if (!value) {
    console.error(`missing --${name} <path> (see the comment at the top of this script)`);
    process.exit(2);
  }
  return value;
}

function describedAt(gitDir, source) {
  const text = execFileSync("git", ["-C", gitDir, "show", `${source.commit}:${source.file}`], {
    maxBuffer: 64 * 1024 * 1024,
  }).toString("utf8");
  return JSON.parse(text);
}

/** Every `#/components/schemas/X` reachable from `value`. */
function reachable(description, value, seen = new Set()) {
  if (Array.isArray(value)) {
    for (const item of value) reachable(description, item, seen);
  } else if (value && typeof value === "object") {
    for (const [key, inner] of Object.entries(value)) {
      if (key === "$ref" && typeof inner === "string") {
        const name = inner.replace("#/components/schemas/", "");
        if (!seen.has(name)) {
          seen.add(name);
          reachable(description, description.components.schemas[name], seen);
        }
      } else if (key !== "example" && key !== "examples") {
        reachable(description, inner, seen);
      }
    }
  }
  return seen;
}

/** Drops examples (large, and not part of what is checked). */
function withoutExamples(value) {
  if (Array.isArray(value)) return value.map(withoutExamples);
  if (!value || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => key !== "example" && key !== "examples")
      .map(([key, inner]) => [key, withoutExamples(inner)]),
  );
}

function extract(description, names) {
  const operations = {};
  for (const [route, item] of Object.entries(description.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (!names.includes(operation?.operationId)) continue;
      const answers = {};
      for (const [status, answer] of Object.entries(operation.responses ?? {})) {
        answers[status] = answer.content?.["application/json"]?.schema ?? null;
      }
      operations[operation.operationId] = {
        method: method.toUpperCase(),
        path: route,
        parameters: (operation.parameters ?? []).map((p) => ({
          name: p.name,
          in: p.in,
          required: p.required ?? false,
          schema: p.schema,
        })),
        requestBody: operation.requestBody?.content?.["application/json"]?.schema ?? null,
        responses: answers,
      };
    }
  }
  const missing = names.filter((name) => !operations[name]);
  if (missing.length > 0) throw new Error(`not in the description: ${missing.join(", ")}`);
  return withoutExamples(operations);
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const out = path.join(root, "test/fixtures/jira");
mkdirSync(out, { recursive: true });

const operations = {};
const schemas = {};
const versions = {};
for (const [key, source] of Object.entries(SOURCES)) {
  const description = describedAt(argument(key), source);
  versions[key] = description.info.version;
  const extracted = extract(description, source.operations);
  Object.assign(operations, extracted);
  for (const name of [...reachable(description, extracted)].sort()) {
    schemas[name] = withoutExamples(description.components.schemas[name]);
  }
}

const extract_ = {
  _source: {
    about:
      "Operations of Atlassian's Jira Cloud platform REST API v3 description (OpenAPI 3.0.1) that Mainline calls, with the component schemas they reach (a schema both descriptions reach is the later one's). Written by scripts/extract-jira-openapi.mjs; do not edit by hand.",
    descriptions: Object.entries(SOURCES).map(([key, source]) => ({
      repository: `https://github.com/${source.repository}`,
      commit: source.commit,
      file: source.file,
      version: versions[key],
      operations: source.operations,
    })),
    extractedOn: new Date().toISOString().slice(0, 10),
  },
  operations,
  components: { schemas },
};
writeFileSync(path.join(out, "openapi-extract.json"), `${JSON.stringify(extract_, null, 1)}\n`);

const adf = JSON.parse(readFileSync(argument("adf"), "utf8"));
// Draft-04 by its `$schema`, with no keyword that differs in later drafts: without it, Ajv 8
// (draft-07) reads the same rules.
delete adf.$schema;
const adfFixture = {
  _source: {
    about:
      "The Atlassian Document Format JSON schema (v1, full), as published in the npm package below (Apache-2.0, Atlassian). `$schema` (draft-04) removed: the schema uses no keyword whose meaning changed since. Written by scripts/extract-jira-openapi.mjs; do not edit by hand.",
    package: `${ADF.package}@${ADF.version}`,
    file: ADF.file,
    extractedOn: new Date().toISOString().slice(0, 10),
  },
  schema: adf,
};
writeFileSync(path.join(out, "adf-schema.json"), `${JSON.stringify(adfFixture)}\n`);
console.log(
  `wrote ${Object.keys(operations).length} operations, ${Object.keys(schemas).length} schemas; the ADF schema`,
);
