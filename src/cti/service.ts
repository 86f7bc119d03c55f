import type { Sql } from "../db/client";
import type { ApiKey } from "../auth/service";
import { AppError } from "../http/errors";
import { digitsOf } from "../http/text";
import { readOne, type ReadOne } from "../http/rate-limit";
import { newestLeadByPhone } from "../leads/scope";
import { claimDial, queueDial, type ClaimedDial } from "./queries";

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

export async function lookup(
  sql: Sql,
  key: ApiKey,
  phone: unknown,
  read: ReadOne = readOne,
): Promise<{ ok: true; found: true; lead_id: number; name: string } | { ok: true; found: false }> {
  const digits = dialable(phone);
  const lead = await read(newestLeadByPhone(sql, key.orgId, digits.slice(-10)));
  return lead ? { ok: true, found: true, lead_id: lead.id, name: lead.name } : { ok: true, found: false };
}

export async function claimNextDial(sql: Sql, key: ApiKey): Promise<{ ok: true; dial: ClaimedDial | null }> {
  return { ok: true, dial: await claimDial(sql, key.agent!) };
}
