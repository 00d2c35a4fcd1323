/**
 * Which endpoints an event goes to: the one decision, pure, used when an event is prepared. An
 * endpoint takes an event when it takes its type (none listed: every type), its repository (none
 * listed: every repository) and, for a test's events, one of the test's code owners (none
 * listed: every owner). Queue events (`pull_request.*`, `pull_request_batch.*`,
 * `mainline.queue.*`) and the rest are not about an owner: owners never hold them back.
 */
import { ownerKey } from "./kinds.js";

export interface EndpointRoute {
  eventTypes: readonly string[];
  repositoryIds: readonly string[];
  codeOwners: readonly string[];
}

export interface EventRoute {
  type: string;
  repositoryId: string | null;
  /** The test's code owners (CODEOWNERS of its file); empty for events not about a test. */
  owners: readonly string[];
}

/** Whether an event of this type is routed by its test's code owners. */
export function isOwnerScoped(type: string): boolean {
  return type.startsWith("test_case.") || type.startsWith("v2.test_case.");
}

export function takesEvent(endpoint: EndpointRoute, event: EventRoute): boolean {
  const typeOk = endpoint.eventTypes.length === 0 || endpoint.eventTypes.includes(event.type);
  const repositoryOk =
    endpoint.repositoryIds.length === 0 ||
    (event.repositoryId !== null && endpoint.repositoryIds.includes(event.repositoryId));
  return typeOk && repositoryOk && ownersOk(endpoint.codeOwners, event);
}

function ownersOk(wanted: readonly string[], event: EventRoute): boolean {
  if (wanted.length === 0 || !isOwnerScoped(event.type)) return true;
  const owners = new Set(event.owners.map(ownerKey));
  return wanted.some((owner) => owners.has(ownerKey(owner)));
}

/** The code owners an event's body names (`test_case.codeowners`); empty when it names none. */
export function eventOwners(body: Record<string, unknown> | undefined): string[] {
  const test = body?.test_case;
  if (typeof test !== "object" || test === null) return [];
  const owners = (test as { codeowners?: unknown }).codeowners;
  return Array.isArray(owners) ? owners.filter((o): o is string => typeof o === "string") : [];
}
