// The per-key, per-hour fixed-window counter shared by every key-authenticated family.
//
// It lives in PostgreSQL so that several instances count exactly together. Hits are batched:
// while one upsert is in flight, new hits queue, and the next upsert carries all of them (one
// statement per batch, not per request). Each caller learns its own position in the window.
// A key already known to be over a family's threshold in this hour is rejected from memory:
// the count only grows within a window, so that knowledge cannot be wrong. Its increment is
// still added to the shared counter, in the next batch, so it keeps exhausting stricter families.
import type { Sql } from "../db/client";
import { isRetryable } from "../db/sqlstate";
import { log, errorFields } from "../log";

export const LIMITS = { intake: 120, api_v1: 300, kpi: 600, calls: 600 } as const;
export type Family = keyof typeof LIMITS;

interface Waiter {
  resolve(n: number): void;
  reject(err: unknown): void;
}

const HOUR_MS = 3_600_000;

export class RateLimiter {
  private waiting = new Map<number, Waiter[]>();
  private blind = new Map<number, number>();
  private known = new Map<number, { hour: number; n: number }>();
  private inflight: Promise<void> | null = null;
  private blindTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly sql: Sql,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts one request of `keyId`; true when it is within `limit` for the current hour. */
  async allow(keyId: number, limit: number): Promise<boolean> {
    const seen = this.known.get(keyId);
    if (seen && seen.n >= limit && seen.hour === Math.floor(this.now() / HOUR_MS)) {
      this.blind.set(keyId, (this.blind.get(keyId) ?? 0) + 1);
      this.blindTimer ??= setTimeout(() => {
        this.blindTimer = null;
        this.kick();
      }, 200);
      return false;
    }
    const n = await new Promise<number>((resolve, reject) => {
      const list = this.waiting.get(keyId);
      if (list) list.push({ resolve, reject });
      else this.waiting.set(keyId, [{ resolve, reject }]);
      this.kick();
    });
    return n <= limit;
  }

  /** Writes out everything counted so far (shutdown). */
  async flush(): Promise<void> {
    if (this.blindTimer) clearTimeout(this.blindTimer);
    this.blindTimer = null;
    while (this.inflight || this.waiting.size || this.blind.size) {
      this.kick();
      await this.inflight;
    }
  }

  private kick(): void {
    if (this.inflight || (this.waiting.size === 0 && this.blind.size === 0)) return;
    this.inflight = this.runBatch().finally(() => {
      this.inflight = null;
      if (this.waiting.size) this.kick();
    });
  }

  private async runBatch(): Promise<void> {
    // Let the current tick's requests join this batch.
    await Promise.resolve();
    const waiting = this.waiting;
    const blind = this.blind;
    this.waiting = new Map();
    this.blind = new Map();
    const ids = [...new Set([...waiting.keys(), ...blind.keys()])].sort((a, b) => a - b);
    const counts = ids.map((id) => (waiting.get(id)?.length ?? 0) + (blind.get(id) ?? 0));
    try {
      const rows = await this.upsert(ids, counts);
      for (const row of rows) {
        this.known.set(row.key_id, { hour: row.hour, n: row.n });
        const list = waiting.get(row.key_id) ?? [];
        const base = row.n - (list.length + (blind.get(row.key_id) ?? 0));
        list.forEach((w, i) => w.resolve(base + i + 1));
      }
    } catch (err) {
      log.warn("rate counter write failed", errorFields(err));
      for (const list of waiting.values()) for (const w of list) w.reject(err);
    }
  }

  private async upsert(ids: number[], counts: number[]) {
    // Rows are locked in key order, so two instances' batches cannot deadlock; retried if they do.
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.sql<{ key_id: number; hour: number; n: number }[]>`
          insert into rate_counters (key_id, hour, n)
          select h.key_id, floor(extract(epoch from now()) / 3600)::bigint, h.c
          from unnest(${ids}::bigint[], ${counts}::int[]) with ordinality as h(key_id, c, ord)
          order by h.ord
          on conflict (key_id, hour) do update set n = rate_counters.n + excluded.n
          returning key_id, hour, n`;
      } catch (err) {
        if (!isRetryable(err) || attempt >= 3) throw err;
      }
    }
  }

  /** Drops counters of past windows. */
  async prune(): Promise<void> {
    await this.sql`delete from rate_counters where hour < floor(extract(epoch from now()) / 3600)::bigint - 1`;
    const hour = Math.floor(this.now() / HOUR_MS);
    for (const [id, seen] of this.known) if (seen.hour < hour) this.known.delete(id);
  }
}
