import { describe, expect, it } from "vitest";
import { ApiError } from "../../src/lib/errors.js";
import type { Principal } from "../../src/organizations/service.js";
import type { TestDetailRecords } from "../../src/testhealth/ports.js";
import type { StoredTestSettings, TestCaseRow } from "../../src/testhealth/records.js";
import { defaultTestSettings } from "../../src/testhealth/settings.js";
import {
  OVERRIDE_WORDS,
  TestManagementService,
  ticketHistoryWords,
} from "../../src/testhealth/test-management.js";
import type { RepositoryScope } from "../../src/testhealth/test-queries.js";

const principal: Principal = { organizationId: "org-1", organizationSlug: "acme", tokenId: "t-9" };
const REPO = { host: "github.com", owner: "acme", name: "app" };
const TEST_ID = "0b5f3a56-3c39-5a4f-9d6e-123456789abc";

function row(overrides: Partial<TestCaseRow> = {}): TestCaseRow {
  return {
    key: 7,
    repositoryId: "repo-1",
    id: TEST_ID,
    name: "adds",
    classname: null,
    parent: null,
    file: null,
    variant: "",
    status: "flaky",
    statusReason: "",
    statusChangedAt: 0,
    monitorStates: "{}",
    monitorsActive: 0,
    quarantineOverride: "UNSPECIFIED",
    overrideActor: null,
    overrideReason: null,
    overrideAt: null,
    ticket: null,
    ticketLinkedAt: null,
    firstSeenAt: 0,
    lastRunAt: null,
    lastFailureAt: null,
    ...overrides,
  };
}

function settings(ticketBaseUrl: string | null = null): StoredTestSettings {
  return {
    ...defaultTestSettings(),
    ticketBaseUrl,
    codeowners: null,
    codeownersUpdatedAt: null,
    updatedAt: null,
  };
}

/** The service over in-memory ports: what it wrote, in the history's words, is recorded. */
function harness(options: { ticketBaseUrl?: string | null; previousTicket?: string | null } = {}) {
  const written: { kind: string; description: string; actor: string; at: number }[] = [];
  const reclassified: string[] = [];
  const scope: RepositoryScope = {
    principal,
    repository: { id: "repo-1", organizationId: "org-1", createdAt: 0, ...REPO },
    settings: settings(options.ticketBaseUrl ?? null),
  };
  const details: Pick<TestDetailRecords, "setOverride" | "setTicket" | "modifySettings"> = {
    setOverride: (_key, change, description) => {
      written.push({ kind: "override", description, actor: change.actor, at: change.at });
      return Promise.resolve(row({ quarantineOverride: change.override }));
    },
    setTicket: (_key, change, describe) => {
      const description = describe(options.previousTicket ?? null);
      written.push({ kind: "ticket", description, actor: change.actor, at: change.at });
      return Promise.resolve(row({ ticket: change.ticket }));
    },
    modifySettings: (_repositoryId, now, change) =>
      Promise.resolve({ ...scope.settings, ...change(scope.settings), updatedAt: now }),
  };
  const service = new TestManagementService({
    queries: {
      scope: () => Promise.resolve(scope),
      test: (_scope, testId) => {
        if (testId.toLowerCase() !== TEST_ID) {
          return Promise.reject(new ApiError("not_found", `No test ${testId} in this repository.`));
        }
        return Promise.resolve(row());
      },
    },
    details,
    clock: { now: () => 1_000 },
    reclassify: (repositoryId) => {
      reclassified.push(repositoryId);
    },
    ticketConnectionExists: (_organizationId, connectionId) =>
      Promise.resolve(connectionId === "tc_known"),
  });
  return { service, written, reclassified };
}

describe("TestManagementService", () => {
  it("records an override with its reason, and the token as actor when none is named", async () => {
    const { service, written } = harness();
    const { test } = await service.setOverride(principal, {
      orgUrlSlug: "acme",
      repo: REPO,
      testId: TEST_ID,
      override: "ALWAYS_QUARANTINE",
      reason: "blocks releases",
      actor: null,
    });
    expect(test.quarantineOverride).toBe("ALWAYS_QUARANTINE");
    expect(written).toEqual([
      {
        kind: "override",
        description: `${OVERRIDE_WORDS.ALWAYS_QUARANTINE}: blocks releases`,
        actor: "token:t-9",
        at: 1_000,
      },
    ]);
  });

  it("keeps a named actor and words a removed override without a reason", async () => {
    const { service, written } = harness();
    await service.setOverride(principal, {
      orgUrlSlug: "acme",
      repo: REPO,
      testId: TEST_ID,
      override: "UNSPECIFIED",
      reason: null,
      actor: "alice",
    });
    expect(written[0]?.actor).toBe("alice");
    expect(written[0]?.description).toBe(
      "Override removed (UNSPECIFIED): the repository's rule applies",
    );
  });

  it("links a ticket id through the repository's base URL, naming the ticket it replaced", async () => {
    const { service, written } = harness({
      ticketBaseUrl: "https://linear.app/acme/issue/",
      previousTicket: "KAN-1",
    });
    const linked = await service.linkTicket(principal, {
      orgUrlSlug: "acme",
      repo: REPO,
      testId: TEST_ID,
      ticket: "  KAN-2 ",
    });
    expect(linked.htmlUrl).toBe("https://linear.app/acme/issue/KAN-2");
    expect(written[0]?.description).toBe("Linked ticket KAN-2 (replacing KAN-1)");
  });

  it("refuses an id that is not a URL when the repository has no ticket base URL", async () => {
    const { service, written } = harness();
    const linking = service.linkTicket(principal, {
      orgUrlSlug: "acme",
      repo: REPO,
      testId: TEST_ID,
      ticket: "KAN-2",
    });
    await expect(linking).rejects.toMatchObject({ code: "invalid_request" });
    expect(written).toEqual([]);
  });

  it("words unlinking with and without a previous ticket", () => {
    expect(ticketHistoryWords(null, "KAN-1")).toBe("Unlinked ticket KAN-1");
    expect(ticketHistoryWords(null, null)).toBe("Unlinked ticket");
    expect(ticketHistoryWords("KAN-3", null)).toBe("Linked ticket KAN-3");
  });

  it("an unknown test is a 404 and writes nothing", async () => {
    const { service, written } = harness();
    const setting = service.setOverride(principal, {
      orgUrlSlug: "acme",
      repo: REPO,
      testId: "11111111-1111-4111-8111-111111111111",
      override: "NEVER_QUARANTINE",
      reason: null,
      actor: null,
    });
    await expect(setting).rejects.toMatchObject({ code: "not_found" });
    expect(written).toEqual([]);
  });

  it("re-classifies the repository's tests after a settings change, not after an empty one", async () => {
    const { service, reclassified } = harness();
    const unchanged = await service.updateSettings(principal, {
      orgUrlSlug: "acme",
      repo: REPO,
      patch: {},
    });
    expect(unchanged.updatedAt).toBeNull();
    expect(reclassified).toEqual([]);
    const updated = await service.updateSettings(principal, {
      orgUrlSlug: "acme",
      repo: REPO,
      patch: { auto_quarantine: false },
    });
    expect(updated.quarantine.autoQuarantine).toBe(false);
    expect(updated.updatedAt).toBe(1_000);
    expect(reclassified).toEqual(["repo-1"]);
  });
});
