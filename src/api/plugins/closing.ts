/**
 * How the HTTP server lets go of its connections when it closes. Requests that arrive while it
 * closes get a 503, and every answer (to those and to requests already in flight) says
 * `connection: close`: a keep-alive connection whose request was in flight would otherwise stay
 * open, idle, until its keep-alive timeout (72 s), and the close would wait for it. Node closes
 * the idle connections that served a request, but not those that never sent a byte (a browser's
 * or a proxy's preconnected socket): those are closed here, or the close would wait for them for
 * as long as the client keeps them.
 */
import type { Socket } from "node:net";
import { ApiError } from "../../lib/errors.js";
import type { ApiApp } from "../types.js";

/** How long a connection accepted while closing may stay silent before it is closed. */
const SILENT_WHILE_CLOSING_MS = 1_000;

export function releaseConnectionsOnClose(app: ApiApp): void {
  let closing = false;
  const open = new Set<Socket>();
  // A connection that has sent a byte has a request, whole or in part: Node and the hooks below
  // see to it; one that has not is closed.
  const closeIfSilent = (socket: Socket) => {
    if (socket.bytesRead === 0) socket.destroy();
  };
  app.server.on("connection", (socket: Socket) => {
    open.add(socket);
    socket.once("close", () => open.delete(socket));
    if (!closing) return;
    setTimeout(() => {
      closeIfSilent(socket);
    }, SILENT_WHILE_CLOSING_MS).unref();
  });

  app.addHook("preClose", (done) => {
    closing = true;
    for (const socket of open) closeIfSilent(socket);
    done();
  });
  app.addHook("onRequest", (_request, _reply, done) => {
    if (!closing) {
      done();
      return;
    }
    done(new ApiError("unavailable", "The server is shutting down; retry in a moment."));
  });
  app.addHook("onSend", (_request, reply, payload, done) => {
    if (closing) void reply.header("connection", "close");
    done(null, payload);
  });
}
