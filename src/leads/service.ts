import type { Actor } from "../auth/actor";
import type { Sql } from "../db/client";
import { AppError } from "../errors";
import { countedReads, type CountedReads } from "../limits/fused";
import type { KeyHit } from "../limits/key-counter";
import type { Limits } from "../limits/limits";
import type { Lead, LeadInput } from "./model";
import { countedLeads, createOrDedupLead, resolveList, type LeadRead } from "./queries";

export async function intakeLead(
  sql: Sql,
  actor: Actor,
  input: LeadInput | null,
  inboundListId: number | null,
  now: Date,
): Promise<{ ok: true; lead_id: number; deduped: boolean }> {
  if (!input) throw new AppError("bad_phone", "phone must have at least 10 digits");
  const list = await resolveList(sql, actor.orgId, input.listId, inboundListId);
  if (!list) throw new AppError("invalid_list", "no list could be resolved for this key");
  const { lead_id, deduped } = await createOrDedupLead(sql, list, input, now);
  return { ok: true, lead_id, deduped };
}

export type LeadReads = CountedReads<LeadRead, Lead | null>;

/** Concurrent get-lead reads, merged into one statement per round trip, each drawing its hit. */
export const leadReads = (sql: Sql, limits: Limits, deadlineMs: number | null = null): LeadReads =>
  countedReads(limits.keys, (reads, seqs) => countedLeads(sql, reads, seqs), deadlineMs);

/** Get lead: its read draws the request's hit, found or not. */
export async function getLead(reads: LeadReads, actor: Actor, hit: KeyHit, leadId: number): Promise<{ ok: true; lead: Lead }> {
  const lead = await reads.load(hit, { orgId: actor.orgId, leadId });
  if (!lead) throw new AppError("not_found");
  return { ok: true, lead };
}
