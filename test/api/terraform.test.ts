import { beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { QUEUE_DEFAULTS } from "../helpers/contract.js";
import {
  STATE_ATTRIBUTES,
  TerraformProviderSubstitute,
  inconsistentAttributes,
  type QueueResourceConfig,
} from "../helpers/terraform-provider.js";

/** Replays the request sequences of Trunk's Terraform provider against a real server. */
let server: TestServer;
let provider: TerraformProviderSubstitute;

beforeAll(async () => {
  server = await startTestServer();
  provider = new TerraformProviderSubstitute(`${server.url}/v1/`, server.token);
  return () => server.close();
});

const repo = { host: "github.com", owner: "acme", name: "infra" };

describe("Terraform provider lifecycle", () => {
  it("create → refresh → update → update → plan without diff → destroy → refresh", async () => {
    const config: QueueResourceConfig = {
      repo,
      targetBranch: "main",
      mode: "single",
      concurrency: 3,
      state: "running",
      testingTimeoutMinutes: 45,
      pendingFailureDepth: 2,
      canOptimisticallyMerge: true,
      batch: true,
      batchingMaxWaitTimeMinutes: 10,
      batchingMinSize: 3,
      mergeMethod: "squash",
      commentsEnabled: false,
      statusCheckEnabled: true,
      directMergeMode: "off",
      optimizationMode: "bisection_skip_redundant_tests",
      bisectionConcurrency: 2,
      enqueueingLabel: "merge",
      stateLabelsEnabled: true,
    };

    // terraform apply (create): createQueue, then updateQueue with deleteRequiredStatuses.
    const created = await provider.create(config);
    expect(inconsistentAttributes(config, created)).toEqual([]);
    expect(created.requiredStatuses).toBeNull();
    const [createCall, updateCall] = provider.diagnostics.requests;
    expect(createCall?.body).toEqual({
      repo,
      targetBranch: "main",
      mode: "single",
      concurrency: 3,
    });
    expect(updateCall?.body).toMatchObject({ deleteRequiredStatuses: true });
    expect(updateCall?.headers["x-source"]).toBe("terraform");

    // terraform plan (refresh): the read matches state exactly, so no diff.
    expect(await provider.read(repo, "main")).toEqual(created);

    // terraform apply (update): required statuses set, other values changed.
    const second = {
      ...config,
      concurrency: 5,
      state: "paused",
      requiredStatuses: ["build", "test"],
    };
    const updated = await provider.update(second);
    expect(inconsistentAttributes(second, updated)).toEqual([]);

    // An explicitly empty list is kept as [] (not null), and round-trips.
    const emptyList = { ...second, requiredStatuses: [] };
    expect(inconsistentAttributes(emptyList, await provider.update(emptyList))).toEqual([]);
    expect((await provider.read(repo, "main"))?.requiredStatuses).toEqual([]);

    // Removing required_statuses from the config: deleteRequiredStatuses, back to null.
    const third: QueueResourceConfig = { ...second, concurrency: 1 };
    delete third.requiredStatuses;
    const reset = await provider.update(third);
    expect(reset.requiredStatuses).toBeNull();
    expect(inconsistentAttributes(third, reset)).toEqual([]);

    // A second plan: still no diff.
    expect(await provider.read(repo, "main")).toEqual(reset);

    // terraform destroy, then a refresh drops the resource from state.
    await provider.delete(repo, "main");
    expect(await provider.read(repo, "main")).toBeNull();
  });

  it("a minimal resource gets the documented defaults", async () => {
    const state = await provider.create({ repo, targetBranch: "minimal" });
    // Every attribute the provider reads, at the contract's default.
    expect(state).toEqual(
      Object.fromEntries(
        Object.keys(STATE_ATTRIBUTES).map((key) => [
          key,
          QUEUE_DEFAULTS[key as keyof typeof QUEUE_DEFAULTS],
        ]),
      ),
    );
  });

  it("import by host/owner/name/branch, with a slash in the branch", async () => {
    await server.call("createQueue", { repo, targetBranch: "release/2026.11" });
    await server.call("updateQueue", { repo, targetBranch: "release/2026.11", concurrency: 4 });
    const imported = await provider.import("github.com/acme/infra/release/2026.11");
    expect(imported.config.targetBranch).toBe("release/2026.11");
    expect(imported.state).toMatchObject({ concurrency: 4, mode: "single" });
  });

  it("create of an existing queue tells the user to import it", async () => {
    await provider.create({ repo, targetBranch: "exists" });
    await expect(provider.create({ repo, targetBranch: "exists" })).rejects.toThrow(/import/);
  });

  it("a configured value outside the bounds fails the apply with the field named", async () => {
    await provider.create({ repo, targetBranch: "bounds" });
    await expect(
      provider.update({ repo, targetBranch: "bounds", batchingMinSize: 0 }),
    ).rejects.toThrow(/400.*batchingMinSize/);
  });

  it("destroy of a missing queue reports an API error, not a crash", async () => {
    await expect(provider.delete(repo, "never-created")).rejects.toThrow(/404/);
  });
});
