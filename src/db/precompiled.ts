import { CompiledQuery } from "kysely";

/**
 * A query compiled once and then run with new parameters, for hot lookups: Kysely otherwise
 * compiles on every call, which on SQLite costs more than running it. `compile` gets `placeholders`
 * (distinct sentinels) and must take exactly those as parameters, in order, or this throws at
 * startup. An `executor` with plugins shapes rows as any query does.
 */
export type PrecompiledQuery<Args extends readonly string[], Row> = (
  ...args: Args
) => Promise<Row[]>;

export function precompile<Args extends readonly string[], Row>(
  executor: QueryRunner,
  compile: (...args: Args) => CompiledQuery<Row>,
  placeholders: Args,
): PrecompiledQuery<Args, Row> {
  const compiled = compile(...placeholders);
  const inOrder =
    compiled.parameters.length === placeholders.length &&
    compiled.parameters.every((value, i) => value === placeholders[i]);
  if (!inOrder) {
    throw new Error(
      `precompile: the query must take its arguments once each, in order (got ${JSON.stringify(compiled.parameters)})`,
    );
  }
  return async (...args) => {
    const result = await executor.executeQuery<Row>(CompiledQuery.raw(compiled.sql, [...args]));
    return result.rows;
  };
}

/** Anything that runs compiled queries: the database or a transaction of it. */
export interface QueryRunner {
  executeQuery<R>(query: CompiledQuery<R>): Promise<{ rows: R[] }>;
}

/**
 * A query compiled once whose arguments may sit among constants (a state's name, a `+ 1`) and
 * be of any type: built with `markers` (distinct sentinels, `markers(n)`) where the arguments
 * go, then run with the arguments put in their places; every other parameter is kept as
 * compiled. Throws at construction when an argument's marker is missing from the compiled query
 * (it would never be bound).
 */
export class QueryTemplate<Row> {
  private readonly slots: (number | { value: unknown })[];

  constructor(
    private readonly compiled: CompiledQuery<Row>,
    markers: readonly string[],
  ) {
    this.slots = compiled.parameters.map((value) => {
      const index = typeof value === "string" ? markers.indexOf(value) : -1;
      return index >= 0 ? index : { value };
    });
    const used = new Set(this.slots.filter((slot) => typeof slot === "number"));
    if (used.size !== markers.length) {
      throw new Error(
        `QueryTemplate: ${markers.length - used.size} argument(s) missing from the query: ${compiled.sql}`,
      );
    }
  }

  async run(runner: QueryRunner, args: readonly unknown[]): Promise<Row[]> {
    const parameters = this.slots.map((slot) =>
      typeof slot === "number" ? args[slot] : slot.value,
    );
    const result = await runner.executeQuery<Row>(CompiledQuery.raw(this.compiled.sql, parameters));
    return result.rows;
  }
}

/** `count` distinct sentinels for a `QueryTemplate`'s arguments. */
export function markers(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `\u0000mainline-argument-${i}\u0000`);
}

/** A `QueryTemplate` of `count` arguments: `build` compiles the query with the markers in place. */
export function compileTemplate<Row>(
  count: number,
  build: (args: readonly string[]) => CompiledQuery<Row>,
): QueryTemplate<Row> {
  const args = markers(count);
  return new QueryTemplate(build(args), args);
}

/**
 * Templates by the number of rows or values they take (`in (…)` lists, multi-row inserts): each
 * size is built and compiled once, then only run; past `keep` sizes, a new size is built for its
 * call only (so that odd sizes cannot grow the cache without bound).
 */
export class BySize<Row> {
  private readonly templates = new Map<number, QueryTemplate<Row>>();

  constructor(
    private readonly build: (size: number) => QueryTemplate<Row>,
    private readonly keep = Infinity,
  ) {}

  get(size: number): QueryTemplate<Row> {
    let template = this.templates.get(size);
    if (!template) {
      template = this.build(size);
      if (this.templates.size < this.keep) this.templates.set(size, template);
    }
    return template;
  }
}
