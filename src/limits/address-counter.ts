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
    this.keep(id, { scope, bucket, hour, delta: 1, entry: e });
    return true;
  }

  /**
   * Adds hits to be written. One pending row per bucket and hour (a flush may not name a row
   * twice): an entry dropped from memory that came back within the hour carries the unwritten
   * hits of the old one; a bucket's hits of an earlier hour go under a name of their own.
   */
  private keep(id: string, p: Pending): void {
    const q = this.pending.get(id);
    if (q === undefined) this.pending.set(id, p);
    else if (q.hour === p.hour) {
      q.delta += p.delta;
      if (this.entries.peek(id) === p.entry) q.entry = p.entry;
    } else {
      const older = q.hour < p.hour ? q : p;
      this.pending.set(id, older === q ? p : q);
      this.keep(`${id}\u0000${older.hour}`, older);
    }
  }

  /** Writes the hits admitted since the last flush and learns the buckets' totals. */
  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = [...this.pending.values()];
    this.pending = new Map();
    try {
      // Only buckets another instance also counted come back: where the total is this instance's
      // own, there is nothing to learn (and on one instance nothing comes back at all).
      const rows = await this.sql<{ i: number; n: number }[]>`
        with u as (
          select * from unnest(${batch.map((p) => p.scope)}::text[], ${batch.map((p) => p.bucket)}::text[],
                               ${batch.map((p) => p.hour)}::bigint[], ${batch.map((p) => p.delta)}::bigint[],
                               ${batch.map((p) => p.entry.flushed + p.delta)}::bigint[])
                   with ordinality as u(scope, bucket, hour, delta, mine, i)
        ), up as (
          insert into rate_counters (scope, bucket, hour, n)
          select scope, bucket, hour, delta from u order by scope, bucket, hour
          on conflict (scope, bucket, hour) do update set n = rate_counters.n + excluded.n
          returning scope, bucket, hour, n
        )
        select u.i::int as i, up.n from u join up using (scope, bucket, hour) where up.n <> u.mine`;
      for (const p of batch) p.entry.flushed += p.delta;
      for (const r of rows) {
        const p = batch[r.i - 1];
        p.entry.others = Math.max(0, r.n - p.entry.flushed);
      }
    } catch (err) {
      // Kept for the next flush: a database away for a while must not lose the counts.
      for (const p of batch) this.keep(`${p.scope}\u0000${p.bucket}`, p);
      throw err;
    }
  }
}
