// The TCP connections postgres.js makes to a real PostgreSQL or PgBouncer, with their `error` and
// `close` events told in one turn, as Node tells them.
//
// postgres.js 3.4.9 (src/connection.js) rejects a connection's statements in its `error` handler
// and gives the connection back to the pool in its `close` handler; its `close` handler rejects
// what is queued on the connection only when the close had no error (`!hadError && (query ||
// sent.length) && error(...)`), counting on nothing having been queued since `error`. Node emits
// the two events back to back. Bun 1.4 runs the microtask queue between them: the code awaiting a
// rejected statement (a worker that polls again, a batcher that sends the next batch, a request
// that reads next) sent its next statement in that gap, on the connection that was dying, still in
// the pool's busy list. It was queued behind the dead one and never rejected; once the pool
// reconnected that connection it waited for the answer to bytes that were never sent. The
// statement never settled (a DNI lookup unanswered, SIGTERM held up behind it) and the connection
// was lost to the pool. Seen when PgBouncer restarted under load: its dying connections end with a
// reset (ECONNRESET), which Bun reports as `error` before `close`.
//
// `close` is therefore emitted right after `error`, in the same turn (the socket is already
// destroyed by then), and the socket's own later `close` is dropped: the connection has left the
// busy list before anything can send on it, and a statement sent after that finds it closed and
// waits for a new connection (test/pooler-restart.test.ts). With TLS (`sslmode` in the URL)
// postgres.js wraps this socket in a TLS socket of its own, whose events are told as Bun tells them.
import { connect as tcpConnect, type Socket } from "node:net";

/** What postgres.js passes its `socket` option: the parsed URL's hosts and ports, or a Unix socket path. */
interface Target {
  host: string[];
  port: number[];
  path?: string | false;
}

/**
 * postgres.js's `socket` option for a TCP (or Unix socket) URL. Several hosts in one URL are
 * tried in turn, one per connection attempt, like postgres.js's own dialling.
 */
export function tcpSockets(): (target: Target) => Socket {
  let next = 0;
  return (target) => {
    const i = next++ % Math.max(1, target.host.length);
    const host = target.host[i] ?? "localhost";
    const port = target.port[i] ?? 5432;
    const socket = target.path ? tcpConnect(target.path) : tcpConnect(port, host);
    // As postgres.js's own dialling sets them: its TLS upgrade names the server from `host`.
    Object.assign(socket, { host, port });
    return closingWithError(socket);
  };
}

/** `socket` with `close` emitted in the same turn as `error`, once. */
export function closingWithError(socket: Socket): Socket {
  const emit = socket.emit;
  let closed = false;
  socket.emit = function (this: Socket, event: string | symbol, ...args: unknown[]): boolean {
    if (event === "close" || event === "error") {
      // Destroyed and told already: postgres.js has removed its listeners, and an `error` with
      // none would be thrown.
      if (closed) return false;
      if (event === "close") {
        closed = true;
        return emit.call(this, event, ...args);
      }
    }
    const heard = emit.call(this, event, ...args);
    if (event === "error" && !closed) {
      closed = true;
      this.destroy();
      emit.call(this, "close", true);
    }
    return heard;
  } as Socket["emit"];
  return socket;
}
