// The per-key, per-hour fixed-window counter shared by every key-authenticated family: exact
// across instances.
//
// Each hit takes the next value of its key's sequence (`rate_seq_<id>`, created by a trigger with
// the key); its position in the hour is that value minus the hour's base, kept in rate_windows.
// The base is the sequence's last value when the first instance opened the key's window for the
// hour, and every instance opens (or finds) the window before it draws a hit in that hour, so every
// hit of the hour is above the base. Hits still in flight across the hour boundary, and hits of an
// instance whose clock is a little behind another's, count in the new hour too (a slight
// overcount, never an undercount).
// Measured with pgbench on the 2-core bench machine, an upsert of a counter row cost a quarter of
// the database's throughput on indexed reads; nextval() costs 2–4 µs (more the more distinct keys
// the backends touch), takes a transaction id only once per 32 values, and writes no row version.
// All instances draw from one sequence, so the count is exact across them; the base is written
// once per key and hour.
//
// Hits are drawn in rounds: the requests of one turn share one statement. The hottest reads draw
// theirs inside their own statement instead (fused.ts). A key already known to be over a
// threshold this hour is refused from memory: the count only grows within a window, so that
// knowledge cannot be wrong. Its refusals still draw values, in the next round, so they keep
// exhausting stricter families as the contract says.
import type { Clock } from "../clock";
import { hourOf } from "../clock";
import type { Sql } from "../db/client";
import { RepeatedFailure } from "../log";

interface Waiter {
  resolve(v: number): void;
  reject(err: unknown): void;
}

/** A hit of one request of one key, to be drawn (fused.ts) and then placed in its hour. */

const drawFailures = new RepeatedFailure("drawing rate-limit hits failed");
export interface KeyHit {
  keyId: number;
  /** The oid of the key's sequence. */
  seq: number;
  /** The window the hit counts in. */
  hour: number;
  /** True when the drawn value is within `limit` (and records what it learnt). */
  within(v: number): boolean;
}

export class KeyCounter {
  private waiting = new Map<number, Waiter[]>();
  private blind = new Map<number, number>();
  /** The highest position seen per key in its hour: what refusals from memory rely on. */
  private known = new Map<number, { hour: number; n: number }>();
  private windows = new Map<number, { hour: number; base: number }>();
  /** Each key's sequence oid, learnt when its first window opens; a key's sequence never changes. */
  private seqs = new Map<number, number>();
  private opening = new Map<number, Promise<void>>();
  private inflight: Promise<void> | null = null;
  private blindTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
    /** The largest threshold of any family that counts on keys: past it, a hit changes no answer this hour. */
    private readonly ceiling: number = Infinity,
  ) {}

  /**
   * True when `keyId` is already known to be over `limit` this hour. The refusal is then counted,
   * unless the key is past every family's threshold: from there on more hits change no answer
   * until the hour ends, and a key hammering past its limit costs the database nothing.
   */
  overFromMemory(keyId: number, limit: number): boolean {
    const seen = this.known.get(keyId);
    if (!(seen && seen.n >= limit && seen.hour === hourOf(this.clock.now()))) return false;
    if (seen.n >= this.ceiling) return true;
    this.blind.set(keyId, (this.blind.get(keyId) ?? 0) + 1);
    this.blindTimer ??= setTimeout(() => {
      this.blindTimer = null;
      this.kick();
    }, 200);
    return true;
  }

  /** Counts one request of `keyId`; true when it is within `limit` for the current hour. */
  take(keyId: number, limit: number): boolean | Promise<boolean> {
    if (this.overFromMemory(keyId, limit)) return false;
    const hit = this.hit(keyId, limit);
    return hit instanceof Promise ? hit.then((h) => this.drawAlone(h)) : this.drawAlone(hit);
  }

  /** Draws `hit` in the next round, for a request that will not draw it in a statement of its own. */
  async drawAlone(hit: KeyHit): Promise<boolean> {
    const keyId = hit.keyId;
    const v = await new Promise<number>((resolve, reject) => {
      const list = this.waiting.get(keyId);
      if (list) list.push({ resolve, reject });
      else this.waiting.set(keyId, [{ resolve, reject }]);
      this.kick();
    });
    return hit.within(v);
  }

  /**
   * The hit of one request of `keyId`, for a statement that draws it itself: at once when this
   * instance has the key's window for the hour open, else once it has opened it (every hit of an
   * hour must be drawn after its base).
   */
  hit(keyId: number, limit: number): KeyHit | Promise<KeyHit> {
    const hour = hourOf(this.clock.now());
    const opening = this.ready(keyId, hour);
    return opening ? opening.then(() => this.hitOf(keyId, limit, hour)) : this.hitOf(keyId, limit, hour);
  }

  private hitOf(keyId: number, limit: number, hour: number): KeyHit {
    return { keyId, seq: this.seqs.get(keyId)!, hour, within: (v) => this.position(keyId, hour, v) <= limit };
  }

  /** Resolves once this instance knows the key's window for `hour` (at once when it does). */
  private ready(keyId: number, hour: number): Promise<void> | undefined {
    if (this.windows.get(keyId)?.hour === hour) return undefined;
    let opening = this.opening.get(keyId);
    if (!opening) {
      opening = this.openWindow(keyId, hour).finally(() => this.opening.delete(keyId));
      this.opening.set(keyId, opening);
    }
    return opening;
  }

  /** The first instance in an hour sets the base; the others read it (the no-op update returns it). */
  private async openWindow(keyId: number, hour: number): Promise<void> {
    const [row] = await this.sql<{ base: number; seq: number }[]>`
      with s as (select format('rate_seq_%s', ${keyId}::bigint)::regclass as seq)
      insert into rate_windows (key_id, hour, base)
      select ${keyId}, ${hour}, coalesce(pg_sequence_last_value(s.seq), 0) from s
      on conflict (key_id, hour) do update set base = rate_windows.base
      returning base, (select seq::oid::bigint from s) as seq`;
    this.seqs.set(keyId, row.seq);
    const known = this.windows.get(keyId);
    if (!known || known.hour < hour) this.windows.set(keyId, { hour, base: row.base });
  }

  /**
   * A drawn value's position in `hour`. A hit whose hour this instance has already left (the
   * window moved on while it was out) counts as that hour's first: the hour is over.
   */
  private position(keyId: number, hour: number, v: number): number {
    const window = this.windows.get(keyId);
    if (window?.hour !== hour) return 1;
    const n = Math.max(1, v - window.base);
    const seen = this.known.get(keyId);
    if (!seen || seen.hour < hour || (seen.hour === hour && seen.n < n)) this.known.set(keyId, { hour, n });
    return n;
  }

  /** Draws everything counted so far (shutdown). */
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
    this.inflight = this.runRound().finally(() => {
      this.inflight = null;
      if (this.waiting.size) this.kick();
    });
  }

  private async runRound(): Promise<void> {
    // Let the current tick's requests join this round.
    await Promise.resolve();
    const waiting = this.waiting;
    const blind = this.blind;
    this.waiting = new Map();
    this.blind = new Map();
    const ids = [...new Set([...waiting.keys(), ...blind.keys()])];
    const waits = ids.map((id) => waiting.get(id)?.length ?? 0);
    const counts = ids.map((id, i) => waits[i] + (blind.get(id) ?? 0));
    try {
      // Every key here has had its window opened (a waiter's by ready(), a blind one's before it
      // was known to be over), so its sequence oid is known. One row per key: the values its
      // waiters need (the smallest drawn), not one row per hit — a key hammering past its limit
      // draws thousands of blind hits a round, which need no answer.
      const rows = await this.sql<{ key_id: number; vals: number[] | null }[]>`
        select u.key_id, case when u.w > 0 then (array_agg(d.v order by d.v))[1:u.w] end as vals
        from unnest(${ids}::bigint[], ${ids.map((id) => this.seqs.get(id)!)}::bigint[], ${counts}::int[], ${waits}::int[])
               as u(key_id, seq, c, w)
        cross join lateral (select nextval(u.seq::oid::regclass) as v from generate_series(1, u.c)) d
        group by u.key_id, u.w`;
      const byKey = new Map(rows.map((r) => [r.key_id, r.vals ?? []]));
      for (const [id, list] of waiting) {
        const values = byKey.get(id) ?? [];
        list.forEach((w, i) => w.resolve(values[i]));
      }
      drawFailures.succeeded();
    } catch (err) {
      drawFailures.failed(err);
      for (const list of waiting.values()) for (const w of list) w.reject(err);
    }
  }

  /** Drops windows of past hours. */
  async prune(): Promise<void> {
    const hour = hourOf(this.clock.now());
    await this.sql`delete from rate_windows where hour < ${hour - 1}`;
    for (const [id, seen] of this.known) if (seen.hour < hour) this.known.delete(id);
    for (const [id, w] of this.windows) if (w.hour < hour) this.windows.delete(id);
  }
}
