// postgres.js talks to PGlite inside this process: a socket stand-in (postgres.js's `socket`
// option) whose writes are PostgreSQL protocol messages handed to PGlite and whose 'data' events
// are PGlite's answers. Nothing listens on a socket or a port, so no other process can open a
// session on the embedded database: `pg_dump -h DATA_DIR`, run against the socket this replaced,
// shared PGlite's one session, emptied its search_path and left the server failing every query.
import type { PGlite } from "@electric-sql/pglite";
import { EventEmitter } from "node:events";

const SSL_REQUEST = 80877103;
const CANCEL_REQUEST = 80877102;
const PROTOCOL_3 = 196608;
const TERMINATE = 0x58; // 'X'

/**
 * PGlite's one session, handed to one connection at a time. Each connection that starts gets it as
 * a fresh backend would be: an open transaction is rolled back and `discard all` drops what the
 * previous connection left (prepared statements, which postgres.js names afresh per connection
 * and would otherwise leak at every reconnect; settings; temporary tables; advisory locks).
 */
export class PgliteSession {
  #current: PgliteWire | null = null;
  #closed = false;

  constructor(private readonly db: PGlite) {}

  /** A new connection (postgres.js calls this whenever it connects). */
  connect(): PgliteWire {
    return new PgliteWire(this.db, this);
  }

  /** Gives the session to `wire`, ending the connection that had it. */
  async claim(wire: PgliteWire): Promise<void> {
    if (this.#closed) throw new Error("the embedded database is closed");
    if (this.#current && this.#current !== wire) this.#current.destroy();
    this.#current = wire;
    if (this.db.isInTransaction()) await this.db.exec("rollback");
    await this.db.exec("discard all");
  }

  /** Ends the connection that has the session; later ones are refused. */
  close(): void {
    this.#closed = true;
    this.#current?.destroy();
    this.#current = null;
  }
}

/**
 * One connection, with the socket surface postgres.js uses (write, end, destroy, readyState and
 * the 'data', 'error' and 'close' events). Messages are framed here: whole ones go to PGlite
 * together in one call (it runs a batch up to its end, stopping at nothing), a partial one waits
 * for its remainder. PGlite runs on this thread, so a call holds the event loop until PGlite
 * answers, as it did behind the socket.
 */
export class PgliteWire extends EventEmitter {
  readyState: "open" | "closed" = "open";
  #inbox: Buffer = Buffer.alloc(0);
  /** Writes not yet joined to the inbox: joined once per batch, not once per write. */
  #written: Buffer[] = [];
  #started = false;
  #pumping = false;

  constructor(
    private readonly db: PGlite,
    private readonly session: PgliteSession,
  ) {
    super();
  }

  write(chunk: Uint8Array | string, done?: (err?: Error | null) => void): boolean {
    if (this.readyState !== "open") {
      if (done) queueMicrotask(() => done(new Error("the embedded database connection is closed")));
      return false;
    }
    // Copied: postgres.js may reuse what it passed once write returns.
    this.#written.push(Buffer.from(chunk));
    if (!this.#pumping) {
      this.#pumping = true;
      queueMicrotask(() => void this.#pump());
    }
    if (done) queueMicrotask(() => done(null));
    return true;
  }

  end(chunk?: Uint8Array): this {
    // The only message postgres.js ends with is Terminate, which PGlite ignores: its session
    // outlives every connection.
    void chunk;
    this.#finish(false);
    return this;
  }

  destroy(err?: Error): this {
    if (err && this.readyState === "open") queueMicrotask(() => this.emit("error", err));
    this.#finish(Boolean(err));
    return this;
  }

  // postgres.js calls these for COPY streams and keep-alive; there is no buffer to pause here.
  pause(): this {
    return this;
  }
  resume(): this {
    return this;
  }

  #finish(hadError: boolean): void {
    if (this.readyState === "closed") return;
    this.readyState = "closed";
    this.#inbox = Buffer.alloc(0);
    this.#written = [];
    // Asynchronously, as a socket closes: postgres.js detaches its listeners first.
    setImmediate(() => this.emit("close", hadError));
  }

  async #pump(): Promise<void> {
    try {
      while (this.readyState === "open") {
        if (this.#written.length > 0) {
          this.#inbox = Buffer.concat([this.#inbox, ...this.#written]);
          this.#written = [];
        }
        const answer = this.#started ? this.#messages() : await this.#startup();
        if (answer === null) break;
        if (answer.length > 0 && this.readyState === "open") this.emit("data", answer);
      }
    } catch (err) {
      this.destroy(err instanceof Error ? err : new Error(String(err)));
    } finally {
      // Bytes written while this ran (by a 'data' listener, or during the session's reset) were
      // queued, and the loop looks at them again before it stops; a partial message left in the
      // inbox waits for the write that completes it.
      this.#pumping = false;
    }
  }

  /** The startup packet (or an SSL or cancel request before it); null until one is whole. */
  async #startup(): Promise<Buffer | null> {
    if (this.#inbox.length < 8) return null;
    const length = this.#inbox.readInt32BE(0);
    const code = this.#inbox.readInt32BE(4);
    if (length < 8 || length > 10_000) throw new Error("the embedded database received no startup packet");
    if (this.#inbox.length < length) return null;
    const packet = this.#inbox.subarray(0, length);
    this.#inbox = this.#inbox.subarray(length);
    if (code === SSL_REQUEST) return Buffer.from("N");
    if (code === CANCEL_REQUEST) {
      // PGlite cannot interrupt a statement; a cancel connection ends after its one message.
      this.end();
      return null;
    }
    if (code !== PROTOCOL_3) throw new Error(`the embedded database does not speak protocol ${code}`);
    await this.session.claim(this);
    if (this.readyState !== "open") return null;
    this.#started = true;
    // PGlite answers the startup packet from its own buffer, which the next call overwrites.
    return Buffer.from(this.db.execProtocolRawSync(packet));
  }

  /** Every whole message in the inbox, run as one batch; null when there is none. */
  #messages(): Buffer | null {
    let end = 0;
    let terminate = false;
    while (end + 5 <= this.#inbox.length) {
      if (this.#inbox[end] === TERMINATE) {
        terminate = true;
        break;
      }
      const next = end + 1 + this.#inbox.readInt32BE(end + 1);
      if (next > this.#inbox.length) break;
      end = next;
    }
    if (terminate) this.end();
    if (end === 0) return null;
    const batch = this.#inbox.subarray(0, end);
    this.#inbox = this.#inbox.subarray(end);
    const answer = this.db.execProtocolRawSync(batch);
    return Buffer.from(answer.buffer, answer.byteOffset, answer.byteLength);
  }
}
