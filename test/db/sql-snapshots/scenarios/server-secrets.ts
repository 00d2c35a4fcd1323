import { ServerSecretStore } from "../../../../src/db/stores/server-secrets.js";
import { NOW } from "./fixtures.js";
import { scenario } from "./types.js";

/**
 * The calls of `ServerSecretStore` (`src/db/stores/server-secrets.ts`) whose SQL is recorded into
 * `src/db/queries/server-secrets.{sqlite,postgres}.sql`; a method added to the store gets a call
 * here.
 */

export const serverSecretsScenario = scenario({
  file: "server-secrets",
  name: "ServerSecretStore",
  create: (handle) => new ServerSecretStore(handle.db),
  calls: [
    {
      method: "getOrCreate",
      answer: (_sql, index) => (index === 2 ? [{ value: "c2VjcmV0" }] : []),
      run: (s) => s.getOrCreate("page-tokens", NOW),
    },
  ],
});
