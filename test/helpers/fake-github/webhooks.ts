import { createHmac } from "node:crypto";
import type { FakeApp, Installation, Repository } from "./model.js";
import * as objects from "./objects.js";
import { actorAccount, type Actor, type World } from "./world.js";

/**
 * Webhook deliveries as GitHub's Hookshot makes them: one delivery per event and App, signed with
 * HMAC-SHA256 of the exact body (`X-Hub-Signature-256`), with GitHub's headers, POSTed
 * asynchronously to the App's URL(s). Every delivery is kept (tests inspect them, and can
 * redeliver one with the same GUID). Chaos, seeded: delay, reorder, duplicate, drop, late.
 */

export interface DeliveryAttempt {
  url: string;
  atMs: number;
  status: number | null;
  error: string | null;
  durationMs: number;
}

export interface Delivery {
  guid: string;
  event: string;
  action: string | null;
  app: FakeApp;
  installationId: number | null;
  repository: string | null;
  payload: Record<string, unknown>;
  /** The exact bytes sent and signed. */
  body: string;
  headers: Record<string, string>;
  emittedAtMs: number;
  dropped: boolean;
  attempts: DeliveryAttempt[];
}

export interface WebhookChaos {
  /** Each delivery waits a random time in this range (ms); unequal waits reorder deliveries. */
  delayMs?: [number, number];
  /** Probability a delivery is sent twice (same `X-GitHub-Delivery`). */
  duplicate?: number;
  /** Probability a delivery is never sent (it stays available for redelivery). */
  drop?: number;
  /** Probability a delivery is held back `lateMs` (default 11 s: past GitHub's 10 s timeout). */
  late?: number;
  lateMs?: number;
  /**
   * Deliveries are gathered in groups of this size (a group also closes 2 s after its last
   * delivery, or at `settle()`) and sent in a shuffled order: reordering that does not depend on
   * timing.
   */
  reorder?: number;
}

export interface WebhookOptions {
  /** `each`: every URL gets every delivery; `round-robin`: one URL per delivery, in turn. */
  mode: "each" | "round-robin";
  /** How long a receiver may take before the delivery counts as failed (GitHub: 10 s). */
  timeoutMs: number;
}

export class WebhookHub {
  readonly deliveries: Delivery[] = [];
  private chaos: WebhookChaos = {};
  private paused = false;
  private readonly held: (() => void)[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private queue: Promise<void> = Promise.resolve();
  private roundRobin = 0;
  private sending = 0;
  private group: { delivery: Delivery; urls: string[] }[] = [];
  private groupTimer: ReturnType<typeof setTimeout> | null = null;
  private groupPending: (() => void) | null = null;
  private releaseGroup: (() => void) | null = null;
  private readonly observers: ((delivery: Delivery) => void)[] = [];
  private readonly repoListeners: ((
    event: string,
    repo: Repository,
    payload: Record<string, unknown>,
    actor: Actor,
  ) => void)[] = [];

  constructor(
    private readonly world: World,
    readonly options: WebhookOptions,
  ) {}

  setChaos(chaos: WebhookChaos): void {
    this.chaos = { ...chaos };
  }

  /** Holds deliveries until `resume()` (an outage of the receiver, as seen from GitHub). */
  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    for (const release of this.held.splice(0)) release();
  }

  observe(observer: (delivery: Delivery) => void): void {
    this.observers.push(observer);
  }

  /** Hears every repository event, whether or not an App receives it (the fake's CI listens here). */
  onRepoEvent(
    listener: (
      event: string,
      repo: Repository,
      payload: Record<string, unknown>,
      actor: Actor,
    ) => void,
  ): void {
    this.repoListeners.push(listener);
  }

  /** The payload fields every repository event carries. */
  envelope(repo: Repository, actor: Actor): Record<string, unknown> {
    const urls = this.world.urls;
    return {
      repository: objects.repository(urls, repo),
      ...(repo.owner.type === "Organization"
        ? { organization: objects.organizationSimple(urls, repo.owner) }
        : {}),
      sender: objects.simpleUser(urls, actorAccount(actor)),
    };
  }

  /** Sends `event` about `repo` to every App installed on it that subscribes to the event. */
  emitForRepo(
    event: string,
    repo: Repository,
    actor: Actor,
    payload: Record<string, unknown>,
  ): void {
    for (const listener of this.repoListeners) listener(event, repo, payload, actor);
    for (const inst of this.world.installationsFor(repo)) {
      if (!subscribes(inst, event)) continue;
      this.emit(
        inst.app,
        inst,
        event,
        { ...payload, ...this.envelope(repo, actor), ...pick(payload, ["sender", "repository"]) },
        repo,
      );
    }
  }

  emit(
    app: FakeApp,
    inst: Installation | null,
    event: string,
    payload: Record<string, unknown>,
    repo: Repository | null,
  ): Delivery {
    const full: Record<string, unknown> = {
      ...(inst !== null
        ? { installation: { id: inst.id, node_id: objects.nodeId("Installation", inst.id) } }
        : {}),
      ...payload,
    };
    const body = JSON.stringify(full);
    const guid = this.world.random.guid();
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "user-agent": "GitHub-Hookshot/7c9a1e2",
      "x-github-event": event,
      "x-github-delivery": guid,
      "x-github-hook-id": String(app.hookId),
      "x-github-hook-installation-target-type": "integration",
      "x-github-hook-installation-target-id": String(app.id),
      "x-hub-signature": `sha1=${createHmac("sha1", app.webhookSecret).update(body).digest("hex")}`,
      "x-hub-signature-256": `sha256=${createHmac("sha256", app.webhookSecret).update(body).digest("hex")}`,
    };
    const delivery: Delivery = {
      guid,
      event,
      action: typeof full.action === "string" ? full.action : null,
      app,
      installationId: inst?.id ?? null,
      repository: repo === null ? null : `${repo.owner.login}/${repo.name}`,
      payload: full,
      body,
      headers,
      emittedAtMs: this.world.now(),
      dropped: false,
      attempts: [],
    };
    this.deliveries.push(delivery);
    for (const observer of this.observers) observer(delivery);
    this.dispatch(delivery);
    return delivery;
  }

  private dispatch(delivery: Delivery): void {
    const urls = this.targets(delivery.app);
    if (urls.length === 0) return;
    const random = this.world.random;
    const chaos = this.chaos;
    if (random.chance(chaos.drop ?? 0)) {
      delivery.dropped = true;
      return;
    }
    const copies = random.chance(chaos.duplicate ?? 0) ? 2 : 1;
    const chaotic = chaos.delayMs !== undefined || (chaos.late ?? 0) > 0;
    for (let i = 0; i < copies; i++) {
      if ((chaos.reorder ?? 0) > 1) {
        this.gather(delivery, urls, chaos.reorder ?? 0);
        continue;
      }
      if (!chaotic) {
        this.inOrder(delivery, urls);
        continue;
      }
      const [min, max] = chaos.delayMs ?? [0, 0];
      let wait = random.int(min, max);
      if (random.chance(chaos.late ?? 0)) wait += chaos.lateMs ?? 11_000;
      this.track(
        new Promise<void>((resolve) => setTimeout(resolve, wait)).then(() =>
          this.sendAll(delivery, urls),
        ),
      );
    }
  }

  /** In order, one at a time: GitHub's usual behaviour when nothing goes wrong. */
  private inOrder(delivery: Delivery, urls: string[]): void {
    this.queue = this.queue.then(() => this.sendAll(delivery, urls));
    this.track(this.queue);
  }

  private gather(delivery: Delivery, urls: string[], size: number): void {
    this.group.push({ delivery, urls });
    if (this.groupTimer !== null) clearTimeout(this.groupTimer);
    const release = (): void => {
      if (this.groupTimer !== null) clearTimeout(this.groupTimer);
      this.groupTimer = null;
      const group = this.group.splice(0);
      for (let i = group.length - 1; i > 0; i--) {
        const j = this.world.random.int(0, i);
        [group[i], group[j]] = [
          group[j] as (typeof group)[number],
          group[i] as (typeof group)[number],
        ];
      }
      this.groupPending?.();
      for (const item of group) this.inOrder(item.delivery, item.urls);
    };
    if (this.group.length === 1) {
      this.track(new Promise<void>((resolve) => (this.groupPending = resolve)));
    }
    this.releaseGroup = release;
    if (this.group.length >= size) release();
    else this.groupTimer = setTimeout(release, 2_000);
  }

  private track(promise: Promise<void>): void {
    const tracked = promise.catch(() => undefined);
    this.inFlight.add(tracked);
    void tracked.finally(() => this.inFlight.delete(tracked));
  }

  private targets(app: FakeApp): string[] {
    if (app.webhookUrls.length === 0) return [];
    if (this.options.mode === "each") return app.webhookUrls;
    const url = app.webhookUrls[this.roundRobin++ % app.webhookUrls.length];
    return url === undefined ? [] : [url];
  }

  private async sendAll(delivery: Delivery, urls: string[]): Promise<void> {
    if (this.paused) await new Promise<void>((resolve) => this.held.push(resolve));
    await Promise.all(urls.map((url) => this.send(delivery, url)));
  }

  private async send(delivery: Delivery, url: string): Promise<void> {
    const started = this.world.now();
    const attempt: DeliveryAttempt = {
      url,
      atMs: started,
      status: null,
      error: null,
      durationMs: 0,
    };
    delivery.attempts.push(attempt);
    this.sending++;
    try {
      const response = await fetch(url, {
        method: "POST",
        headers: delivery.headers,
        body: delivery.body,
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
      await response.arrayBuffer();
      attempt.status = response.status;
    } catch (error) {
      attempt.error = error instanceof Error ? error.message : String(error);
    } finally {
      this.sending--;
    }
    attempt.durationMs = this.world.now() - started;
  }

  /** Sends a delivery again, as GitHub's "Redeliver" does (same GUID and body). */
  redeliver(guid: string): Promise<void> {
    const delivery = this.deliveries.find((d) => d.guid === guid);
    if (delivery === undefined) throw new Error(`no delivery ${guid}`);
    const promise = this.sendAll(delivery, this.targets(delivery.app));
    this.track(promise);
    return promise;
  }

  /** Waits until every delivery sent so far has been answered (those held by `pause()` excepted). */
  async settle(): Promise<void> {
    if (this.group.length > 0) this.releaseGroup?.();
    while (this.sending > 0 || (!this.paused && this.inFlight.size > 0)) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }
}

function subscribes(inst: Installation, event: string): boolean {
  return inst.events.length === 0 || inst.events.includes(event);
}

function pick(payload: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of keys) if (key in payload) out[key] = payload[key];
  return out;
}
