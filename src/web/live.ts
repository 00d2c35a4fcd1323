/**
 * Live updates of queue pages: each server process reads a watched queue's version (two indexed
 * statements) once per `pollMs`, however many browsers follow it, and tells that queue's streams
 * when it changed. The database is the only source, so a change made by another process reaches
 * every browser too (ADR 0025).
 */

export type VersionOf = (queueId: string) => Promise<string | undefined>;

/** A browser following a queue: told the new version, or `undefined` when the queue is gone. */
export type Listener = (version: string | undefined) => void;

interface Watched {
  listeners: Set<Listener>;
  last: string;
  timer: NodeJS.Timeout;
  looking: boolean;
}

export class QueueWatch {
  private readonly watched = new Map<string, Watched>();

  constructor(
    private readonly versionOf: VersionOf,
    private readonly pollMs: number,
  ) {}

  /** Follows a queue from `version` on; the answer stops following. */
  subscribe(queueId: string, version: string, listener: Listener): () => void {
    let watched = this.watched.get(queueId);
    if (!watched) {
      const created: Watched = {
        listeners: new Set(),
        last: version,
        looking: false,
        timer: setInterval(() => void this.look(queueId, created), this.pollMs),
      };
      created.timer.unref();
      this.watched.set(queueId, created);
      watched = created;
    }
    watched.listeners.add(listener);
    // A stream that began on an older version than the one shared is told at once.
    if (watched.last !== version) listener(watched.last);
    return () => {
      const current = this.watched.get(queueId);
      if (!current) return;
      current.listeners.delete(listener);
      if (current.listeners.size === 0) {
        clearInterval(current.timer);
        this.watched.delete(queueId);
      }
    };
  }

  /** How many queues are being looked at (tests). */
  get size(): number {
    return this.watched.size;
  }

  /** Stops every look (server shutdown); listeners are told nothing. */
  stop(): void {
    for (const watched of this.watched.values()) clearInterval(watched.timer);
    this.watched.clear();
  }

  private async look(queueId: string, watched: Watched): Promise<void> {
    if (watched.looking) return;
    watched.looking = true;
    try {
      const version = await this.versionOf(queueId);
      if (version === watched.last) return;
      if (version !== undefined) watched.last = version;
      for (const listener of [...watched.listeners]) listener(version);
    } catch {
      // The database is away for a moment: the next look tries again.
    } finally {
      watched.looking = false;
    }
  }
}
