import { Ajv, type ValidateFunction } from "ajv";
import addFormats from "ajv-formats";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../helpers/app.js";
import { REPO } from "../helpers/server.js";

/**
 * `/openapi.json` must describe exactly what the server accepts: an independent validator
 * compiled from the published document must agree with the server on every generated body.
 */
interface Operation {
  security?: unknown[];
  requestBody?: { content: Record<string, { schema: object }> };
  responses: Record<string, { content?: Record<string, { schema: object }> }>;
}
type Paths = Record<string, Record<string, Operation>>;

let server: TestApp;
let paths: Paths;
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats.default(ajv);

beforeAll(async () => {
  server = await createTestApp();
  paths = ((await server.request("/openapi.json")).body as { paths: Paths }).paths;
  await server.call("createQueue", { repo: REPO, targetBranch: "main" });
  return () => server.close();
});

function operation(path: string, method = "post"): Operation {
  const op = paths[path]?.[method];
  if (!op) throw new Error(`${method} ${path} is not documented`);
  return op;
}
function requestValidator(path: string): ValidateFunction {
  const schema = operation(path).requestBody?.content["application/json"]?.schema;
  if (!schema) throw new Error(`${path} documents no JSON body`);
  return ajv.compile(schema);
}
function responseValidator(path: string, status: number, method = "post"): ValidateFunction {
  const schema = operation(path, method).responses[String(status)]?.content?.["application/json"]
    ?.schema;
  if (!schema) throw new Error(`${path} documents no ${status} JSON response`);
  return ajv.compile(schema);
}

describe("the OpenAPI document", () => {
  it("lists every operation, with the token required exactly where the server requires it", () => {
    const documented = Object.entries(paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, op]) => [
        `${method.toUpperCase()} ${path}`,
        (op.security ?? []).length > 0,
      ]),
    );
    expect(Object.fromEntries(documented)).toEqual({
      "GET /healthz": false,
      "GET /v1/status": false,
      "POST /v1/whoami": true,
      "POST /v1/createQueue": true,
      "POST /v1/getQueue": true,
      "POST /v1/updateQueue": true,
      "POST /v1/webhooks/createEndpoint": true,
      "POST /v1/webhooks/deleteEndpoint": true,
      "POST /v1/webhooks/listDeliveries": true,
      "POST /v1/webhooks/listEndpoints": true,
      "POST /v1/webhooks/listEvents": true,
      "POST /v1/webhooks/resend": true,
      "POST /v1/webhooks/revealSecret": true,
      "POST /v1/webhooks/rotateSecret": true,
      "POST /v1/webhooks/sendTestEvent": true,
      "POST /v1/webhooks/updateEndpoint": true,
      "POST /v1/tickets/createConnection": true,
      "POST /v1/tickets/listConnections": true,
      "POST /v1/tickets/updateConnection": true,
      "POST /v1/tickets/deleteConnection": true,
      "POST /v1/deleteQueue": true,
      "POST /v1/submitPullRequest": true,
      "POST /v1/queuePullRequest": true,
      "POST /v1/cancelPullRequest": true,
      "POST /v1/restartTestsOnPullRequest": true,
      "POST /v1/getSubmittedPullRequest": true,
      "POST /v1/getSubmittedPullRequests": true,
      "POST /v1/listPullRequests": true,
      "POST /v1/setImpactedTargets": true,
      "POST /v1/getMergeQueueTestingDetails": true,
      "POST /v1/getFailFirstTests": true,
      "GET /v1/getMergeQueueMetrics": true,
      "POST /v1/local/createRepository": true,
      "POST /v1/local/openPullRequest": true,
      "POST /v1/local/closePullRequest": true,
      "POST /v1/local/listPullRequests": true,
      "POST /v1/local/listCiRuns": true,
      "POST /v1/local/getCiLog": true,
      "POST /v1/github/linkInstallation": true,
      "POST /v1/github/unlinkInstallation": true,
      "POST /v1/github/listInstallations": true,
      "POST /v1/gitlab/connect": true,
      "POST /v1/gitlab/authorize": true,
      "POST /v1/gitlab/getConnection": true,
      "POST /v1/gitlab/disconnect": true,
      "POST /v1/metrics/createBundleUpload": true,
      "POST /v1/metrics/getQuarantineConfig": true,
      // The signed URL is the credential; telemetry is accepted and discarded.
      "PUT /v1/uploads/{id}": false,
      "POST /v1/flakytests-cli/upload-metrics": false,
      "POST /v1/flakytests-uploader/upload-metrics": false,
      "POST /v1/flaky-tests/list-uploads": true,
      "POST /v1/flaky-tests/get-upload": true,
      "POST /v1/flaky-tests/get-public-repo-id": true,
      "POST /v1/flaky-tests/rotate-public-repo-id": true,
      "POST /v1/flaky-tests/list-failing-tests": true,
      "POST /v1/flaky-tests/list-unhealthy-tests": true,
      "POST /v1/flaky-tests/list-quarantined-tests": true,
      "POST /v1/flaky-tests/get-test-details": true,
      "POST /v1/flaky-tests/list-test-runs": true,
      "POST /v1/flaky-tests/link-ticket-to-test-case": true,
      "POST /v1/flaky-tests/set-quarantine-override": true,
      "POST /v1/flaky-tests/get-test-settings": true,
      "POST /v1/flaky-tests/update-test-settings": true,
      "POST /v1/flaky-tests/create-ticket-for-test-case": true,
    });
  });

  it("documents the public repository id exactly where the server takes it", () => {
    const withPublicId = Object.entries(paths).flatMap(([path, methods]) =>
      Object.entries(methods)
        .filter(([, op]) =>
          (op.security ?? []).some(
            (s) => typeof s === "object" && s !== null && "PublicRepoId" in s,
          ),
        )
        .map(([method]) => `${method.toUpperCase()} ${path}`),
    );
    expect(withPublicId.sort()).toEqual([
      "POST /v1/metrics/createBundleUpload",
      "POST /v1/metrics/getQuarantineConfig",
    ]);
  });

  it("documents the fork's workflow run id exactly where the server takes it", () => {
    const withRunId = Object.entries(paths).flatMap(([path, methods]) =>
      Object.entries(methods)
        .filter(([, op]) =>
          (op.security ?? []).some(
            (s) => typeof s === "object" && s !== null && "ForkedWorkflowRun" in s,
          ),
        )
        .map(([method]) => `${method.toUpperCase()} ${path}`),
    );
    expect(withRunId).toEqual(["POST /v1/setImpactedTargets"]);
  });

  it("documents the error envelope for the error statuses of each operation", () => {
    for (const path of ["/v1/createQueue", "/v1/getQueue", "/v1/updateQueue", "/v1/deleteQueue"]) {
      const statuses = Object.keys(operation(path).responses);
      expect(statuses).toEqual(expect.arrayContaining(["200", "400", "401", "415"]));
      const validate = responseValidator(path, 400);
      expect(
        validate({
          error: { code: "invalid_request", message: "x", details: [{ path: "a", message: "b" }] },
        }),
      ).toBe(true);
      expect(validate({ message: "x" })).toBe(false);
    }
    expect(Object.keys(operation("/v1/createQueue").responses)).toContain("409");
    expect(Object.keys(operation("/v1/createQueue").responses)).toContain("404");
    expect(Object.keys(operation("/v1/getQueue").responses)).toContain("404");
  });
});

describe("what the document says of local repository names", () => {
  it("states the local git host's bound and characters on repo.owner and repo.name", () => {
    const schema = operation("/v1/local/createRepository").requestBody?.content["application/json"]
      ?.schema as { properties: { repo: { properties: Record<string, { description: string }> } } };
    for (const field of ["owner", "name"]) {
      const description = schema.properties.repo.properties[field]?.description ?? "";
      expect(description).toContain("at most 100 characters");
      expect(description).toContain("`.git`");
    }
  });
});

/** Values for a field: well-formed, ill-formed, and of the wrong type. */
const anyValue = fc.oneof(
  fc.integer({ min: -3, max: 8 }),
  fc.constantFrom(0, 1, 4294967295, 4294967296, 2.5, -1),
  fc.boolean(),
  fc.constant(null),
  fc.string({ maxLength: 6 }),
  fc.constantFrom(
    "running",
    "PAUSED",
    "Draining",
    "switching_modes",
    "single",
    "PARALLEL",
    "squash",
    "Merge_Commit",
    "rebase",
    "off",
    "always",
    "bisection_skip_redundant_tests",
    "nope",
  ),
  fc.array(fc.oneof(fc.string({ maxLength: 5 }), fc.integer()), { maxLength: 3 }),
);

const SETTINGS = [
  "state",
  "mode",
  "concurrency",
  "bisectionConcurrency",
  "testingTimeoutMinutes",
  "pendingFailureDepth",
  "canOptimisticallyMerge",
  "batch",
  "batchingMaxWaitTimeMinutes",
  "batchingMinSize",
  "mergeMethod",
  "commentsEnabled",
  "commandsEnabled",
  "createPrsForTestingBranches",
  "statusCheckEnabled",
  "directMergeMode",
  "optimizationMode",
  "requiredStatuses",
  "deleteRequiredStatuses",
  "extensionEnabled",
  "enqueueingLabel",
  "labelCommandsEnabled",
  "stateLabelsEnabled",
  "notReadyTimeoutHours",
  "speculationThresholdPercent",
] as const;

const settingsPatch = fc
  .record(
    Object.fromEntries(SETTINGS.map((k) => [k, anyValue])) as Record<
      (typeof SETTINGS)[number],
      fc.Arbitrary<unknown>
    >,
    {
      requiredKeys: [],
    },
  )
  // The one rule beyond field shapes (a list together with deleteRequiredStatuses: true) is
  // described in prose, not in the schema; leave it out of the comparison.
  .filter((p) => !(p.deleteRequiredStatuses === true && Array.isArray(p.requiredStatuses)));

describe("the server accepts exactly what the document describes", () => {
  it("updateQueue", async () => {
    const validate = requestValidator("/v1/updateQueue");
    const validResponse = responseValidator("/v1/updateQueue", 200);
    await fc.assert(
      fc.asyncProperty(settingsPatch, async (patch) => {
        const body = { repo: REPO, targetBranch: "main", ...patch };
        const response = await server.call("updateQueue", body);
        expect(response.status === 200, JSON.stringify(body)).toBe(validate(body));
        if (response.status === 200) expect(validResponse(response.body)).toBe(true);
        else expect(response.status).toBe(400);
      }),
      { numRuns: 300 },
    );
  });

  it("list-unhealthy-tests (status, page size, slug)", async () => {
    const validate = requestValidator("/v1/flaky-tests/list-unhealthy-tests");
    const validResponse = responseValidator("/v1/flaky-tests/list-unhealthy-tests", 200);
    await fc.assert(
      fc.asyncProperty(
        fc.option(fc.oneof(anyValue, fc.constantFrom("FLAKY", "broken", "Flaky", "HEALTHY"))),
        fc.option(fc.oneof(anyValue, fc.integer({ min: -1, max: 102 }))),
        fc.option(fc.constantFrom("acme", "", 7)),
        async (status, pageSize, slug) => {
          const body = {
            repo: REPO,
            ...(slug === null ? {} : { org_url_slug: slug }),
            ...(status === null ? {} : { status }),
            page_query: pageSize === null ? {} : { page_size: pageSize },
          };
          const response = await server.call("flaky-tests/list-unhealthy-tests", body);
          expect(response.status === 200, JSON.stringify(body)).toBe(validate(body));
          if (response.status === 200) expect(validResponse(response.body)).toBe(true);
          // An empty slug passes the schema's type but is no organization: 403.
          else expect([400, 403]).toContain(response.status);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("createQueue, including branch names", async () => {
    const validate = requestValidator("/v1/createQueue");
    const branch = fc.oneof(
      fc.string({ minLength: 0, maxLength: 12 }),
      fc.constantFrom(
        "main",
        "release/1.2",
        "a..b",
        "x.lock",
        "feat//y",
        "@",
        "-dash",
        "é-unicode",
        ".hidden",
        "dir/.x",
        "end/",
        "end.",
      ),
    );
    await fc.assert(
      fc.asyncProperty(
        branch,
        fc.option(anyValue),
        fc.option(anyValue),
        async (targetBranch, mode, concurrency) => {
          const body = {
            repo: REPO,
            targetBranch,
            ...(mode === null ? {} : { mode }),
            ...(concurrency === null ? {} : { concurrency }),
          };
          const response = await server.call("createQueue", body);
          // 409 means valid and already created by an earlier run.
          expect(response.status !== 400, JSON.stringify(body)).toBe(validate(body));
        },
      ),
      { numRuns: 300 },
    );
  });

  it("getQueue and deleteQueue, on the repo object", async () => {
    const part = fc.oneof(fc.string({ maxLength: 4 }), fc.integer(), fc.constant(null));
    const repo = fc.oneof(
      fc.record({ host: part, owner: part, name: part }, { requiredKeys: [] }),
      fc.constant("github.com/acme/app"),
    );
    for (const path of ["/v1/getQueue", "/v1/deleteQueue"]) {
      const validate = requestValidator(path);
      await fc.assert(
        fc.asyncProperty(repo, async (r) => {
          const body = { repo: r, targetBranch: "nonexistent-branch" };
          const response = await server.call(path.slice(4), body);
          expect(response.status !== 400, JSON.stringify(body)).toBe(validate(body));
        }),
        { numRuns: 100 },
      );
    }
  });

  it("getQueue answers what its schema documents", async () => {
    const response = await server.call("getQueue", { repo: REPO, targetBranch: "main" });
    expect(responseValidator("/v1/getQueue", 200)(response.body)).toBe(true);
    expect(
      responseValidator("/v1/status", 200, "get")((await server.request("/v1/status")).body),
    ).toBe(true);
  });
});
