/**
 * A background loop: passes of some work one after another, never two at once. The next pass
 * starts an interval after the last one ended, longer after failed passes, or as soon as the
 * loop is woken; `stop` waits for the pass in progress and starts none after it.
 */
export interface BackgroundLoopOptions {
  /** One pass of the work. */
  pass: () => Promise<void>;
  /** The wait between passes when nothing wakes the loop. */
  intervalMs: number;
  /** Where a failed pass is reported; the loop goes on (see `maxBackoffMs`). */
  onError: (error: unknown) => void;
  /**
   * After failed passes in a row the wait doubles (twice the interval after one), up to this
   * (default 30 s); a success ends the backoff. A wake still runs a pass at once: it means new
   * work was stored, so the database answers again.
   */
  maxBackoffMs?: number;
  /** The first pass an interval after `start` instead of at once. */
  firstPassAfterInterval?: boolean;
  /** Whether the loop has nothing in hand after a pass (default: always); see `idle`. */
  isIdle?: () => boolean;
  /** Awaited by `stop` after the last pass: work the passes started and left running. */
  drain?: () => Promise<unknown>;
}

const DEFAULT_MAX_BACKOFF_MS = 30_000;

export class BackgroundLoop {
  private started = false;
  /** The loop itself while it runs (started, or running the passes `runNow` asked for). */
  private driver: Promise<void> | null = null;
  /** A pass was asked for by `wake` (or `start`): it runs next, without waiting. */
  private woken = false;
  private inPass = false;
  /** Failed passes in a row. */
  private failures = 0;
  private sleeper: { timer: NodeJS.Timeout; wakeUp: () => void } | null = null;
  /** Callers of `runNow`, answered at the end of the next pass to start. */
  private forNextPass: (() => void)[] = [];
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly options: BackgroundLoopOptions) {}

  /** Whether the loop is started (a pass may check it to end early once `stop` was called). */
  get running(): boolean {
    return this.started;
  }

  /** Whether a pass is running now. */
  get busy(): boolean {
    return this.inPass;
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    if (!this.options.firstPassAfterInterval) this.woken = true;
    this.driver ??= this.drive();
  }

  /** Starts no further pass; resolves once the pass in progress (and `drain`) has finished. */
  async stop(): Promise<void> {
    this.started = false;
    this.woken = false;
    this.interruptSleep();
    await this.driver;
    await this.options.drain?.();
    this.answerIdle();
  }

  /** Runs a pass as soon as none is running: at once, or once more after the one in progress. */
  wake(): void {
    if (!this.started) return;
    this.woken = true;
    this.interruptSleep();
  }

  /**
   * Resolves once a pass that starts after this call has ended (its failure goes to `onError`).
   * Runs that pass even when the loop is not started, in place of the caller.
   */
  runNow(): Promise<void> {
    const ended = new Promise<void>((resolve) => {
      this.forNextPass.push(resolve);
    });
    this.interruptSleep();
    this.driver ??= this.drive();
    return ended;
  }

  /**
   * Resolves at once when no pass is running or asked for; otherwise after the first pass that
   * ends with no wake since it started and `isIdle` holding (or at `stop`).
   */
  idle(): Promise<void> {
    if (!this.inPass && !this.woken && this.forNextPass.length === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.idleWaiters.push(resolve);
    });
  }

  private async drive(): Promise<void> {
    // Those a pass answers are answered once the next step is under way (a wait planned, or the
    // next pass started), so that they find the loop as it will be until then.
    let answers: (() => void)[] = [];
    for (;;) {
      if (this.wanted()) {
        const next = this.runPass();
        answer(answers);
        answers = await next;
        continue;
      }
      if (!this.flags().started) break;
      const waited = this.sleep(this.delay());
      answer(answers);
      answers = [];
      await waited;
      // Woken, the wait over, or stopped (then only passes asked for by `runNow` still run).
      if (!this.flags().started && this.forNextPass.length === 0) break;
      answers = await this.runPass();
    }
    this.driver = null;
    answer(answers);
  }

  private wanted(): boolean {
    return this.forNextPass.length > 0 || (this.started && this.woken);
  }

  /** Runs a pass; answers whom its end answers (callers of `runNow`, and of `idle` if it is). */
  private async runPass(): Promise<(() => void)[]> {
    this.woken = false;
    this.inPass = true;
    const answers = this.forNextPass.splice(0);
    try {
      await this.options.pass();
      this.failures = 0;
    } catch (error) {
      this.failures += 1;
      this.options.onError(error);
    }
    this.inPass = false;
    if (!this.flags().woken && (this.options.isIdle?.() ?? true)) {
      answers.push(...this.idleWaiters.splice(0));
    }
    return answers;
  }

  /** Read through a method: `wake` and `stop` change these while a pass or a wait is awaited. */
  private flags(): { started: boolean; woken: boolean } {
    return { started: this.started, woken: this.woken };
  }

  private answerIdle(): void {
    answer(this.idleWaiters.splice(0));
  }

  /** The wait before the next pass: the interval, or a backoff after failed passes. */
  private delay(): number {
    const { intervalMs, maxBackoffMs = DEFAULT_MAX_BACKOFF_MS } = this.options;
    if (this.failures === 0) return intervalMs;
    return Math.max(intervalMs, Math.min(maxBackoffMs, intervalMs * 2 ** this.failures));
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.sleeper = null;
        resolve();
      }, ms);
      this.sleeper = { timer, wakeUp: resolve };
    });
  }

  private interruptSleep(): void {
    if (!this.sleeper) return;
    clearTimeout(this.sleeper.timer);
    this.sleeper.wakeUp();
    this.sleeper = null;
  }
}

function answer(waiting: readonly (() => void)[]): void {
  for (const resolve of waiting) resolve();
}

/**
 * Keeps a lease on work in hand: `renew` runs every third of the lease until the returned
 * function is called. A renewal that fails is tried again at the next tick (the lease ends only
 * if none in it succeeds); the caller's fencing finds out whether it still holds the work.
 */
export function keepLease(leaseMs: number, renew: () => Promise<unknown>): () => void {
  const tick = async () => {
    await renew();
  };
  const timer = setInterval(() => {
    tick().catch(() => undefined);
  }, leaseMs / 3);
  return () => {
    clearInterval(timer);
  };
}
