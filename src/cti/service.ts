import type { Actor } from "../auth/actor";
import type { Sql, Tx } from "../db/client";
import { AppError } from "../errors";
import { countedReads, type CountedReads } from "../limits/fused";
import type { KeyHit } from "../limits/key-counter";
import type { Limits } from "../limits/limits";
import { dialable } from "../leads/phone";
import { localCallTime } from "./calling-window";
import { agentInOrg, claimDial, countedLookups, queueDial, type ClaimedDial, type LookupMatch, type LookupRead } from "./queries";

function dialablePhone(phone: unknown): string {
  const digits = dialable(phone);
  if (digits === null) throw new AppError("bad_phone", "phone must have at least 10 digits");
  return digits;
}

/** Queues a dial for the actor's bound agent (the route requires one). */
export async function dial(sql: Sql, actor: Actor, phone: unknown): Promise<{ ok: true; id: number; lead_id: number | null }> {
  const digits = dialablePhone(phone);
  const row = await queueDial(sql, actor.orgId, actor.agent!, actor.keyId, digits);
  return { ok: true, id: row.id, lead_id: row.lead_id };
}

/**
 * A dial queued by a console user for `agent`, matched like a key's dial to the newest lead in the
 * actor's scope. An agent (actor.agent set) may queue only to themselves; a manager to a user of
 * their organization; an admin (org null) to a user of the lead's organization, `orgOfLead`. Any
 * other agent is not_found, like an id outside the organization. Runs in the caller's transaction
 * (which writes the audit row).
 */
export async function queueDialFor(
  tx: Tx,
  actor: Actor,
  agent: string,
  phone: unknown,
  orgOfLead: number | null,
): Promise<{ id: number; lead_id: number | null }> {
  const digits = dialablePhone(phone);
  if (actor.agent !== null && agent !== actor.agent) throw new AppError("not_found", "an agent queues dials only to themselves");
  const org = actor.orgId ?? orgOfLead;
  if (org === null || !(await agentInOrg(tx, agent, org))) throw new AppError("not_found", "no such agent in the organization");
  return queueDial(tx, actor.orgId, agent, actor.keyId, digits);
}

export type LookupReads = CountedReads<LookupRead, LookupMatch>;

/** Concurrent CTI lookups, merged into one statement per round trip, each drawing its hit. */
export const lookupReads = (sql: Sql, limits: Limits, deadlineMs: number | null = null): LookupReads =>
  countedReads(limits.keys, (reads, seqs) => countedLookups(sql, reads, seqs), deadlineMs);

/** CTI lookup: discloses only `found`, `lead_id` and `name`; its read draws the request's hit. */
export async function lookup(
  reads: LookupReads,
  actor: Actor,
  hit: KeyHit,
  phone: unknown,
): Promise<{ ok: true; found: true; lead_id: number; name: string } | { ok: true; found: false }> {
  const digits = dialable(phone);
  if (digits === null) {
    // Refused before it reads, the request still counts (a limit above, bad_phone otherwise).
    await reads.countAlone(hit);
    throw new AppError("bad_phone", "phone must have at least 10 digits");
  }
  const lead = await reads.load(hit, { orgId: actor.orgId, phone: digits.slice(-10) });
  return lead ? { ok: true, found: true, lead_id: lead.id, name: lead.name } : { ok: true, found: false };
}

/** A dial as cti_queue.php hands it out (QueueResult in model.ts). */
export interface QueuedDial extends Omit<ClaimedDial, "state"> {
  outside_window: boolean;
  local_time: string | null;
}

/** What the dialer is told of a claimed dial at `now`: the do-not-contact mark, and the lead's local time against its calling window. */
export function queuedDial(d: ClaimedDial, now: number): QueuedDial {
  const local = localCallTime(now, { state: d.state, phone: d.phone });
  return { id: d.id, lead_id: d.lead_id, phone: d.phone, name: d.name, epoch: d.epoch, dnc: d.dnc, outside_window: local.outsideWindow, local_time: local.localTime };
}

/**
 * The bound agent's oldest pending dial within the actor's reach, claimed (pending → dialing). Never
 * held back: a dial of a listed number, or one outside its lead's calling window, is handed out in
 * its turn with `dnc` / `outside_window` saying so.
 */
export async function claimNextDial(sql: Sql, actor: Actor, now: number): Promise<{ ok: true; dial: QueuedDial | null }> {
  const dial = await claimDial(sql, { orgId: actor.orgId, agent: actor.agent! });
  return { ok: true, dial: dial === null ? null : queuedDial(dial, now) };
}
