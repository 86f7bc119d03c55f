// Attempts at a secret (a password, a two-step code) through the one limiter: counted before the
// check, so attempts in flight count too, and given back when the check succeeds (or never ran),
// so the exact limits of sign-in and two-step codes count failures only (src/limits/limits.ts).
import { createHash } from "node:crypto";
import type { Actor } from "../auth/actor";
import type { ExactLimit, Limits } from "../limits/limits";

export type Attempt =
  | { admitted: true; giveBack(): Promise<void> }
  /** `audit`: the first refusal of the bucket this hour, the one worth an audit row (limit refusal_audit). */
  | { admitted: false; refusedBy: ExactLimit; audit: boolean };

/** Counts one attempt in every bucket of `hits`; refused when any of them is full. */
export async function attempt(limits: Limits, hits: readonly (readonly [ExactLimit, string])[]): Promise<Attempt> {
  const refusal = async (i: number): Promise<Attempt> => {
    const [name, bucket] = hits[i]!;
    return { admitted: false, refusedBy: name, audit: await limits.take("refusal_audit", `${name}:${bucket}`) };
  };
  const known = hits.findIndex(([name, bucket]) => limits.overFromMemory(name, bucket));
  if (known >= 0) return refusal(known);
  const taken = await Promise.all(hits.map(([name, bucket]) => limits.take(name, bucket)));
  const refused = taken.indexOf(false);
  if (refused >= 0) {
    // The buckets that admitted it give it back: it was never checked.
    await Promise.all(hits.filter((_, i) => taken[i]).map(([name, bucket]) => limits.giveBack(name, bucket)));
    return refusal(refused);
  }
  return { admitted: true, giveBack: async () => void (await Promise.all(hits.map(([name, bucket]) => limits.giveBack(name, bucket)))) };
}

/** The bucket of an account tried from an address: a digest, so rate_counters holds no typed email. */
export const accountAtAddress = (email: string, address: string) => createHash("sha256").update(`${address}\n${email}`).digest("hex");

/** Seconds until the hourly windows turn: a 429's Retry-After. */
export const untilNextHour = (now: number) => Math.max(1, Math.ceil((3_600_000 - (now % 3_600_000)) / 1000));

/** Who a failed or throttled sign-in is audited as: nobody known yet, from a hashed address. */
export const anonymous = (orgId: number | null, address: string): Actor => ({ orgId, type: "anonymous", id: "sign-in", agent: null, keyId: null, address });
