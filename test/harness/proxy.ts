// A TCP proxy in front of PostgreSQL that a test can cut or black-hole, to play a database outage
// without touching the shared test cluster.
import { connect as tcpConnect, createServer, type Socket } from "node:net";

export interface Proxy {
  /** The database URL rewritten to go through the proxy. */
  url: string;
  /** Drops every connection and refuses new ones. */
  cut(): void;
  /**
   * Drops every connection with a TCP reset (the client's next read fails with ECONNRESET, as when
   * a pooler exits with input unread) and goes on accepting new ones.
   */
  reset(): void;
  /** Accepts connections but forwards nothing, and stalls the open ones: a hung database. */
  hang(): void;
  restore(): void;
  /** Forwards everything after `ms` milliseconds: a slow database (but see `unlagged`). */
  delay(ms: number): void;
  close(): Promise<void>;
}

/**
 * `unlagged`: a connection that has sent this text (e.g. `listen "leadline_keys"`) is never
 * delayed, so a test can slow a pool's answers but not its LISTEN connection's notifications.
 */
export async function startProxy(target: string, opts: { unlagged?: string } = {}): Promise<Proxy> {
  const dest = new URL(target);
  let mode: "up" | "down" | "hang" = "up";
  let lag = 0;
  const fastAfter = opts.unlagged === undefined ? null : Buffer.from(opts.unlagged);
  const pairs = new Set<[Socket, Socket]>();
  const server = createServer((client) => {
    if (mode === "down") return client.destroy();
    const upstream = tcpConnect(Number(dest.port || 5432), dest.hostname);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    let fast = false;
    const forward = (from: Socket, to: Socket) =>
      from.on("data", (chunk: Buffer) => {
        if (mode !== "up") return;
        if (from === client && fastAfter && chunk.includes(fastAfter)) fast = true;
        if (lag > 0 && !fast) setTimeout(() => to.writable && to.write(chunk), lag);
        else to.write(chunk);
      });
    forward(client, upstream);
    forward(upstream, client);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const port = (server.address() as { port: number }).port;
  const url = new URL(target);
  url.hostname = "127.0.0.1";
  url.port = String(port);
  return {
    url: url.toString(),
    cut() {
      mode = "down";
      for (const [c, u] of pairs) {
        c.destroy();
        u.destroy();
      }
      pairs.clear();
    },
    reset() {
      for (const [c, u] of pairs) {
        c.resetAndDestroy();
        u.destroy();
      }
      pairs.clear();
    },
    hang() {
      mode = "hang";
    },
    restore() {
      mode = "up";
      lag = 0;
    },
    delay(ms: number) {
      lag = ms;
    },
    close: () =>
      new Promise<void>((ok) => {
        for (const [c, u] of pairs) {
          c.destroy();
          u.destroy();
        }
        server.close(() => ok());
      }),
  };
}
