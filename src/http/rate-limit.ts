// The per-key, per-hour fixed-window counter shared by every key-authenticated family.
//
// Each hit takes the next value of its key's sequence (`rate_seq_<id>`, created by a trigger with
// the key); its position in the hour is that value minus the hour's base, kept in rate_windows.
// Measured with pgbench on the 2-core bench machine, an upsert of a counter row cost a quarter of
// the database's throughput on indexed reads, and nextval() nothing measurable: it takes no
// transaction id and writes no row version. All instances draw from one sequence, so the count is
// exact across them; the base is written once per key and hour.
//
// The hottest single-row reads (get lead, CTI lookup) take their value in their own statement
// (countedReader); other routes queue their hits and one statement serves each round of them.
// A key already known to be over a family's threshold this hour is refused from memory: the count
// only grows within a window, so that knowledge cannot be wrong. Its refusals still draw values,
// in the next round, so they keep exhausting stricter families as the contract says.
import type { PendingQuery, Row } from "postgres";
import type { Sql } from "../db/client";
import { log, errorFields } from "../log";
import { AppError } from "./errors";

export const LIMITS = { intake: 120, api_v1: 300, kpi: 600, calls: 600 } as const;
export type Family = keyof typeof LIMITS;

/** Runs a query that returns at most one row. */
export type ReadOne = <T extends Row>(query: PendingQuery<T[]>) => Promise<T | null>;

export const readOne: ReadOne = async (query) => (await query)[0] ?? null;

interface Hit {
  hour: number;
  v: number;
}

interface Waiter {
  resolve(hit: Hit): void;
  reject(err: unknown): void;
}

const HOUR_MS = 3_600_000;

export class RateLimiter {
  private waiting = new Map<number, Waiter[]>();
  private blind = new Map<number, number>();
  private known = new Map<number, { hour: number; n: number }>();
  // The hour's base per key: a number once known, the pending write before that.
  private bases = new Map<number, { hour: number; base: number | Promise<number> }>();
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
    const hit = await new Promise<Hit>((resolve, reject) => {
      const list = this.waiting.get(keyId);
      if (list) list.push({ resolve, reject });
      else this.waiting.set(keyId, [{ resolve, reject }]);
      this.kick();
    });
    return (await this.position(keyId, hit)) <= limit;
  }

  /**
   * A ReadOne that counts this request's hit in the read's own statement: one round trip for
   * limit and read. Throws rate_limited when the hit is over `limit`; the read is then discarded.
   */
  countedReader(keyId: number, limit: number): ReadOne {
    return async <T extends Row>(query: PendingQuery<T[]>) => {
      // The read's columns come back beside the hit's: `found_` tells a missing row apart.
      const [hit] = await this.sql<({ hour_: number; v_: number; found_: boolean | null } & T)[]>`
        select floor(extract(epoch from now()) / 3600)::bigint as hour_,
               nextval(format('rate_seq_%s', ${keyId}::bigint)::regclass) as v_, r.*
        from (select) one left join lateral (select true as found_, q.* from (${query}) q) r on true`;
      const { hour_, v_, found_, ...row } = hit;
      const at = this.position(keyId, { hour: hour_, v: v_ });
      if ((typeof at === "number" ? at : await at) > limit) throw new AppError("rate_limited");
      return found_ ? (row as unknown as T) : null;
    };
  }

  /** The hit's position in its hour: its value minus the hour's base, which the first hit sets. */
  private position(keyId: number, hit: Hit): number | Promise<number> {
    const window = this.bases.get(keyId);
    if (window?.hour === hit.hour && typeof window.base === "number") return this.learn(keyId, hit, window.base);
    return this.establish(keyId, hit).then((base) => this.learn(keyId, hit, base));
  }

  private establish(keyId: number, hit: Hit): Promise<number> {
    const window = this.bases.get(keyId);
    if (window?.hour === hit.hour) return Promise.resolve(window.base);
    // Instances racing at the start of an hour keep the smallest base (least()); one that cached a
    // larger base a moment earlier undercounts by at most the racing hits.
    const base = this.sql<{ base: number }[]>`
      insert into rate_windows (key_id, hour, base) values (${keyId}, ${hit.hour}, ${hit.v - 1})
      on conflict (key_id, hour) do update set base = least(rate_windows.base, excluded.base)
      returning base`.then(([row]) => row.base);
    if (!window || window.hour < hit.hour) {
      const entry: { hour: number; base: number | Promise<number> } = { hour: hit.hour, base };
      this.bases.set(keyId, entry);
      base.then(
        (b) => (entry.base = b),
        () => this.bases.get(keyId) === entry && this.bases.delete(keyId),
      );
    }
    return base;
  }

  private learn(keyId: number, hit: Hit, base: number): number {
    const n = hit.v - base;
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
      const rows = await this.sql<{ key_id: number; hour: number; v: number }[]>`
        select h.key_id, floor(extract(epoch from now()) / 3600)::bigint as hour,
               nextval(format('rate_seq_%s', h.key_id)::regclass) as v
        from unnest(${ids}::bigint[], ${counts}::int[]) as h(key_id, c), generate_series(1, h.c)`;
      const byKey = new Map<number, Hit[]>();
      for (const r of rows) {
        const list = byKey.get(r.key_id);
        if (list) list.push({ hour: r.hour, v: r.v });
        else byKey.set(r.key_id, [{ hour: r.hour, v: r.v }]);
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
    await this.sql`delete from rate_windows where hour < floor(extract(epoch from now()) / 3600)::bigint - 1`;
    const hour = Math.floor(this.now() / HOUR_MS);
    for (const [id, seen] of this.known) if (seen.hour < hour) this.known.delete(id);
    for (const [id, w] of this.bases) if (w.hour < hour) this.bases.delete(id);
  }
}
