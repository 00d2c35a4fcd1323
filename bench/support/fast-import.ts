/**
 * A `git fast-import` stream built in memory: the benchmarks generate their repositories with it
 * (thousands of commits in one git process instead of one process per commit).
 */
export class FastImportStream {
  private readonly parts: string[] = [];
  private time = 1_700_000_000;

  /** `secondsApart`: how far each commit's time is from the one before. */
  constructor(private readonly secondsApart = 1) {}

  /** Starts commit `mark` on `ref`, on top of commit `from` (null: a root commit). */
  commit(ref: string, mark: number, from: number | null, message: string): this {
    this.time += this.secondsApart;
    this.parts.push(
      `commit ${ref}\nmark :${String(mark)}\ncommitter Bench <bench@example.com> ${String(this.time)} +0000\n`,
      `data ${String(Buffer.byteLength(message))}\n${message}\n`,
      from === null ? "" : `from :${String(from)}\n`,
    );
    return this;
  }

  /** Writes `file` with `content` in the commit started last. */
  modify(file: string, content: string): this {
    this.parts.push(
      `M 100644 inline ${file}\ndata ${String(Buffer.byteLength(content))}\n${content}\n`,
    );
    return this;
  }

  /** The whole stream, ended by `done` (for `git fast-import --done`). */
  text(): string {
    return `${this.parts.join("")}done\n`;
  }
}
