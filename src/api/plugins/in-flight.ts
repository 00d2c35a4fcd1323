import type { FastifyInstance } from "fastify";

/**
 * Work started on behalf of requests (handlers and the authentication hook) that may still touch
 * the database. Shutdown waits for it before closing the database: a client that hung up does not
 * stop its handler, and fastify's close only waits for sockets.
 */
export class InFlightWork {
  private running = 0;
  private waiters: (() => void)[] = [];

  async track<T>(work: () => T | Promise<T>): Promise<T> {
    this.running += 1;
    try {
      return await work();
    } finally {
      this.running -= 1;
      if (this.running === 0) {
        for (const wake of this.waiters.splice(0)) wake();
      }
    }
  }

  get size(): number {
    return this.running;
  }

  /** Resolves once nothing is running (at once if nothing is). */
  idle(): Promise<void> {
    if (this.running === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}

declare module "fastify" {
  interface FastifyInstance {
    inFlight: InFlightWork;
  }
}

/** Wraps every route handler registered from now on, in every scope. */
export function trackHandlers(app: FastifyInstance, work: InFlightWork): void {
  app.decorate("inFlight", work);
  app.addHook("onRoute", (route) => {
    const handler = route.handler;
    route.handler = function trackedHandler(this: FastifyInstance, request, reply) {
      return work.track(() => handler.call(this, request, reply));
    };
  });
}
