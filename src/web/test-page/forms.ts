/**
 * The test page's forms (their addresses and anti-forgery token) and the notes its forms leave:
 * what the page route and the ticket action both render it with.
 */
import type { RepoRef } from "../../organizations/repositories.js";
import type { PageContext } from "../toolkit.js";
import { urls } from "../urls.js";
import type { TestPageForms } from "./html.js";

/** The notes a test page shows after its forms (the address carries the word, not the text). */
export const TEST_NOTES: Record<string, string> = {
  "quarantine-always": "Saved: this test is always quarantined.",
  "quarantine-never": "Saved: this test is never quarantined.",
  "quarantine-rule": "Saved: the repository's quarantine rule applies to this test again.",
  "ticket-linked": "Saved: the ticket is linked.",
  "ticket-unlinked": "Saved: the ticket is unlinked.",
  "ticket-created": "Created the ticket and linked it to this test.",
};

export function testPageForms(
  context: PageContext,
  testId: string,
  repo: RepoRef,
  shown: { note?: string | undefined; problem?: string | undefined } = {},
): TestPageForms {
  return {
    csrf: context.viewer.csrf,
    overrideAction: urls.testForm(context.org, testId, repo, "quarantine"),
    ticketAction: urls.testForm(context.org, testId, repo, "ticket"),
    createTicketAction: urls.testForm(context.org, testId, repo, "create-ticket"),
    note:
      shown.note !== undefined && Object.hasOwn(TEST_NOTES, shown.note)
        ? TEST_NOTES[shown.note]
        : undefined,
    problem: shown.problem,
  };
}
