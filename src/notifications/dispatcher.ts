/**
 * The delivery worker: on a background loop (woken when events are stored, else polling), it
 * prepares new events (builds each body from its facts and fans it out to the endpoints that take
 * it), then claims due deliveries under a lease and sends them, each the oldest pending one of its
 * endpoint and subject, as its endpoint's kind asks (`requests.ts`: signed JSON, or a Slack or
 * Teams message), and records every attempt; what an answer means is `judgeAnswer`'s (2xx
 * succeeded; 410 disables; a refused Slack token disables; a refused message fails; anything else
 * is tried again on the schedule, after `Retry-After` on 429/503, then failed); an endpoint
 * failing for `disableAfterMs` is disabled with the reason.
 */
import { randomUUID } from "node:crypto";
import { BackgroundLoop } from "../lib/background-loop.js";
import type { Clock } from "../lib/clock.js";
import { redactSecrets } from "../lib/redact.js";
import { isoTime } from "../lib/clock.js";
import {
  batchEvent,
  pullRequestEvent,
  queueStateEvent,
  quarantiningChanged,
  statusChangedV1,
  statusChangedV2,
  type BatchView,
  type PullRequestView,
  type QueueView,
  type TestCaseView,
} from "./events.js";
import type { PullRequestAction, QueueFacts } from "./facts.js";
import { judgeAnswer, type Verdict } from "./answers.js";
import type { ClaimedDelivery, DeliveryRecords, EventRecord, RecordedAttempt } from "./records.js";
import { deliveryRequest } from "./requests.js";
import { eventOwners } from "./routing.js";
import { nextDelay } from "./schedule.js";
import type { Send, WebhookResponse } from "./sender.js";

export interface EventViews {
  test(testKey: number): Promise<TestCaseView | undefined>;
  pullRequest(facts: QueueFacts): Promise<PullRequestView | undefined>;
  queue(queueId: string): Promise<QueueView | undefined>;
  batch(queueId: string, runId: string): Promise<BatchView | undefined>;
}

export interface DispatcherOptions {
  /** Waits before each attempt; the first is the wait before the first attempt. */
  schedule: readonly number[];
  timeoutMs: number;
  /** An endpoint whose deliveries fail this long is disabled. */
  disableAfterMs: number;
  allowPrivate: boolean;
  pollMs: number;
  leaseMs: number;
  /** Deliveries sent at once per pass. */
  batchSize: number;
  /**
   * While `DispatcherDeps.yieldTo` says so (ingestion at work), sends wait, at most this long;
   * then every due delivery goes out before sends wait again. 0: never wait.
   */
  maxYieldMs: number;
  userAgent: string;
  /** This service's address, for links in chat messages. */
  publicUrl: () => string;
  /** Slack's Web API base, where `slack_bot` endpoints post. */
  slackApiUrl: string;
}

export interface DispatcherDeps {
  records: DeliveryRecords;
  views: EventViews;
  send: Send;
  clock: Clock;
  logger: { warn(fields: object, message: string): void };
  /** Work of the same process that comes first (test-health ingestion): sends wait for it. */
  yieldTo?: (() => boolean) | undefined;
}

export class WebhookDispatcher {
  private readonly loop: BackgroundLoop;
  private readonly owner = `webhooks-${randomUUID()}`;
  /** Since when sends have waited for `yieldTo`; null: not waiting. */
  private yieldingSince: number | null = null;
  /** The wait ran out: every due delivery goes out before sends wait again. */
  private catchingUp = false;
  /** Drains under way: the loop's passes then send without yielding. */
  private draining = 0;
  /** The loop's passes that did something, so far. */
  private passesThatDid = 0;

  constructor(
    private readonly deps: DispatcherDeps,
    private readonly options: DispatcherOptions,
  ) {
    this.loop = new BackgroundLoop({
      pass: async () => {
        if (await this.pass({ yielding: this.draining === 0 })) this.passesThatDid += 1;
      },
      intervalMs: options.pollMs,
      onError: (error) => {
        deps.logger.warn({ err: error }, "webhooks: delivery pass failed; will retry");
      },
    });
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  wake(): void {
    this.loop.wake();
  }

  /**
   * Runs passes until no event is left to prepare and no delivery is due (tests). Sends do not
   * wait for ingestion here: a drain means "deliver what is due now". The passes are the loop's,
   * so none runs beside one of the loop's own (whose send in flight a drain would not see).
   */
  async drain(): Promise<void> {
    this.draining += 1;
    try {
      for (;;) {
        const before = this.passesThatDid;
        await this.loop.runNow();
        if (this.passesThatDid === before) break;
      }
    } finally {
      this.draining -= 1;
    }
  }

  /** One pass; true when it did something (more may be waiting). */
  async pass(options: { yielding?: boolean } = {}): Promise<boolean> {
    const prepared = await this.prepareEvents();
    if (options.yielding !== false && this.yielding()) return prepared > 0;
    const sent = await this.sendDue();
    if (sent === 0) this.catchingUp = false;
    if (prepared + sent > 0) this.loop.wake();
    return prepared + sent > 0;
  }

  /** Whether sends wait for the work that comes first, now. */
  private yielding(): boolean {
    const now = this.deps.clock.now();
    if (this.catchingUp || this.options.maxYieldMs === 0 || !this.deps.yieldTo?.()) {
      this.yieldingSince = null;
      return false;
    }
    this.yieldingSince ??= now;
    if (now - this.yieldingSince < this.options.maxYieldMs) return true;
    this.yieldingSince = null;
    this.catchingUp = true;
    return false;
  }

  private async prepareEvents(): Promise<number> {
    const events = await this.deps.records.unpreparedEvents(100);
    for (const event of events) {
      const payload = await this.body(event);
      await this.deps.records.prepareEvent(
        event.seq,
        payload === undefined ? null : JSON.stringify(payload),
        this.deps.clock.now(),
        eventOwners(payload),
      );
    }
    return events.length;
  }

  /** The event's body; undefined when what it is about is gone. */
  private async body(event: EventRecord): Promise<Record<string, unknown> | undefined> {
    const facts = event.facts;
    switch (facts.kind) {
      case "test_status": {
        const test = await this.deps.views.test(facts.testKey);
        if (!test) return undefined;
        return event.type === "v2.test_case.status_changed"
          ? statusChangedV2(facts, test)
          : statusChangedV1(facts, test);
      }
      case "test_override": {
        const test = await this.deps.views.test(facts.testKey);
        return test && quarantiningChanged(facts, test);
      }
      case "queue_transition": {
        const pr = await this.deps.views.pullRequest(facts);
        const action = event.type.slice("pull_request.".length) as PullRequestAction;
        return pr && pullRequestEvent(action, facts, pr);
      }
      case "batch_transition": {
        const batch = await this.deps.views.batch(facts.queueId, facts.runId);
        return batch && batchEvent(facts, batch);
      }
      case "queue_state":
      case "queue_host": {
        const queue = await this.deps.views.queue(facts.queueId);
        return queue && queueStateEvent(facts, queue);
      }
      case "ping":
        return undefined;
    }
  }

  private async sendDue(): Promise<number> {
    const now = this.deps.clock.now();
    const lease = this.options.leaseMs + this.options.timeoutMs;
    const claimed = await this.deps.records.claimDeliveries(
      this.owner,
      now,
      now + lease,
      this.options.batchSize,
    );
    const done = await Promise.all(claimed.map((delivery) => this.deliver(delivery)));
    await this.deps.records.recordAttempts(
      this.owner,
      done.map(({ recorded }) => recorded),
    );
    for (const { delivery, verdict, response, after } of done) {
      await this.endpointHealth(delivery, verdict, response, after);
    }
    return claimed.length;
  }

  /** Sends one delivery; what its attempt was, recorded with the pass's others. */
  private async deliver(delivery: ClaimedDelivery) {
    const at = this.deps.clock.now();
    const request = deliveryRequest(delivery, {
      userAgent: this.options.userAgent,
      publicUrl: this.options.publicUrl(),
      slackApiUrl: this.options.slackApiUrl,
      at,
    });
    const response = await this.deps.send({
      url: request.url,
      headers: request.headers,
      body: request.body,
      timeoutMs: this.options.timeoutMs,
      allowPrivate: this.options.allowPrivate || request.trusted,
    });
    const after = this.deps.clock.now();
    const verdict = judgeAnswer(delivery.kind, response);
    const attempts = delivery.attempts + 1;
    const delay =
      verdict.outcome === "retry" ? this.retryDelay(attempts, verdict, response) : undefined;
    const problem = verdict.outcome === "succeeded" ? null : verdict.problem;
    const error = response.error ?? problem;
    const recorded: RecordedAttempt = {
      deliveryId: delivery.id,
      attempt: {
        at,
        statusCode: response.statusCode,
        error: error === null ? null : redactSecrets(error),
        durationMs: response.durationMs,
        response: response.excerpt,
      },
      outcome: {
        state:
          verdict.outcome === "succeeded"
            ? "succeeded"
            : delay === undefined
              ? "failed"
              : "pending",
        attempts,
        nextAttemptAt: delay === undefined ? after : after + delay,
      },
    };
    return { delivery, verdict, response, after, recorded };
  }

  private retryDelay(
    attempts: number,
    verdict: Extract<Verdict, { outcome: "retry" }>,
    response: WebhookResponse,
  ): number | undefined {
    const scheduled = nextDelay(this.options.schedule, attempts);
    if (scheduled === undefined) return undefined;
    return verdict.throttled && response.retryAfterMs !== null
      ? Math.max(scheduled, response.retryAfterMs)
      : scheduled;
  }

  private async endpointHealth(
    delivery: ClaimedDelivery,
    verdict: Verdict,
    response: WebhookResponse,
    now: number,
  ): Promise<void> {
    const { records } = this.deps;
    if (verdict.outcome === "succeeded") {
      if (delivery.failingSince !== null) {
        await records.updateEndpointHealth(delivery.endpointId, { failingSince: null }, now);
      }
      return;
    }
    if (verdict.outcome === "disable") {
      await records.updateEndpointHealth(
        delivery.endpointId,
        { enabled: false, disabledAt: now, disabledReason: verdict.reason },
        now,
      );
      this.deps.logger.warn(
        { endpointId: delivery.endpointId, status: response.statusCode },
        "webhooks: endpoint gone or its credential refused, disabled",
      );
      return;
    }
    const since = delivery.failingSince ?? now;
    if (now - since >= this.options.disableAfterMs) {
      const last =
        response.statusCode === null ? response.error : `HTTP ${String(response.statusCode)}`;
      await records.updateEndpointHealth(
        delivery.endpointId,
        {
          enabled: false,
          disabledAt: now,
          disabledReason: `Deliveries kept failing since ${isoTime(since)} (last: ${last ?? "error"}).`,
        },
        now,
      );
      this.deps.logger.warn(
        { endpointId: delivery.endpointId },
        "webhooks: endpoint kept failing, disabled",
      );
      return;
    }
    if (delivery.failingSince === null) {
      await records.updateEndpointHealth(delivery.endpointId, { failingSince: now }, now);
    }
  }
}
