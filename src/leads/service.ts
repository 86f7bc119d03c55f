import type { Sql } from "../db/client";
import { AppError } from "../http/errors";
import type { ApiKey } from "../auth/service";
import { hotReads, type Batcher } from "../db/batcher";
import type { Counter } from "../http/rate-limit";
import { parseLeadInput, type Lead } from "./model";
import { countedLeads, createOrDedupLead, resolveList, type LeadRead, type LeadReply } from "./queries";

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

export type LeadReads = Batcher<LeadRead, LeadReply>;

/** Concurrent get-lead reads, merged into one statement per round trip. */
export const leadReads = (sql: Sql): LeadReads => hotReads((reads) => countedLeads(sql, reads));

/** Get lead: its read draws the request's hit (`counter`), found or not. */
export async function getLead(reads: LeadReads, key: ApiKey, counter: Counter, leadId: number): Promise<{ ok: true; lead: Lead }> {
  const { hit, lead } = await reads.load({ seq: counter.seq, orgId: key.orgId, leadId });
  counter.admit(hit);
  if (!lead) throw new AppError("not_found");
  return { ok: true, lead };
}
