// The lease engine: which visitor holds which pool number, answered from memory where that is
// provably safe, from PostgreSQL otherwise. No HTTP here; routes validate input and call in.
//
// ── The cache and why it is correct ──────────────────────────────────────────────────────────
// Each instance keeps a bounded LRU (DNI_CACHE_SIZE entries, default 100,000; least recently
// used visitors fall out, so memory stays flat however many distinct visitors come) from
// (pool, visitor) to the visitor's hold: number, hold id, and `confirmedUntil`, the hold's expiry
// as this instance knows it to be written in the database (from the statement that allocated or
// renewed it, or from a write-behind batch it sent).
//
// What an instance may answer from memory, and until when: a returning visitor's lease or
// heartbeat is answered from the entry only while `now < confirmedUntil - margin` (margin: 30 s,
// or a quarter of the ttl for pools with holds under two minutes). The renewal is queued and
// written behind: the worker writes, about once a second, every renewal that has waited its write
// delay (30 s, or a tenth of the ttl for holds under five minutes), in one batch; renewals of one
// visitor in the meantime coalesce into one write, and a clean shutdown writes them all. When a
// batch lands, `confirmedUntil` moves up to the new expiry. An active visitor's written expiry
// stays at least ttl − delay − 1 s ahead of now, far outside the margin; at or past the margin,
// or on a miss, the instance goes to the database instead.
//
// Why no instance can hand out a number another holds:
//  1. Numbers are handed to new holders only by `allocate` (or `allocateVisitors`, after the
//     visits in `visitsOf`), in a transaction holding the pool's advisory lock, and only when the
//     number's hold row says `expires_at <= now`, re-checked on the locked row.
//  2. A hold's expires_at in the database never decreases while the hold lasts: renewals write
//     greatest(old, new), and only for the same hold_id (a number taken by someone else has a new
//     hold_id, so a late renewal of the old hold changes nothing and tells its instance to evict).
//  3. So while `now < confirmedUntil` (by every instance's clock, which the margin allows to
//     disagree by up to the margin less the request time), the hold row in the database still
//     belongs to this visitor and no allocator can take it. Answering from memory inside that
//     window hands out nothing new: the number is the visitor's in the database at that moment.
//  4. Past the window the answer comes from the database: a visitor whose hold expired there and
//     whose number went to someone else meanwhile gets a fresh allocation (or the fallback), never
//     the number now held by the other visitor, even though its old entry is still in this LRU.
// What other instances see: only the database. A renewal answered here reaches them within its
// write delay; until then they see the previous expiry, which is still in the future (point 3),
// so they neither allocate the number nor disagree about who holds it. If this instance dies
// with renewals unwritten, the hold ends at the last written expiry, at most the write delay
// early, and the visitor's next heartbeat is answered `not_leased`; the script leases again and
// the visitor gets the same number back if nobody took it (their own last number comes first).
// A number removed from its pool stops being renewed by the next batch (which evicts the entry),
// is never allocated again, and its holder gets a new number on their next lease.
//
// One client address may not hold a whole pool: an allocation gives a new number only while the
// visitor's address (its bucket: an IPv6 /64) has fewer than DNI_MAX_HOLDS_PER_ADDRESS live holds
// in the pool, counted under the pool's lock (queries.ts, `allocation`); past it the new visitor
// gets the fallback, and the pool is not marked exhausted. A returning visitor keeping their own
// number is never capped, and nothing of this runs on the memory path.
import { LRUCache } from "lru-cache";
import type postgres from "postgres";
import type { Clock } from "../clock";
import { Batcher, hotReads } from "../db/batcher";
import type { Sql, Tx } from "../db/client";
import { retrying } from "../db/sqlstate";
import { log, RepeatedFailure } from "../log";
import { leasedAnswer, PoolCache, type LeaseAnswer, type Pool } from "./pools";
import {
  allocate, allocateVisitors, insertEvents, lockPool, type AllocationRow, type FreePosition, renewByVisitor, renewHolds, touchVisitors, visitsOf,
  visitAndRenew, type Allocation, type EventRow, type Held, type Renewal, type Visit, type VisitRequest, type VisitResult,
  type VisitTouch,
} from "./queries";
import { userAgentOf, type Attribution, type BrowserEvent } from "./rules";
import { dniFallbacks } from "../metrics/counters";
import { HOUR_MS, insertFallbacks, type FallbackRow } from "./fallbacks";


// A write-behind batch fails every flush while the database is away: logged once, then summarised.
const renewalFailures = new RepeatedFailure("dni renewal batch failed");
const visitFailures = new RepeatedFailure("dni visit batch failed");
const eventFailures = new RepeatedFailure("dni event batch failed");
const fallbackFailures = new RepeatedFailure("dni fallback batch failed");
export const DEFAULT_CACHE_SIZE = 100_000;
/**
 * How long an allocation position is trusted: past it, the next allocation scans the free index
 * from its head, so numbers added to a pool (whose entries sort first) are handed out within this.
 */
const FREE_POSITION_MS = 5_000;
/** Shutdown's flush writes renewals found busy again this many times, this far apart (1 s in all at most). */
const FLUSH_BUSY_TRIES = 20;
const FLUSH_BUSY_PAUSE_MS = 50;

export interface EngineOptions {
  /** Visitors kept in the LRU (DNI_CACHE_SIZE). */
  cacheSize?: number;
  /**
   * Live holds one client address (holder hash) may have per pool (DNI_MAX_HOLDS_PER_ADDRESS; the
   * service always passes it). Without it no address is capped.
   */
  maxHoldsPerAddress?: number;
  /** Events are sent at once when this many wait (else with the periodic flush). */
  batchSize?: number;
  /** The request deadline of the batched reads and allocations; default DEADLINE_MS (Config.deadlineMs). */
  deadlineMs?: number | null;
  /**
   * Renewals and events waiting at most: beyond it, renewals take the database path and events
   * wait for the flush, so a stalled database cannot grow memory without bound.
   * Default: the cache size and then some (a renewal waits for a cached visitor).
   */
  maxPending?: number;
}

/**
 * A visitor's hold as this instance knows it, and what waits to be written behind for it: a
 * renewal and the last visit. (Kept on the entry, not in objects of their own: a warm lease then
 * allocates nothing, and the heap the collector walks is smaller by two objects a visitor.)
 */
interface Entry {
  readonly key: string;
  readonly poolKey: string;
  readonly visitorId: number;
  readonly number: string;
  readonly holdId: number;
  /** The hold's expiry as written in the database, as far as this instance knows (epoch ms). */
  confirmedUntil: number;
  /** The lease answer, kept with the pool it was built for (a re-read pool rebuilds it). */
  answer: LeaseAnswer | null;
  answerPool: Pool | null;
  /** The expiry a renewal waits to write (epoch ms); 0 when none waits. */
  renewUntil: number;
  /** When the worker writes it (engine clock, ms): its write delay after it was first queued. */
  dueAt: number;
  /** The last visit (lease) not yet written: its time, 0 when none; user agent (raw) and address hash. */
  visitAt: number;
  visitUserAgent: string | null;
  visitIpHash: string;
}

export type HeartbeatAnswer = { ok: true; ttl: number } | { ok: false; error: "not_leased" };
const NOT_LEASED: HeartbeatAnswer = Object.freeze({ ok: false, error: "not_leased" });

const cacheKey = (pool: string, visitor: string) => `${pool}\n${visitor}`;

/**
 * The requests with each pool and visitor once (a statement may upsert a row only once: two tabs
 * leasing together share one visit), and for each request the index of its own among them.
 */
function distinctVisits(requests: VisitRequest[]): { distinct: VisitRequest[]; at: number[] } {
  const index = new Map<string, number>();
  const distinct: VisitRequest[] = [];
  const at = requests.map((r) => {
    const k = cacheKey(r.pool, r.visitor);
    let i = index.get(k);
    if (i === undefined) {
      i = distinct.length;
      index.set(k, i);
      distinct.push(r);
    }
    return i;
  });
  return { distinct, at };
}

/**
 * A lease's client details. The attribution is a function, read only for a visitor's first
 * touch, and the user agent is raw (cleaned when written): a warm lease parses neither.
 */
export interface VisitSource {
  userAgent: string | null;
  ipHash: string;
  /** The hash the holds cap counts by (the address's bucket: an IPv6 /64); `ipHash` when absent. */
  holderHash?: string;
  attribution(): Attribution;
}

/** What a lease that missed the cache got, and the visitor's id (null if no row came back for them). */
interface Allocated {
  visitorId: number | null;
  allocation: Allocation;
}

export class DniEngine {
  readonly pools: PoolCache;
  private readonly cache: LRUCache<string, Entry>;
  /** Entries with a renewal waiting (`renewUntil` > 0), each once. */
  private waiting: Entry[] = [];
  private events: EventRow[] = [];
  /** Fallbacks not yet written, by pool, hour and visitor (sql/0017; the console's pool page). */
  private refused = new Map<string, FallbackRow>();
  /** The flush a full batch of events asked for, until it is done. */
  private eventFlush: Promise<void> | null = null;
  private writing: Promise<void> = Promise.resolve();
  /** Per pool, the clock time before which allocation is known to find nothing free. */
  private exhaustedUntil = new Map<string, number>();
  private readonly allocators = new Map<string, Batcher<VisitRequest, Allocated>>();
  /**
   * Per pool, where this instance's last allocation stopped in the free-number index, and when
   * the scans that led there last started from the head.
   */
  private readonly freeFrom = new Map<string, { at: FreePosition; headAt: number }>();
  /**
   * Leases that miss the cache while their pool is known to be exhausted (returning visitors still
   * keep their holds), batched like the other hot reads (src/db/batcher.ts).
   */
  private readonly visits;
  private readonly deadlineMs: number | null;
  private readonly batchSize: number;
  private readonly maxPending: number;
  private readonly maxHoldsPerAddress: number | null;

  constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
    opts: EngineOptions = {},
  ) {
    const cacheSize = opts.cacheSize ?? DEFAULT_CACHE_SIZE;
    this.cache = new LRUCache({ max: cacheSize });
    this.batchSize = opts.batchSize ?? 1000;
    this.maxPending = opts.maxPending ?? cacheSize + 10_000;
    this.maxHoldsPerAddress = opts.maxHoldsPerAddress ?? null;
    this.deadlineMs = opts.deadlineMs ?? null;
    this.pools = new PoolCache(sql, undefined, this.deadlineMs);
    this.visits = hotReads((requests: VisitRequest[]) => this.visitBatch(requests), this.deadlineMs);
  }

  /**
   * A number for the visitor: their own hold renewed (from memory when safe), else a free number,
   * else the pool's fallback. The visit's attribution is read only for a visitor the database
   * does not know yet (first touch); for a returning one only the user agent and address hash
   * are kept, with the visit time.
   */
  lease(pool: Pool, visitor: string, visit: VisitSource): LeaseAnswer | Promise<LeaseAnswer> {
    const now = this.clock.now();
    const key = cacheKey(pool.key, visitor);
    const entry = this.cache.get(key);
    if (entry && this.fromMemory(pool, entry, now)) {
      this.queue(pool, entry, now);
      entry.visitAt = now;
      entry.visitUserAgent = visit.userAgent;
      entry.visitIpHash = visit.ipHash;
      return this.answerOf(pool, entry);
    }
    return this.leaseFromDb(pool, visitor, visit, key, now);
  }

  /** Keeps the visitor's hold alive: `{ok: true, ttl}`, or not_leased without an active hold. */
  heartbeat(pool: Pool, visitor: string): HeartbeatAnswer | Promise<HeartbeatAnswer> {
    const now = this.clock.now();
    const key = cacheKey(pool.key, visitor);
    const entry = this.cache.get(key);
    if (entry && this.fromMemory(pool, entry, now)) {
      this.queue(pool, entry, now);
      return pool.beatAnswer;
    }
    return this.heartbeatFromDb(pool, visitor, key, now);
  }

  /** Records a browser event; written behind with the next batch. */
  event(pool: Pool, visitor: string, event: BrowserEvent): void | Promise<void> {
    this.events.push({ ...event, pool_key: pool.key, visitor, at_ms: this.clock.now() });
    if (this.events.length >= this.batchSize) {
      // One flush asked for at a time: while a batch is being written, each event past the batch
      // size asking for its own chained a write per request, each scanning every waiting renewal,
      // and at a few thousand events a second the chain grew faster than it drained (measured:
      // the instance stopped answering for seconds, bench/dni.ts `event`).
      if (!this.eventFlush) {
        const flushed = this.flushDue().finally(() => {
          if (this.eventFlush === flushed) this.eventFlush = null;
        });
        flushed.catch(() => {});
        this.eventFlush = flushed;
      }
      // Past the bound, the request waits for the batch instead of piling up more.
      if (this.events.length + this.batchSize > this.maxPending) return this.eventFlush;
    }
  }

  private fromMemory(pool: Pool, entry: Entry, now: number): boolean {
    return now < entry.confirmedUntil - pool.marginMs && this.waiting.length < this.maxPending;
  }

  /** Queues the entry's renewal to `now` + ttl; renewals of a hold in the meantime coalesce into one write. */
  private queue(pool: Pool, entry: Entry, now: number): void {
    const untilMs = now + pool.ttlMs;
    if (entry.renewUntil === 0) {
      entry.dueAt = now + pool.writeDelayMs;
      this.waiting.push(entry);
    }
    if (untilMs > entry.renewUntil) entry.renewUntil = untilMs;
  }

  private remember(key: string, poolKey: string, visitorId: number, held: Held): Entry {
    const entry: Entry = {
      key,
      poolKey,
      visitorId,
      number: held.number,
      holdId: held.hold_id,
      confirmedUntil: held.expires_at.getTime(),
      answer: null,
      answerPool: null,
      renewUntil: 0,
      dueAt: 0,
      visitAt: 0,
      visitUserAgent: null,
      visitIpHash: "",
    };
    this.cache.set(key, entry);
    return entry;
  }

  /** The same answer object for every lease of a hold (routes keep its JSON text). */
  private answerOf(pool: Pool, entry: Entry): LeaseAnswer {
    if (entry.answerPool !== pool || !entry.answer) {
      entry.answer = leasedAnswer(pool, entry.number);
      entry.answerPool = pool;
    }
    return entry.answer;
  }

  /**
   * A lease that missed the cache (or whose entry is past its memory window): the visit and the
   * allocation go to the pool's allocator together, which renews a returning visitor's hold or
   * hands out a free number. While the pool is known to be exhausted, only the visit and the
   * renewal are asked for, without the lock.
   */
  private async leaseFromDb(pool: Pool, visitor: string, source: VisitSource, key: string, now: number): Promise<LeaseAnswer> {
    const visit: Visit = { ...source.attribution(), user_agent: userAgentOf(source.userAgent), ip_hash: source.ipHash };
    // This visit is written now; one waiting for the same visitor would only be older.
    const old = this.cache.peek(key);
    if (old) old.visitAt = 0;
    const holder = source.holderHash ?? source.ipHash;
    const request: VisitRequest = { pool: pool.key, visitor, visit, holder, nowMs: now, untilMs: now + pool.ttlMs };
    if ((this.exhaustedUntil.get(pool.key) ?? 0) > now) {
      const { visitor_id, held } = await this.visits.load(request);
      if (held) return this.answerOf(pool, this.remember(key, pool.key, visitor_id, held));
      this.cache.delete(key);
      return this.fallback(pool, visitor, now);
    }
    const { visitorId, allocation } = await this.allocatorOf(pool.key).load(request);
    if (allocation.kind === "held") return this.answerOf(pool, this.remember(key, pool.key, visitorId!, allocation.held));
    this.cache.delete(key);
    // A capped address's new visitor says nothing about the pool: others may still get numbers.
    if (allocation.kind === "capped") return this.fallback(pool, null, now);
    if (allocation.kind === "exhausted") {
      // Nothing frees a number before some hold expires, except provisioning new numbers; a
      // second of remembering spares the lock a stampede of fallback visitors.
      this.exhaustedUntil.set(pool.key, now + 1000);
    } else {
      log.warn("dni allocation kept racing renewals; answering the fallback", { pool: pool.key });
    }
    return this.fallback(pool, visitor, now);
  }

  /**
   * The pool's fallback number, counted (src/metrics/) and, for a visitor the pool had no number
   * for (`visitor` null: one refused by the per-address cap, which no pool size would serve),
   * kept for the pool's usage history, written behind with the next batch.
   */
  private fallback(pool: Pool, visitor: string | null, now: number): LeaseAnswer {
    dniFallbacks.inc(pool.key);
    if (visitor !== null) {
      const hour = now - (now % HOUR_MS);
      const k = `${pool.key}\n${hour}\n${visitor}`;
      const row = this.refused.get(k);
      if (row) row.served++;
      // Bounded like the other write-behind queues: past it, only the metric counts.
      else if (this.refused.size < this.maxPending) this.refused.set(k, { pool_key: pool.key, hour_ms: hour, visitor, served: 1 });
    }
    return pool.fallbackAnswer;
  }

  /** One statement per batch, each pool and visitor once (a repeat shares the first's result). */
  private async visitBatch(requests: VisitRequest[]): Promise<VisitResult[]> {
    const { distinct, at } = distinctVisits(requests);
    const results = await retrying(() => visitAndRenew(this.sql, distinct));
    return at.map((i) => results[i]);
  }

  /**
   * New visitors of a pool are allocated in batches: one transaction of this instance at a time
   * per pool, taking the pool's advisory lock once for every visitor waiting when it starts.
   * The lock serializes allocators across instances anyway, and each transaction holds it for a
   * commit (a WAL flush); batching spreads that over all the visitors who arrived meanwhile
   * instead of queueing them one commit apart.
   */
  private allocatorOf(pool: string): Batcher<VisitRequest, Allocated> {
    let batcher = this.allocators.get(pool);
    if (!batcher) {
      batcher = new Batcher((requests) => this.allocateBatch(pool, requests), { slots: 1, max: 500, ...(this.deadlineMs === null ? {} : { timeoutMs: this.deadlineMs }) });
      this.allocators.set(pool, batcher);
    }
    return batcher;
  }

  private async allocateBatch(pool: string, requests: VisitRequest[]): Promise<Allocated[]> {
    const nowMs = Math.max(...requests.map((r) => r.nowMs));
    const now = new Date(nowMs);
    const until = new Date(Math.max(...requests.map((r) => r.untilMs)));
    const { distinct: leases, at } = distinctVisits(requests);
    // No holder (no cap configured) is counted for nobody.
    const max = this.maxHoldsPerAddress;
    const holders = leases.map((l) => (max === null ? "" : l.holder));
    const cap = (holders: string[]) => ({ holders, maxPerHolder: max ?? 1 });
    /** The visitors' ids, in the order of `leases`: the first attempt's rows come in that order. */
    let ids: number[] = [];
    const results = new Map<number, Allocation>();
    // The position holds from one scan from the head to FREE_POSITION_MS later.
    const known = this.freeFrom.get(pool);
    const fresh = known !== undefined && nowMs - known.headAt < FREE_POSITION_MS;
    let from = fresh ? known.at : null;
    let headAt = fresh ? known.headAt : nowMs;
    // A visitor whose pick raced a renewal (a write-behind batch, which takes no lock) picks again
    // in a fresh transaction, which sees that renewal; one left short by a scan that started past
    // the last position picks again from the head. Bounded, though each retry is itself a sign of
    // progress elsewhere. The first attempt records the visits too; retries know the visitors' ids.
    let todo: number[] = [];
    for (let attempt = 0; attempt < 5 && (attempt === 0 || todo.length > 0); attempt++) {
      const again: number[] = [];
      const past = from;
      let short = false;
      // A deadlock (see the lock order in queries.ts) rolled the whole transaction back: run it again.
      const rows = await retrying(() =>
        attempt === 0
          ? this.allocateOnce((tx) => visitsOf(tx, pool, leases), (tx) => allocateVisitors(tx, pool, now, until, past, cap(holders)))
          : this.allocateOnce(
              (tx) => lockPool(tx, pool),
              (tx) => allocate(tx, pool, todo, now, until, past, cap(todo.map((id) => holders[ids.indexOf(id)]))),
            ),
      );
      if (attempt === 0) ids = rows.map((row) => row.visitor_id);
      for (const row of rows) {
        // Rows come in request order, and free numbers are handed out in index order: the last
        // one picked is where the next scan starts.
        if (row.picked_expires !== null) from = { expiresAt: row.picked_expires, number: row.picked! };
        if (row.capped) results.set(row.visitor_id, { kind: "capped" });
        else if (row.picked === null && past !== null) {
          short = true;
          again.push(row.visitor_id);
        } else if (row.picked === null) results.set(row.visitor_id, { kind: "exhausted" });
        else if (row.number === null) again.push(row.visitor_id);
        else results.set(row.visitor_id, { kind: "held", held: { number: row.number, hold_id: row.hold_id!, expires_at: row.expires_at! } });
      }
      if (short) {
        from = null;
        headAt = nowMs;
      }
      todo = again;
    }
    if (from) this.freeFrom.set(pool, { at: from, headAt });
    return at.map((i) => {
      const visitorId = ids[i] ?? null;
      return { visitorId, allocation: (visitorId !== null && results.get(visitorId)) || { kind: "raced" } };
    });
  }

  /**
   * One allocation in a transaction of its own. The first statement (the visits, which end by
   * taking the pool's lock, or the lock alone), the allocation and the commit are sent
   * together: PostgreSQL runs them in order, so the allocation's snapshot is taken once the lock
   * is granted, and the lock is held for the allocation and the commit only, not for round trips
   * to this process. (A query is sent when executed: the first must go out first.) A failed
   * statement aborts the transaction, which the commit then rolls back; the first error is thrown
   * here.
   */
  private async allocateOnce(
    locking: (tx: Tx) => postgres.PendingQuery<postgres.Row[]>,
    statement: (tx: Tx) => postgres.PendingQuery<AllocationRow[]>,
  ): Promise<AllocationRow[]> {
    let locked: Promise<unknown> | null = null;
    let picking: Promise<AllocationRow[]> | null = null;
    await this.sql.begin((tx) => {
      locked = locking(tx).execute();
      picking = statement(tx).execute();
      // Both awaited below, after the commit.
      locked.catch(() => {});
      picking.catch(() => {});
      return null;
    });
    // The first statement that failed has the error; the later ones only report the aborted transaction.
    await locked;
    return picking!;
  }

  private async heartbeatFromDb(pool: Pool, visitor: string, key: string, now: number): Promise<HeartbeatAnswer> {
    const held = await renewByVisitor(this.sql, pool.key, visitor, new Date(now), new Date(now + pool.ttlMs));
    if (!held) {
      this.cache.delete(key);
      return NOT_LEASED;
    }
    this.remember(key, pool.key, held.visitor_id, held);
    return pool.beatAnswer;
  }

  /** The worker's tick: the events, and the renewals (with their visits) whose write delay is up. */
  async flushDue(): Promise<void> {
    await this.write(false);
  }

  /**
   * Writes everything waiting, renewals not yet due included (shutdown, tests). A renewal passed
   * over because another transaction had its row locked (another instance renewing the same
   * visitor, an allocation) is written again shortly, a few times: at shutdown there is no next
   * second to write it in, and the visitor's number would expire early.
   */
  async flush(): Promise<void> {
    let busy = await this.write(true);
    for (let tries = 0; busy > 0 && tries < FLUSH_BUSY_TRIES; tries++) {
      await Bun.sleep(FLUSH_BUSY_PAUSE_MS);
      busy = await this.write(true);
    }
  }

  /** One batch at a time: a call while one is out runs after it. Resolves to the renewals found busy. */
  private write(all: boolean): Promise<number> {
    const next = this.writing.then(() => this.writeBatch(all));
    this.writing = next.then(() => {}, () => {});
    return next;
  }

  private async writeBatch(all: boolean): Promise<number> {
    const now = this.clock.now();
    const due: Entry[] = [];
    const later: Entry[] = [];
    for (const e of this.waiting) (all || e.dueAt <= now ? due : later).push(e);
    this.waiting = later;
    // One renewal per hold and one visit per visitor: an entry replaced in the cache by a newer
    // one of the same hold (a renewal through the database) may wait beside it.
    const renewals = new Map<number, Renewal>();
    const touches = new Map<number, VisitTouch>();
    const sent: { entry: Entry; until: number }[] = [];
    const visited: { entry: Entry; at: number; userAgent: string | null; ipHash: string }[] = [];
    for (const e of due) {
      const until = e.renewUntil;
      e.renewUntil = 0;
      if (e.visitAt !== 0) {
        const t = touches.get(e.visitorId);
        if (!t || t.at_ms < e.visitAt) {
          touches.set(e.visitorId, { visitor_id: e.visitorId, at_ms: e.visitAt, user_agent: userAgentOf(e.visitUserAgent), ip_hash: e.visitIpHash });
        }
        visited.push({ entry: e, at: e.visitAt, userAgent: e.visitUserAgent, ipHash: e.visitIpHash });
        e.visitAt = 0;
      }
      // A visitor who has since moved to another hold keeps only that one alive.
      const current = this.cache.peek(e.key);
      if (current !== undefined && current.holdId !== e.holdId) continue;
      sent.push({ entry: e, until });
      const r = renewals.get(e.holdId);
      if (r) r.until_ms = Math.max(r.until_ms, until);
      else renewals.set(e.holdId, { pool_key: e.poolKey, hold_id: e.holdId, number: e.number, until_ms: until });
    }
    const events = this.events;
    this.events = [];
    const refused = this.refused;
    this.refused = new Map();
    if (due.length === 0 && events.length === 0 && refused.size === 0) return 0;
    const [holds, visits, written, fallbacks] = await Promise.allSettled([
      renewHolds(this.sql, [...renewals.values()]),
      touchVisitors(this.sql, [...touches.values()]),
      insertEvents(this.sql, events),
      insertFallbacks(this.sql, [...refused.values()]),
    ]);
    // A renewal not written (the batch failed, or another transaction had its row locked) waits a
    // second more, unless a newer one replaced it; entries age out of the memory window meanwhile.
    const putBack = (entry: Entry, until: number) => {
      if (entry.renewUntil !== 0) return;
      entry.renewUntil = until;
      entry.dueAt = now + 1000;
      this.waiting.push(entry);
    };
    if (holds.status === "fulfilled") {
      renewalFailures.succeeded();
      const extended = new Map(holds.value.extended.map((h) => [h.hold_id, h.expires_at.getTime()]));
      const busy = new Set(holds.value.busy);
      for (const { entry, until: asked } of sent) {
        if (busy.has(entry.holdId)) {
          putBack(entry, asked);
          continue;
        }
        const current = this.cache.peek(entry.key);
        const until = extended.get(entry.holdId);
        if (until !== undefined) entry.confirmedUntil = Math.max(entry.confirmedUntil, until);
        if (!current || current.holdId !== entry.holdId) continue;
        if (until === undefined) this.cache.delete(entry.key);
        else current.confirmedUntil = Math.max(current.confirmedUntil, until);
      }
    } else {
      renewalFailures.failed(holds.reason);
      for (const { entry, until } of sent) putBack(entry, until);
    }
    if (visits.status === "rejected") {
      // Put back the visits no newer one replaced, as renewals are: a database away for a few
      // seconds lost every returning visitor's last visit and user agent of those seconds. An
      // entry waits while it has a renewal to write; one without gets its confirmed expiry (a
      // renewal that moves nothing) to carry the visit.
      visitFailures.failed(visits.reason);
      for (const { entry, at, userAgent, ipHash } of visited) {
        if (entry.visitAt !== 0) continue;
        entry.visitAt = at;
        entry.visitUserAgent = userAgent;
        entry.visitIpHash = ipHash;
        putBack(entry, entry.confirmedUntil);
      }
    } else visitFailures.succeeded();
    if (written.status === "rejected") {
      eventFailures.failed(written.reason);
      if (this.events.length + events.length <= this.maxPending) this.events.unshift(...events);
    }
    if (fallbacks.status === "rejected") {
      fallbackFailures.failed(fallbacks.reason);
      for (const [k, row] of refused) {
        const newer = this.refused.get(k);
        if (newer) newer.served += row.served;
        else if (this.refused.size < this.maxPending) this.refused.set(k, row);
      }
    } else if (refused.size > 0) fallbackFailures.succeeded();
    return holds.status === "fulfilled" ? holds.value.busy.length : 0;
  }

  /** Entries in the LRU (for the benchmark and tests of the bound). */
  get cachedVisitors(): number {
    return this.cache.size;
  }
}
