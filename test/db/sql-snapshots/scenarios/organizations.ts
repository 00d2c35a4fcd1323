import { OrganizationStore } from "../../../../src/db/stores/organizations.js";
import { NOW, ORG } from "./fixtures.js";
import { scenario } from "./types.js";

/**
 * The calls of `OrganizationStore` (`src/db/stores/organizations.ts`) whose SQL is recorded into
 * `src/db/queries/organizations.{sqlite,postgres}.sql`; a method added to the store gets a call
 * here.
 */

export const organizationsScenario = scenario({
  file: "organizations",
  name: "OrganizationStore",
  create: (handle) => new OrganizationStore(handle.db),
  calls: [
    {
      method: "ensure",
      answer: (sql) =>
        sql.startsWith("select") ? [{ id: ORG, slug: "acme", created_at: NOW }] : [],
      run: (s) => s.ensure({ id: ORG, slug: "acme", createdAt: NOW }),
    },
    { method: "findBySlug", run: (s) => s.findBySlug("acme") },
    { method: "list", run: (s) => s.list() },
    { method: "count", answer: () => [{ n: 1 }], run: (s) => s.count() },
    {
      method: "insertToken",
      run: (s) =>
        s.insertToken({
          id: "token-1",
          organizationId: ORG,
          name: "ci",
          tokenHash: "hash",
          tokenHint: "mlt_…abcd",
          createdAt: NOW,
        }),
    },
    { method: "findTokenByHash", run: (s) => s.findTokenByHash("hash") },
    { method: "findById", run: (s) => s.findById(ORG) },
    { method: "findActiveTokenOwner", run: (s) => s.findActiveTokenOwner("hash") },
    { method: "listTokens", run: (s) => s.listTokens(ORG) },
    { method: "findToken", run: (s) => s.findToken("token-1") },
    { method: "revokeToken", run: (s) => s.revokeToken("token-1", NOW) },
    { method: "renameToken", run: (s) => s.renameToken("token-1", "first start") },
  ],
});
