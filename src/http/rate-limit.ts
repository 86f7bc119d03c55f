// The per-key, per-hour fixed-window counter shared by every key-authenticated family.
//
// Each hit takes the next value of its key's sequence (`rate_seq_<id>`, created by a trigger with
// the key); its position in the hour is that value minus the hour's base, kept in rate_windows.
// The base is the sequence's last value when the first instance opened the key's window for the
// hour, and every instance opens (or finds) the window before it draws a hit in that hour, so every
// hit of the hour is above the base. Hits still in flight across the hour boundary count in the
// new hour (a slight overcount, never an undercount).
// Measured with pgbench on the 2-core bench machine, an upsert of a counter row cost a quarter of
// the database's throughput on indexed reads; nextval() costs 2–4 µs (more the more distinct keys
// the backends touch), takes a transaction id only once per 32 values, and writes no row version.
// All instances draw from one sequence, so the count is exact across them; the base is written
// once per key and hour.
//
// The hottest reads (get lead, CTI lookup) draw their value in their own, batched, statement
// (Counter, hitColumns); other routes queue their hits and one statement serves each round of them.
// A key already known to be over a family's threshold this hour is refused from memory: the count
// only grows within a window, so that knowledge cannot be wrong. Its refusals still draw values,
// in the next round, so they keep exhausting stricter families as the contract says.
import type { Sql } from "../db/client";
import { log, errorFields } from "../log";
import { AppError } from "./errors";

export const LIMITS = { intake: 120, api_v1: 300, kpi: 600, calls: 600 } as const;
export type Family = keyof typeof LIMITS;

/** The columns a counted read draws its hit in. */
export interface Hit {
  hour_: number;
  v_: number;
}

/**
 * A hit to draw in a read's own statement (the hottest reads, batched by src/db/batcher.ts): the
 * statement selects `hitColumns` once per read, and the drawn hit is then admitted or refused.
 */
export interface Counter {
  /** The oid of the key's sequence, for `u.seq` in hitColumns. */
  seq: number;
  /** Throws rate_limited when the drawn hit is over the limit; the read is then discarded. */
  admit(hit: Hit): void;
  /**
   * Draws the hit without a read, for a request refused before it reads (bad input): every
   * authenticated request counts. Throws rate_limited when the hit is over the limit.
   */
  drawAlone(): Promise<void>;
}

/**
 * Draws one hit per row of the input relation `u`, whose column `seq` holds the key's sequence
 * oid: named by oid, the sequence needs no lookup by name.
 */
export const hitColumns = (sql: Sql) => sql`${dbHour(sql)} as hour_, nextval(u.seq::oid::regclass) as v_`;

/** The database's current hour since the epoch: the one clock every instance's windows agree on. */
const dbHour = (sql: Sql) => sql`floor(date_part('epoch', now()) / 3600)::bigint`;

interface Drawn {
  hour: number;
  v: number;
}

interface Waiter {
  resolve(hit: Drawn): void;
  reject(err: unknown): void;
}

const HOUR_MS = 3_600_000;

export class RateLimiter {
  private waiting = new Map<number, Waiter[]>();
  private blind = new Map<number, number>();
  private known = new Map<number, { hour: number; n: number }>();
  private windows = new Map<number, { hour: number; base: number }>();
  /** Each key's sequence oid, learnt when its first window opens; a key's sequence never changes. */
  private seqs = new Map<number, number>();
  private opening = new Map<number, Promise<void>>();
  private inflight: Promise<void> | null = null;
  private blindTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly sql: Sql,
    private readonly now: () => number = Date.now,
  ) {}

  /** True when `keyId` is already known to be over `limit` this hour; the refusal is then counted. */
  overFromMemory(keyId: number, limit: number): boolean {
    const seen = this.known.get(keyId);
    if (!(seen && seen.n >= limit && seen.hour === Math.floor(this.now() / HOUR_MS))) return false;
    this.blind.set(keyId, (this.blind.get(keyId) ?? 0) + 1);
    this.blindTimer ??= setTimeout(() => {
      this.blindTimer = null;
      this.kick();
    }, 200);
    return true;
  }

  /** Counts one request of `keyId`; true when it is within `limit` for the current hour. */
  async allow(keyId: number, limit: number): Promise<boolean> {
    if (this.overFromMemory(keyId, limit)) return false;
    await this.ready(keyId);
    const hit = await new Promise<Drawn>((resolve, reject) => {
      const list = this.waiting.get(keyId);
      if (list) list.push({ resolve, reject });
      else this.waiting.set(keyId, [{ resolve, reject }]);
      this.kick();
    });
    return this.position(keyId, hit) <= limit;
  }

  /**
   * The Counter for one request of `keyId`: at once when this instance has the key's window for
   * the hour open, else once it has opened it (every hit of an hour must be drawn after its base).
   * Throws rate_limited, like allow() answers false, for a key known to be over `limit`.
   */
  counter(keyId: number, limit: number): Counter | Promise<Counter> {
    if (this.overFromMemory(keyId, limit)) throw new AppError("rate_limited");
    const opening = this.ready(keyId);
    return opening ? opening.then(() => this.counterOf(keyId, limit)) : this.counterOf(keyId, limit);
  }

  private counterOf(keyId: number, limit: number): Counter {
    return {
      seq: this.seqs.get(keyId)!,
      admit: (hit) => {
        if (this.position(keyId, { hour: hit.hour_, v: hit.v_ }) > limit) throw new AppError("rate_limited");
      },
      drawAlone: async () => {
        if (!(await this.allow(keyId, limit))) throw new AppError("rate_limited");
      },
    };
  }

  /** Resolves once this instance knows the key's window for the current hour (at once when it does). */
  private ready(keyId: number): Promise<void> | undefined {
    if (this.windows.get(keyId)?.hour === Math.floor(this.now() / HOUR_MS)) return undefined;
    let opening = this.opening.get(keyId);
    if (!opening) {
      opening = this.openWindow(keyId).finally(() => this.opening.delete(keyId));
      this.opening.set(keyId, opening);
    }
    return opening;
  }

  /** The first instance in an hour sets the base; the others read it (the no-op update returns it). */
  private async openWindow(keyId: number): Promise<void> {
    const [row] = await this.sql<{ hour: number; base: number; seq: number }[]>`
      with s as (select format('rate_seq_%s', ${keyId}::bigint)::regclass as seq)
      insert into rate_windows (key_id, hour, base)
      select ${keyId}, ${dbHour(this.sql)}, coalesce(pg_sequence_last_value(s.seq), 0) from s
      on conflict (key_id, hour) do update set base = rate_windows.base
      returning hour, base, (select seq::oid::bigint from s) as seq`;
    this.seqs.set(keyId, row.seq);
    const known = this.windows.get(keyId);
    if (!known || known.hour < row.hour) this.windows.set(keyId, { hour: row.hour, base: row.base });
  }

  /**
   * The hit's position in its hour. A hit drawn in an hour whose window this instance has not
   * opened (the database's clock crossed the hour first) counts as the hour's first.
   */
  private position(keyId: number, hit: Drawn): number {
    const window = this.windows.get(keyId);
    if (window?.hour !== hit.hour) return 1;
    const n = Math.max(1, hit.v - window.base);
    const seen = this.known.get(keyId);
    if (!seen || seen.hour < hit.hour || (seen.hour === hit.hour && seen.n < n)) this.known.set(keyId, { hour: hit.hour, n });
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
    const counts = ids.map((id) => (waiting.get(id)?.length ?? 0) + (blind.get(id) ?? 0));
    try {
      // Every key here has had its window opened (a waiter's by ready(), a blind one's before it
      // was known to be over), so its sequence oid is known.
      const rows = await this.sql<({ key_id: number } & Hit)[]>`
        select u.key_id, ${hitColumns(this.sql)}
        from unnest(${ids}::bigint[], ${ids.map((id) => this.seqs.get(id)!)}::bigint[], ${counts}::int[]) as u(key_id, seq, c),
             generate_series(1, u.c)`;
      const byKey = new Map<number, Drawn[]>();
      for (const r of rows) {
        const list = byKey.get(r.key_id);
        if (list) list.push({ hour: r.hour_, v: r.v_ });
        else byKey.set(r.key_id, [{ hour: r.hour_, v: r.v_ }]);
      }
      for (const [id, list] of waiting) {
        const hits = (byKey.get(id) ?? []).sort((a, b) => a.v - b.v);
        list.forEach((w, i) => w.resolve(hits[i]));
      }
    } catch (err) {
      log.warn("drawing rate-limit hits failed", errorFields(err));
      for (const list of waiting.values()) for (const w of list) w.reject(err);
    }
  }

  /** Drops windows of past hours. */
  async prune(): Promise<void> {
    await this.sql`delete from rate_windows where hour < ${dbHour(this.sql)} - 1`;
    const hour = Math.floor(this.now() / HOUR_MS);
    for (const [id, seen] of this.known) if (seen.hour < hour) this.known.delete(id);
    for (const [id, w] of this.windows) if (w.hour < hour) this.windows.delete(id);
  }
}
