/**
 * A counting semaphore: how many checks may run at once across every run of the runner, so that
 * a busy queue does not start more test suites than the machine can hold.
 */
export class Slots {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(size: number) {
    if (!Number.isInteger(size) || size < 1) {
      throw new RangeError(`parallelism must be a whole number ≥ 1, got ${String(size)}`);
    }
    this.free = size;
  }

  /**
   * Resolves true with a slot held, or false (holding nothing) once the signal is aborted while
   * waiting; a cancelled run's checks must not start later.
   */
  acquire(signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return Promise.resolve(false);
    if (this.free > 0) {
      this.free--;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const grant = (): void => {
        signal.removeEventListener("abort", onAbort);
        resolve(true);
      };
      const onAbort = (): void => {
        this.waiting.splice(this.waiting.indexOf(grant), 1);
        resolve(false);
      };
      this.waiting.push(grant);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  release(): void {
    const next = this.waiting.shift();
    if (next === undefined) this.free++;
    else next();
  }
}
