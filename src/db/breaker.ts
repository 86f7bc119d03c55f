// A known outage is answered at once (operations.md §7): once the database has refused or dropped
// a connection, statements are refused in this process until a probe finds it back.
//
// Without it every request during an outage still went to the pool: it waited for a connection
// that postgres.js dialled again after its back-off (up to a quarter second), or behind a
// PgBouncer that holds statements while it tries its server, and answered 503 after about half a
// second (issue 28: p95 496 ms, some at the 1 s deadline) instead of at once. The breaker is shared by every
// client of a `serve` process (the requests' pool, the background pool, the direct connection and
// its LISTEN): whichever of them sees the database refuse or drop a connection opens it for all.
//
// Open, it refuses a statement before postgres.js sees it (no connection is taken or dialled for
// it), and one probe at a time (a fresh connection's `select 1`, bounded) decides when it closes:
// at once when opened, which ends a false alarm (one backend terminated by an administrator) within
// a round trip, then every PROBE_EVERY_MS after the previous probe ended. What the pool already
// held when it opened goes on as before (its statements were sent, or wait for a connection that
// a refused dial fails within the back-off): they are never refused behind the caller's back, so a
// statement is either run or rejected, never both. The embedded database has no breaker
// (src/db/open.ts): an in-process server cannot be unreachable.
import type { Socket } from "node:net";
import { AppError } from "../errors";
import { errorFields, log } from "../log";
import { refusedOrDropped } from "./sqlstate";

/** Pause between the end of a failed probe and the next. */
export const PROBE_EVERY_MS = 250;

/** The answer of a statement refused while the breaker is open. */
export const BREAKER_MESSAGE = "the database is unreachable";

export class Breaker {
  private openedAt: number | null = null;
  /**
   * Bumped at every close. A failure of work begun before the last close belongs to the outage
   * that close ended (a statement that waited through it in the pool, a PgBouncer connection that
   * answers its query_wait_timeout late): it must not open the breaker again.
   */
  private closes = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private stopped = false;
  private waiters: { resolve(): void; reject(err: unknown): void }[] = [];
  /** Connections dialled by the clients that share this breaker (the probe's not counted). */
  dials = 0;
  /** Times it opened. */
  opened = 0;

  /**
   * `probe` resolves when the database answers on a fresh connection, and rejects (or never
   * settles, which it must not: bound it) otherwise.
   */
  constructor(
    private readonly probe: () => Promise<void>,
    private readonly probeEveryMs = PROBE_EVERY_MS,
  ) {}

  isOpen(): boolean {
    return this.openedAt !== null;
  }

  /** The epoch work begins in (the closes so far): pass it to `saw` with that work's failure. */
  epoch(): number {
    return this.closes;
  }

  /** A failure of work begun in `epoch`: opens the breaker when it says the database refused or dropped a connection. */
  saw(err: unknown, epoch: number): void {
    if (this.stopped || this.openedAt !== null || epoch !== this.closes || !refusedOrDropped(err)) return;
    this.openedAt = performance.now();
    this.opened++;
    log.warn("database unreachable: answering 503 at once until a probe finds it back", errorFields(err));
    this.schedule(0);
  }

  /** The error a statement is refused with while open. */
  refusal(): AppError {
    return new AppError("unavailable", BREAKER_MESSAGE);
  }

  /** Resolves once the breaker is closed (at once when it is); rejects when it is stopped. */
  closed(): Promise<void> {
    if (this.stopped) return Promise.reject(new AppError("unavailable", "the database client is closed"));
    if (this.openedAt === null) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  /** No more probes; whatever waits for the breaker to close is let go with an error. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.reject(new AppError("unavailable", "the database client is closed"));
  }

  private schedule(ms: number): void {
    this.timer = setTimeout(() => {
      this.timer = null;
      // One probe at a time: the next is scheduled only when this one has ended.
      this.probe().then(
        () => this.close(),
        () => {
          if (!this.stopped) this.schedule(this.probeEveryMs);
        },
      );
    }, ms);
  }

  private close(): void {
    if (this.stopped || this.openedAt === null) return;
    const ms = Math.round(performance.now() - this.openedAt);
    this.openedAt = null;
    this.closes++;
    log.info("database reachable again", { open_ms: ms });
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.resolve();
  }
}

/** What a postgres.js query carries that is used here (src/query.js). */
interface QueryInternals {
  handler: (q: unknown) => unknown;
  reject(err: unknown): void;
}

const BREAKER = Symbol("leadline.breaker");

/** The breaker `sql` shares with the other clients of its process; null for one without (the CLI, the embedded database). */
export function breakerOf(sql: object): Breaker | null {
  return (sql as { [BREAKER]?: Breaker })[BREAKER] ?? null;
}

/**
 * `sql` (a postgres.js client) whose statements, BEGIN included, are refused while `breaker` is
 * open, and whose failures (a statement's, a transaction's) are shown to it. Only statements sent
 * on the pool are gated: one inside a transaction already holds its connection.
 */
export function gated<S extends object>(sql: S, breaker: Breaker): S {
  const target = sql as unknown as { unsafe: (...args: unknown[]) => unknown; begin: (...args: unknown[]) => Promise<unknown> };
  // The pool's handler, the same for every statement of this client, wrapped once.
  const wrapped = new WeakMap<QueryInternals["handler"], QueryInternals["handler"]>();
  const admit = <Q>(q: Q): Q => {
    if (!(q instanceof Promise) || typeof (q as unknown as QueryInternals).handler !== "function") return q;
    const internals = q as unknown as QueryInternals;
    const reject = internals.reject;
    const epoch = breaker.epoch();
    internals.reject = (err) => {
      breaker.saw(err, epoch);
      reject(err);
    };
    const handler = internals.handler;
    let gatedHandler = wrapped.get(handler);
    if (!gatedHandler) {
      // Refused with the statement's own reject, read when it runs (not this first statement's).
      gatedHandler = (query) => (breaker.isOpen() ? (query as QueryInternals).reject(breaker.refusal()) : handler(query));
      wrapped.set(handler, gatedHandler);
    }
    internals.handler = gatedHandler;
    return q;
  };
  // postgres.js's `begin` sends BEGIN through `sql.unsafe`, read from this object when it runs.
  const unsafe = target.unsafe;
  target.unsafe = (...args: unknown[]) => admit(unsafe(...args));
  const begin = target.begin;
  target.begin = (...args: unknown[]) => {
    const epoch = breaker.epoch();
    const done = begin(...args);
    // A transaction whose connection was lost rejects with that loss; its statements' own errors are not seen above.
    done.catch((err) => breaker.saw(err, epoch));
    return done;
  };
  Object.defineProperty(sql, BREAKER, { value: breaker });
  return new Proxy(sql, {
    apply: (fn, self, args) => admit(Reflect.apply(fn as unknown as (...a: unknown[]) => unknown, self, args)),
  });
}

/**
 * `dial` (postgres.js's `socket` option, called with the client's options: src/connection.js,
 * createSocket) counted, with its socket's errors (a refused or reset connection) shown to
 * `breaker`. postgres.js opens LISTEN's connection with the options of the client it listens
 * through plus `onnotify` (src/index.js, listen), and dials it again without end while it is lost:
 * that dial waits for the breaker to close instead, and LISTEN is back as soon as the database is.
 */
export function watchedDials<O extends object>(dial: (options: O) => Socket, breaker: Breaker): (options: O) => Socket | Promise<Socket> {
  const open = (options: O): Socket => {
    breaker.dials++;
    const epoch = breaker.epoch();
    const socket = dial(options);
    socket.on("error", (err) => breaker.saw(err, epoch));
    return socket;
  };
  const listens = (options: O) => (options as { onnotify?: unknown }).onnotify !== undefined;
  return (options) => (listens(options) && breaker.isOpen() ? breaker.closed().then(() => open(options)) : open(options));
}
