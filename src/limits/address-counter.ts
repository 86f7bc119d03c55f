// A write-behind hourly counter for buckets that come in millions (DNI's hashed client
// addresses): every decision is made from memory, synchronously, and the counts of all instances
// meet in PostgreSQL (rate_counters) at least once a second.
//
// Within one instance the count is exact: the limit's next hit is refused, and a bucket already
// over is refused with no write at all. Across instances an instance learns the others' hits of a
// bucket when it flushes its own (the upsert returns the bucket's total), so together they may
// admit, beyond the limit, at most what the others admitted in the second before that flush.
//
// The buckets kept in memory are bounded: two generations of maps, the recent one filled until it
// holds half the bound, then made the older one (the older dropped). A bucket used in either stays,
// so what falls out is what went unused while half the bound of others came in: least recently
// used, near enough, for the price of a Map lookup (a hit is counted on every DNI request, and an
// LRU's bookkeeping showed in its profile). A dropped bucket that comes back starts from what the
// next flush tells about it; one with hits not yet written is kept until they are.
import { hourOf, type Clock } from "../clock";
import type { Sql } from "../db/client";

interface Entry {
  readonly scope: string;
  readonly bucket: string;
  readonly hour: number;
  /** Hits this instance admitted in the hour. */
  own: number;
  /** Of `own`, those written to the database. */
  flushed: number;
  /** Hits of other instances, as of the last flush. */
  others: number;
  /** Waiting in `dirty` for the next flush. */
  dirty: boolean;
}

/** One scope's buckets, in two generations. */
class Generations {
  private recent = new Map<string, Entry>();
  private older = new Map<string, Entry>();

  constructor(private readonly half: number) {}

  get(bucket: string): Entry | undefined {
    const e = this.recent.get(bucket);
    if (e !== undefined) return e;
    const old = this.older.get(bucket);
    if (old !== undefined) this.set(bucket, old);
    return old;
  }

  set(bucket: string, e: Entry): void {
    if (this.recent.size >= this.half) {
      const dropped = this.older;
      this.older = this.recent;
      this.recent = new Map();
      // Hits not yet written stay with their entry, or a bucket back within the hour would
      // name its row twice in one flush.
      for (const [b, d] of dropped) if (d.dirty && !this.older.has(b)) this.recent.set(b, d);
    }
    this.recent.set(bucket, e);
  }
}

export class AddressCounter {
  private readonly scopes = new Map<string, Generations>();
  /** Entries with hits not yet written, each once. */
  private dirty: Entry[] = [];
  private readonly half: number;

  /** Buckets are hex digests (hashed addresses) and scopes limit names: neither holds a comma. */
  constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
    maxBuckets = 200_000,
  ) {
    this.half = Math.max(1, Math.floor(maxBuckets / 2));
  }

  private generations(scope: string): Generations {
    let g = this.scopes.get(scope);
    if (g === undefined) {
      g = new Generations(this.half);
      this.scopes.set(scope, g);
    }
    return g;
  }

  overFromMemory(scope: string, bucket: string, limit: number): boolean {
    const e = this.scopes.get(scope)?.get(bucket);
    return e !== undefined && e.hour === hourOf(this.clock.now()) && e.own + e.others >= limit;
  }

  /** Counts one hit; true when it is within `limit`. A refused hit is not counted. */
  take(scope: string, bucket: string, limit: number): boolean {
    const hour = hourOf(this.clock.now());
    const g = this.generations(scope);
    let e = g.get(bucket);
    if (e === undefined || e.hour !== hour) {
      // An entry of an earlier hour with hits unwritten is still in `dirty`, under its own hour.
      e = { scope, bucket, hour, own: 0, flushed: 0, others: 0, dirty: false };
      g.set(bucket, e);
    }
    if (e.own + e.others >= limit) return false;
    e.own++;
    if (!e.dirty) {
      e.dirty = true;
      this.dirty.push(e);
    }
    return true;
  }

  /** Writes the hits admitted since the last flush and learns the buckets' totals. */
  async flush(): Promise<void> {
    if (this.dirty.length === 0) return;
    const batch = this.dirty;
    this.dirty = [];
    const sent = batch.map((e) => {
      e.dirty = false;
      return e.own;
    });
    try {
      // Columns as comma-joined text: serializing arrays of thousands of strings was most of this
      // statement's cost in the service. Only buckets another instance also counted come back:
      // where the total is this instance's own there is nothing to learn (on one instance, nothing).
      const rows = await this.sql<{ i: number; n: number }[]>`
        with u as (
          select * from unnest(string_to_array(${batch.map((e) => e.scope).join(",")}, ','),
                               string_to_array(${batch.map((e) => e.bucket).join(",")}, ','),
                               string_to_array(${batch.map((e) => e.hour).join(",")}, ',')::bigint[],
                               string_to_array(${batch.map((e, i) => sent[i] - e.flushed).join(",")}, ',')::bigint[],
                               string_to_array(${sent.join(",")}, ',')::bigint[])
                   with ordinality as u(scope, bucket, hour, delta, mine, i)
        ), up as (
          insert into rate_counters (scope, bucket, hour, n)
          select scope, bucket, hour, delta from u order by scope, bucket, hour
          on conflict (scope, bucket, hour) do update set n = rate_counters.n + excluded.n
          returning scope, bucket, hour, n
        )
        select u.i::int as i, up.n from u join up using (scope, bucket, hour) where up.n <> u.mine`;
      batch.forEach((e, i) => (e.flushed = sent[i]));
      for (const r of rows) {
        const e = batch[r.i - 1];
        e.others = Math.max(0, r.n - e.flushed);
      }
    } catch (err) {
      // Kept for the next flush: a database away for a while must not lose the counts.
      for (const e of batch) {
        if (!e.dirty) {
          e.dirty = true;
          this.dirty.push(e);
        }
      }
      throw err;
    }
  }
}
