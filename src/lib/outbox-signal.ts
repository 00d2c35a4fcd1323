/**
 * "Outbound events were stored": the stores say so, the delivery workers of this process listen.
 * A listener runs shortly after (the writing transaction commits first); workers of other
 * processes poll.
 */
const listeners = new Set<() => void>();

/** After a write that stored events (inside its transaction): listeners run in a moment. */
export function outboxWritten(delayMs = 20): void {
  if (listeners.size === 0) return;
  setTimeout(() => {
    for (const listener of listeners) listener();
  }, delayMs).unref();
}

/** Listens; returns the function that stops listening. */
export function onOutboxWritten(listener: () => void): () => void {
  listeners.add(listener);
  return () => {
    listeners.delete(listener);
  };
}
