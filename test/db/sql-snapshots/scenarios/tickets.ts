import { TicketStore } from "../../../../src/db/stores/tickets.js";
import type {
  CreatedTicketRecord,
  TicketConnectionRecord,
  TicketIntentRecord,
} from "../../../../src/notifications/tickets/records.js";
import { NOW, ORG, REPO_ID } from "./fixtures.js";
import { scenario, when } from "./types.js";

/**
 * The calls of `TicketStore` (`src/db/stores/tickets.ts`), recorded into
 * `src/db/queries/tickets.{sqlite,postgres}.sql`.
 */

const CONNECTION: TicketConnectionRecord = {
  id: "tc_1",
  organizationId: ORG,
  kind: "jira_cloud",
  name: "Jira ENG",
  baseUrl: "https://acme.atlassian.net",
  target: "ENG",
  issueType: "Bug",
  labels: ["flaky-test"],
  email: "bot@acme.example",
  credential: "token",
  lastError: null,
  lastErrorAt: null,
  lastSuccessAt: null,
  failures: 0,
  pausedUntil: null,
  createdAt: NOW,
  updatedAt: NOW,
};
const CONNECTION_ROW = { ...CONNECTION, labels: '["flaky-test"]' };
const INTENT: TicketIntentRecord = {
  testKey: 1,
  connectionId: "tc_1",
  marker: "mainline:tc_1:test-1:abc",
  previousTicket: null,
  source: "manual",
  actor: "token:t1",
  attempts: 0,
  leaseUntil: NOW + 60_000,
  lastError: null,
  createdAt: NOW,
};
const CREATED: CreatedTicketRecord = {
  testKey: 1,
  connectionId: "tc_1",
  url: "https://acme.atlassian.net/browse/ENG-1",
  key: "ENG-1",
  externalId: "10000",
  stateName: "To Do",
  stateOpen: true,
  stateCheckedAt: NOW,
  createdAt: NOW,
};
const TEST_CASE_ROW = {
  key: 1,
  repository_id: REPO_ID,
  id: "test-1",
  status: "flaky",
  ticket: null,
};

export const ticketsScenario = scenario({
  file: "tickets",
  name: "TicketStore",
  create: (handle) => new TicketStore(handle.db, handle.dialect),
  calls: [
    { method: "createConnection", run: (s) => s.createConnection(CONNECTION) },
    { method: "listConnections", run: (s) => s.listConnections(ORG) },
    { method: "findConnection", run: (s) => s.findConnection(ORG, "tc_1") },
    {
      method: "updateConnection",
      answer: when([/^update/, [CONNECTION_ROW]]),
      run: (s) => s.updateConnection(ORG, "tc_1", { name: "Jira", labels: ["flaky"] }, NOW),
    },
    { method: "deleteConnection", run: (s) => s.deleteConnection(ORG, "tc_1") },
    { method: "recordHealth", run: (s) => s.recordHealth("tc_1", { failures: 0 }) },
    { method: "createdTicket", run: (s) => s.createdTicket(1) },
    {
      method: "beginIntent",
      variant: "new",
      answer: when([/from "test_cases"/, [TEST_CASE_ROW]]),
      run: (s) => s.beginIntent(INTENT, null, NOW),
    },
    {
      method: "beginIntent",
      variant: "resumed",
      answer: when(
        [/from "test_cases"/, [TEST_CASE_ROW]],
        [/from "ticket_intents"/, [{ ...INTENT, lease_until: 0 }]],
        [/^update/, [{ ...INTENT }]],
      ),
      run: (s) => s.beginIntent(INTENT, null, NOW),
    },
    {
      method: "completeIntent",
      answer: when([/^select/, [TEST_CASE_ROW]], [/^update/, [TEST_CASE_ROW]]),
      run: (s) => s.completeIntent(CREATED, { words: "Linked ticket ENG-1", actor: "a", at: NOW }),
    },
    { method: "releaseIntent", run: (s) => s.releaseIntent(1, "Jira answered 502", 1) },
    { method: "abandonIntent", run: (s) => s.abandonIntent(1) },
    { method: "expiredIntents", run: (s) => s.expiredIntents(NOW, 10) },
    { method: "ruleRepositories", run: (s) => s.ruleRepositories() },
    {
      method: "ruleCandidates",
      run: (s) => s.ruleCandidates(REPO_ID, ["flaky"], NOW, { offset: 0, limit: 50 }),
    },
    { method: "staleTickets", run: (s) => s.staleTickets(NOW, 50) },
    {
      method: "recordState",
      run: (s) => s.recordState(1, CREATED.url, { name: "Done", open: false }, NOW),
    },
  ],
});
