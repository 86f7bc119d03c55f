import type { Actor } from "../auth/actor";
import type { Sql, Tx } from "../db/client";
import { AppError } from "../errors";
import { countedReads, type CountedReads } from "../limits/fused";
import type { KeyHit } from "../limits/key-counter";
import type { Limits } from "../limits/limits";
import type { Lead, LeadInput } from "./model";
import { countedLeads, createOrDedupLead, createOrDedupLeadIn, resolveList, type LeadRead, type ResolvedList } from "./queries";

export interface IntakeOptions {
  /** The path that creates the lead, in its source metadata and as the source of consent (default `lead_intake`). */
  via?: string;
  /** The caller's own rows beside the lead's, in its transaction (the console's audit row). */
  recorded?: (tx: Tx, lead: { lead_id: number; deduped: boolean }, list: ResolvedList) => Promise<void>;
}

/**
 * Lead intake (api-v1.md), for the API and for the console (edit.ts createLead): the phone rule,
 * the list resolved within the actor's organization, then the lead created or its duplicate found.
 */
export async function intakeLead(
  sql: Sql,
  actor: Actor,
  input: LeadInput | null,
  inboundListId: number | null,
  now: Date,
  opts: IntakeOptions = {},
): Promise<{ ok: true; lead_id: number; deduped: boolean }> {
  if (!input) throw new AppError("bad_phone", "phone must have at least 10 digits");
  const list = await resolveList(sql, actor.orgId, input.listId, inboundListId);
  if (!list) throw new AppError("invalid_list", "no list could be resolved for this key");
  const { lead_id, deduped } = opts.recorded
    ? await sql.begin(async (tx) => {
        const lead = await createOrDedupLeadIn(tx, list, input, now, opts.via);
        await opts.recorded!(tx, lead, list);
        return lead;
      })
    : await createOrDedupLead(sql, list, input, now, opts.via);
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
