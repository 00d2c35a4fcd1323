/** Work run one at a time per key, in the order it was handed in (e.g. merges per repository). */
export class SerialPerKey {
  /** The tail of each key's chain; it never rejects, so each piece starts when the one before ended, however it did. */
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const run = (this.tails.get(key) ?? Promise.resolve()).then(work);
    const tail = run.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return run;
  }
}
