/**
 * Who handles which webhook event (by event, or event and action): installation handlers run for
 * every delivery; organization handlers only for a linked installation's, with its organization and
 * the payload's repository resolved within it (an unlinked one's deliveries wait, parked). Events
 * are hints: a handler reads the state it acts on again, so late or repeated ones are harmless.
 */
import type { EmitterWebhookEvent, EmitterWebhookEventName } from "@octokit/webhooks";
import type { GitHubInstallationRecord } from "../../../organizations/github-installations.js";
import type { OwnedRepoRef } from "../../../organizations/repositories.js";
import type { GitHubClient } from "../client.js";

/** An event name, or `event.action`, as @octokit/webhooks names them. */
export type WebhookName = EmitterWebhookEventName;

/** What every delivery carries besides @octokit/webhooks' `{id, name, payload}`. */
export interface DeliveryFields {
  /** `X-GitHub-Event`. */
  event: string;
  action: string | null;
  /** The payload's `installation.id`; null for deliveries about the App itself. */
  installationId: number | null;
}

/** What organization handlers get besides the delivery. */
export interface OrganizationScope {
  installation: GitHubInstallationRecord;
  /** The organization the installation is linked to: the only one this delivery may touch. */
  organizationId: string;
  /**
   * The payload's repository, as the organization's repository; undefined when the payload
   * names none, or one the installation does not grant (any more).
   */
  repository: OwnedRepoRef | undefined;
  /** The installation's client (its token). */
  client: GitHubClient;
}

/** A delivery with its payload typed by its event (`id` is `X-GitHub-Delivery`). */
export type InstallationDelivery<E extends WebhookName> = EmitterWebhookEvent<E> & DeliveryFields;

export type OrganizationDelivery<E extends WebhookName> = InstallationDelivery<E> &
  OrganizationScope;

/** A delivery as the dispatcher has it: its payload not yet typed by event. */
export interface RawDelivery extends DeliveryFields {
  id: string;
  name: string;
  payload: unknown;
}

type RawHandler<D> = (delivery: D) => Promise<void>;

export class WebhookHandlers {
  private readonly installation = new Map<string, RawHandler<RawDelivery>[]>();
  private readonly organization = new Map<string, RawHandler<RawDelivery & OrganizationScope>[]>();

  /** Runs `handler` for every delivery of these events, linked or not. */
  forInstallation<E extends WebhookName>(
    names: E | E[],
    handler: (delivery: InstallationDelivery<E>) => Promise<void>,
  ): void {
    for (const name of [names].flat()) {
      add(this.installation, name, handler as unknown as RawHandler<RawDelivery>);
    }
  }

  /** Runs `handler` for deliveries of these events from installations linked to an organization. */
  forOrganization<E extends WebhookName>(
    names: E | E[],
    handler: (delivery: OrganizationDelivery<E>) => Promise<void>,
  ): void {
    for (const name of [names].flat()) {
      add(
        this.organization,
        name,
        handler as unknown as RawHandler<RawDelivery & OrganizationScope>,
      );
    }
  }

  installationHandlers(event: string, action: string | null): RawHandler<RawDelivery>[] {
    return matching(this.installation, event, action);
  }

  organizationHandlers(
    event: string,
    action: string | null,
  ): RawHandler<RawDelivery & OrganizationScope>[] {
    return matching(this.organization, event, action);
  }
}

function add<H>(map: Map<string, H[]>, name: string, handler: H): void {
  const list = map.get(name) ?? [];
  list.push(handler);
  map.set(name, list);
}

/** The event's handlers, then the event-and-action's, each in the order they registered. */
function matching<H>(map: Map<string, H[]>, event: string, action: string | null): H[] {
  return [
    ...(map.get(event) ?? []),
    ...(action === null ? [] : (map.get(`${event}.${action}`) ?? [])),
  ];
}
