// The one limiter. A limit is a name, a number of hits per fixed hourly window, and the counting
// strategy its traffic calls for; a bucket is what it counts per: an API key (all key families
// share one counter per key, each compares it with its own threshold), a hashed client address
// (DNI), or a client address (booking writes).
import type { Clock } from "../clock";
import type { Sql } from "../db/client";
import { AppError } from "../errors";
import { every, type Worker } from "../jobs/worker";
import { AddressCounter, type AddressBucket } from "./address-counter";
import { ExactCounter } from "./exact-counter";
import { KeyCounter, type KeyHit } from "./key-counter";

export const LIMITS = {
  // Per API key; one sequence counter per key, exact across instances (api-v1.md Limits).
  intake: { perHour: 120, counter: "key" },
  api_v1: { perHour: 300, counter: "key" },
  kpi: { perHour: 600, counter: "key" },
  calls: { perHour: 600, counter: "key" },
  // Per hashed client address, shared by every DNI action: the hottest path, write-behind.
  dni: { perHour: 3600, counter: "address" },
  // Per client address, shared by book and reschedule: few, so one upsert each, exact.
  booking_write: { perHour: 10, counter: "exact" },
  // Console sign-in failures, per account and client address (the lowercased email, known or not,
  // with the hashed address) and per client address: guessing is slow whichever one an attacker
  // varies, and failures from one address never lock the account out of another (counted per
  // account alone, twenty wrong passwords from anywhere locked the real user out everywhere for
  // the hour). An attempt is counted before its check, so attempts in flight count, and given
  // back when it succeeds (giveBack): a call centre signing in behind one address spends nothing.
  login_pair: { perHour: 20, counter: "exact" },
  login_address: { perHour: 100, counter: "exact" },
  // Wrong two-step codes per user: at sign-in (after a right password) and on the account page.
  two_step_code: { perHour: 10, counter: "exact" },
  // Audit rows of refusals by the limits above: one per refused bucket and hour (the rest are
  // refused from memory, and a flood of them must not become a flood of rows).
  refusal_audit: { perHour: 1, counter: "exact" },
  // A client address that has failed a sign-in this hour (counted after the check, so it holds
  // failures only, never attempts in flight): its sign-ins never wait in the password checks' line.
  login_failed: { perHour: 1, counter: "exact" },
  // Refused conversions-feed credentials, per client address: a feed's secret is not guessed by
  // trying (Google's fetchers, which share addresses across feeds, only count when they fail).
  feed_auth: { perHour: 30, counter: "exact" },
} as const;

export type LimitName = keyof typeof LIMITS;
export type ExactLimit = { [K in LimitName]: (typeof LIMITS)[K]["counter"] extends "exact" ? K : never }[LimitName];
export type KeyLimit = { [K in LimitName]: (typeof LIMITS)[K]["counter"] extends "key" ? K : never }[LimitName];
type BucketOf<N extends LimitName> = (typeof LIMITS)[N]["counter"] extends "key"
  ? number
  : (typeof LIMITS)[N]["counter"] extends "address"
    ? AddressBucket
    : string;

/** The largest hourly threshold among the families that share a key's counter. */
const KEY_CEILING = Math.max(...Object.values(LIMITS).flatMap((l) => (l.counter === "key" ? [l.perHour] : [])));

export interface LimitsOptions {
  /** Address buckets kept in memory (DNI). */
  maxAddressBuckets?: number;
}

export class Limits {
  readonly keys: KeyCounter;
  private readonly addresses: AddressCounter;
  private readonly exact: ExactCounter;

  constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
    options: LimitsOptions = {},
  ) {
    this.keys = new KeyCounter(sql, clock, KEY_CEILING);
    this.addresses = new AddressCounter(sql, clock, options.maxAddressBuckets);
    this.exact = new ExactCounter(sql, clock);
  }

  /** True when `bucket` is already known to be over `name`'s limit this hour (no database). */
  overFromMemory<N extends LimitName>(name: N, bucket: BucketOf<N>): boolean {
    const { perHour, counter } = LIMITS[name];
    if (counter === "key") return this.keys.overFromMemory(bucket as number, perHour);
    if (counter === "address") return this.addresses.overFromMemory(name, bucket as AddressBucket, perHour);
    return this.exact.overFromMemory(name, bucket as string, perHour);
  }

  /**
   * Counts one hit of `bucket`; true when it is within the limit. Synchronous where the decision
   * needs no database (address buckets always; key buckets known to be over).
   */
  take<N extends LimitName>(name: N, bucket: BucketOf<N>): boolean | Promise<boolean> {
    const { perHour, counter } = LIMITS[name];
    if (counter === "key") return this.keys.take(bucket as number, perHour);
    if (counter === "address") return this.addresses.take(name, bucket as AddressBucket, perHour);
    return this.exact.take(name, bucket as string, perHour);
  }

  /** How many hits an exact limit's bucket has this hour, without adding one (at its limit: known from memory, no database). */
  count(name: ExactLimit, bucket: string): Promise<number> {
    return this.exact.count(name, bucket, LIMITS[name].perHour);
  }

  /**
   * Takes back a hit `take` counted (an exact limit that counts failures: the attempt succeeded).
   * A hit taken late in one hour and given back in the next lowers the new hour's count instead.
   */
  giveBack(name: ExactLimit, bucket: string): Promise<void> {
    return this.exact.giveBack(name, bucket);
  }

  /** Like take, but a hit over the limit throws rate_limited. */
  admit<N extends LimitName>(name: N, bucket: BucketOf<N>): void | Promise<void> {
    const ok = this.take(name, bucket);
    if (ok instanceof Promise) return ok.then(refuseUnless);
    refuseUnless(ok);
  }

  /**
   * A key's hit to be drawn inside the statement of the read it admits (fused.ts). Throws
   * rate_limited for a key known to be over, like take answers false.
   */
  keyHit(name: KeyLimit, keyId: number): KeyHit | Promise<KeyHit> {
    const limit = LIMITS[name].perHour;
    if (this.keys.overFromMemory(keyId, limit)) throw new AppError("rate_limited");
    return this.keys.hit(keyId, limit);
  }

  /** Writes the address counts that are due (the worker's second; address-counter.ts says which). */
  flushDue(): Promise<void> {
    return this.addresses.flush(false);
  }

  /** Writes what is counted in memory (shutdown, tests). */
  async flush(): Promise<void> {
    await Promise.all([this.keys.flush(), this.addresses.flush()]);
  }

  /** The limiter's background work: due address counts written every second (all at stop), old windows pruned. */
  workers(): Worker[] {
    return [
      every("limits.flush", 1000, () => this.flushDue(), () => this.flush()),
      every("limits.prune", 600_000, () => this.prune()),
    ];
  }

  async prune(): Promise<void> {
    await this.keys.prune();
    this.exact.forgetPast();
    await this.sql`delete from rate_counters where hour < ${Math.floor(this.clock.now() / 3_600_000) - 1}`;
  }
}

function refuseUnless(ok: boolean): void {
  if (!ok) throw new AppError("rate_limited");
}
