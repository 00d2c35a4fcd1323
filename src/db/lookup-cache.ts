import type { Kysely } from "kysely";
import pg from "pg";

/**
 * An in-process cache of the rows almost every request reads first and that almost never change (a
 * token's owner, a repository, a merge queue), emptied whenever any of them may have changed
 * anywhere. A store that writes them must call `changed()` after its commit; other processes are
 * heard through `NOTIFY` (PostgreSQL) or `PRAGMA data_version` (SQLite). ADR 0017 says why.
 */
export class LookupCache {
  private generation = 0;
  private readonly maps = new Map<string, Map<string, unknown>>();
  private usable: () => boolean;
  /**
   * Resolves true once every change committed anywhere before the call has been heard (the
   * change listener's `sync`), false when that cannot be told: a fresh lookup then reads. None
   * when `usable` alone tells it.
   */
  private heardAll: (() => Promise<boolean>) | null = null;

  constructor(usable: () => boolean = () => true) {
    this.usable = usable;
  }

  /**
   * Something cached may have changed: forget everything, or only the entries of `kinds` (a
   * change that concerns no other kind). Either way a lookup in flight keeps nothing it read.
   */
  changed(kinds?: readonly string[]): void {
    this.generation += 1;
    if (kinds === undefined) {
      for (const map of this.maps.values()) map.clear();
    } else {
      for (const kind of kinds) this.maps.get(kind)?.clear();
    }
  }

  /**
   * Replaces what decides whether the cache may be used now (the change listener's state) and,
   * with `heardAll`, what a fresh lookup waits for first: every change committed before it heard.
   */
  setUsable(usable: () => boolean, heardAll?: () => Promise<boolean>): void {
    this.usable = usable;
    this.heardAll = heardAll ?? null;
    this.changed();
  }

  /**
   * The cached value of `key` in `kind`, or what `load` reads (kept when found and nothing
   * changed meanwhile). Values are shared: callers must not modify them. `fresh`: as committed
   * before the call, by any process (a change committed elsewhere may still be on its way here:
   * heard first, where there is a listener).
   */
  async get<T extends object>(
    kind: string,
    key: string,
    load: () => Promise<T | undefined>,
    fresh = false,
  ): Promise<T | undefined> {
    if (!this.usable()) return load();
    if (fresh && this.heardAll && !((await this.heardAll()) && this.usable())) return load();
    let map = this.maps.get(kind);
    if (!map) {
      map = new Map();
      this.maps.set(kind, map);
    }
    const hit = map.get(key) as T | undefined;
    if (hit !== undefined) return hit;
    const generation = this.generation;
    const value = await load();
    if (value !== undefined && generation === this.generation && this.usable()) {
      if (map.size >= MAX_ENTRIES_PER_KIND) map.clear();
      map.set(key, value);
    }
    return value;
  }

  /** Entries held now, of every kind or of `kind` (tests). */
  size(kind?: string): number {
    if (kind !== undefined) return this.maps.get(kind)?.size ?? 0;
    let n = 0;
    for (const map of this.maps.values()) n += map.size;
    return n;
  }
}

/** Far more tokens, repositories or queues than a server has; a bound all the same. */
const MAX_ENTRIES_PER_KIND = 10_000;

const caches = new WeakMap<object, LookupCache>();

/** The cache of the database `db` belongs to; none (every lookup reads) for a bare Kysely. */
export function lookupCacheOf(db: Kysely<never> | Kysely<unknown> | object): LookupCache | null {
  return caches.get(db) ?? null;
}

export function registerLookupCache(db: object, cache: LookupCache): void {
  caches.set(db, cache);
}

/** Reads through the cache of `db`, or straight from the database when it has none. */
export function cachedLookup<T extends object>(
  db: object,
  kind: string,
  key: string,
  load: () => Promise<T | undefined>,
  options: { fresh?: boolean } = {},
): Promise<T | undefined> {
  const cache = caches.get(db);
  return cache ? cache.get(kind, key, load, options.fresh === true) : load();
}

/**
 * After a committed write to tokens, organizations, repositories or merge queues (everything
 * cached is forgotten), or to the rows of `kinds` only.
 */
export function lookupsChanged(db: object, kinds?: readonly string[]): void {
  caches.get(db)?.changed(kinds);
}

/** How long a lookup waits for the listener's round trip before it reads instead. */
const SYNC_TIMEOUT_MS = 1_000;

/** The channel the PostgreSQL triggers of migrations 0018 and 0026 notify. */
export const LOOKUP_CHANNEL = "mainline_lookups";

/**
 * What a change to a table forgets, by the table's name (the announcement's payload): a table
 * not listed here forgets everything.
 */
const KINDS_OF_TABLE: Readonly<Record<string, readonly string[]>> = {
  repository_test_settings: ["testSettings"],
};

/** The kinds an announcement of a change to `table` forgets (undefined: everything). */
export function kindsChangedBy(table: string | undefined): readonly string[] | undefined {
  return table === undefined ? undefined : KINDS_OF_TABLE[table];
}

export interface ChangeListenerOptions {
  /** Connection settings of the pool (same database, same search path). */
  client: pg.ClientConfig;
  /** How long to wait before connecting again after a loss (default 1 s). */
  retryMs?: number;
  /** How often the connection is checked (default 5 s): a silent loss disables the cache. */
  heartbeatMs?: number;
  /** How long a lookup waits for `sync` at most before it reads instead (default 1 s). */
  syncTimeoutMs?: number;
  onError?: (error: Error) => void;
}

/**
 * PostgreSQL: a connection of its own that LISTENs for the triggers' announcements. The cache is
 * usable only while it listens; every (re)start of listening starts from an empty cache, since
 * announcements made while nobody listened are lost. A fresh lookup first waits for `sync`, so
 * that an announcement still on its way when the lookup began is heard before the cache answers.
 */
export class ChangeListener {
  private client: pg.Client | null = null;
  private listening = false;
  private stopped = false;
  private retry: NodeJS.Timeout | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  /** The round trip of `sync` under way, and the next one, shared by the calls made meanwhile. */
  private syncing: Promise<boolean> | null = null;
  private nextSync: Promise<boolean> | null = null;

  constructor(
    private readonly cache: LookupCache,
    private readonly options: ChangeListenerOptions,
  ) {
    cache.setUsable(
      () => this.listening,
      () => this.sync(),
    );
  }

  /**
   * Resolves true once every change committed before the call has been heard, false when not
   * listening or the listening connection did not answer in time. One round trip on that
   * connection: PostgreSQL sends a session the notifications committed before its query ahead of
   * the query's answer (a notification is announced to the listening session at the writer's
   * commit, before the writer's answer). Calls made while a round trip is under way share the
   * next one, since the one under way may have left before their write was committed.
   */
  sync(): Promise<boolean> {
    if (!this.syncing) {
      this.syncing = this.roundTrip().finally(() => {
        this.syncing = null;
      });
      return this.syncing;
    }
    this.nextSync ??= this.syncing.then(() => {
      this.nextSync = null;
      return this.sync();
    });
    return this.nextSync;
  }

  /** Resolves once listening, or after the first attempt failed (it keeps trying). */
  async start(): Promise<void> {
    await this.connect();
  }

  get isListening(): boolean {
    return this.listening;
  }

  /** The server process of the listening connection (tests end it to simulate a loss). */
  get backendPid(): number | null {
    const client = this.client as unknown as { processID?: number | null } | null;
    return this.listening ? (client?.processID ?? null) : null;
  }

  stop(): Promise<void> {
    this.stopped = true;
    this.lost();
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    return Promise.resolve();
  }

  /** Whether `client` is still this listener's connection (not lost or stopped meanwhile). */
  private isCurrent(client: pg.Client): boolean {
    return this.client === client && !this.stopped;
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client({ ...this.options.client, keepAlive: true });
    this.client = client;
    client.on("notification", (message) => {
      this.cache.changed(kindsChangedBy(message.payload));
    });
    const onLoss = (error?: Error) => {
      if (!this.isCurrent(client)) return;
      // Once per loss, not once per failed attempt while the database is away.
      if (error && this.listening) this.options.onError?.(error);
      this.lost();
      this.scheduleReconnect();
    };
    client.on("error", onLoss);
    client.on("end", () => {
      onLoss();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${LOOKUP_CHANNEL}`);
    } catch (error) {
      onLoss(error instanceof Error ? error : new Error(String(error)));
      return;
    }
    if (!this.isCurrent(client)) return;
    // From now on every change is announced here; what was cached before may be stale.
    this.cache.changed();
    this.listening = true;
    this.heartbeat = setInterval(() => {
      this.check(client);
    }, this.options.heartbeatMs ?? 5000);
    this.heartbeat.unref();
  }

  /** `select 1` on the listening connection: true when it answered in time, still listening. */
  private async roundTrip(): Promise<boolean> {
    const client = this.client;
    if (!client || !this.listening) return false;
    let timer: NodeJS.Timeout | undefined;
    const answered = await Promise.race([
      client.query("select 1").then(
        () => true,
        () => false,
      ),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(resolve, this.options.syncTimeoutMs ?? SYNC_TIMEOUT_MS, false);
      }),
    ]);
    clearTimeout(timer);
    return answered && this.isCurrent(client) && this.listening;
  }

  private check(client: pg.Client): void {
    const timeout = setTimeout(() => {
      if (this.client === client) {
        this.options.onError?.(new Error("the change listener's connection stopped answering"));
        this.lost();
        this.scheduleReconnect();
      }
    }, this.options.heartbeatMs ?? 5000);
    timeout.unref();
    client.query("select 1").then(
      () => {
        clearTimeout(timeout);
      },
      () => {
        clearTimeout(timeout);
      },
    );
  }

  /** Stops using the cache at once and drops the connection. */
  private lost(): void {
    this.listening = false;
    this.cache.changed();
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
    const client = this.client;
    this.client = null;
    if (client) {
      client.removeAllListeners("notification");
      client.on("error", () => undefined);
      client.end().catch(() => undefined);
    }
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      void this.connect();
    }, this.options.retryMs ?? 1000);
    this.retry.unref();
  }
}
