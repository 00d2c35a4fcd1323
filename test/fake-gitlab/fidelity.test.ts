import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, type Api, type ApiAnswer, type Json } from "../helpers/fake-gitlab/client.js";
import { FakeGitLab } from "../helpers/fake-gitlab/index.js";
import { HookReceiver, type ReceivedHook } from "../helpers/fake-gitlab/receiver.js";

/**
 * Fidelity of the fake GitLab against GitLab's own published examples (test/fixtures/gitlab/,
 * SOURCES.md there says where each came from): every answer and webhook payload the fake produces
 * through its real routes and events is compared, by shape, with the documented example — every
 * key of the example must be in the fake's object with the same JSON type (null on either side
 * is compatible with anything; arrays compare their first elements; objects recurse). Keys only
 * the fake has are reported as information. The request parameters the fake's routes read are
 * checked against GitLab's OpenAPI v2 description (and, for notes, which it does not describe,
 * against the notes API page's parameter tables).
 *
 * A difference that is not a defect of the fake is listed below, per example, with its reason; an
 * exception that no longer matches a difference fails the test, so the lists stay accurate.
 */

const FIXTURES = new URL("../fixtures/gitlab/", import.meta.url);
const fixture = (name: string): unknown =>
  JSON.parse(readFileSync(new URL(name, FIXTURES), "utf8")) as unknown;

type JsonType = "null" | "string" | "number" | "boolean" | "array" | "object";

function jsonType(value: unknown): JsonType {
  if (value === null || value === undefined) return "null";
  if (Array.isArray(value)) return "array";
  const t = typeof value;
  if (t === "string" || t === "number" || t === "boolean") return t;
  return "object";
}

interface ShapeReport {
  /** Paths of keys the example has and the fake lacks. */
  missing: string[];
  /** Paths whose JSON types differ (`path: example T, fake U`). */
  mismatched: string[];
  /** Paths of keys only the fake has (information). */
  extra: string[];
  /** Arrays whose first elements could not be compared (one side empty; information). */
  unverified: string[];
}

function compareShape(example: unknown, actual: unknown, path: string, report: ShapeReport): void {
  const want = jsonType(example);
  const got = jsonType(actual);
  if (want === "null" || got === "null") return;
  if (want !== got) {
    report.mismatched.push(`${path}: example ${want}, fake ${got}`);
    return;
  }
  if (want === "array") {
    const [first] = example as unknown[];
    const [firstActual] = actual as unknown[];
    if (first === undefined || firstActual === undefined) {
      if (first !== undefined) report.unverified.push(`${path}[0]`);
      return;
    }
    compareShape(first, firstActual, `${path}[0]`, report);
    return;
  }
  if (want !== "object") return;
  const exampleObject = example as Record<string, unknown>;
  const actualObject = actual as Record<string, unknown>;
  for (const [key, value] of Object.entries(exampleObject)) {
    const child = `${path}.${key}`;
    if (!(key in actualObject)) report.missing.push(child);
    else compareShape(value, actualObject[key], child, report);
  }
  for (const key of Object.keys(actualObject)) {
    if (!(key in exampleObject)) report.extra.push(`${path}.${key}`);
  }
}

/**
 * Differences from an example that are not defects of the fake: path → reason. A path ending in
 * `.*` covers every key below it (for maps whose keys are data, not fields).
 */
type Exceptions = Record<string, string>;

const covers = (exception: string, path: string): boolean =>
  exception === path || (exception.endsWith(".*") && path.startsWith(exception.slice(0, -1)));

const information: string[] = [];

/**
 * Compares `actual` with the example in `fixtureName`; fails on a missing key or a type mismatch
 * not listed in `exceptions`, and on an exception that matched nothing.
 */
function expectShape(fixtureName: string, actual: unknown, exceptions: Exceptions = {}): void {
  expect(actual, `${fixtureName}: the fake produced nothing to compare`).toBeDefined();
  const report: ShapeReport = { missing: [], mismatched: [], extra: [], unverified: [] };
  compareShape(fixture(fixtureName), actual, "$", report);
  const differences = [...report.missing, ...report.mismatched];
  const pathOf = (d: string): string => d.split(":")[0] ?? d;
  const unexplained = differences.filter(
    (d) => !Object.keys(exceptions).some((e) => covers(e, pathOf(d))),
  );
  const stale = Object.keys(exceptions).filter(
    (e) => !differences.some((d) => covers(e, pathOf(d))),
  );
  information.push(
    `${fixtureName}: ${report.extra.length} key(s) only in the fake` +
      (report.extra.length > 0 ? ` (${report.extra.join(", ")})` : "") +
      (report.unverified.length > 0
        ? `; not compared (empty): ${report.unverified.join(", ")}`
        : "") +
      (Object.keys(exceptions).length > 0
        ? `; exceptions: ${Object.keys(exceptions).join(", ")}`
        : ""),
  );
  expect(
    unexplained,
    `${fixtureName}: differences from GitLab's example:\n${unexplained.join("\n")}`,
  ).toEqual([]);
  expect(stale, `${fixtureName}: exceptions matching no difference:\n${stale.join("\n")}`).toEqual(
    [],
  );
}

// ---- exceptions, with their reasons -----------------------------------------------------------------

const PREMIUM = "Premium/Ultimate only (the fake models GitLab Free)";
const NOT_MODELLED_ASSIGNEES =
  "assignees and reviewers are not modelled (README: What it does not model); the fake sends none";
const CHANGES_ONLY_WHAT_CHANGED =
  "`changes` lists only what the event changed; the example is an edit of other fields";
const NOT_MODELLED_DOWNSTREAM =
  "multi-project/parent-child pipelines are not modelled; GitLab omits `source_pipeline` for " +
  "pipelines without an upstream";
const AUTHOR_ENTITY =
  "the notes page's example author (email, created_at) predates GitLab's `API_Entities_UserBasic` " +
  "(openapi_v2.yaml: id, username, public_email, name, state, locked, avatar_url, avatar_path, " +
  "custom_attributes, web_url), which the merge request examples of the same era also follow";
const FORK_ONLY = "exposed for merge requests from forks only; forks are not modelled";
const ONLY_WITH_PARAMETER = (p: string): string =>
  `exposed only when the request asks for it (${p})`;
const AFTER_PROFILE = (v: string): string =>
  `introduced in GitLab ${v}, after the fake's 17.4 version profile`;
const NOT_PUBLIC_EMAIL =
  "`public_email` in UserBasic appears in the 18.9 OpenAPI description only; no 17.x example has it";

// ---- the scenario -----------------------------------------------------------------------------------

const P = "acme/fidelity";
const ID = encodeURIComponent(P);
const CI_YML = `stages: [build, test]
build:
  stage: build
  script: echo build
lint:
  stage: test
  allow_failure: true
  script:
    - echo lint
    - exit 1
`;

let gl: FakeGitLab;
let receiver: HookReceiver;
let root: Api;
let alice: Api;
let hookId: number;
let sha: string;
let iid: number;
const answers = new Map<string, ApiAnswer>();

async function call(
  label: string,
  client: Api,
  method: string,
  path: string,
  params?: Record<string, unknown>,
): Promise<ApiAnswer> {
  const answer = await client(method, path, params);
  expect(answer.status, `${label}: ${method} ${path} → ${answer.text}`).toBeLessThan(300);
  answers.set(label, answer);
  return answer;
}

const body = (label: string): Json => answers.get(label)?.body ?? {};
const items = (label: string): Json[] => answers.get(label)?.items ?? [];
const hooks = (event: string): ReceivedHook[] => receiver.events(event);

beforeAll(async () => {
  gl = await FakeGitLab.start({ seed: 21 });
  receiver = await HookReceiver.start();
  gl.createUser("alice");
  await gl.createProject({
    path: P,
    files: { "README.md": "fidelity\n", ".gitlab-ci.yml": CI_YML },
  });
  gl.addMember(P, "alice", 30);
  root = api(gl.apiUrl, gl.createToken({ user: "root" }));
  alice = api(gl.apiUrl, gl.createToken({ user: "alice", scopes: ["api"] }));

  const created = await call("create hook", root, "POST", `/projects/${ID}/hooks`, {
    url: receiver.url,
    token: "secret",
    push_events: true,
    merge_requests_events: true,
    note_events: true,
    pipeline_events: true,
    job_events: true,
  });
  hookId = created.body.id as number;

  // A push (Push Hook, a branch pipeline: `build` passes, `lint` fails and is allowed to).
  sha = await gl.commit(
    P,
    "feature/a",
    { "a.txt": "a\n" },
    { author: "alice", message: "Add a\n\nWith a body." },
  );
  await gl.settle();

  // A merge request (hook `open`), an edit (hook `update` with `changes`), a comment (Note Hook).
  const mr = await call("create merge request", alice, "POST", `/projects/${ID}/merge_requests`, {
    source_branch: "feature/a",
    target_branch: "main",
    title: "Draft: Add a",
  });
  iid = mr.body.iid as number;
  await call("update merge request", alice, "PUT", `/projects/${ID}/merge_requests/${iid}`, {
    title: "Add a",
    add_labels: "backend",
  });
  await call("create note", alice, "POST", `/projects/${ID}/merge_requests/${iid}/notes`, {
    body: "Looks good.",
  });
  // An external commit status on the head.
  await call("post status", root, "POST", `/projects/${ID}/statuses/${sha}`, {
    state: "success",
    name: "external/check",
    target_url: "https://ci.example.com/1",
  });
  await gl.settle();

  // Reads. The first single read of a fresh merge request answers `checking`; the second checks.
  await call("get merge request (checking)", root, "GET", `/projects/${ID}/merge_requests/${iid}`);
  await call("get merge request", root, "GET", `/projects/${ID}/merge_requests/${iid}`);
  await call("list notes", root, "GET", `/projects/${ID}/merge_requests/${iid}/notes`);
  await call("list pipelines", root, "GET", `/projects/${ID}/pipelines`, { ref: "feature/a" });
  const pipelineId = items("list pipelines")[0]?.id as number;
  await call("get pipeline", root, "GET", `/projects/${ID}/pipelines/${pipelineId}`);
  await call("list pipeline jobs", root, "GET", `/projects/${ID}/pipelines/${pipelineId}/jobs`);
  await call("list statuses", root, "GET", `/projects/${ID}/repository/commits/${sha}/statuses`);
  await call("get commit", root, "GET", `/projects/${ID}/repository/commits/${sha}`);
  await call("get branch", root, "GET", `/projects/${ID}/repository/branches/feature%2Fa`);
  await call("get hook", root, "GET", `/projects/${ID}/hooks/${hookId}`);
  await call("list hook events", root, "GET", `/projects/${ID}/hooks/${hookId}/events`);
  await call("get user", alice, "GET", "/user");
  await call("get token", alice, "GET", "/personal_access_tokens/self");

  // A pipeline through the API, canceled at once.
  const created2 = await call("create pipeline", root, "POST", `/projects/${ID}/pipeline`, {
    ref: "main",
  });
  await call(
    "cancel pipeline",
    root,
    "POST",
    `/projects/${ID}/pipelines/${created2.body.id as number}/cancel`,
  );

  // The merge (hook `merge`).
  await call("merge", root, "PUT", `/projects/${ID}/merge_requests/${iid}/merge`, { sha });
  await gl.settle();
}, 120_000);

afterAll(async () => {
  await gl.settle();
  await gl.close();
  await receiver.close();
  // Keys only the fake has, and arrays left uncompared: information, not failures.
  console.info(`fake GitLab fidelity, for information:\n  ${information.join("\n  ")}`);
});

// ---- REST API answers ---------------------------------------------------------------------------------

describe("REST API answers have the shape of GitLab's documented examples", () => {
  const MR_API_EXCEPTIONS: Exceptions = {
    "$.merge_after": AFTER_PROFILE("17.5"),
    "$.approvals_before_merge": PREMIUM,
  };

  it("GET …/merge_requests/:iid (docs: Get single MR)", () => {
    expectShape("api-merge-request.json", body("get merge request"), MR_API_EXCEPTIONS);
  });

  it("PUT …/merge_requests/:iid/merge (docs: Merge a merge request)", () => {
    expectShape("api-merge-request-merge.json", body("merge"), {
      "$.merge_after": AFTER_PROFILE("17.5"),
      "$.allow_collaboration": FORK_ONLY,
      "$.allow_maintainer_to_push": FORK_ONLY,
      "$.diverged_commits_count": ONLY_WITH_PARAMETER("include_diverged_commits_count=true"),
    });
  });

  it("POST …/merge_requests/:iid/notes and GET …/notes (docs: Get single merge request note)", () => {
    const author = { "$.author.email": AUTHOR_ENTITY, "$.author.created_at": AUTHOR_ENTITY };
    expectShape("api-note.json", body("create note"), author);
    const listed = items("list notes").find((n) => n.system === false);
    expectShape("api-note.json", listed, author);
  });

  it("GET …/pipelines, GET …/pipelines/:id, POST …/pipeline, POST …/cancel", () => {
    expectShape("api-pipelines.json", items("list pipelines"));
    expectShape("api-pipeline.json", body("get pipeline"));
    expectShape("api-pipeline-create.json", body("create pipeline"));
    expectShape("api-pipeline-cancel.json", body("cancel pipeline"));
  });

  it("GET …/pipelines/:id/jobs (docs: List pipeline jobs)", () => {
    const jobs = items("list pipeline jobs");
    expect(jobs[0]?.status).toBe("failed"); // the example's first job failed: `failure_reason`
    expectShape("api-pipeline-jobs.json", jobs);
  });

  it("GET …/commits/:sha/statuses and POST …/statuses/:sha (docs: commit status)", () => {
    expectShape("api-commit-statuses.json", items("list statuses"));
    expectShape("api-commit-status.json", body("post status"));
  });

  it("GET …/repository/commits/:sha (docs: Get a single commit)", () => {
    expectShape("api-commit.json", body("get commit"));
  });

  it("GET …/repository/branches/:branch (docs: Get single repository branch)", () => {
    expectShape("api-branch.json", body("get branch"));
  });

  it("GET …/hooks/:hook_id and GET …/hooks/:hook_id/events (docs: project webhooks)", () => {
    expectShape("api-hook.json", body("get hook"));
    // The example is a Push Hook's event; the log lists the newest first.
    const pushes = items("list hook events").filter((e) => e.trigger === "push_hooks");
    expectShape("api-hook-events.json", pushes, {
      "$[0].response_headers.*":
        "the keys are whatever headers the receiver answered with (the example's was an Express " +
        "server); the fake does not record them and answers `{}`",
    });
  });

  it("GET /user (docs: List current user, non-administrator)", () => {
    expectShape("api-user.json", body("get user"));
  });

  it("GET /personal_access_tokens/self (docs: the personal access token entity)", () => {
    expectShape("api-personal-access-tokens.json", [body("get token")]);
  });
});

// ---- OAuth provider answers ------------------------------------------------------------------------

describe("OAuth provider answers have the fields of GitLab's OAuth 2.0 API page (api/oauth2)", () => {
  /** Doorkeeper's TokenResponse, as the page's examples show it (no other key). */
  const TOKEN_FIELDS = [
    "access_token",
    "token_type",
    "expires_in",
    "refresh_token",
    "scope",
    "created_at",
  ];
  /** Doorkeeper's token info, and the `scopes`, `expires_in_seconds` GitLab keeps (deprecated). */
  const INFO_FIELDS = [
    "resource_owner_id",
    "scope",
    "expires_in",
    "application",
    "created_at",
    "scopes",
    "expires_in_seconds",
  ];
  const oauth = new Map<string, Json>();

  beforeAll(async () => {
    const redirectUri = "https://mainline.example.com/gitlab/callback";
    const app = gl.createOAuthApplication({ name: "Fidelity", redirectUri, scopes: ["api"] });
    const verifier = "v".repeat(43);
    const authorize = new URL(`${gl.url}/oauth/authorize`);
    const query = {
      client_id: app.applicationId,
      redirect_uri: redirectUri,
      response_type: "code",
      state: "s",
      scope: "api",
      code_challenge: createHash("sha256").update(verifier).digest("base64url"),
      code_challenge_method: "S256",
    };
    for (const [k, v] of Object.entries(query)) authorize.searchParams.set(k, v);
    const redirected = await fetch(authorize, {
      redirect: "manual",
      headers: { cookie: gl.browserCookie("alice") },
    });
    const code = new URL(redirected.headers.get("location") ?? "").searchParams.get("code") ?? "";
    const token = async (params: Record<string, string>): Promise<Json> => {
      const answer = await fetch(`${gl.url}/oauth/token`, {
        method: "POST",
        body: new URLSearchParams({
          client_id: app.applicationId,
          client_secret: app.secret,
          ...params,
        }),
      });
      expect(answer.status).toBe(200);
      return (await answer.json()) as Json;
    };
    const first = await token({
      grant_type: "authorization_code",
      code,
      redirect_uri: redirectUri,
      code_verifier: verifier,
    });
    oauth.set("authorization_code", first);
    const renewed = await token({
      grant_type: "refresh_token",
      refresh_token: first.refresh_token as string,
    });
    oauth.set("refresh_token", renewed);
    const info = await fetch(`${gl.url}/oauth/token/info`, {
      headers: { authorization: `Bearer ${renewed.access_token as string}` },
    });
    oauth.set("info", (await info.json()) as Json);
  });

  it.each(["authorization_code", "refresh_token"])(
    "POST /oauth/token (%s): exactly access_token, token_type, expires_in, refresh_token, scope, created_at",
    (grant) => {
      const answer = oauth.get(grant) ?? {};
      expect(Object.keys(answer).sort()).toEqual([...TOKEN_FIELDS].sort());
      expect(answer).toMatchObject({ token_type: "Bearer", expires_in: 7200, scope: "api" });
      expect(answer.access_token).toMatch(/^[0-9a-f]{64}$/);
      expect(answer.refresh_token).toMatch(/^[0-9a-f]{64}$/);
      expect(typeof answer.created_at).toBe("number");
    },
  );

  it("GET /oauth/token/info", () => {
    const info = oauth.get("info") ?? {};
    expect(Object.keys(info).sort()).toEqual([...INFO_FIELDS].sort());
    expect(info).toMatchObject({ scope: ["api"], scopes: ["api"] });
    expect((info.application as Json).uid).toMatch(/^[0-9a-f]{64}$/);
    for (const key of ["resource_owner_id", "expires_in", "expires_in_seconds", "created_at"])
      expect(typeof info[key], key).toBe("number");
  });
});

// ---- webhook payloads -------------------------------------------------------------------------------

describe("webhook payloads have the shape of GitLab's documented examples", () => {
  it("Push Hook", () => {
    expectShape("webhook-push.json", hooks("Push Hook")[0]?.payload);
  });

  it("Merge Request Hook: update (with changes), open and merge", () => {
    const [update] = hooks("Merge Request Hook").filter(
      (h) => (h.payload.object_attributes as Json).action === "update",
    );
    expectShape("webhook-merge-request.json", update?.payload);
    for (const action of ["open", "merge"]) {
      const [delivery] = hooks("Merge Request Hook").filter(
        (h) => (h.payload.object_attributes as Json).action === action,
      );
      expectShape("webhook-merge-request.json", delivery?.payload, {
        "$.changes.updated_by_id": CHANGES_ONLY_WHAT_CHANGED,
        "$.changes.draft": CHANGES_ONLY_WHAT_CHANGED,
        "$.changes.updated_at": CHANGES_ONLY_WHAT_CHANGED,
        "$.changes.labels": CHANGES_ONLY_WHAT_CHANGED,
        "$.changes.last_edited_at": CHANGES_ONLY_WHAT_CHANGED,
        "$.changes.last_edited_by_id": CHANGES_ONLY_WHAT_CHANGED,
      });
    }
  });

  it("Note Hook on a merge request", () => {
    expectShape("webhook-note-merge-request.json", hooks("Note Hook")[0]?.payload, {
      "$.merge_request.assignee": NOT_MODELLED_ASSIGNEES,
      "$.merge_request.position":
        "a legacy column only this (old) example shows; the merge request hook's " +
        "`object_attributes` example on the same page, the same hook attributes, has none",
    });
  });

  it("Pipeline Hook", () => {
    const [done] = hooks("Pipeline Hook").filter(
      (h) =>
        (h.payload.object_attributes as Json).status === "success" &&
        (h.payload.builds as Json[]).length > 0,
    );
    expectShape("webhook-pipeline.json", done?.payload, {
      "$.source_pipeline": NOT_MODELLED_DOWNSTREAM,
    });
  });

  it("Job Hook", () => {
    const [failed] = hooks("Job Hook").filter((h) => h.payload.build_status === "failed");
    expectShape("webhook-job.json", failed?.payload, {
      "$.source_pipeline": NOT_MODELLED_DOWNSTREAM,
    });
  });
});

// ---- request parameters against GitLab's API description -----------------------------------------

interface Operation {
  method: string;
  path: string;
  query: string[];
  body: string[];
}

const openapi = fixture("openapi-v2-excerpt.json") as {
  operations: Record<string, Operation>;
  definitions: Record<string, string[]>;
};

/** The fake's routes (method, template) and the parameter names each handler reads. */
function routeParameters(): Map<string, Set<string>> {
  const routes = new Map<string, Set<string>>();
  for (const file of ["routes-mrs.ts", "routes-ci.ts", "routes-projects.ts"]) {
    const source = readFileSync(new URL(`../helpers/fake-gitlab/${file}`, import.meta.url), "utf8");
    // Each `add({ … })` call, up to its closing `  });` (routes are registered at that indent).
    for (const call of source.split(/\badd\(\{/).slice(1)) {
      const block = call.split("\n  });")[0] ?? call;
      const method = /method: "(\w+)"/.exec(block)?.[1];
      const path = /path: "([^"]+)"/.exec(block)?.[1];
      if (method === undefined || path === undefined) continue;
      const names = new Set<string>();
      for (const m of block.matchAll(/\b(?:str|int|bool|list|requireStr)\(ctx, "([^"]+)"\)/g))
        names.add((m[1] ?? "").replace(/\[\]$/, ""));
      for (const m of block.matchAll(/ctx\.input\.(\w+)/g)) names.add(m[1] ?? "");
      if (/paginate\(\s*ctx/.test(block)) for (const n of ["page", "per_page"]) names.add(n);
      routes.set(`${method} ${path}`, names);
    }
  }
  return routes;
}

/**
 * The notes API is not in openapi_v2.yaml (its tag list has no `notes`); these are the parameter
 * tables of doc/api/notes.md (gitlabhq/gitlabhq 077b92f7) for merge request notes.
 */
const NOTES_DOCS: Record<string, string[]> = {
  "GET /projects/:id/merge_requests/:iid/notes": ["sort", "order_by", "page", "per_page"],
  "POST /projects/:id/merge_requests/:iid/notes": [
    "body",
    "created_at",
    "merge_request_diff_head_sha",
  ],
  "PUT /projects/:id/merge_requests/:iid/notes/:note_id": ["body", "confidential"],
};

describe("request parameters the fake reads are GitLab's", () => {
  const routes = routeParameters();
  const cases: [string, string, Exceptions][] = [
    [
      "PUT /projects/:id/merge_requests/:iid/merge",
      "putApiV4ProjectsIdMergeRequestsMergeRequestIidMerge",
      {},
    ],
    ["POST /projects/:id/merge_requests", "postApiV4ProjectsIdMergeRequests", {}],
    ["PUT /projects/:id/merge_requests/:iid", "putApiV4ProjectsIdMergeRequestsMergeRequestIid", {}],
    ["GET /projects/:id/pipelines", "getApiV4ProjectsIdPipelines", {}],
    ["POST /projects/:id/pipeline", "postApiV4ProjectsIdPipeline", {}],
    [
      "GET /projects/:id/pipelines/:pipeline_id/jobs",
      "getApiV4ProjectsIdPipelinesPipelineIdJobs",
      {},
    ],
    [
      "POST /projects/:id/pipelines/:pipeline_id/cancel",
      "postApiV4ProjectsIdPipelinesPipelineIdCancel",
      {},
    ],
    ["POST /projects/:id/statuses/:sha", "postApiV4ProjectsIdStatusesSha", {}],
    [
      "GET /projects/:id/repository/commits/:sha/statuses",
      "getApiV4ProjectsIdRepositoryCommitsShaStatuses",
      {},
    ],
    ["GET /projects/:id/repository/commits/:sha", "getApiV4ProjectsIdRepositoryCommitsSha", {}],
  ];

  it.each(cases)("%s reads only parameters of %s", (route, operationId, exceptions) => {
    const operation = openapi.operations[operationId];
    expect(operation, operationId).toBeDefined();
    const known = new Set([...(operation?.query ?? []), ...(operation?.body ?? [])]);
    const read = routes.get(route);
    expect(read, `the fake has no route ${route}`).toBeDefined();
    const unknown = [...(read ?? [])].filter((n) => !known.has(n) && !(n in exceptions));
    expect(unknown).toEqual([]);
  });

  it("the route reader sees what the handlers read", () => {
    expect([...(routes.get("PUT /projects/:id/merge_requests/:iid/merge") ?? [])]).toContain("sha");
    expect([...(routes.get("GET /projects/:id/pipelines") ?? [])]).toEqual(
      expect.arrayContaining(["sha", "ref", "page", "per_page"]),
    );
    expect([...(routes.get("POST /projects/:id/pipeline") ?? [])]).toContain("variables");
  });

  it.each(Object.entries(NOTES_DOCS))(
    "%s reads only documented parameters",
    (route, documented) => {
      const exceptions: Exceptions = {
        internal:
          "notes.md documents `internal` for issue and epic notes of the same noteable endpoint; " +
          "the merge request table omits it",
      };
      const read = routes.get(route);
      expect(read, `the fake has no route ${route}`).toBeDefined();
      const unknown = [...(read ?? [])].filter(
        (n) => !documented.includes(n) && !(n in exceptions),
      );
      expect(unknown).toEqual([]);
    },
  );
});

describe("answers carry the properties of GitLab's entity definitions (openapi_v2.yaml)", () => {
  const keysOf = (o: Json | undefined): Set<string> => new Set(Object.keys(o ?? {}));
  const cases: [string, () => Json | undefined, Exceptions][] = [
    [
      "API_Entities_MergeRequest",
      () => body("get merge request"),
      {
        title_html: ONLY_WITH_PARAMETER("render_html=true"),
        description_html: ONLY_WITH_PARAMETER("render_html=true"),
        diverged_commits_count: ONLY_WITH_PARAMETER("include_diverged_commits_count=true"),
        allow_collaboration: FORK_ONLY,
        allow_maintainer_to_push: FORK_ONLY,
        approvals_before_merge: PREMIUM,
        merge_after: AFTER_PROFILE("17.5"),
      },
    ],
    ["API_Entities_Ci_PipelineBasic", () => items("list pipelines")[0], {}],
    [
      "API_Entities_Ci_Pipeline",
      () => body("create pipeline"),
      { archived: AFTER_PROFILE("18.x (absent from every 17.x example)") },
    ],
    ["API_Entities_Ci_JobBasic", () => items("list pipeline jobs")[0], {}],
    ["API_Entities_CommitDetail", () => body("get commit"), {}],
    ["API_Entities_CommitStatus", () => body("post status"), {}],
    [
      "API_Entities_UserBasic",
      () => body("get merge request").author as Json,
      {
        public_email: NOT_PUBLIC_EMAIL,
        avatar_path:
          "exposed only for requests asking for paths (`only_path`), not by these routes",
        custom_attributes: ONLY_WITH_PARAMETER("with_custom_attributes=true, administrators"),
      },
    ],
  ];

  it.each(cases)("%s", (definition, answer, exceptions) => {
    const properties = openapi.definitions[definition] ?? [];
    expect(properties.length, definition).toBeGreaterThan(0);
    const present = keysOf(answer());
    const missing = properties.filter((p) => !present.has(p) && !(p in exceptions));
    const stale = Object.keys(exceptions).filter((p) => present.has(p));
    expect(missing, `${definition}: properties the fake lacks`).toEqual([]);
    expect(stale, `${definition}: exceptions the fake now has`).toEqual([]);
  });
});
