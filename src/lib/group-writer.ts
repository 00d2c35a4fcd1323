/**
 * A group commit: items handed in during one turn of the event loop are written together (one
 * statement, or one wait for the disk, for all of them), and each caller resumes with its own
 * result once the write that held its item is done. Writes happen one after another; items that
 * arrive during one go into the next.
 */
export interface GroupWriterOptions<T, R> {
  /** Writes a batch; answers one result per item, in order. */
  write(items: readonly T[]): Promise<readonly R[]>;
  /** How many of the waiting items the next batch takes (at least one). */
  take(waiting: readonly T[]): number;
  /** When a batch of several fails, each item is written alone (one bad item fails only its caller). */
  aloneOnFailure?: boolean;
}

interface Waiting<T, R> {
  item: T;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

export class GroupWriter<T, R> {
  private waiting: Waiting<T, R>[] = [];
  private flushing: Promise<void> | null = null;

  constructor(private readonly options: GroupWriterOptions<T, R>) {}

  /** Writes an item with those handed in alongside it; resolves with its result. */
  write(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      // One turn of the event loop first, so that items that arrive together go together.
      this.flushing ??= new Promise<void>((next) => {
        setImmediate(next);
      }).then(() => this.flush());
    });
  }

  /** Resolves once every item handed in so far has been written (or has failed). */
  async idle(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  private async flush(): Promise<void> {
    while (this.waiting.length > 0) {
      const count = Math.max(1, this.options.take(this.waiting.map((w) => w.item)));
      const batch = this.waiting.splice(0, count);
      try {
        await this.settle(batch);
      } catch (error) {
        if (!this.options.aloneOnFailure || batch.length === 1) {
          for (const { reject } of batch) reject(error);
          continue;
        }
        for (const one of batch) {
          await this.settle([one]).catch((alone: unknown) => {
            one.reject(alone);
          });
        }
      }
    }
    this.flushing = null;
  }

  private async settle(batch: readonly Waiting<T, R>[]): Promise<void> {
    const results = await this.options.write(batch.map((w) => w.item));
    batch.forEach(({ resolve }, i) => {
      resolve(results[i] as R);
    });
  }
}
