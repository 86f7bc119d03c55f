import type { Sql } from "../db/client";
import type { ApiKey } from "../auth/service";
import { AppError } from "../http/errors";
import { newestLeadByPhone } from "../leads/scope";
import { parseCallReport } from "./model";
import { findDial, insertCall, leadInScope } from "./queries";

/**
 * A dialer's report joins the lead's conversation as a call entry. The lead is the one named, else
 * the dial's, else the newest lead in scope with the phone; named leads and dials outside the key's
 * organization answer not_found, like everywhere else.
 */
export async function reportCall(
  sql: Sql,
  key: ApiKey,
  fields: Record<string, unknown>,
  now: Date,
): Promise<{ ok: true; call_id: number; lead_id: number | null }> {
  const report = parseCallReport(fields, now);
  let leadId = report.leadId;
  if (leadId !== null && !(await leadInScope(sql, key.orgId, leadId))) throw new AppError("not_found");
  if (report.dialId !== null) {
    const dial = await findDial(sql, key.orgId, report.dialId);
    if (!dial) throw new AppError("not_found", "no such dial");
    leadId ??= dial.lead_id;
  }
  if (leadId === null && report.phone.length >= 10) {
    leadId = (await newestLeadByPhone(sql, key.orgId, report.phone.slice(-10)))?.id ?? null;
  }
  const callId = await insertCall(sql, key.id, leadId, report);
  return { ok: true, call_id: callId, lead_id: leadId };
}
