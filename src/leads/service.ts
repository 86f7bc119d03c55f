import type { Sql } from "../db/client";
import { AppError } from "../http/errors";
import type { ApiKey } from "../auth/service";
import { readOne, type ReadOne } from "../http/rate-limit";
import { parseLeadInput, type Lead } from "./model";
import { createOrDedupLead, leadById, resolveList } from "./queries";

export async function intakeLead(
  sql: Sql,
  key: ApiKey,
  fields: Record<string, unknown>,
  inboundListId: number | null,
): Promise<{ ok: true; lead_id: number; deduped: boolean }> {
  const input = parseLeadInput(fields);
  if (!input) throw new AppError("bad_phone", "phone must have at least 10 digits");
  const list = await resolveList(sql, key.orgId, input.listId, inboundListId);
  if (!list) throw new AppError("invalid_list", "no list could be resolved for this key");
  const { lead_id, deduped } = await createOrDedupLead(sql, list, input);
  return { ok: true, lead_id, deduped };
}

export async function getLead(sql: Sql, key: ApiKey, leadId: number, read: ReadOne = readOne): Promise<{ ok: true; lead: Lead }> {
  const lead = await read(leadById(sql, key.orgId, leadId));
  if (!lead) throw new AppError("not_found");
  return { ok: true, lead };
}
