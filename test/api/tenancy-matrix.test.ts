/**
 * The tenancy matrix, generated from `/openapi.json`: organization A (acme) sets up data of every
 * kind (a local repository with pull requests, a merge queue with a merged and a queued pull
 * request, a CI run with its log, an upload with test results), then organization B's token
 * calls every operation of the published document aimed at A's resources. Each call must be
 * refused with 403 or 404 (or the refusal `REFUSED_OTHERWISE` names; never 2xx on A's data,
 * never 5xx), must answer nothing of A's, and
 * must change nothing: a dump of A's data (through A's API, A's git repository, A's rows in every
 * table of the database and A's files on disk) is the same before and after.
 *
 * Request bodies are built from each operation's documented schema, field by field, from what A
 * owns (`FIELD_VALUES`): a new operation is covered as it is published, and one with a field the
 * matrix cannot fill fails here until it is taught the field. Operations that cannot be aimed at
 * A's data say why in `NOT_AIMABLE`.
 */
import { readdir } from "node:fs/promises";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  PROJECT_FILES,
  createLocalProject,
  git,
  mainlineYml,
  type LocalProject,
} from "../helpers/local-project.js";
import { waitFor } from "../helpers/process.js";
import { ok, type ApiResponse, type TestServer } from "../helpers/server.js";
import {
  settle,
  startGitHubServer,
  startGitHubWorld,
  type GitHubWorld,
} from "../helpers/github.js";
import { bundle, junit, putBundle, testIdOf } from "../helpers/uploads.js";

interface SchemaObject {
  type?: string | string[];
  properties?: Record<string, SchemaObject>;
  required?: string[];
  examples?: unknown[];
}
interface Parameter {
  in: "query" | "path";
  name: string;
  required?: boolean;
}
interface Operation {
  security?: unknown[];
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: SchemaObject }> };
}
type Paths = Record<string, Record<string, Operation>>;

const REPO = { host: "local", owner: "acme", name: "shop" };
const TARGET = "main";
/** Strings only A's data holds: none may appear in an answer to B. */
const CANARIES = {
  prTitle: "acme-canary-title",
  queuedTitle: "acme-canary-queued",
  testName: "acmeCanaryTest",
  log: "acme-canary-log",
  githubRepository: "acme-canary-gh-repo",
  ticketConnection: "acme-canary-jira",
  ticketCredential: "acme-canary-jira-personal-access-token",
};

/** Why an operation cannot be aimed at A's data (it is still called, and must change nothing). */
const NOT_AIMABLE: Record<string, string> = {
  "GET /healthz": "unauthenticated liveness; holds no organization's data",
  "GET /v1/status": "unauthenticated service status; holds no organization's data",
  "POST /v1/whoami": "answers the caller's own organization; takes no address of another's",
  "POST /v1/github/listInstallations":
    "answers the caller's own organization's installations; takes no address of another's",
  "POST /v1/gitlab/connect":
    "connects the caller's own organization (its token alone); takes no address of another's",
  "POST /v1/gitlab/authorize":
    "starts an authorization for the caller's own organization; takes no address of another's",
  "POST /v1/gitlab/getConnection":
    "answers the caller's own organization's connection; takes no address of another's",
  "POST /v1/gitlab/disconnect":
    "disconnects the caller's own organization; takes no address of another's",
  "POST /v1/flakytests-cli/upload-metrics":
    "the uploader's telemetry: accepted and discarded, keyed by nothing",
  "POST /v1/flakytests-uploader/upload-metrics":
    "the uploader's telemetry: accepted and discarded, keyed by nothing",
};

/**
 * Operations that, with B's own organization slug (or no slug at all), act in B's organization:
 * B gets a repository of its own with A's repository's name. A 2xx is right there, as long as it
 * answers nothing of A's and changes nothing of A's (checked for every call).
 */
const OWN_ORGANIZATION: Record<string, string> = {
  "POST /v1/local/createRepository":
    "creates B's own local repository of that name, in B's tree on disk (not A's)",
  "POST /v1/metrics/createBundleUpload":
    "with B's slug: an upload to B's own repository of that name (created by its first upload)",
  "POST /v1/metrics/getQuarantineConfig":
    "with B's slug: the quarantine configuration of B's own repository of that name (empty)",
  "POST /v1/flaky-tests/get-public-repo-id":
    "with B's slug: the public id of B's own repository of that name (created if new)",
  "POST /v1/flaky-tests/rotate-public-repo-id":
    "with B's slug: a new public id for B's own repository of that name",
  "POST /v1/webhooks/createEndpoint": "creates an endpoint of B's own organization",
  "POST /v1/webhooks/listEndpoints": "lists B's own organization's endpoints (none of A's)",
  "POST /v1/webhooks/listEvents": "lists B's own organization's events (none of A's)",
  "POST /v1/webhooks/listDeliveries":
    "B's own organization's deliveries; A's endpoint or event id matches none of them",
  "POST /v1/tickets/createConnection":
    "adds a connection of B's own organization (here refused: a kind alone is not enough)",
  "POST /v1/tickets/listConnections": "lists B's own organization's connections (none of A's)",
};

/**
 * Refusals other than 403/404 that an operation answers by contract, with why they reveal
 * nothing of A's and change nothing.
 */
const REFUSED_OTHERWISE: Record<string, { status: number; code: string; why: string }> = {
  "POST /v1/github/linkInstallation": {
    status: 409,
    code: "installation_linked_elsewhere",
    why: "B proved control of the GitHub account (an owner's token); A's installation still never moves",
  },
};

let server: TestServer;
let github: GitHubWorld;
let paths: Paths;
let other: { token: string; organizationId: string; slug: string };
let project: LocalProject;
/** What A owns, as the fields of requests name it. */
const owned = {
  runId: "",
  uploadId: "",
  testId: "",
  queueId: "",
  heads: [] as string[],
  installationId: 0,
  /** A's webhook endpoint and its test event. */
  endpointId: "",
  /** A's ticket connection (named by A's repository's settings). */
  connectionId: "",
  eventId: "",
  /** GitHub tokens B may present: an owner's of A's GitHub organization, and a member's. */
  githubTokens: [] as string[],
};

async function aCall<T = Record<string, unknown>>(operation: string, body: unknown): Promise<T> {
  return ok(server.call<T>(operation, body));
}

beforeAll(async () => {
  github = await startGitHubWorld();
  server = await startGitHubServer(github, { engine: { pollMs: 100 }, watchIntervalMs: 200 });
  const issued = await server.services.organizations.createOrganizationWithToken("globex");
  other = { token: issued.token, organizationId: issued.organization.id, slug: "globex" };
  paths = ((await server.request("/openapi.json")).body as { paths: Paths }).paths;

  // A's local repository, a queue on it, one pull request merged through the built-in runner.
  const { remoteUrl } = await aCall<{ remoteUrl: string }>("local/createRepository", {
    repo: REPO,
  });
  project = await createLocalProject(remoteUrl, {
    ...PROJECT_FILES,
    ".mainline.yml": mainlineYml(`echo ${CANARIES.log} && sh test.sh`),
  });
  owned.heads.push(await project.branch("feature", { "numbers/f.txt": "2\n" }));
  owned.heads.push(await project.branch("queued", { "numbers/q.txt": "3\n" }));
  await aCall("local/openPullRequest", {
    repo: REPO,
    head: "feature",
    base: TARGET,
    title: CANARIES.prTitle,
  });
  await aCall("local/openPullRequest", {
    repo: REPO,
    head: "queued",
    base: TARGET,
    title: CANARIES.queuedTitle,
  });
  const queue = { repo: REPO, targetBranch: TARGET };
  await aCall("createQueue", queue);
  await aCall("updateQueue", { ...queue, requiredStatuses: ["test"] });
  await aCall("submitPullRequest", { ...queue, pr: { number: 1 } });
  await waitFor(async () => {
    const pr = await aCall<{ state: string }>("getSubmittedPullRequest", {
      ...queue,
      pr: { number: 1 },
    });
    return pr.state === "merged";
  }, "A's pull request to merge");
  const runs = await aCall<{ runs: { runId: string }[] }>("local/listCiRuns", queue);
  owned.runId = runs.runs[0]?.runId ?? "";
  expect(owned.runId).not.toBe("");
  // A second pull request waits in the paused queue, with impacted targets.
  await aCall("updateQueue", { ...queue, state: "paused" });
  await aCall("submitPullRequest", { ...queue, pr: { number: 2 } });
  await aCall("setImpactedTargets", {
    ...queue,
    pr: { number: 2, sha: owned.heads[1] },
    impactedTargets: ["t1"],
  });

  // Test results of A's repository.
  const uploaded = await bundle({
    repo: REPO,
    files: [junit([{ name: CANARIES.testName, status: "failed" }])],
  });
  owned.uploadId = await putBundle(server, uploaded, REPO);
  await server.services.worker.idle();
  owned.testId = testIdOf({ name: CANARIES.testName, repo: REPO });
  await aCall("flaky-tests/set-quarantine-override", {
    repo: REPO,
    org_url_slug: "acme",
    test_id: owned.testId,
    override: "always_quarantine",
  });

  // A's GitHub App installation, linked by an owner of its GitHub organization.
  const { gh } = github;
  gh.createOrganization("acme-gh");
  gh.createUser("alice");
  gh.createUser("bob");
  gh.addOrgMember("acme-gh", "alice", "admin");
  gh.addOrgMember("acme-gh", "bob", "member");
  await gh.createRepository({ owner: "acme-gh", name: CANARIES.githubRepository });
  owned.installationId = gh.installApp(github.app.id, { account: "acme-gh" }).id;
  await settle(github, server);
  const alice = gh.createUserToken("alice");
  await aCall("github/linkInstallation", {
    installationId: owned.installationId,
    githubToken: alice,
  });
  owned.githubTokens = [alice, gh.createUserToken("bob")];

  // Nothing moves by itself from here on: whatever changes, B changed.
  await server.services.github?.stop();
  await server.services.local.stop();
  await server.services.engine.stop();
  await server.services.worker.stop();
  owned.queueId = (
    await server.database.handle.db.selectFrom("mergeQueues").select("id").executeTakeFirstOrThrow()
  ).id;
  const endpoint = await aCall<{ endpoint: { id: string } }>("webhooks/createEndpoint", {
    url: "https://hooks.example.com/acme",
    description: CANARIES.testName,
  });
  owned.endpointId = endpoint.endpoint.id;
  owned.eventId = (
    await aCall<{ eventId: string }>("webhooks/sendTestEvent", { endpointId: owned.endpointId })
  ).eventId;
  const connection = await aCall<{ connection: { id: string } }>("tickets/createConnection", {
    kind: "jira_dc",
    name: CANARIES.ticketConnection,
    baseUrl: "https://jira.example.com",
    target: "ENG",
    credential: CANARIES.ticketCredential,
  });
  owned.connectionId = connection.connection.id;
  await aCall("flaky-tests/update-test-settings", {
    repo: REPO,
    org_url_slug: "acme",
    ticket_connection_id: owned.connectionId,
  });
}, 120_000);

afterAll(async () => {
  await server.close();
  await github.gh.close();
});

// ---- the dump of A's data ----------------------------------------------------------------------

/** Every table's rows that belong to A (by organization, repository, queue or upload). */
async function databaseDump(): Promise<Record<string, unknown[]>> {
  const db = server.database.handle.db;
  const tables = await db.introspection.getTables();
  const aRepositories = (
    await db
      .selectFrom("repositories")
      .select("id")
      .where("organizationId", "=", server.organizationId)
      .execute()
  ).map((r) => r.id);
  const aQueues = (
    await db
      .selectFrom("mergeQueues")
      .select("id")
      .where("repositoryId", "in", aRepositories)
      .execute()
  ).map((r) => r.id);
  const dump: Record<string, unknown[]> = {};
  for (const table of tables) {
    const columns = new Set(table.columns.map((c) => c.name));
    const filter = columns.has("organization_id")
      ? sql`organization_id = ${server.organizationId}`
      : columns.has("repository_id")
        ? sql`repository_id in (${sql.join(aRepositories)})`
        : columns.has("queue_id")
          ? sql`queue_id in (${sql.join(aQueues)})`
          : undefined;
    if (!filter) continue;
    const rows = await sql<Record<string, unknown>>`select * from ${sql.table(
      table.name,
    )} where ${filter}`.execute(db);
    dump[table.name] = rows.rows
      .map((row) => JSON.stringify(row, (_key, value: unknown) => stable(value)))
      .sort();
  }
  return dump;
}

/** Big integers as text, so that rows compare by value. */
function stable(value: unknown): unknown {
  return typeof value === "bigint" ? value.toString() : value;
}

async function filesUnder(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { recursive: true, withFileTypes: true });
    return entries
      .filter((e) => e.isFile())
      .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
      .sort();
  } catch {
    return [];
  }
}

/** A's bundles on disk: named by A's uploads (earlier versions: under A's directory). */
async function uploadFilesOfA(dir: string): Promise<string[]> {
  const ids = (
    await server.database.handle.db
      .selectFrom("uploads")
      .select("id")
      .where("organizationId", "=", server.organizationId)
      .execute()
  ).map((row) => row.id);
  expect(ids).toContain(owned.uploadId);
  return (await filesUnder(dir)).filter(
    (file) =>
      file.startsWith(`${server.organizationId}${path.sep}`) ||
      ids.some((id) => file.startsWith(`${id}.`)),
  );
}

async function dumpOfA(): Promise<unknown> {
  const queue = { repo: REPO, targetBranch: TARGET };
  const th = { repo: REPO, org_url_slug: "acme" };
  const page = { page_query: { page_size: 50 } };
  const reads: [string, unknown][] = [
    ["getQueue", queue],
    ["listPullRequests", queue],
    [
      "getSubmittedPullRequests",
      { ...queue, prs: [{ number: 1 }, { number: 2 }], includeTimeline: true },
    ],
    ["getMergeQueueTestingDetails", { ...queue, testRunId: owned.runId }],
    ["local/listPullRequests", { repo: REPO }],
    ["local/listCiRuns", queue],
    ["local/getCiLog", { ...queue, runId: owned.runId, check: "test" }],
    ["flaky-tests/list-uploads", { ...th, ...page }],
    ["flaky-tests/get-upload", { ...th, upload_id: owned.uploadId }],
    ["flaky-tests/list-quarantined-tests", { ...th, ...page }],
    ["flaky-tests/get-test-details", { ...th, test_id: owned.testId }],
    ["flaky-tests/list-test-runs", { ...th, test_id: owned.testId, ...page }],
    ["flaky-tests/get-test-settings", th],
    ["metrics/getQuarantineConfig", { repo: REPO, orgUrlSlug: "acme", testIdentifiers: [] }],
    ["github/listInstallations", {}],
  ];
  const api: Record<string, unknown> = {};
  for (const [operation, body] of reads) {
    const answer = await server.call(operation, body);
    expect(answer.status, `A's ${operation}: ${answer.text}`).toBe(200);
    api[operation] = answer.body;
  }
  const refs = await git(project.remote, "for-each-ref", "--format=%(refname) %(objectname)");
  const dataDir = server.database.dataDir;
  return {
    api,
    refs,
    database: await databaseDump(),
    files: {
      git: await filesUnder(path.join(dataDir, "git", server.organizationId)),
      logs: await filesUnder(path.join(dataDir, "ci", "logs", owned.queueId)),
      uploads: await uploadFilesOfA(path.join(dataDir, "uploads")),
    },
  };
}

// ---- requests aimed at A's data, built from the document -----------------------------------------

/** How each field of a request is aimed at A's data; slugs are tried both as A's and as B's. */
const FIELD_VALUES: Record<string, (schema: SchemaObject) => unknown[]> = {
  repo: () => [REPO],
  targetBranch: () => [TARGET],
  pr: (schema) =>
    schema.properties?.sha ? [{ number: 2, sha: owned.heads[1] }] : [{ number: 1 }, { number: 2 }],
  prs: () => [[{ number: 1 }, { number: 2 }]],
  testRunId: () => [owned.runId],
  runId: () => [owned.runId],
  check: () => ["test"],
  head: () => ["queued"],
  base: () => [TARGET],
  number: () => [2],
  impactedTargets: () => [["stolen"]],
  org_url_slug: () => ["acme", other.slug],
  orgUrlSlug: () => ["acme", other.slug],
  upload_id: () => [owned.uploadId],
  test_id: () => [owned.testId],
  test_case_id: () => [owned.testId],
  external_ticket_id: () => ["STOLEN-1"],
  override: () => ["never_quarantine"],
  page_query: () => [{ page_size: 50 }],
  start_time: () => [new Date(Date.now() - 86_400_000).toISOString()],
  end_time: () => [new Date(Date.now() + 86_400_000).toISOString()],
  status: () => ["flaky"],
  // Optional fields that make a call change something, were it let through.
  concurrency: () => [9],
  title: () => ["stolen"],
  state: () => ["running"],
  deleteRequiredStatuses: () => [true],
  installationId: () => [owned.installationId],
  githubToken: () => owned.githubTokens,
  endpointId: () => [owned.endpointId],
  eventId: () => [owned.eventId],
  connectionId: () => [owned.connectionId],
  kind: () => ["jira_dc"],
  url: () => ["https://stolen.example.com/"],
  // A GitLab token names no organization: B's call connects (or would connect) B's own.
  token: () => ["glpat-stolen"],
};
/**
 * Optional fields sent when an operation has them (besides every required one); `runId` names
 * A's run where an operation may take it instead of another field (getFailFirstTests).
 */
const OPTIONAL_SENT = new Set([
  "concurrency",
  "org_url_slug",
  "orgUrlSlug",
  "title",
  "runId",
  "endpointId",
  "eventId",
  "connectionId",
  "url",
]);

interface Attack {
  key: string;
  method: string;
  url: string;
  body?: unknown;
  label: string;
}

/** Every combination of the field values: one request per combination. */
function bodies(key: string, schema: SchemaObject): unknown[] {
  const fields = Object.keys(schema.properties ?? {}).filter(
    (name) => (schema.required ?? []).includes(name) || OPTIONAL_SENT.has(name),
  );
  let combos: Record<string, unknown>[] = [{}];
  for (const field of fields) {
    const values = FIELD_VALUES[field];
    if (!values) {
      throw new Error(`${key}: the tenancy matrix does not know how to aim field "${field}"`);
    }
    const property = schema.properties?.[field] ?? {};
    combos = combos.flatMap((combo) =>
      values(property).map((value) => ({ ...combo, [field]: value })),
    );
  }
  if (key === "POST /v1/updateQueue") {
    // Each change that would matter, one at a time (some may not be combined).
    return ["state", "deleteRequiredStatuses"]
      .flatMap((field) =>
        combos.map((combo) => ({ ...combo, [field]: FIELD_VALUES[field]?.({})[0] })),
      )
      .concat(combos);
  }
  return combos;
}

/**
 * Every request, those of `OWN_ORGANIZATION` last: once B has a repository of A's repository's
 * name, its calls reach B's own repository, so the calls aimed at A's go first.
 */
function attacks(): Attack[] {
  const all = allAttacks();
  const own = (attack: Attack) => (attack.key in OWN_ORGANIZATION ? 1 : 0);
  return all.sort((a, b) => own(a) - own(b));
}

function allAttacks(): Attack[] {
  const all: Attack[] = [];
  for (const [route, methods] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      const key = `${method.toUpperCase()} ${route}`;
      const schema = operation.requestBody?.content["application/json"]?.schema;
      let url = route;
      const query = new URLSearchParams();
      for (const parameter of operation.parameters ?? []) {
        if (parameter.in === "path" && parameter.name === "id") {
          url = url.replace("{id}", owned.uploadId);
        } else if (parameter.in === "query" && parameter.name === "repo") {
          query.set("repo", `${REPO.owner}/${REPO.name}`);
        } else if (parameter.in === "query" && parameter.name === "repoHost") {
          query.set("repoHost", REPO.host);
        } else if (parameter.in === "query" && parameter.name === "expires") {
          query.set("expires", String(Date.now() + 3_600_000));
        } else if (parameter.in === "query" && parameter.name === "limit") {
          // The size cap of public-id uploads, covered by the signature like the rest.
          query.set("limit", String(1024 ** 3));
        } else if (parameter.in === "query" && parameter.name === "signature") {
          // The signed URL is the credential: B does not have A's signature.
          query.set("signature", "0".repeat(64));
        } else {
          throw new Error(`${key}: the tenancy matrix does not know parameter ${parameter.name}`);
        }
      }
      if (query.size > 0) url = `${url}?${query.toString()}`;
      const list = schema ? bodies(key, schema) : [undefined];
      list.forEach((body, index) => {
        all.push({ key, method: method.toUpperCase(), url, body, label: `${key} #${index + 1}` });
      });
    }
  }
  return all;
}

async function send(attack: Attack): Promise<ApiResponse> {
  const headers: Record<string, string> = { "x-api-token": other.token };
  if (attack.method === "GET") return server.request(attack.url, { headers });
  let body: string | Buffer;
  if (attack.key.startsWith("PUT /v1/uploads/")) {
    headers["content-type"] = "application/octet-stream";
    body = Buffer.from("not A's bundle");
  } else {
    headers["content-type"] = "application/json";
    body = JSON.stringify(attack.body ?? {});
  }
  return server.request(attack.url, { method: attack.method, headers, body });
}

/** Whether a request names A's organization by its slug (B's token must then get a 403). */
function namesSlugOfA(body: unknown): boolean {
  const fields = (body ?? {}) as Record<string, unknown>;
  return fields.org_url_slug === "acme" || fields.orgUrlSlug === "acme";
}

/** Canaries of A's that the request itself does not carry (an error may echo the request). */
function leaked(text: string, attack: Attack): string[] {
  const sent = JSON.stringify(attack.body ?? {}) + attack.url;
  const secrets = [...Object.values(CANARIES), ...owned.heads, owned.queueId];
  return secrets.filter((secret) => !sent.includes(secret) && text.includes(secret));
}

describe("tenancy matrix: organization B aims every documented operation at A's data", () => {
  it("covers every operation of the published document", () => {
    const keys = new Set(attacks().map((a) => a.key));
    const documented = Object.entries(paths).flatMap(([route, methods]) =>
      Object.keys(methods).map((method) => `${method.toUpperCase()} ${route}`),
    );
    expect([...keys].sort()).toEqual(documented.sort());
    // The exemptions name operations that exist.
    for (const key of [
      ...Object.keys(NOT_AIMABLE),
      ...Object.keys(OWN_ORGANIZATION),
      ...Object.keys(REFUSED_OTHERWISE),
    ]) {
      expect(documented).toContain(key);
    }
  });

  it("refuses every call with 403 or 404, answers nothing of A's and changes nothing of A's", async () => {
    const before = (await dumpOfA()) as { database: Record<string, unknown[]> };
    // The dump holds A's data of every kind, so that a change to any of it shows.
    for (const table of [
      "github_installations",
      "github_repositories",
      "repositories",
      "merge_queues",
      "mq_entries",
      "mq_runs",
      "local_pull_requests",
      "ci_runs",
      "uploads",
    ]) {
      expect(before.database[table]?.length ?? 0, table).toBeGreaterThan(0);
    }
    const outcomes: string[] = [];
    const failures: string[] = [];
    for (const attack of attacks()) {
      const response = await send(attack);
      outcomes.push(`${attack.label}: ${String(response.status)}`);
      const leaks = leaked(response.text, attack);
      if (leaks.length > 0) failures.push(`${attack.label} answered A's ${leaks.join(", ")}`);
      if (response.status >= 500) failures.push(`${attack.label}: ${response.text}`);
      const otherwise = REFUSED_OTHERWISE[attack.key];
      const refused =
        response.status === 403 ||
        response.status === 404 ||
        (otherwise !== undefined &&
          response.status === otherwise.status &&
          (response.body as { error?: { code?: string } }).error?.code === otherwise.code);
      const excused =
        attack.key in NOT_AIMABLE || (attack.key in OWN_ORGANIZATION && !namesSlugOfA(attack.body));
      if (!refused && !excused) {
        failures.push(`${attack.label} answered ${String(response.status)}: ${response.text}`);
      }
      // Unauthenticated uploads (the signature is the credential) and exempt operations may
      // refuse otherwise (400, 401); a 2xx only where excused.
      if (response.status < 300 && !excused) failures.push(`${attack.label} succeeded`);
    }
    expect(failures).toEqual([]);
    // B tried A's installation both with an owner's token of its GitHub organization (409) and
    // a member's (403).
    expect(outcomes).toEqual(
      expect.arrayContaining([
        "POST /v1/github/linkInstallation #1: 409",
        "POST /v1/github/linkInstallation #2: 403",
        "POST /v1/github/unlinkInstallation #1: 404",
      ]),
    );
    expect(await dumpOfA()).toEqual(before);
    // The operations B acted in its own organization through made B's data, not A's.
    expect(
      await server.services.stores.repositories.find(other.organizationId, REPO),
    ).toBeDefined();
    expect(outcomes.length).toBeGreaterThan(Object.keys(paths).length);
  }, 120_000);
});
