// An organization's lead statuses (dispositions) for a manager (their organization's) or an admin
// (any). The list lives in orgs.lead_statuses and is written whole as the provisioning file's
// `orgs[].statuses` (apply.ts → writeLeadStatuses → src/leads/statuses.ts: one validation, the
// `lead_statuses.update` audit row with the previous and new lists). The form's list is compared
// under the run's lock with the one the run read, so a change made meanwhile is never undone.
// A status leads still have is never removed (as Close and HubSpot refuse to delete a status in
// use): the page says how many leads have it; they are moved first (or the status renamed).
import type { Actor } from "../../auth/actor";
import type { Sql } from "../../db/client";
import type { Deps } from "../../http/deps";
import { NEW_STATUS, statusesOf, type LeadStatus } from "../../leads/statuses";
import type { ProvisioningFile } from "../../provision/model";
import type { Planned } from "../../provision/plan";
import { applySettings } from "./apply";

export interface StatusRow extends LeadStatus {
  /** Leads of the organization with this status now. */
  leads: number;
}

export interface OrgStatuses {
  orgId: number;
  name: string;
  /** The stored list (null: the default list is in use). */
  stored: LeadStatus[] | null;
  statuses: StatusRow[];
  /** Codes leads have that are no longer in the list (kept on the leads, shown as codes). */
  strays: { code: string; leads: number }[];
}

/** The organization's statuses with their lead counts; null when missing or not the actor's. */
export async function orgStatuses(sql: Sql, actor: Actor, orgId: number): Promise<OrgStatuses | null> {
  if (actor.orgId !== null && actor.orgId !== orgId) return null;
  const [org] = await sql<{ name: string; lead_statuses: LeadStatus[] | null }[]>`
    select name, lead_statuses from orgs where id = ${orgId} and (${actor.orgId}::bigint is null or id = ${actor.orgId}::bigint)`;
  if (!org) return null;
  const counts = new Map(
    (await sql<{ status: string; n: number }[]>`select status, count(*)::int as n from leads where org_id = ${orgId} group by status`).map((r) => [r.status, r.n]),
  );
  const list = statusesOf(org.lead_statuses);
  const codes = new Set(list.map((s) => s.code));
  return {
    orgId,
    name: org.name,
    stored: org.lead_statuses,
    statuses: list.map((s) => ({ code: s.code, label: s.label, leads: counts.get(s.code) ?? 0 })),
    strays: [...counts].filter(([code]) => !codes.has(code)).map(([code, leads]) => ({ code, leads })).sort((a, b) => a.code.localeCompare(b.code)),
  };
}

export type StatusAnswer = { ok: true; changed: boolean } | { ok: false; problems: string[] };

const CHANGED = "The statuses were changed by someone else meanwhile: look again and retry.";

async function write(deps: Deps, actor: Actor, o: OrgStatuses, next: LeadStatus[]): Promise<StatusAnswer> {
  const from = JSON.stringify(o.stored);
  const expect = (planned: Planned[]) => (planned.every((p) => JSON.stringify(p.stored?.statuses ?? null) === from) ? [] : [CHANGED]);
  const r = await applySettings(deps, actor, { orgs: [{ id: o.orgId, statuses: next }] } as unknown as ProvisioningFile, false, expect);
  if (!r.ok) return { ok: false, problems: r.problems.map((p) => p.replace(/^statuses(\[\d+\])?(\.\w+)?: /, "")) };
  return { ok: true, changed: (r.summary.counts.orgs?.updated ?? 0) > 0 };
}

const plain = (o: OrgStatuses): LeadStatus[] => o.statuses.map((s) => ({ code: s.code, label: s.label }));

/** A new status at the end of the list; the code typed in any case. */
export function addStatus(deps: Deps, actor: Actor, o: OrgStatuses, code: string, label: string): Promise<StatusAnswer> {
  return write(deps, actor, o, [...plain(o), { code: code.trim().toUpperCase(), label: label.trim() }]);
}

/** A status's new label (its code, which leads and the API use, stays). */
export async function renameStatus(deps: Deps, actor: Actor, o: OrgStatuses, code: string, label: string): Promise<StatusAnswer> {
  if (!o.statuses.some((s) => s.code === code)) return { ok: false, problems: [`No status ${code}.`] };
  return write(deps, actor, o, plain(o).map((s) => (s.code === code ? { code, label: label.trim() } : s)));
}

/** Why a status cannot be removed now, or null. */
export function removalRefusal(o: OrgStatuses, code: string): string | null {
  const s = o.statuses.find((x) => x.code === code);
  if (!s) return `No status ${code}.`;
  if (code === NEW_STATUS) return "NEW is the status every lead starts with: rename it instead.";
  if (s.leads > 0) return `${s.leads} ${s.leads === 1 ? "lead has" : "leads have"} this status: move them to another status first, or rename it.`;
  return null;
}

/**
 * Removes an unused status, counted as this request read the list: a lead given it in the instant
 * between keeps it, as leads do whose status leaves the list, and the page lists it among the codes
 * no longer in the list.
 */
export async function removeStatus(deps: Deps, actor: Actor, o: OrgStatuses, code: string): Promise<StatusAnswer> {
  const refusal = removalRefusal(o, code);
  if (refusal) return { ok: false, problems: [refusal] };
  return write(deps, actor, o, plain(o).filter((s) => s.code !== code));
}
