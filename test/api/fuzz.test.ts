/**
 * Schema-driven fuzzing of every operation in `/openapi.json` (so new operations are covered by
 * themselves), plus the signed upload URL and the test's HTML page. For each operation, each
 * body, query and path field gets wrong types, out-of-bounds numbers, odd strings (empty, huge,
 * unicode, NUL, unpaired surrogates, path traversal), and each body gets extra fields, deep
 * nesting, invalid JSON and wrong content types; fast-check then combines several at random
 * (seeded, bounded). Every answer must be below 500, and every 4xx must carry the error
 * envelope (the HTML page answers with pages). Failures are collected, so one run lists them all.
 */
import fc from "fast-check";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { REPO, type TestServer } from "../helpers/server.js";
import {
  settle,
  startGitHubServer,
  startGitHubWorld,
  type GitHubWorld,
} from "../helpers/github.js";
import { bundle, ingest, junit, testIdOf } from "../helpers/uploads.js";

const SEED = 20261126;
/** Random multi-field mutations per operation, on top of the exhaustive single-field ones. */
const RANDOM_RUNS = 12;
const PARALLEL = 3;

interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  enum?: unknown[];
  examples?: unknown[];
  format?: string;
  minimum?: number;
  maxLength?: number;
}
interface Parameter {
  in: "query" | "path" | "header";
  name: string;
  schema: Schema;
}
interface Operation {
  security?: unknown[];
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: Schema }> };
}
type Paths = Record<string, Record<string, Operation>>;

let server: TestServer;
/** The GitHub App's operations do their real work: against the fake GitHub. */
let github: GitHubWorld;
let paths: Paths;
let testId: string;
let uploadId: string;

beforeAll(async () => {
  github = await startGitHubWorld();
  server = await startGitHubServer(github);
  // REPO is a repository of the App's installation linked to acme.
  github.gh.createOrganization(REPO.owner);
  await github.gh.createRepository({ owner: REPO.owner, name: REPO.name });
  const { id } = github.gh.installApp(github.app.id, { account: REPO.owner });
  await settle(github, server);
  await server.services.github?.installations.linkAsOperator(id, "acme");
  paths = ((await server.request("/openapi.json")).body as { paths: Paths }).paths;
  // Some state for the operations to reach past "not found": a queue, a test, an upload.
  expect((await server.call("createQueue", { repo: REPO, targetBranch: "main" })).status).toBe(200);
  uploadId = await ingest(server, await bundle({ files: [junit([{ name: "fuzzed" }])] }));
  testId = testIdOf({ name: "fuzzed" });
});
afterAll(async () => {
  await server.close();
  await github.gh.close();
});

/** A JSON value written verbatim into the body (what `JSON.stringify` cannot produce). */
class Raw {
  constructor(readonly json: string) {}
}

const DEEP = 20_000;
/** One of each kind, tried on every field of every operation. */
const FIELD_VALUES: readonly unknown[] = [
  "",
  "x".repeat(20_000),
  "a\u0000b",
  "x\uDC00y",
  "😀e\u0301\u202E\uFEFF",
  "../../../../etc/passwd",
  -1,
  1.5,
  2 ** 53 + 2,
  new Raw("1e400"),
  true,
  null,
  [1, "a", null],
  { a: { b: 1 } },
];
/** More of each kind, drawn at random (several fields at once) by fast-check. */
const ODD_VALUES: readonly unknown[] = [
  ...FIELD_VALUES,
  " ",
  "x".repeat(100_000),
  "a".repeat(256),
  "\u0000",
  "\uD800",
  "１２３",
  "..\\..\\windows\\win.ini",
  "%00",
  "%zz",
  "<script>alert(1)</script>",
  "' OR 1=1 --",
  "\\",
  "-1",
  "1e309",
  "9".repeat(400),
  "NaN",
  "__proto__",
  "00000000-0000-0000-0000-000000000000",
  0,
  2 ** 31,
  2 ** 32,
  -(2 ** 63),
  1e308,
  new Raw("-1e400"),
  new Raw("0.0000000000000000000000001"),
  false,
  [],
  Array.from({ length: 10_000 }, (_, i) => i),
  {},
  new Raw(`${"[".repeat(DEEP)}${"]".repeat(DEEP)}`),
  new Raw(`${'{"a":'.repeat(DEEP)}1${"}".repeat(DEEP)}`),
  new Raw('{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}'),
];

/** Bodies that are not a JSON object at all, sent as application/json. */
const BROKEN_BODIES: readonly string[] = [
  "",
  "{",
  "[",
  "nul",
  '{"a":}',
  '{"a":1,}',
  "\uFEFF{}",
  "[]",
  "1",
  '"text"',
  "null",
  "true",
  "\u0000",
  `${"[".repeat(DEEP)}${"]".repeat(DEEP)}`,
  `{"a":"${"\\u0000".repeat(3)}"}`,
  `{"a":"\\ud800"}`,
];
const WRONG_CONTENT_TYPES: readonly string[] = [
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/xml",
  "application/json; charset=utf-16",
  "application/jsonx",
];

/** A plausible value for a schema: examples, enums, and names the fixtures know. */
function example(schema: Schema, name: string): unknown {
  if (schema.examples?.length) return schema.examples[0];
  if (schema.enum?.length) return schema.enum[0];
  if (schema.anyOf?.length) {
    const branch = schema.anyOf.find((s) => s.type !== "null") ?? schema.anyOf[0];
    return branch ? example(branch, name) : null;
  }
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  const known: Record<string, unknown> = {
    host: REPO.host,
    owner: REPO.owner,
    name: REPO.name,
    targetBranch: "main",
    org_url_slug: "acme",
    orgUrlSlug: "acme",
    test_id: testId,
    upload_id: uploadId,
    sha: "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b",
  };
  if (name in known) return known[name];
  if (types.includes("object")) {
    const value: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(schema.properties ?? {})) {
      if (schema.required?.includes(key)) value[key] = example(child, key);
    }
    return value;
  }
  if (types.includes("array")) return schema.items ? [example(schema.items, name)] : [];
  if (types.includes("integer") || types.includes("number")) return schema.minimum ?? 1;
  if (types.includes("boolean")) return true;
  if (types.includes("string")) {
    if (schema.format === "uuid") return "8f7e6d5c-4b3a-4291-8a7b-6c5d4e3f2a1b";
    if (schema.format === "date-time") return "2026-11-25T21:00:00.000Z";
    return "x";
  }
  return null;
}

type FieldPath = readonly (string | number)[];

interface Field {
  path: FieldPath;
  schema: Schema;
}

/** Every field of a schema, nested objects and first array items included. */
function fieldsOf(schema: Schema, path: FieldPath = []): Field[] {
  const fields: Field[] = [];
  const branches = schema.anyOf ?? [schema];
  for (const branch of branches) {
    for (const [key, child] of Object.entries(branch.properties ?? {})) {
      fields.push({ path: [...path, key], schema: child }, ...fieldsOf(child, [...path, key]));
    }
    if (branch.items) fields.push(...fieldsOf(branch.items, [...path, 0]));
  }
  return fields;
}

/**
 * A field shared by many operations with the same schema (`repo.owner`, `page_query.page_size`)
 * gets every value once, in the first operation that has it, and these in the others: the
 * schema and the text check are shared, so what differs is only the handler behind them.
 */
const SHORT_VALUES: readonly unknown[] = [null, "a\u0000b", "", 2 ** 53 + 2, { a: 1 }];
const fuzzedFields = new Set<string>();

/** A copy of `base` with the field at `path` set (or removed when `value` is `REMOVE`). */
const REMOVE = Symbol("remove");
function withField(base: unknown, path: FieldPath, value: unknown): unknown {
  const [head, ...rest] = path;
  if (head === undefined) return value;
  if (typeof head === "number") {
    const array: unknown[] = Array.isArray(base) ? [...(base as unknown[])] : [];
    if (rest.length === 0 && value === REMOVE) array.splice(head, 1);
    else array[head] = withField(array[head], rest, value);
    return array;
  }
  const object = new Map<string, unknown>(
    typeof base === "object" && base !== null && !Array.isArray(base) ? Object.entries(base) : [],
  );
  if (rest.length === 0 && value === REMOVE) object.delete(head);
  else object.set(head, withField(object.get(head), rest, value));
  return Object.fromEntries(object);
}

/** JSON text with `Raw` values spliced in verbatim. */
function toJson(value: unknown): string {
  const raws: string[] = [];
  const text = JSON.stringify(value, (_key, v: unknown) => {
    if (v instanceof Raw) {
      raws.push(v.json);
      return `\u0001raw${raws.length - 1}\u0001`;
    }
    return v;
  });
  return text.replace(/"\\u0001raw(\d+)\\u0001"/g, (_m, i: string) => raws[Number(i)] ?? "null");
}

/** How a query or path value is written in the URL (a few are sent raw, undecoded). */
function urlValue(value: unknown): string {
  const text =
    value instanceof Raw ? value.json : typeof value === "string" ? value : JSON.stringify(value);
  // An unpaired surrogate has no UTF-8 form: it is sent as the bytes of its WTF-8 encoding.
  return Array.from(text, (char) => {
    const unit = char.charCodeAt(0);
    if (char.length === 1 && unit >= 0xd800 && unit <= 0xdfff) {
      return `%ED%${(0x80 | ((unit >> 6) & 0x3f)).toString(16).toUpperCase()}%${(0x80 | (unit & 0x3f)).toString(16).toUpperCase()}`;
    }
    return encodeURIComponent(char);
  }).join("");
}
const RAW_URL_VALUES = [
  "%zz",
  "%",
  "%E0%A4%A",
  "%00",
  "%ED%A0%80",
  "a".repeat(2000),
  "a".repeat(20_000),
  "..%2F..%2F",
];

interface Probe {
  label: string;
  method: string;
  path: string;
  headers?: Record<string, string> | undefined;
  body?: string | undefined;
  /** The HTML page answers its errors with pages, not JSON envelopes. */
  html?: boolean;
}

let failures: string[] = [];
let probes = 0;
beforeEach(() => {
  failures = [];
  probes = 0;
});

async function check(probe: Probe): Promise<void> {
  probes += 1;
  let response: Response;
  try {
    response = await fetch(`${server.url}${probe.path}`, {
      method: probe.method,
      ...(probe.headers === undefined ? {} : { headers: probe.headers }),
      ...(probe.body === undefined ? {} : { body: probe.body }),
    });
  } catch (error) {
    failures.push(`${probe.label}: request failed: ${String(error)}`);
    return;
  }
  const text = await response.text();
  const type = response.headers.get("content-type") ?? "";
  const where = `${probe.label} → ${response.status} ${text.slice(0, 300)}`;
  if (response.status >= 500) {
    failures.push(where);
    return;
  }
  if (response.status < 400) return;
  if (probe.html && type.startsWith("text/html")) return;
  if (!type.startsWith("application/json")) {
    failures.push(`${where} (content-type ${type})`);
    return;
  }
  try {
    const { error } = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
    if (typeof error?.code !== "string" || typeof error.message !== "string" || !error.message) {
      failures.push(`${where} (no error envelope)`);
    }
  } catch {
    failures.push(`${where} (not JSON)`);
  }
}

async function checkAll(list: readonly Probe[]): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: PARALLEL }, async () => {
      while (next < list.length) {
        const probe = list[next++];
        if (probe) await check(probe);
      }
    }),
  );
}

interface Target {
  method: string;
  path: string;
  operation: Operation;
}

function targets(): Target[] {
  const list: Target[] = [];
  for (const [path, methods] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      list.push({ method: method.toUpperCase(), path, operation });
    }
  }
  return list;
}

function headersFor(target: Target, contentType?: string): Record<string, string> {
  return {
    ...(target.operation.security?.length ? { "x-api-token": server.token } : {}),
    ...(contentType ? { "content-type": contentType } : {}),
  };
}

/** The URL of an operation with its path parameters and query filled in. */
function urlFor(target: Target, values: Record<string, string>): string {
  const params = target.operation.parameters ?? [];
  let path = target.path;
  const raw: string[] = [];
  for (const param of params) {
    const value = values[param.name] ?? urlValue(example(param.schema, param.name));
    if (param.in === "path") path = path.replace(`{${param.name}}`, value);
    else if (param.in === "query") raw.push(`${param.name}=${value}`);
  }
  return raw.length ? `${path}?${raw.join("&")}` : path;
}

/** Single-field mutations of an operation's body, query and path (exhaustive). */
let jsonOperations = 0;

function fieldProbes(target: Target): Probe[] {
  const probes: Probe[] = [];
  const label = `${target.method} ${target.path}`;
  const schema = target.operation.requestBody?.content["application/json"]?.schema;
  const hasJsonBody = schema !== undefined;
  const base = hasJsonBody ? example(schema, "") : undefined;
  const send = (body: unknown, what: string, contentType = "application/json"): Probe => ({
    label: `${label} ${what}`,
    method: target.method,
    path: urlFor(target, {}),
    headers: headersFor(target, contentType),
    body: typeof body === "string" ? body : toJson(body),
  });

  if (hasJsonBody) {
    probes.push(send(base, "base"));
    for (const { path: field, schema: fieldSchema } of fieldsOf(schema)) {
      const name = field.join(".");
      const key = `${name} ${JSON.stringify(fieldSchema)}`;
      const values = fuzzedFields.has(key) ? SHORT_VALUES : FIELD_VALUES;
      fuzzedFields.add(key);
      probes.push(send(withField(base, field, REMOVE), `without ${name}`));
      values.forEach((value, i) => {
        probes.push(send(withField(base, field, value), `${name}=odd#${i}`));
      });
    }
    probes.push(
      send({ ...(base as object), unknownField: "x", [`\u0000key`]: 1 }, "extra fields"),
      send(
        { ...(base as object), extra: new Raw(`${"[".repeat(DEEP)}${"]".repeat(DEEP)}`) },
        "deep",
      ),
    );
    // The body parser is shared: each operation gets every fourth broken body and content type,
    // in turn, so that each is sent to several operations and the first gets them all.
    const index = jsonOperations++;
    const mine = (i: number) => index === 0 || (i + index) % 4 === 0;
    BROKEN_BODIES.forEach((body, i) => {
      if (mine(i)) probes.push(send(body, `broken body #${i}`));
    });
    WRONG_CONTENT_TYPES.forEach((type, i) => {
      if (mine(i)) probes.push(send(base, `as ${type}`, type));
    });
    probes.push({
      label: `${label} without content type`,
      method: target.method,
      path: urlFor(target, {}),
      headers: headersFor(target),
      body: toJson(base),
    });
  } else if (target.method !== "GET") {
    // Operations without a JSON body (the signed upload, telemetry): odd bodies of any type.
    for (const body of ["", "garbage", "\u0000\u0001\u0002", "x".repeat(100_000), "{}"]) {
      for (const type of ["application/octet-stream", "application/json", "text/plain"]) {
        probes.push(send(body, `body ${body.slice(0, 8)} as ${type}`, type));
      }
    }
  } else {
    probes.push({
      label: `${label} base`,
      method: target.method,
      path: urlFor(target, {}),
      headers: headersFor(target),
    });
  }

  for (const param of target.operation.parameters ?? []) {
    if (param.in === "header") continue;
    const values = [...FIELD_VALUES.map(urlValue), ...RAW_URL_VALUES];
    values.forEach((value, i) => {
      probes.push({
        label: `${label} ${param.in} ${param.name}=odd#${i}`,
        method: target.method,
        path: urlFor(target, { [param.name]: value }),
        headers: headersFor(target, hasJsonBody ? "application/json" : "application/octet-stream"),
        body: target.method === "GET" ? undefined : hasJsonBody ? toJson(base) : "x",
      });
    });
  }
  if (target.operation.security?.length) {
    probes.push({
      label: `${label} without a token`,
      method: target.method,
      path: urlFor(target, {}),
      headers: { "content-type": "application/json" },
      body: target.method === "GET" ? undefined : "{",
    });
  }
  return probes;
}

/** Several fields changed at once, chosen by fast-check (seeded). */
async function randomProbes(target: Target, seed: number): Promise<void> {
  const schema = target.operation.requestBody?.content["application/json"]?.schema;
  if (!schema) return;
  const fields = fieldsOf(schema);
  if (fields.length === 0) return;
  const base = example(schema, "");
  const mutation = fc.array(
    fc.tuple(
      fc.constantFrom(...fields.map((field) => field.path)),
      fc.oneof(
        fc.constantFrom(...ODD_VALUES),
        fc.string({ unit: "binary", maxLength: 40 }),
        fc.string({ unit: "grapheme", maxLength: 40 }),
        fc.integer(),
        fc.double(),
        fc.jsonValue({ maxDepth: 4 }),
      ),
    ),
    { minLength: 1, maxLength: 4 },
  );
  await fc.assert(
    fc.asyncProperty(mutation, async (changes) => {
      let body = base;
      for (const [field, value] of changes) body = withField(body, field, value);
      await check({
        label: `${target.method} ${target.path} random ${toJson(changes).slice(0, 200)}`,
        method: target.method,
        path: urlFor(target, {}),
        headers: headersFor(target, "application/json"),
        body: toJson(body),
      });
      return true;
    }),
    { seed, numRuns: RANDOM_RUNS },
  );
}

describe("fuzzing every operation of /openapi.json", () => {
  it("answers below 500, with the error envelope on every 4xx", async () => {
    const all = targets();
    // The document must list what this test relies on to cover the server.
    expect(all.length).toBeGreaterThan(30);
    expect(all.some((t) => t.path === "/v1/uploads/{id}" && t.method === "PUT")).toBe(true);
    for (const target of all) await checkAll(fieldProbes(target));
    let seed = SEED;
    for (const target of all) await randomProbes(target, seed++);
    expect(failures, `${failures.length} of ${probes} probes failed`).toEqual([]);
  }, 240_000);

  it("the signed upload URL: odd signatures, expiries and bodies on a real URL", async () => {
    const created = await server.call<{ url: string }>("metrics/createBundleUpload", {
      repo: REPO,
      orgUrlSlug: "acme",
    });
    expect(created.status).toBe(200);
    const url = new URL(created.body.url);
    const id = url.pathname.split("/").at(-1) ?? "";
    const expires = url.searchParams.get("expires") ?? "";
    const signature = url.searchParams.get("signature") ?? "";
    const list: Probe[] = [];
    const values = [...ODD_VALUES.map(urlValue), ...RAW_URL_VALUES];
    values.forEach((value, i) => {
      for (const [name, query] of [
        ["expires", `expires=${value}&signature=${signature}`],
        ["signature", `expires=${expires}&signature=${value}`],
        ["both twice", `expires=${value}&expires=${expires}&signature=${value}&signature=x`],
      ] as const) {
        list.push({
          label: `PUT signed ${name}=odd#${i}`,
          method: "PUT",
          path: `/v1/uploads/${id}?${query}`,
          headers: { "content-type": "application/octet-stream" },
          body: "not a bundle",
        });
      }
    });
    await checkAll(list);
    // The real URL takes one body (any bytes: a bad bundle fails later, in the background).
    await check({
      label: "PUT signed, garbage bundle",
      method: "PUT",
      path: `${url.pathname}${url.search}`,
      headers: { "content-type": "application/octet-stream" },
      body: "\u0000garbage",
    });
    await check({
      label: "PUT signed, again",
      method: "PUT",
      path: `${url.pathname}${url.search}`,
      body: "again",
    });
    await server.services.worker.idle();
    expect(failures, `${failures.length} of ${probes} probes failed`).toEqual([]);
  }, 120_000);

  it("the dashboard's pages: odd addresses, queries, cookies and forms", async () => {
    const list: Probe[] = [];
    const values = [...ODD_VALUES.map(urlValue), ...RAW_URL_VALUES];
    const page = (org: string, id: string, query: string) =>
      `/${org}/flaky-tests/test/${id}?${query}`;
    values.forEach((value, i) => {
      for (const [what, path] of [
        ["org", page(value, testId, "repo=acme/app")],
        ["id", page("acme", value, "repo=acme/app")],
        ["repo", page("acme", testId, `repo=${value}`)],
        ["host", page("acme", testId, `repo=acme/app&host=${value}`)],
        ["home", `/${value}`],
        ["tests", `/${value}/flaky-tests`],
        ["queues", `/${value}/merge-queue`],
        ["repository", `/acme/flaky-tests/repo?repo=${value}&status=${value}&page=${value}`],
        ["queue", `/acme/merge-queue/queue?repo=acme/app&branch=${value}`],
        ["queue repo", `/acme/merge-queue/queue?repo=${value}&host=${value}&branch=main`],
        ["pr", `/acme/merge-queue/pr/${value}?repo=acme/app&branch=${value}`],
        ["health", `/acme/merge-queue/health?repo=acme/app&branch=main&range=${value}`],
        ["log", `/acme/merge-queue/log?repo=acme/app&branch=main&run=${value}&check=${value}`],
        ["next", `/sign-in?next=${value}`],
        ["asset", `/assets/${value}`],
      ] as const) {
        list.push({
          label: `GET ${what}=odd#${i}`,
          method: "GET",
          path,
          headers: { "x-api-token": server.token },
          html: true,
        });
      }
      for (const path of ["/sign-in", "/sign-out"]) {
        list.push({
          label: `POST ${path} fields=odd#${i}`,
          method: "POST",
          path,
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: `token=${value}&csrf=${value}&next=${value}`,
          html: true,
        });
      }
    });
    for (const cookie of [
      "mainline_token=%zz",
      "mainline_token=\u00ff",
      `mainline_token=${"a".repeat(5000)}`,
      "mainline_session=%zz",
      "mainline_session=\u00ff",
      `mainline_session=mls_${"a".repeat(43)}`,
      `mainline_session=${"a".repeat(5000)}`,
      "mainline_signin=%zz; mainline_session=",
    ]) {
      for (const path of ["/", "/acme", page("acme", testId, "repo=acme/app")]) {
        list.push({
          label: `GET ${path} cookie ${cookie.slice(0, 24)}`,
          method: "GET",
          path,
          headers: { cookie },
          html: true,
        });
      }
      list.push({
        label: `POST /sign-out cookie ${cookie.slice(0, 24)}`,
        method: "POST",
        path: "/sign-out",
        headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
        body: "csrf=x",
        html: true,
      });
    }
    for (const body of BROKEN_BODIES) {
      for (const type of [
        "application/x-www-form-urlencoded",
        ...WRONG_CONTENT_TYPES,
        "application/json",
      ]) {
        for (const path of ["/sign-in", "/sign-out"]) {
          list.push({
            label: `POST ${path} body as ${type}`,
            method: "POST",
            path,
            headers: { "content-type": type },
            body,
            html: true,
          });
        }
      }
    }
    list.push({
      label: "POST /sign-in, form over its limit",
      method: "POST",
      path: "/sign-in",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `token=${"a".repeat(64 * 1024)}`,
      html: true,
    });
    await checkAll(list);
    expect(failures, `${failures.length} of ${probes} probes failed`).toEqual([]);
  }, 120_000);
});
