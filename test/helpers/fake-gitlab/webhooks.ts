import type { Hook, HookEventFlag, Project } from "./model.js";
import { wildcard, type World } from "./world.js";

/**
 * Project webhooks as GitLab delivers them: one delivery per subscribed hook per event, each with
 * GitLab's headers (`X-Gitlab-Event`, the hook's token verbatim in `X-Gitlab-Token`,
 * `X-Gitlab-Instance`, `X-Gitlab-Webhook-UUID`, `X-Gitlab-Event-UUID`, `Idempotency-Key` from
 * 17.4, `User-Agent: GitLab/<version>`), sent asynchronously and in order per hook. GitLab does
 * not retry a failed delivery by itself; a resend (API or `resend()`) keeps the delivery's
 * `Idempotency-Key`. Four failures in a row disable a hook: for good after a 4xx, for a growing
 * while (1 min doubling to 24 h) after 5xx or timeouts. Chaos (seeded) drops, duplicates or holds
 * back deliveries.
 */

export type HookEvent =
  "Push Hook" | "Merge Request Hook" | "Note Hook" | "Pipeline Hook" | "Job Hook";

const FLAGS: Record<HookEvent, HookEventFlag> = {
  "Push Hook": "push_events",
  "Merge Request Hook": "merge_requests_events",
  "Note Hook": "note_events",
  "Pipeline Hook": "pipeline_events",
  "Job Hook": "job_events",
};

const TRIGGERS: Record<HookEvent, string> = {
  "Push Hook": "push_hooks",
  "Merge Request Hook": "merge_request_hooks",
  "Note Hook": "note_hooks",
  "Pipeline Hook": "pipeline_hooks",
  "Job Hook": "job_hooks",
};

export interface WebhookChaos {
  /** Probability a delivery is sent twice (same headers and body). */
  duplicate?: number;
  /** Probability a delivery is never sent. */
  drop?: number;
  /** Probability a delivery is held back `lateMs` and sent out of order. */
  reorder?: number;
  lateMs?: number;
}

/** One attempt to deliver (or a delivery chaos dropped, or a disabled hook skipped). */
export interface DeliveryAttempt {
  /** The hook event log id (`GET …/hooks/:hook_id/events`, resend). */
  id: number;
  deliveryId: number;
  hookId: number;
  projectId: number;
  event: HookEvent;
  eventUuid: string;
  idempotencyKey: string | null;
  headers: Record<string, string>;
  body: string;
  payload: Record<string, unknown>;
  status: number | null;
  error: string | null;
  outcome: "delivered" | "failed" | "dropped" | "hook-disabled";
  chaos: "duplicate" | "late" | "resend" | null;
  atMs: number;
  durationMs: number;
  responseBody: string;
}

interface Delivery {
  id: number;
  hook: Hook;
  event: HookEvent;
  eventUuid: string;
  idempotencyKey: string;
  body: string;
  payload: Record<string, unknown>;
}

export class Webhooks {
  readonly deliveries: DeliveryAttempt[] = [];
  private readonly byId = new Map<number, Delivery>();
  private chaos: WebhookChaos = {};
  private readonly queues = new Map<number, Promise<void>>();
  private readonly inFlight = new Set<Promise<void>>();
  private paused = false;
  private readonly held: (() => void)[] = [];
  private nextDelivery = 0;
  private nextAttempt = 0;

  constructor(private readonly world: World) {}

  setChaos(chaos: WebhookChaos): void {
    this.chaos = { ...chaos };
  }

  /** Holds every delivery until `resume()` (the receiver unreachable, as seen from GitLab). */
  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    for (const release of this.held.splice(0)) release();
  }

  /** Sends `event` to every hook of the project that subscribes to it. */
  emit(
    project: Project,
    event: HookEvent,
    payload: Record<string, unknown>,
    branch?: string,
  ): void {
    const eventUuid = this.world.random.guid();
    const body = JSON.stringify(payload);
    for (const hook of project.hooks.values()) {
      if (!hook.events[FLAGS[event]]) continue;
      if (event === "Push Hook" && branch !== undefined && !branchMatches(hook, branch)) continue;
      const delivery: Delivery = {
        id: ++this.nextDelivery,
        hook,
        event,
        eventUuid,
        idempotencyKey: this.world.random.guid(),
        body,
        payload,
      };
      this.byId.set(delivery.id, delivery);
      this.dispatch(delivery);
    }
  }

  private dispatch(delivery: Delivery): void {
    const random = this.world.random;
    if (random.chance(this.chaos.drop ?? 0)) {
      this.record(delivery, "dropped", null, { status: null, error: null, ms: 0, text: "" });
      return;
    }
    const copies = random.chance(this.chaos.duplicate ?? 0) ? 2 : 1;
    for (let i = 0; i < copies; i++) {
      const tag = i === 1 ? "duplicate" : null;
      if (random.chance(this.chaos.reorder ?? 0)) {
        const late = new Promise<void>((r) => setTimeout(r, this.chaos.lateMs ?? 2_000)).then(
          async () => {
            await this.send(delivery, "late");
          },
        );
        this.track(late);
        continue;
      }
      const previous = this.queues.get(delivery.hook.id) ?? Promise.resolve();
      const next = previous.then(async () => {
        await this.send(delivery, tag);
      });
      this.queues.set(delivery.hook.id, next);
      this.track(next);
    }
  }

  private track(promise: Promise<void>): void {
    const tracked = promise.catch(() => undefined);
    this.inFlight.add(tracked);
    void tracked.finally(() => this.inFlight.delete(tracked));
  }

  private headers(delivery: Delivery): Record<string, string> {
    const { hook } = delivery;
    const profile = this.world.profile;
    return {
      "Content-Type": "application/json",
      "User-Agent": `GitLab/${profile.version}`,
      "X-Gitlab-Event": delivery.event,
      ...(hook.token !== null && hook.token !== "" ? { "X-Gitlab-Token": hook.token } : {}),
      "X-Gitlab-Instance": this.world.url,
      ...(profile.webhookUuid ? { "X-Gitlab-Webhook-UUID": hook.uuid } : {}),
      "X-Gitlab-Event-UUID": delivery.eventUuid,
      ...(profile.idempotencyKey ? { "Idempotency-Key": delivery.idempotencyKey } : {}),
    };
  }

  private async send(
    delivery: Delivery,
    chaos: DeliveryAttempt["chaos"],
  ): Promise<DeliveryAttempt> {
    if (this.paused) await new Promise<void>((resolve) => this.held.push(resolve));
    const { hook } = delivery;
    if (!executable(hook)) {
      return this.record(delivery, "hook-disabled", chaos, {
        status: null,
        error: null,
        ms: 0,
        text: "",
      });
    }
    const started = Date.now();
    let status: number | null = null;
    let error: string | null = null;
    let text = "";
    try {
      const response = await fetch(hook.url, {
        method: "POST",
        headers: this.headers(delivery),
        body: delivery.body,
        redirect: "manual",
        signal: AbortSignal.timeout(this.world.options.webhookTimeoutMs),
      });
      text = (await response.text()).slice(0, 8_000);
      status = response.status;
    } catch (e) {
      error = e instanceof Error ? e.message : String(e);
    }
    const ok = status !== null && status >= 200 && status < 300;
    this.account(hook, ok, status);
    return this.record(delivery, ok ? "delivered" : "failed", chaos, {
      status,
      error,
      ms: Date.now() - started,
      text,
    });
  }

  private account(hook: Hook, ok: boolean, status: number | null): void {
    if (ok) {
      hook.failures = 0;
      hook.backoffCount = 0;
      hook.alertStatus = "executable";
      hook.disabledUntil = null;
      return;
    }
    hook.failures++;
    if (hook.failures < 4) return;
    if (status !== null && status >= 400 && status < 500) {
      hook.alertStatus = "disabled";
      hook.disabledUntil = null;
    } else {
      hook.backoffCount++;
      hook.alertStatus = "temporarily_disabled";
      hook.disabledUntil = Date.now() + Math.min(60_000 * 2 ** (hook.backoffCount - 1), 86_400_000);
    }
  }

  private record(
    delivery: Delivery,
    outcome: DeliveryAttempt["outcome"],
    chaos: DeliveryAttempt["chaos"],
    result: { status: number | null; error: string | null; ms: number; text: string },
  ): DeliveryAttempt {
    const attempt: DeliveryAttempt = {
      id: ++this.nextAttempt,
      deliveryId: delivery.id,
      hookId: delivery.hook.id,
      projectId: delivery.hook.project.id,
      event: delivery.event,
      eventUuid: delivery.eventUuid,
      idempotencyKey: this.world.profile.idempotencyKey ? delivery.idempotencyKey : null,
      headers: this.headers(delivery),
      body: delivery.body,
      payload: delivery.payload,
      status: result.status,
      error: result.error,
      outcome,
      chaos,
      atMs: Date.now(),
      durationMs: result.ms,
      responseBody: result.text,
    };
    this.deliveries.push(attempt);
    return attempt;
  }

  /** Sends a logged delivery again (GitLab's resend): same body, same `Idempotency-Key`. */
  resend(attemptId: number): Promise<DeliveryAttempt> {
    const attempt = this.deliveries.find((a) => a.id === attemptId);
    const delivery = attempt === undefined ? undefined : this.byId.get(attempt.deliveryId);
    if (delivery === undefined) throw new Error(`no delivery attempt ${attemptId}`);
    const promise = this.send(delivery, "resend");
    this.track(promise.then(() => undefined));
    return promise;
  }

  /** The hook events log (`GET /projects/:id/hooks/:hook_id/events`). */
  log(hook: Hook): Record<string, unknown>[] {
    return this.deliveries
      .filter((a) => a.hookId === hook.id && (a.outcome === "delivered" || a.outcome === "failed"))
      .map((a) => ({
        id: a.id,
        url: hook.url,
        trigger: TRIGGERS[a.event],
        request_headers: a.headers,
        request_data: a.payload,
        response_headers: {},
        response_body: a.responseBody,
        execution_duration: a.durationMs / 1000,
        response_status: a.status === null ? "internal error" : String(a.status),
      }));
  }

  /** Waits until every delivery so far has been attempted (held ones excepted while paused). */
  async settle(): Promise<void> {
    while (this.inFlight.size > 0 && !(this.paused && this.held.length >= this.inFlight.size)) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }
}

/** GitLab runs a hook unless it is disabled (for good, or until `disabled_until`). */
export function executable(hook: Hook): boolean {
  if (hook.alertStatus === "disabled") return false;
  if (hook.alertStatus === "temporarily_disabled") {
    return hook.disabledUntil !== null && hook.disabledUntil <= Date.now();
  }
  return true;
}

function branchMatches(hook: Hook, branch: string): boolean {
  const filter = hook.pushEventsBranchFilter;
  if (hook.branchFilterStrategy === "all_branches" || filter === "") return true;
  if (hook.branchFilterStrategy === "regex") return new RegExp(filter).test(branch);
  return wildcard(filter).test(branch);
}
