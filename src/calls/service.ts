import type { Actor } from "../auth/actor";
import type { Sql } from "../db/client";
import { AppError } from "../errors";
import { newestLeadByPhone } from "../leads/match";
import { leadInScope } from "../leads/scope";
import type { CallReport } from "./model";
import { findDial, insertCall } from "./queries";

/**
 * A dialer's report joins the lead's conversation as a call entry. The lead is the one named, else
 * the dial's, else the newest lead in scope with the phone; named leads and dials out of the
 * actor's reach answer not_found, like everywhere else.
 */
export async function reportCall(
  sql: Sql,
  actor: Actor,
  report: CallReport,
  now: Date,
): Promise<{ ok: true; call_id: number; lead_id: number | null }> {
  let leadId = report.leadId;
  if (leadId !== null && !(await leadInScope(sql, actor.orgId, leadId))) throw new AppError("not_found");
  if (report.dialId !== null) {
    const dial = await findDial(sql, actor, report.dialId);
    if (!dial) throw new AppError("not_found", "no such dial");
    leadId ??= dial.lead_id;
  }
  if (leadId === null && report.phone.length >= 10) {
    leadId = (await newestLeadByPhone(sql, actor.orgId, report.phone.slice(-10)))?.id ?? null;
  }
  // A call to a DNI pool number belongs to the visitor who held that number at the call's time.
  const callId = await insertCall(sql, actor, leadId, report, now);
  return { ok: true, call_id: callId, lead_id: leadId };
}
