import type { Kysely } from "kysely";
import type { DatabaseHandle } from "../../../../src/db/connection.js";
import type { Database } from "../../../../src/db/schema.js";
import type { Answer } from "../recorder.js";

/**
 * What a store's scenario is: calls of each of its methods with fixed arguments, and the rows the
 * recording database answers with so that each call goes down the path that sends the most SQL.
 */

export interface Call<S> {
  method: keyof S & string;
  /** Which variant of the call, when a method has several (optional arguments, branches). */
  variant?: string;
  answer?: Answer;
  /** `db` is the recording database, for the methods that take a transaction or connection. */
  run(store: S, db: Kysely<Database>): Promise<unknown>;
}

export interface TypedScenario<S> {
  /** The file in `src/db/stores/` (without `.ts`), which names the snapshot files too. */
  file: string;
  name: string;
  create(handle: DatabaseHandle): S;
  calls: Call<S>[];
  /** Public methods that send no SQL of their own, with why. */
  withoutSql?: Partial<Record<keyof S & string, string>>;
}

/** A scenario of any store. */
export interface StoreScenario {
  file: string;
  name: string;
  create(handle: DatabaseHandle): object;
  calls: {
    method: string;
    variant?: string;
    answer?: Answer;
    run(store: object, db: Kysely<Database>): Promise<unknown>;
  }[];
  withoutSql?: Partial<Record<string, string>>;
}

export function scenario<S extends object>(s: TypedScenario<S>): StoreScenario {
  return s;
}

/** Answers statements whose SQL matches `pattern` with `rows`, the others with none. */
export function when(...rules: [pattern: RegExp, rows: Record<string, unknown>[]][]): Answer {
  return (sql) => rules.find(([pattern]) => pattern.test(sql))?.[1];
}
