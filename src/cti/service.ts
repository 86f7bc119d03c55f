import type { Sql } from "../db/client";
import type { ApiKey } from "../auth/service";
import { AppError } from "../http/errors";
import { digitsOf } from "../http/text";
import { hotReads, type Batcher } from "../db/batcher";
import type { Counter } from "../http/rate-limit";
import { claimDial, countedLookups, queueDial, type ClaimedDial, type LookupRead, type LookupReply } from "./queries";

function dialable(phone: unknown): string {
  const digits = digitsOf(phone);
  if (digits.length < 10) throw new AppError("bad_phone", "phone must have at least 10 digits");
  // Longer inputs are kept for the dialer (up to an E.164 length plus slack), matched on the last 10.
  return digits.slice(-20);
}

export async function dial(sql: Sql, key: ApiKey, phone: unknown): Promise<{ ok: true; id: number; lead_id: number | null }> {
  const digits = dialable(phone);
  const row = await queueDial(sql, key.orgId, key.agent!, key.id, digits);
  return { ok: true, id: row.id, lead_id: row.lead_id };
}

export type LookupReads = Batcher<LookupRead, LookupReply>;

/** Concurrent CTI lookups, merged into one statement per round trip. */
export const lookupReads = (sql: Sql): LookupReads => hotReads((reads) => countedLookups(sql, reads));

/** CTI lookup: discloses only `found`, `lead_id` and `name`; its read draws the request's hit. */
export async function lookup(
  reads: LookupReads,
  key: ApiKey,
  counter: Counter,
  phone: unknown,
): Promise<{ ok: true; found: true; lead_id: number; name: string } | { ok: true; found: false }> {
  let digits: string;
  try {
    digits = dialable(phone);
  } catch (err) {
    // Refused before it reads, the request still counts (a limit above, bad_phone otherwise).
    await counter.drawAlone();
    throw err;
  }
  const { hit, lead } = await reads.load({ seq: counter.seq, orgId: key.orgId, phone: digits.slice(-10) });
  counter.admit(hit);
  return lead ? { ok: true, found: true, lead_id: lead.id, name: lead.name } : { ok: true, found: false };
}

export async function claimNextDial(sql: Sql, key: ApiKey): Promise<{ ok: true; dial: ClaimedDial | null }> {
  return { ok: true, dial: await claimDial(sql, key.agent!) };
}
