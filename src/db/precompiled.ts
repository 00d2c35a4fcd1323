import { CompiledQuery, type Kysely } from "kysely";

/**
 * A query compiled once and then run with new parameters. Kysely otherwise rebuilds the query,
 * runs its plugins over the tree and compiles it on every call, which on SQLite costs more than
 * executing it; hot lookups (a token on every request) use this instead.
 *
 * `compile` is called once with `placeholders` (distinct sentinel values); the compiled query must
 * take exactly those as its parameters, in order, or this throws at startup rather than binding
 * values to the wrong places later. `executor` runs it: with plugins, they shape the result rows
 * as for any query; `db.withoutPlugins()` returns rows as the SQL names them.
 */
export type PrecompiledQuery<Args extends readonly string[], Row> = (
  ...args: Args
) => Promise<Row[]>;

export function precompile<Args extends readonly string[], Row>(
  executor: Kysely<never>,
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
