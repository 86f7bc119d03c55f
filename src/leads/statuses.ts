// A lead's status (its disposition): one code of its organization's ordered list, stored in
// leads.status (the "current dialer status" of api-v1.md). An organization without a list of its
// own (orgs.lead_statuses null) uses DEFAULT_LEAD_STATUSES. The list is set by provisioning
// (`orgs[].statuses`) and by setLeadStatuses (the console's settings): one validation for both.
import { Type as t, type Static } from "@sinclair/typebox";
import type { Actor } from "../auth/actor";
import { audit } from "../auth/audit";
import type { Sql, Tx } from "../db/client";
import { AppError } from "../errors";
import { shapeProblem } from "../http/input";

/** The status every lead starts with (leads.status's default, sql/0001): in every list. */
export const NEW_STATUS = "NEW";

export const STATUS_CODE = "^[A-Z][A-Z0-9_]{0,31}$";

export const LeadStatus = t.Object(
  {
    code: t.String({ pattern: STATUS_CODE, expected: "status code of A-Z, 0-9 and _, starting with a letter, up to 32 characters" }),
    label: t.String({ minLength: 1, maxLength: 60 }),
  },
  { additionalProperties: false },
);
export type LeadStatus = Static<typeof LeadStatus>;

export const LeadStatusList = t.Array(LeadStatus, { minItems: 1, maxItems: 50 });

/**
 * What call-center CRMs offer out of the box, in the order a lead moves through them: the open
 * stages (Close's and HubSpot's lead statuses: new, contacted, qualified), the appointment that a
 * booking business works towards, the two outcomes, and the two dispositions dialers record most
 * (Vicidial's NI and WN). Do-not-call is no status here: it is a list the send path enforces.
 */
export const DEFAULT_LEAD_STATUSES: readonly LeadStatus[] = [
  { code: NEW_STATUS, label: "New" },
  { code: "CONTACTED", label: "Contacted" },
  { code: "QUALIFIED", label: "Qualified" },
  { code: "APPOINTMENT", label: "Appointment set" },
  { code: "WON", label: "Won" },
  { code: "LOST", label: "Lost" },
  { code: "NOT_INTERESTED", label: "Not interested" },
  { code: "WRONG_NUMBER", label: "Wrong number" },
];

/**
 * Every problem of a list, each a sentence (empty: valid): the shape (codes, labels, 1 to 50
 * entries), then the rules (statusRuleProblems). `path` prefixes each problem (`orgs[0].statuses`).
 */
export function statusListProblems(list: unknown, path = "statuses"): string[] {
  const shape = shapeProblem(LeadStatusList, list, path);
  return shape !== null ? [shape] : statusRuleProblems(list as LeadStatus[], path);
}

/** The rules of a well-shaped list: codes and labels each used once (labels regardless of case), NEW present. */
export function statusRuleProblems(list: readonly LeadStatus[], path = "statuses"): string[] {
  const out: string[] = [];
  const codes = new Set<string>();
  const labels = new Set<string>();
  list.forEach((s, i) => {
    if (codes.has(s.code)) out.push(`${path}[${i}].code: duplicate ${JSON.stringify(s.code)}`);
    const label = s.label.trim().toLowerCase();
    if (labels.has(label)) out.push(`${path}[${i}].label: duplicate ${JSON.stringify(s.label)}`);
    if (s.label.trim() === "") out.push(`${path}[${i}].label: must not be blank`);
    codes.add(s.code);
    labels.add(label);
  });
  if (!codes.has(NEW_STATUS)) out.push(`${path}: must include ${NEW_STATUS}, the status every lead starts with`);
  return out;
}

/** The stored list of an organization, or the default one. */
export const statusesOf = (stored: LeadStatus[] | null): readonly LeadStatus[] => stored ?? DEFAULT_LEAD_STATUSES;

/**
 * An organization's statuses in order (the house's, orgId null, are the default list). A tenant
 * actor reads only its own organization's: another one's is `not_found`, as a missing one is.
 */
export async function leadStatuses(sql: Sql, actor: Actor, orgId: number | null): Promise<readonly LeadStatus[]> {
  if (actor.orgId !== null && orgId !== actor.orgId) throw new AppError("not_found");
  if (orgId === null) return DEFAULT_LEAD_STATUSES;
  const [org] = await sql<{ lead_statuses: LeadStatus[] | null }[]>`select lead_statuses from orgs where id = ${orgId}`;
  if (!org) throw new AppError("not_found");
  return statusesOf(org.lead_statuses);
}

/**
 * Sets an organization's list (`null`: back to the default), audited `lead_statuses.update` with
 * the previous and new lists in the organization's log; nothing is written when nothing changes.
 * Leads keep their status when its code leaves the list (the console shows the code); a code
 * given again later finds them.
 */
export function setLeadStatuses(sql: Sql, actor: Actor, orgId: number, list: LeadStatus[] | null, now: Date): Promise<{ changed: boolean }> {
  return sql.begin((tx) => setLeadStatusesIn(tx, actor, orgId, list, now)) as Promise<{ changed: boolean }>;
}

/** setLeadStatuses inside the caller's transaction (provisioning's). */
export async function setLeadStatusesIn(tx: Tx, actor: Actor, orgId: number, list: LeadStatus[] | null, now: Date): Promise<{ changed: boolean }> {
  if (actor.orgId !== null && orgId !== actor.orgId) throw new AppError("not_found");
  if (list !== null) {
    const problems = statusListProblems(list);
    if (problems.length > 0) throw new AppError("invalid_input", problems.join("; "));
  }
  const [org] = await tx<{ lead_statuses: LeadStatus[] | null }[]>`select lead_statuses from orgs where id = ${orgId} for update`;
  if (!org) throw new AppError("not_found");
  const next = list === null ? null : list.map((s) => ({ code: s.code, label: s.label }));
  if (JSON.stringify(org.lead_statuses) === JSON.stringify(next)) return { changed: false };
  await tx`update orgs set lead_statuses = ${next === null ? null : tx.json(next as never)}, updated_at = ${now} where id = ${orgId}`;
  await audit(tx, actor, "lead_statuses.update", `org:${orgId}`, { from: statusesOf(org.lead_statuses), to: statusesOf(next) }, orgId);
  return { changed: true };
}
