// An organization's do-not-contact list (issue 31; sql/0022): phones (their last 10 digits, the
// codebase's phone rule: phone.ts) and emails (lowercased), each with its source, time and note.
// Read by the send path (a listed address is refused `do_not_contact`: src/messages/gates.ts), by
// lead intake (the hopper never takes a listed phone: queries.ts) and by cti_queue.php (a claimed
// dial says `dnc`: src/cti/queries.ts), all through `listed`, so the rule is written once. Changed
// from the console, the CLI (`leadline dnc`) and provisioning, each audited in its transaction.
//
// The list is an organization's: the same number on another organization's list means nothing
// here. A house lead (no organization) is on no list.
import type { PendingQuery, Row } from "postgres";
import type { Actor } from "../auth/actor";
import { audit } from "../auth/audit";
import type { Sql, Tx } from "../db/client";
import { emailField } from "../http/fields";
import { phone10 } from "./phone";
import { inTenant } from "./scope";

type Fragment = PendingQuery<Row[]>;

export type DncKind = "phone" | "email";
export const DNC_KINDS: readonly DncKind[] = ["phone", "email"];
/** The longest note kept with an entry. */
export const DNC_NOTE_MAX = 500;

export interface DncEntry {
  org_id: number;
  kind: DncKind;
  address: string;
  source: string;
  note: string;
  added_at: Date;
}

/** An address as the list keeps it: a phone's last 10 digits (at least 10 given), an email valid and lowercased; null for anything else. */
export function dncAddress(kind: DncKind, v: unknown): string | null {
  if (kind === "phone") return phone10(v);
  const email = emailField(v);
  return email === "" ? null : email;
}

/**
 * Whether organization `org` lists `address` of `kind`: an SQL condition, each side a value or a
 * column of the outer query (`l.org_id`, `l.phone`). One primary-key probe.
 */
export const listed = (sql: Sql | Tx, org: number | Fragment, kind: DncKind, address: string | Fragment) =>
  sql`exists (select 1 from do_not_contact dnc where dnc.org_id = ${org} and dnc.kind = ${kind} and dnc.address = ${address})`;

/** A lead `l`'s address of a kind as the list keys it (an email lowercased, as intake stores it anyway). */
export const leadAddress = (sql: Sql | Tx, kind: DncKind) => (kind === "phone" ? sql`l.phone` : sql`lower(l.email)`);

export interface DncAddition {
  kind: DncKind;
  /** As dncAddress gives it. */
  address: string;
  note: string;
}

/**
 * Adds addresses to the organization's list, inside the caller's transaction: each new one with its
 * source and time, and its audit row (`dnc.add`) naming the source; one already listed keeps its
 * first record and is not audited again. A listed phone leaves the hopper (no lead of the
 * organization on it waits there to be dialled). Answers the entries it added.
 */
export async function addToDnc(tx: Tx, actor: Actor, orgId: number, additions: readonly DncAddition[], source: string, now: Date): Promise<DncEntry[]> {
  if (additions.length === 0) return [];
  const added = await tx<DncEntry[]>`
    insert into do_not_contact (org_id, kind, address, source, note, added_at)
    select ${orgId}, a.kind, a.address, ${source}, a.note, ${now}
    from unnest(${additions.map((a) => a.kind)}::text[], ${additions.map((a) => a.address)}::text[],
                ${additions.map((a) => a.note.slice(0, DNC_NOTE_MAX))}::text[]) as a(kind, address, note)
    on conflict (org_id, kind, address) do nothing
    returning org_id, kind, address, source, note, added_at`;
  const phones = added.filter((e) => e.kind === "phone").map((e) => e.address);
  if (phones.length > 0) {
    await tx`
      delete from hopper h using leads l
      where h.lead_id = l.id and l.org_id = ${orgId} and l.phone = any(${phones}::text[])`;
  }
  for (const e of added) await audit(tx, actor, "dnc.add", `dnc:${e.kind}:${e.address}`, { source, ...(e.note ? { note: e.note } : {}) }, orgId);
  return added;
}

/** Takes an address off the list, audited (`dnc.remove`, with the entry's source); false when it was not listed. */
export async function removeFromDnc(tx: Tx, actor: Actor, orgId: number, kind: DncKind, address: string): Promise<boolean> {
  const [row] = await tx<{ source: string }[]>`
    delete from do_not_contact where org_id = ${orgId} and kind = ${kind} and address = ${address} returning source`;
  if (!row) return false;
  await audit(tx, actor, "dnc.remove", `dnc:${kind}:${address}`, { added_by: row.source }, orgId);
  return true;
}

/** The organization's list, newest first. */
export async function listDnc(sql: Sql, orgId: number): Promise<DncEntry[]> {
  return sql<DncEntry[]>`
    select org_id, kind, address, source, note, added_at from do_not_contact
    where org_id = ${orgId} order by added_at desc, kind, address`;
}

export interface DncStatus {
  /** The lead's phone's entry on its organization's list, or null. */
  phone: DncEntry | null;
  email: DncEntry | null;
}

type StatusRow = { p_source: string | null; p_note: string; p_at: Date | null; e_source: string | null; e_note: string; e_at: Date | null; org_id: number | null; phone: string; email: string };

/**
 * Whether the lead's phone and email are on its organization's list, for the console's lead page;
 * null when the lead is missing or outside the actor's organization (confined in SQL).
 */
export async function dncStatus(sql: Sql, actor: Pick<Actor, "orgId">, leadId: number): Promise<DncStatus | null> {
  const [row] = await sql<StatusRow[]>`
    select l.org_id, l.phone, lower(l.email) as email,
           p.source as p_source, coalesce(p.note, '') as p_note, p.added_at as p_at,
           e.source as e_source, coalesce(e.note, '') as e_note, e.added_at as e_at
    from leads l
    left join do_not_contact p on p.org_id = l.org_id and p.kind = 'phone' and p.address = ${leadAddress(sql, "phone")}
    left join do_not_contact e on e.org_id = l.org_id and e.kind = 'email' and e.address = ${leadAddress(sql, "email")}
    where l.id = ${leadId} and ${inTenant(sql, actor.orgId)}`;
  if (!row) return null;
  const entry = (kind: DncKind, address: string, source: string | null, note: string, at: Date | null): DncEntry | null =>
    source === null || at === null || row.org_id === null ? null : { org_id: row.org_id, kind, address, source, note, added_at: at };
  return { phone: entry("phone", row.phone, row.p_source, row.p_note, row.p_at), email: entry("email", row.email, row.e_source, row.e_note, row.e_at) };
}
