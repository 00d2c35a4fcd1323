import { createAppAuth } from "@octokit/auth-app";
import { Octokit } from "@octokit/core";
import { RequestError } from "@octokit/request-error";
import { Webhooks } from "@octokit/webhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  FakeGitHub,
  GITHUB_ACTIONS_APP_ID,
  type CreatedApp,
  type FaultRule,
} from "../helpers/fake-github/index.js";
import { DEFAULT_APP_EVENTS } from "../helpers/fake-github/app-auth.js";
import { SchemaGuard } from "../helpers/fake-github/openapi-guard.js";
import { WebhookReceiver } from "../helpers/fake-github/receiver.js";

/**
 * Drives every endpoint and every fault of the fake, and holds every answer and every webhook
 * payload to GitHub's own descriptions (`@octokit/openapi`, `@octokit/openapi-webhooks`): an
 * endpoint added without a validated answer, or a payload GitHub would not send, fails here.
 */

let gh: FakeGitHub;
let receiver: WebhookReceiver;
let app: CreatedApp;
let installationId: number;
let client: Octokit;
const NAME = "acme/widgets";
const R = { owner: "acme", repo: "widgets" };

beforeAll(async () => {
  gh = await FakeGitHub.start({ seed: 23, validate: true });
  receiver = await WebhookReceiver.start();
  gh.createOrganization("acme");
  for (const login of ["alice", "bob", "carol", "jenkins"]) gh.createUser(login);
  gh.addOrgMember("acme", "alice", "admin");
  await gh.createRepository({
    owner: "acme",
    name: "widgets",
    files: { "check.sh": "test ! -f BROKEN\n", "a.txt": "1\n2\n3\n" },
  });
  await gh.createRepository({ owner: "acme", name: "gadgets" });
  gh.setCollaborator(NAME, "bob", "write");
  gh.setCollaborator(NAME, "carol", "write");
  app = gh.createApp({
    slug: "mainline",
    webhookUrls: [receiver.url],
    events: [...DEFAULT_APP_EVENTS, "create", "delete", "label"],
  });
  installationId = gh.installApp(app.id, { account: "acme", repositories: ["widgets"] }).id;
  client = new Octokit({
    baseUrl: gh.url,
    authStrategy: createAppAuth,
    auth: { appId: app.id, privateKey: app.privateKey, installationId },
  });
});

afterAll(async () => {
  await gh.settleCi();
  await gh.close();
  await receiver.close();
});

const settle = (p: Promise<unknown>): Promise<number> =>
  p.then(
    (r) => (r as { status: number }).status,
    (e: unknown) => (e as RequestError).status,
  );

describe("every endpoint, against GitHub's OpenAPI description", () => {
  it("has a guard that refuses what GitHub would not send", () => {
    const guard = new SchemaGuard();
    guard.checkResponse("pulls/get", 200, { number: 1, state: "open" });
    guard.checkWebhook("pull_request", "opened", { action: "opened", number: 1 });
    expect(guard.violations.map((v) => v.name)).toEqual(["pulls/get", "pull-request-opened"]);
    expect(() => {
      guard.assertValid();
    }).toThrow(/2 schema violation/);
  });

  it("answers every operation with a body that validates", async () => {
    const jwtClient = new Octokit({
      baseUrl: gh.url,
      authStrategy: createAppAuth,
      auth: { appId: app.id, privateKey: app.privateKey },
    });
    const user = new Octokit({ baseUrl: gh.url, auth: gh.createUserToken("alice") });

    // Apps, installations, users.
    await jwtClient.request("GET /app");
    await jwtClient.request("GET /app/installations");
    await jwtClient.request("GET /app/installations/{installation_id}", {
      installation_id: installationId,
    });
    await jwtClient.request("POST /app/installations/{installation_id}/access_tokens", {
      installation_id: installationId,
      repositories: ["widgets"],
    });
    await jwtClient.request("GET /repos/{owner}/{repo}/installation", R);
    expect(
      await settle(
        jwtClient.request("GET /repos/{owner}/{repo}/installation", {
          owner: "acme",
          repo: "nope",
        }),
      ),
    ).toBe(404);
    await client.request("GET /installation/repositories");
    await user.request("GET /user");
    await user.request("GET /user/memberships/orgs/{org}", { org: "acme" });
    // A user token from the App's user authorization (the web flow) lists its installations.
    gh.authorizeAs("alice");
    const authorized = await fetch(
      `${gh.url}/login/oauth/authorize?client_id=${app.clientId}&redirect_uri=${encodeURIComponent("http://127.0.0.1:1/cb")}&state=s`,
      { redirect: "manual" },
    );
    const code = new URL(authorized.headers.get("location") ?? "").searchParams.get("code");
    const exchanged = await fetch(`${gh.url}/login/oauth/access_token`, {
      method: "POST",
      headers: { accept: "application/json", "content-type": "application/json" },
      body: JSON.stringify({ client_id: app.clientId, client_secret: app.clientSecret, code }),
    });
    const { access_token: appUserToken } = (await exchanged.json()) as { access_token: string };
    await new Octokit({ baseUrl: gh.url, auth: appUserToken }).request("GET /user/installations");
    await client.request("GET /rate_limit");

    // Repository and git data.
    await client.request("GET /repos/{owner}/{repo}", R);
    await client.request("GET /repos/{owner}/{repo}/branches", R);
    await client.request("GET /repos/{owner}/{repo}/branches/{branch}", { ...R, branch: "main" });
    const main = (
      await client.request("GET /repos/{owner}/{repo}/git/ref/{ref}", { ...R, ref: "heads/main" })
    ).data.object.sha;
    await client.request("POST /repos/{owner}/{repo}/git/refs", {
      ...R,
      ref: "refs/heads/trunk-temp/1",
      sha: main,
    });
    await client.request("GET /repos/{owner}/{repo}/git/matching-refs/{ref}", {
      ...R,
      ref: "heads/trunk-temp/",
    });
    const left = await gh.commit(NAME, {
      branch: "left",
      from: "main",
      files: { "a.txt": "1\nleft\n3\n" },
      by: "bob",
    });
    const right = await gh.commit(NAME, {
      branch: "right",
      from: "main",
      files: { "a.txt": "1\nright\n3\n" },
      by: "bob",
    });
    const merged = await client.request("POST /repos/{owner}/{repo}/merges", {
      ...R,
      base: "trunk-temp/1",
      head: left,
    });
    expect(
      await settle(
        client.request("POST /repos/{owner}/{repo}/merges", {
          ...R,
          base: "trunk-temp/1",
          head: left,
        }),
      ),
    ).toBe(204);
    expect(
      await settle(
        client.request("POST /repos/{owner}/{repo}/merges", {
          ...R,
          base: "trunk-temp/1",
          head: right,
        }),
      ),
    ).toBe(409);
    const tree = (
      await client.request("GET /repos/{owner}/{repo}/git/commits/{commit_sha}", {
        ...R,
        commit_sha: merged.data.sha,
      })
    ).data.tree.sha;
    const octopus = await client.request("POST /repos/{owner}/{repo}/git/commits", {
      ...R,
      message: "batch",
      tree,
      parents: [main, left],
    });
    await client.request("POST /repos/{owner}/{repo}/git/refs", {
      ...R,
      ref: "refs/heads/trunk-merge/main/1",
      sha: octopus.data.sha,
    });
    expect(
      await settle(
        client.request("PATCH /repos/{owner}/{repo}/git/refs/{ref}", {
          ...R,
          ref: "heads/trunk-temp/1",
          sha: right,
        }),
      ),
    ).toBe(422);
    await client.request("PATCH /repos/{owner}/{repo}/git/refs/{ref}", {
      ...R,
      ref: "heads/trunk-temp/1",
      sha: right,
      force: true,
    });
    await client.request("DELETE /repos/{owner}/{repo}/git/refs/{ref}", {
      ...R,
      ref: "heads/trunk-temp/1",
    });
    expect(
      await settle(
        client.request("DELETE /repos/{owner}/{repo}/git/refs/{ref}", {
          ...R,
          ref: "heads/trunk-temp/1",
        }),
      ),
    ).toBe(422);
    await client.request("GET /repos/{owner}/{repo}/commits/{ref}", { ...R, ref: left });
    await client.request("GET /repos/{owner}/{repo}/compare/{basehead}", {
      ...R,
      basehead: `main...${left}`,
    });
    await client.request("GET /repos/{owner}/{repo}/contents/{path}", {
      ...R,
      path: "a.txt",
      ref: left,
    });
    await client.request("GET /repos/{owner}/{repo}/contents/{path}", {
      ...R,
      path: "",
      ref: "main",
    });
    await client.request("GET /repos/{owner}/{repo}/contents/{path}", {
      ...R,
      path: "a.txt",
      mediaType: { format: "raw" },
    });

    // Pull requests, reviews, issues.
    await gh.commit(NAME, {
      branch: "feat",
      from: "main",
      files: { "feat.txt": "f\n" },
      by: "bob",
    });
    const { data: pr } = await client.request("POST /repos/{owner}/{repo}/pulls", {
      ...R,
      head: "feat",
      base: "main",
      title: "Feature",
    });
    await client.request("GET /repos/{owner}/{repo}/pulls", R);
    await client.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", {
      ...R,
      pull_number: pr.number,
    });
    await client.request("PATCH /repos/{owner}/{repo}/pulls/{pull_number}", {
      ...R,
      pull_number: pr.number,
      title: "Feature!",
      body: "body",
    });
    await client.request("GET /repos/{owner}/{repo}/pulls/{pull_number}/commits", {
      ...R,
      pull_number: pr.number,
    });
    await client.request("GET /repos/{owner}/{repo}/pulls/{pull_number}/files", {
      ...R,
      pull_number: pr.number,
    });
    await client.request("GET /repos/{owner}/{repo}/commits/{commit_sha}/pulls", {
      ...R,
      commit_sha: pr.head.sha,
    });
    await client.request("POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews", {
      ...R,
      pull_number: pr.number,
      event: "COMMENT",
      body: "looked",
    });
    await gh.approve(NAME, pr.number, "carol");
    await client.request("GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews", {
      ...R,
      pull_number: pr.number,
    });
    expect(
      await settle(
        client.request("GET /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
          ...R,
          pull_number: pr.number,
        }),
      ),
    ).toBe(404);
    await client.request("GET /repos/{owner}/{repo}/issues/{issue_number}", {
      ...R,
      issue_number: pr.number,
    });
    const { data: ticket } = await client.request("POST /repos/{owner}/{repo}/issues", {
      ...R,
      title: "Flaky test",
      body: "<!-- mainline:ticket t -->",
      labels: ["flaky-test"],
      assignees: ["bob"],
    });
    await client.request("GET /repos/{owner}/{repo}/issues/{issue_number}", {
      ...R,
      issue_number: ticket.number,
    });
    await client.request("GET /repos/{owner}/{repo}/issues", { ...R, state: "all" });
    const { data: comment } = await client.request(
      "POST /repos/{owner}/{repo}/issues/{issue_number}/comments",
      { ...R, issue_number: pr.number, body: "Queued" },
    );
    await client.request("GET /repos/{owner}/{repo}/issues/{issue_number}/comments", {
      ...R,
      issue_number: pr.number,
    });
    await client.request("GET /repos/{owner}/{repo}/issues/comments/{comment_id}", {
      ...R,
      comment_id: comment.id,
    });
    await client.request("PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}", {
      ...R,
      comment_id: comment.id,
      body: "Testing",
    });
    const bobs = gh.comment(NAME, pr.number, "/trunk merge", { by: "bob" });
    gh.editComment(NAME, bobs, "/mainline merge", { by: "bob" });
    await client.request("POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions", {
      ...R,
      comment_id: bobs,
      content: "eyes",
    });
    await client.request("POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions", {
      ...R,
      comment_id: bobs,
      content: "eyes",
    });
    await client.request("POST /repos/{owner}/{repo}/issues/{issue_number}/labels", {
      ...R,
      issue_number: pr.number,
      labels: ["trunk:queued"],
    });
    await client.request("GET /repos/{owner}/{repo}/issues/{issue_number}/labels", {
      ...R,
      issue_number: pr.number,
    });
    await client.request("DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}", {
      ...R,
      issue_number: pr.number,
      name: "trunk:queued",
    });
    await client.request("DELETE /repos/{owner}/{repo}/issues/comments/{comment_id}", {
      ...R,
      comment_id: comment.id,
    });
    await client.request("GET /repos/{owner}/{repo}/collaborators/{username}/permission", {
      ...R,
      username: "bob",
    });

    // Checks, statuses, protection, rules.
    const { data: run } = await client.request("POST /repos/{owner}/{repo}/check-runs", {
      ...R,
      name: "Mainline",
      head_sha: pr.head.sha,
      status: "in_progress",
    });
    await client.request("PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}", {
      ...R,
      check_run_id: run.id,
      conclusion: "neutral",
      output: { title: "t", summary: "s" },
    });
    await client.request("GET /repos/{owner}/{repo}/check-runs/{check_run_id}", {
      ...R,
      check_run_id: run.id,
    });
    await client.request("POST /repos/{owner}/{repo}/statuses/{sha}", {
      ...R,
      sha: pr.head.sha,
      state: "success",
      context: "mainline",
    });
    gh.protectBranch(NAME, "main", {
      requiredStatusChecks: {
        strict: true,
        checks: [{ context: "unit", appId: GITHUB_ACTIONS_APP_ID }],
      },
      requiredApprovingReviewCount: 1,
    });
    gh.addRuleset(NAME, {
      name: "queue",
      include: ["~DEFAULT_BRANCH"],
      rules: [
        { type: "non_fast_forward" },
        {
          type: "required_status_checks",
          parameters: {
            strict_required_status_checks_policy: false,
            required_status_checks: [{ context: "unit", integration_id: GITHUB_ACTIONS_APP_ID }],
          },
        },
      ],
    });
    await client.request("GET /repos/{owner}/{repo}/branches/{branch}/protection", {
      ...R,
      branch: "main",
    });
    await client.request(
      "GET /repos/{owner}/{repo}/branches/{branch}/protection/required_status_checks",
      { ...R, branch: "main" },
    );
    expect(
      await settle(
        client.request("GET /repos/{owner}/{repo}/branches/{branch}/protection", {
          ...R,
          branch: "feat",
        }),
      ),
    ).toBe(404);
    await client.request("GET /repos/{owner}/{repo}/rules/branches/{branch}", {
      ...R,
      branch: "main",
    });
    expect(
      await settle(
        client.request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
          ...R,
          pull_number: pr.number,
        }),
      ),
    ).toBe(405);
    gh.configureCi(NAME, [
      {
        name: "ci",
        on: { push: { branches: ["trunk-merge/**", "feat"] } },
        checks: [{ name: "unit", run: "sh check.sh" }],
      },
    ]);
    await gh.pushToPullRequest(NAME, pr.number, { "feat.txt": "f2\n" });
    await gh.settleCi();
    await gh.approve(NAME, pr.number, "carol");
    const head = gh.pullRequest(NAME, pr.number).headSha;
    await client.request("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", { ...R, ref: head });
    await client.request("GET /repos/{owner}/{repo}/commits/{ref}/check-suites", {
      ...R,
      ref: head,
    });
    await client.request("GET /repos/{owner}/{repo}/commits/{ref}/status", { ...R, ref: head });
    await client.request("GET /repos/{owner}/{repo}/commits/{ref}/statuses", {
      ...R,
      ref: pr.head.sha,
    });
    expect(
      await settle(
        client.request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
          ...R,
          pull_number: pr.number,
          sha: pr.head.sha,
        }),
      ),
    ).toBe(409);
    await client.request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
      ...R,
      pull_number: pr.number,
      sha: head,
      merge_method: "squash",
    });
    expect(
      await settle(
        client.request("GET /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
          ...R,
          pull_number: pr.number,
        }),
      ),
    ).toBe(204);
    await client.request("PATCH /repos/{owner}/{repo}/pulls/{pull_number}", {
      ...R,
      pull_number: pr.number,
      state: "closed",
    });

    const workflowRun = gh.startWorkflowRun(NAME, { headSha: head });
    await client.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}", {
      ...R,
      run_id: workflowRun,
    });

    // Every operation answered at least once with a body checked against its schema.
    const served = new Set(gh.http.operationIds());
    const noBody = new Set([
      "git/delete-ref",
      "issues/delete-comment",
      "pulls/check-if-merged",
      // OAuth's web flow is not in the REST description (its shapes: test/fake-github/oauth.test.ts).
      "oauth/authorize",
      "oauth/access-token",
    ]);
    const unchecked = [...served].filter(
      (op) =>
        !noBody.has(op) && ![...(gh.schema.covered.get(op) ?? [])].some((s) => s >= 200 && s < 300),
    );
    expect(unchecked).toEqual([]);
    expect(gh.schema.violations).toEqual([]);
  });

  it("sends every webhook a merge queue reads, each one valid and signed", async () => {
    await gh.commit(NAME, {
      branch: "draft-me",
      from: "main",
      files: { "d.txt": "d\n" },
      by: "bob",
    });
    const n = await gh.openPullRequest(NAME, { head: "draft-me", by: "bob" });
    await gh.addLabels(NAME, n, ["merge"], { by: "bob" });
    await gh.removeLabel(NAME, n, "merge", { by: "bob" });
    await gh.markDraft(NAME, n);
    await gh.markReady(NAME, n);
    await gh.changeBase(NAME, n, "left");
    await gh.closePullRequest(NAME, n);
    await gh.reopenPullRequest(NAME, n);
    gh.deleteComment(NAME, gh.comment(NAME, n, "bye", { by: "bob" }), { by: "bob" });
    gh.postStatus(NAME, gh.pullRequest(NAME, n).headSha, {
      state: "pending",
      context: "jenkins",
      by: "jenkins",
    });
    await gh.push(NAME, "draft-me", null, { by: "bob" });
    gh.addInstallationRepositories(installationId, ["gadgets"], "alice");
    gh.removeInstallationRepositories(installationId, ["gadgets"], "alice");
    gh.suspendInstallation(installationId, "alice");
    gh.unsuspendInstallation(installationId, "alice");
    await gh.settleWebhooks();

    const expected = [
      "installation-created",
      "installation-suspend",
      "installation-unsuspend",
      "installation-repositories-added",
      "installation-repositories-removed",
      "push",
      "create",
      "delete",
      "pull-request-opened",
      "pull-request-synchronize",
      "pull-request-closed",
      "pull-request-reopened",
      "pull-request-edited",
      "pull-request-labeled",
      "pull-request-unlabeled",
      "pull-request-converted-to-draft",
      "pull-request-ready-for-review",
      "pull-request-review-submitted",
      "issue-comment-created",
      "issue-comment-edited",
      "issue-comment-deleted",
      "label-created",
      "check-run-created",
      "check-run-completed",
      "check-suite-completed",
      "status",
    ];
    expect(expected.filter((k) => !gh.schema.coveredWebhooks.has(k))).toEqual([]);
    expect(gh.schema.violations).toEqual([]);

    const webhooks = new Webhooks({ secret: app.webhookSecret });
    const sent = gh.deliveries().filter((d) => d.app.id === app.id);
    expect(receiver.received.length).toBe(sent.length);
    for (const r of receiver.received)
      expect(await webhooks.verify(r.body, r.headers["x-hub-signature-256"] ?? "")).toBe(true);
    const ids = receiver.received
      .filter((r) => r.payload.installation !== undefined)
      .map((r) => (r.payload.installation as { id: number }).id);
    expect(new Set(ids)).toEqual(new Set([installationId]));
  });

  it("answers every fault with GitHub's status and a body that validates where GitHub documents it", async () => {
    const token = gh.installationToken(installationId);
    const plain = new Octokit({ baseUrl: gh.url, auth: token });
    const openPr = async (branch: string): Promise<number> => {
      await gh.commit(NAME, {
        branch,
        from: "main",
        files: { [`${branch}.txt`]: "x\n" },
        by: "bob",
      });
      return gh.openPullRequest(NAME, { head: branch, by: "bob" });
    };
    gh.unprotectBranch(NAME, "main");
    gh.repository(NAME).rulesets = [];
    const cases: [FaultRule, () => Promise<unknown>, number][] = [];
    const merge = (n: number) => () =>
      plain.request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
        ...R,
        pull_number: n,
      });
    cases.push([gh.fault.baseBranchModified(), merge(await openPr("f1")), 405]);
    cases.push([gh.fault.mergeAlreadyInProgress(), merge(await openPr("f2")), 405]);
    cases.push([gh.fault.mergeAlreadyInProgress({ merged: true }), merge(await openPr("f3")), 405]);
    cases.push([gh.fault.headBranchModified(), merge(await openPr("f4")), 409]);
    const base = (await gh.readRef(NAME, "heads/main")) ?? "";
    await plain.request("POST /repos/{owner}/{repo}/git/refs", {
      ...R,
      ref: "refs/heads/trunk-temp/f",
      sha: base,
    });
    const feature = await gh.commit(NAME, {
      branch: "f5",
      from: "main",
      files: { "f5.txt": "x\n" },
      by: "bob",
    });
    cases.push([
      gh.fault.mergesPermissionConflict(),
      () =>
        plain.request("POST /repos/{owner}/{repo}/merges", {
          ...R,
          base: "trunk-temp/f",
          head: feature,
        }),
      409,
    ]);
    const get = () => plain.request("GET /repos/{owner}/{repo}/pulls", R);
    cases.push([gh.fault.serverError("pulls/list", 500), get, 500]);
    cases.push([gh.fault.serverError("pulls/list", 502), get, 502]);
    cases.push([gh.fault.serverError("pulls/list", 503), get, 503]);
    cases.push([gh.fault.secondaryRateLimit("pulls/list", 1), get, 403]);
    cases.push([gh.fault.tooManyRequests("pulls/list", 1), get, 429]);
    cases.push([gh.fault.unauthorizedAfterMint(60_000), get, 401]);
    cases.push([
      gh.fault.succeedsButErrors("pulls/update", 502),
      () =>
        plain.request("PATCH /repos/{owner}/{repo}/pulls/{pull_number}", {
          ...R,
          pull_number: 1,
          title: "t",
        }),
      502,
    ]);
    cases.push([gh.fault.delay("pulls/list", 10), get, 200]);
    cases.push([
      gh.fault.jwtIssuedAtRejected(),
      () =>
        new Octokit({
          baseUrl: gh.url,
          authStrategy: createAppAuth,
          auth: { appId: app.id, privateKey: app.privateKey },
        }).request("GET /app"),
      200,
    ]);
    for (const [rule, call, status] of cases) {
      gh.addFault(rule);
      expect([rule.name, await settle(call())]).toEqual([rule.name, status]);
      expect(gh.faults.fired(rule)).toBe(1);
      gh.faults.remove(rule);
    }
    const other = gh.createApp({ slug: "limited" });
    const limited = new Octokit({
      baseUrl: gh.url,
      auth: gh.installationToken(gh.installApp(other.id, { account: "acme" }).id),
    });
    gh.addFault(gh.fault.primaryRateLimit("pulls/list", 1));
    expect(await settle(limited.request("GET /repos/{owner}/{repo}/pulls", R))).toBe(403);
    gh.faults.clear();
    expect(gh.schema.violations).toEqual([]);
  });
});
