// A write-behind hourly counter for buckets that come in millions (DNI's hashed client
// addresses): every decision is made from memory, synchronously, and the counts of all instances
// meet in PostgreSQL (rate_counters) at least once a second.
//
// Within one instance the count is exact: the limit's next hit is refused, and a bucket already
// over is refused with no write at all. Across instances an instance learns the others' hits of a
// bucket when it flushes its own (the upsert returns the bucket's total), so together they may
// admit, beyond the limit, at most what the others admitted in the second before that flush. The
// buckets kept in memory are bounded (least recently used dropped first); a dropped bucket that
// comes back starts from what the next flush tells about it.
import { LRUCache } from "lru-cache";
import { hourOf, type Clock } from "../clock";
import type { Sql } from "../db/client";
import { errorFields, log } from "../log";

interface Entry {
  hour: number;
  /** Hits this instance admitted in the hour. */
  own: number;
  /** Of `own`, those written to the database. */
  flushed: number;
  /** Hits of other instances, as of the last flush. */
  others: number;
}

interface Pending {
  scope: string;
  bucket: string;
  hour: number;
  delta: number;
  entry: Entry;
}

export class AddressCounter {
  private entries: LRUCache<string, Entry>;
  private pending = new Map<string, Pending>();

  constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
    maxBuckets = 200_000,
  ) {
    this.entries = new LRUCache({ max: maxBuckets });
  }

  private entryOf(id: string, hour: number): Entry {
    let e = this.entries.get(id);
    if (!e || e.hour !== hour) {
      e = { hour, own: 0, flushed: 0, others: 0 };
      this.entries.set(id, e);
    }
    return e;
  }

  overFromMemory(scope: string, bucket: string, limit: number): boolean {
    const e = this.entries.get(scope + "\u0000" + bucket);
    return !!e && e.hour === hourOf(this.clock.now()) && e.own + e.others >= limit;
  }

  /** Counts one hit; true when it is within `limit`. A refused hit is not counted. */
  take(scope: string, bucket: string, limit: number): boolean {
    const hour = hourOf(this.clock.now());
    const id = scope + "\u0000" + bucket;
    const e = this.entryOf(id, hour);
    if (e.own + e.others >= limit) return false;
    e.own++;
    const p = this.pending.get(id);
    if (p && p.entry === e) p.delta++;
    else {
      // A bucket's delta of an earlier hour (or of a dropped entry) goes under its own name.
      if (p) this.pending.set(`${id}\u0000${p.hour}\u0000${Math.random()}`, p);
      this.pending.set(id, { scope, bucket, hour, delta: 1, entry: e });
    }
    return true;
  }

  /** Writes the hits admitted since the last flush and learns the buckets' totals. */
  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = [...this.pending.values()];
    this.pending = new Map();
    try {
      const rows = await this.sql<{ i: number; n: number }[]>`
        with u as (
          select * from unnest(${batch.map((p) => p.scope)}::text[], ${batch.map((p) => p.bucket)}::text[],
                               ${batch.map((p) => p.hour)}::bigint[], ${batch.map((p) => p.delta)}::bigint[])
                   with ordinality as u(scope, bucket, hour, delta, i)
        ), up as (
          insert into rate_counters (scope, bucket, hour, n)
          select scope, bucket, hour, delta from u order by scope, bucket, hour
          on conflict (scope, bucket, hour) do update set n = rate_counters.n + excluded.n
          returning scope, bucket, hour, n
        )
        select u.i::int as i, up.n from u join up using (scope, bucket, hour)`;
      for (const r of rows) {
        const p = batch[r.i - 1];
        p.entry.flushed += p.delta;
        p.entry.others = Math.max(0, r.n - p.entry.flushed);
      }
    } catch (err) {
      // Kept for the next flush: a database away for a while must not lose the counts.
      for (const p of batch) {
        const id = `${p.scope}\u0000${p.bucket}`;
        const q = this.pending.get(id);
        if (q && q.entry === p.entry) q.delta += p.delta;
        else this.pending.set(q ? `${id}\u0000${p.hour}\u0000${Math.random()}` : id, p);
      }
      throw err;
    }
  }
}
