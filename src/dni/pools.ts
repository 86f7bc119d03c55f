// Pools as the engine needs them, cached in memory: every lease, heartbeat and event names its
// pool, and a warm lease must be answered without a database round trip. A pool (or its absence)
// is re-read after POOL_REFRESH_MS of real time, so a re-provisioned fallback, placeholder or
// ttl_seconds takes effect within seconds. Which numbers a pool has is never cached here: that is
// decided in the database at allocation and renewal time.
import { LRUCache } from "lru-cache";
import type { Sql } from "../db/client";
import { withDeadline } from "../db/deadline";
import { mapDbError } from "../db/sqlstate";
import { findPool, type PoolRow } from "./queries";
import { formatNumber } from "./rules";

export const POOL_REFRESH_MS = 5_000;

export interface Pool {
  key: string;
  orgId: number | null;
  fallback: string;
  placeholder: string;
  ttlSeconds: number;
  ttlMs: number;
  /**
   * How long before a hold's expiry in the database an instance stops answering from memory: it
   * covers clock skew between instances and the time a request takes. 30 s, or a quarter of the
   * hold's lifetime for pools with holds shorter than two minutes.
   */
  marginMs: number;
  /**
   * How long a renewal answered from memory may wait before it is written: renewals of a visitor
   * within it coalesce into one write. 30 s, or a tenth of the ttl for holds under five minutes;
   * always well inside ttl − margin, so an active visitor never leaves the memory window.
   */
  writeDelayMs: number;
  /** The answer to an exhausted lease, built once. */
  fallbackAnswer: LeaseAnswer;
  /** The answer to a heartbeat that kept its hold, built once. */
  beatAnswer: { ok: true; ttl: number };
  placeholderFormatted: string;
}

export interface LeaseAnswer {
  ok: true;
  number: string;
  formatted: string;
  ttl: number;
  fallback: boolean;
  placeholder: string;
  placeholder_formatted: string;
}

interface Cached {
  pool: Pool | null;
  loadedAt: number;
}

export class PoolCache {
  // Unknown keys are cached too (as null), so repeating a bad key costs no query; the bound keeps
  // a flood of made-up keys from growing memory.
  private readonly cache = new LRUCache<string, Cached>({ max: 10_000 });
  private readonly loading = new Map<string, Promise<Pool | null>>();

  constructor(
    private readonly sql: Sql,
    private readonly refreshMs = POOL_REFRESH_MS,
    /** The request deadline (Config.deadlineMs); null: DEADLINE_MS. */
    private readonly deadlineMs: number | null = null,
  ) {}

  /**
   * The pool, synchronously when cached and fresh. A pool read before is kept while the database
   * cannot be asked again (unavailable: away, too slow, or the breaker open): its returning
   * visitors are still answered from memory, which is what makes them safe (src/dni/engine.ts),
   * and nobody can re-provision it meanwhile through that database. Without this, warm leases
   * turned 503 once an outage had lasted POOL_REFRESH_MS.
   */
  get(key: string): Pool | null | Promise<Pool | null> {
    const hit = this.cache.get(key);
    if (hit && performance.now() - hit.loadedAt < this.refreshMs) return hit.pool;
    let loading = this.loading.get(key);
    if (!loading) {
      // Bounded like every request's statements: a lookup the database does not answer is a 503,
      // and the next request for the pool looks it up afresh rather than wait on this one.
      loading = withDeadline(this.load(key), this.deadlineMs ?? undefined).finally(() => this.loading.delete(key));
      this.loading.set(key, loading);
    }
    const known = hit?.pool;
    if (!known) return loading;
    return loading.catch((err: unknown) => {
      if (mapDbError(err)?.code === "unavailable") return known;
      throw err;
    });
  }

  private async load(key: string): Promise<Pool | null> {
    const row = await findPool(this.sql, key);
    // A pool read again unchanged stays the same object: the engine keeps each visitor's answer
    // with the pool it was built for, and a new object every refresh rebuilt and re-serialized
    // every cached visitor's answer once per POOL_REFRESH_MS (a third of warm leases, profiled).
    const before = this.cache.get(key)?.pool;
    const pool = row && (before && sameRow(before, row) ? before : toPool(row));
    this.cache.set(key, { pool, loadedAt: performance.now() });
    return pool;
  }
}

function sameRow(pool: Pool, row: PoolRow): boolean {
  return (
    pool.key === row.key &&
    pool.orgId === row.org_id &&
    pool.fallback === row.fallback &&
    pool.placeholder === row.placeholder &&
    pool.ttlSeconds === row.ttl_seconds
  );
}

function toPool(row: PoolRow): Pool {
  const ttlMs = row.ttl_seconds * 1000;
  const placeholderFormatted = formatNumber(row.placeholder);
  return {
    key: row.key,
    orgId: row.org_id,
    fallback: row.fallback,
    placeholder: row.placeholder,
    ttlSeconds: row.ttl_seconds,
    ttlMs,
    marginMs: Math.min(30_000, ttlMs / 4),
    writeDelayMs: Math.min(30_000, ttlMs / 10),
    placeholderFormatted,
    beatAnswer: { ok: true, ttl: row.ttl_seconds },
    // No hold is made on the fallback number, so its ttl is 0: nothing to keep alive.
    fallbackAnswer: {
      ok: true,
      number: row.fallback,
      formatted: formatNumber(row.fallback),
      ttl: 0,
      fallback: true,
      placeholder: row.placeholder,
      placeholder_formatted: placeholderFormatted,
    },
  };
}

export function leasedAnswer(pool: Pool, number: string): LeaseAnswer {
  return {
    ok: true,
    number,
    formatted: formatNumber(number),
    ttl: pool.ttlSeconds,
    fallback: false,
    placeholder: pool.placeholder,
    placeholder_formatted: pool.placeholderFormatted,
  };
}
