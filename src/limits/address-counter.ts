// A write-behind hourly counter for buckets that come in millions (DNI's hashed client
// addresses): every decision is made from memory, synchronously, and the counts of all instances
// meet in PostgreSQL (rate_counters).
//
// Within one instance the count is exact: the limit's next hit is refused, and a bucket already
// over is refused with no write at all. Across instances an instance learns the others' hits of a
// bucket when it flushes its own (the upsert returns the bucket's total). A bucket with half its
// limit counted (as far as the instance knows) is written every second; one below that when a
// twentieth of the limit is unwritten, when its hour ends, or 30 s after its first unwritten hit
// (a backlog of those spread over about 30 s more).
// So no instance holds more than a twentieth of the limit (or a second's hits) unwritten, and
// together the instances admit beyond the limit at most that much per other instance. Writing
// each active address every second was most of a DNI request's PostgreSQL time (20,000 upserted
// rows a second under bench/dni.ts's load); now an address is written about once in 30 s. A
// shutdown (and `Limits.flush`) writes everything.
//
// The buckets kept in memory are bounded, in two generations (src/generations.ts): what falls out
// is what went unused while half the bound of others came in. A dropped bucket that comes back
// starts from what the next flush tells about it; one with hits not yet written is kept until
// they are. A caller that holds a record per bucket (src/http/client.ts, one per client address)
// passes it instead of the name, and the bucket's entry is kept on it: the hot path then looks up
// nothing here.
import { hourOf, type Clock } from "../clock";
import type { Sql } from "../db/client";
import { Generations } from "../generations";

interface Entry {
  /** The counter it belongs to: records may be shared by counters (several instances in one process). */
  readonly counter: AddressCounter;
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
  /** When it became dirty (clock ms): a bucket is written at the latest STALE_MS after. */
  dirtySince: number;
  /** The limit of its last hit: how close it is decides how soon it is written. */
  limit: number;
  /**
   * Dropped from the generations: a caller's record that still holds it looks the bucket up again
   * (else a new entry of the bucket and this one could both wait for one flush, naming its row twice).
   */
  dropped: boolean;
}

/** A bucket: its name, or a record of the caller's that keeps its entry (`count`) with the name (`hash`). */
export type AddressBucket = string | { readonly hash: string; count?: unknown };

const nameOf = (bucket: AddressBucket) => (typeof bucket === "string" ? bucket : bucket.hash);

/** Buckets upserted per statement. */
export const FLUSH_CHUNK = 5000;

/** The longest a bucket's hits wait in memory (a crashed instance loses at most this much of them). */
export const STALE_MS = 30_000;

export class AddressCounter {
  private readonly scopes = new Map<string, Generations<string, Entry>>();
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

  private generations(scope: string): Generations<string, Entry> {
    let g = this.scopes.get(scope);
    if (g === undefined) {
      // Hits not yet written stay with their entry, or a bucket back within the hour would name
      // its row twice in one flush; an entry let go is marked so that no record goes on using it.
      g = new Generations(this.half, (_, e, shadowed) => {
        if (e.dirty && !shadowed) return true;
        e.dropped = true;
        return false;
      });
      this.scopes.set(scope, g);
    }
    return g;
  }

  overFromMemory(scope: string, bucket: AddressBucket, limit: number): boolean {
    const hour = hourOf(this.clock.now());
    const e = this.kept(bucket, scope, hour) ?? this.scopes.get(scope)?.get(nameOf(bucket));
    return e !== undefined && e.hour === hour && e.own + e.others >= limit;
  }

  /** Counts one hit; true when it is within `limit`. A refused hit is not counted. */
  take(scope: string, bucket: AddressBucket, limit: number): boolean {
    const hour = hourOf(this.clock.now());
    let e = this.kept(bucket, scope, hour);
    if (e === undefined) {
      e = this.entryOf(scope, nameOf(bucket), hour);
      if (typeof bucket !== "string") bucket.count = e;
    }
    if (e.own + e.others >= limit) return false;
    e.own++;
    e.limit = limit;
    if (!e.dirty) {
      e.dirty = true;
      e.dirtySince = this.clock.now();
      this.dirty.push(e);
    }
    return true;
  }

  /** The entry a caller's record keeps, when it is this counter's, of this scope and hour, and current. */
  private kept(bucket: AddressBucket, scope: string, hour: number): Entry | undefined {
    if (typeof bucket === "string") return undefined;
    const e = bucket.count as Entry | undefined;
    return e !== undefined && e.counter === this && e.scope === scope && e.hour === hour && !e.dropped ? e : undefined;
  }

  /** The bucket's entry for the hour, made if there is none. */
  private entryOf(scope: string, bucket: string, hour: number): Entry {
    const g = this.generations(scope);
    let e = g.get(bucket);
    if (e === undefined || e.hour !== hour) {
      // An entry of an earlier hour with hits unwritten is still in `dirty`, under its own hour.
      e = { counter: this, scope, bucket, hour, own: 0, flushed: 0, others: 0, dirty: false, dirtySince: 0, limit: 0, dropped: false };
      g.set(bucket, e);
    }
    return e;
  }

  /** Whether a dirty entry must be written now, whatever else waits (the header says why these rules). */
  private urgent(e: Entry, hour: number): boolean {
    return e.hour !== hour || 2 * (e.own + e.others) >= e.limit || 20 * (e.own - e.flushed) >= e.limit;
  }

  /**
   * Writes hits admitted and not yet written — every one (`all`: shutdown, tests), else those of
   * the buckets that are due — and learns those buckets' totals.
   */
  async flush(all = true): Promise<void> {
    if (this.dirty.length === 0) return;
    // Written FLUSH_CHUNK buckets to a statement, one after another: 65,000 addresses due in one
    // second (a load that moved) upserted at once kept a PostgreSQL core for 200 ms.
    const batch = this.dueBatch(all);
    for (let i = 0; i < batch.length; i += FLUSH_CHUNK) {
      try {
        await this.write(batch.slice(i, i + FLUSH_CHUNK));
      } catch (err) {
        // The chunks not yet sent wait for the next flush too (the failed one put itself back).
        for (const e of batch.slice(i + FLUSH_CHUNK)) this.dirty.push(e);
        throw err;
      }
    }
  }

  /** The entries to write now, taken out of `dirty`. */
  private dueBatch(all: boolean): Entry[] {
    let batch = this.dirty;
    // Past the bound of kept buckets everything is written, so the generations can let go of them.
    if (all || batch.length > this.half) this.dirty = [];
    else {
      const now = this.clock.now();
      const hour = hourOf(now);
      // Entries due only by age are written at most `budget` a second, oldest first (`dirty` is in
      // the order they became dirty): a load that moved on leaves tens of thousands due in the
      // same second, and written at once they took PostgreSQL's CPU from the requests of that
      // second (bench/dni.ts, the new-visitor leases after the returning ones). A thirtieth of
      // the backlog a second keeps every entry's wait under about a minute.
      let budget = Math.max(FLUSH_CHUNK, Math.ceil(batch.length / 30));
      const waiting: Entry[] = [];
      const taken: Entry[] = [];
      for (const e of batch) {
        if (this.urgent(e, hour)) taken.push(e);
        else if (budget > 0 && now - e.dirtySince >= STALE_MS) {
          budget--;
          taken.push(e);
        } else waiting.push(e);
      }
      this.dirty = waiting;
      batch = taken;
    }
    return batch;
  }

  /** Writes one chunk of entries and learns their buckets' totals; on failure they wait for the next flush. */
  private async write(batch: Entry[]): Promise<void> {
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
