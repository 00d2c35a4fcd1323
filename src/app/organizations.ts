/** Tenancy: organizations and their tokens, and the dashboard's sign-in sessions. */
import type { DatabaseHandle } from "../db/connection.js";
import { OrganizationStore } from "../db/stores/organizations.js";
import { SessionStore } from "../db/stores/sessions.js";
import type { Clock } from "../lib/clock.js";
import { OrganizationService } from "../organizations/service.js";
import { SessionService, type SessionLifetimes } from "../organizations/sessions.js";

export interface Organizations {
  store: OrganizationStore;
  organizations: OrganizationService;
  sessions: SessionService;
  /** The slug of an organization that must exist (a row that refers to it was just read). */
  readSlug: (organizationId: string) => Promise<string>;
}

export function createOrganizations(
  database: DatabaseHandle,
  clock: Clock,
  lifetimes: SessionLifetimes | undefined,
): Organizations {
  const store = new OrganizationStore(database.db);
  const organizations = new OrganizationService(store, clock);
  return {
    store,
    organizations,
    sessions: new SessionService({
      sessions: new SessionStore(database.db),
      organizations,
      clock,
      lifetimes,
    }),
    readSlug: async (organizationId) => {
      const organization = await store.findById(organizationId);
      if (!organization) throw new Error(`organization ${organizationId} vanished`);
      return organization.slug;
    },
  };
}
