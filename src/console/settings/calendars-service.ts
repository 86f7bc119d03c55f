// Calendars for a manager (their organization's) or an admin (all). The form's plain fields are
// read from the provisioning field table (CALENDAR_FIELDS): every integer or text field besides
// the organization, the hours and the links gets an input, so a field added to the table (a
// booking rule) appears in the console without a change here. Hours are one line per weekday
// ("09:00-12:00, 13:00-17:00"). Booking links are added one at a time (a provisioning fragment
// with that slug: a slug another organization holds is refused there, src/provision/links.ts) and
// removed here (provisioning never removes one), audited as calendar.update like a file's change.
// Writes are provisioning fragments (apply.ts); every calendar is found confined in SQL.
import type { TSchema } from "@sinclair/typebox";
import type { Actor } from "../../auth/actor";
import type { Sql, Tx } from "../../db/client";
import type { Deps } from "../../http/deps";
import type { Field } from "../../provision/fields";
import { SLUG_TAKEN } from "../../provision/links";
import { CALENDAR_FIELDS, DAYS, type ProvisioningFile } from "../../provision/model";
import { audit } from "../audit";
import { applySettings, createNext, given } from "./apply";

export interface CalendarRow {
  id: number;
  org_id: number | null;
  /** The stored columns by name, and `links` (slugs). */
  values: Record<string, unknown>;
}

/** The fields the form shows as inputs: the table's plain ones. */
export interface PlainField {
  name: string;
  label: string;
  kind: "integer" | "text";
  min?: number;
  max?: number;
  clearable: boolean;
}

const OWN = new Set(["org_id", "hours", "links"]);
const LABELS: Record<string, string> = { name: "Name", timezone: "Time zone", slot_minutes: "Slot length (minutes)", capacity: "Bookings per slot", min_notice_minutes: "Minimum notice (minutes)", horizon_days: "Bookable days ahead" };
const labelOf = (name: string) => LABELS[name] ?? name.charAt(0).toUpperCase() + name.slice(1).replaceAll("_", " ");

/** A field's own schema (a clearable one is `S` or null). */
const inner = (f: Field): TSchema => ((f.schema as { anyOf?: TSchema[] }).anyOf?.[0] ?? f.schema) as TSchema;

export const PLAIN_FIELDS: PlainField[] = Object.entries(CALENDAR_FIELDS as Record<string, Field>).flatMap(([name, f]) => {
  if (OWN.has(name)) return [];
  const s = inner(f) as { type?: string; minimum?: number; maximum?: number };
  if (s.type !== "integer" && s.type !== "string") return [];
  return [{ name, label: labelOf(name), kind: s.type === "integer" ? "integer" : "text", min: s.minimum, max: s.maximum, clearable: f.clearable }];
});

const scope = (sql: Sql | Tx, actor: Actor) => sql`(${actor.orgId}::bigint is null or c.org_id = ${actor.orgId}::bigint)`;

async function rows(sql: Sql, actor: Actor, id: number | null): Promise<CalendarRow[]> {
  const found = await sql<{ id: number; org_id: number | null; row: Record<string, unknown>; links: string[] }[]>`
    select c.id::float8 as id, c.org_id::float8 as org_id, to_jsonb(c) as row,
           array(select l.slug from calendar_links l where l.calendar_id = c.id order by l.slug) as links
    from calendars c where ${scope(sql, actor)} ${id === null ? sql`` : sql`and c.id = ${id}`} order by c.org_id nulls first, c.id`;
  return found.map((r) => ({ id: r.id, org_id: r.org_id, values: { ...r.row, links: r.links } }));
}

export const calendarsOf = (sql: Sql, actor: Actor) => rows(sql, actor, null);
export const scopedCalendar = async (sql: Sql, actor: Actor, id: number) => (await rows(sql, actor, id))[0] ?? null;

export type CalendarForm = Record<string, string | undefined>;

/** "09:00-12:00, 13:00-17:00" → [["09:00","12:00"],["13:00","17:00"]]; a piece not of that form is kept for the check to name. */
function windows(line: string): unknown[] {
  return line
    .split(",")
    .map((w) => w.trim())
    .filter((w) => w !== "")
    .map((w) => {
      const m = /^(\S+)\s*[-–]\s*(\S+)$/.exec(w);
      return m ? [m[1], m[2]] : w;
    });
}

export const hoursText = (hours: Record<string, [string, string][]> | undefined, day: string) => (hours?.[day] ?? []).map(([a, b]) => `${a}-${b}`).join(", ");

/** The fragment's fields of a posted form: empty plain fields keep their value (or clear a clearable one). */
export function calendarFields(f: CalendarForm): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const p of PLAIN_FIELDS) {
    const v = given(f[p.name]);
    if (v === undefined) {
      if (p.clearable && f[p.name] !== undefined) out[p.name] = null;
      continue;
    }
    out[p.name] = p.kind === "integer" && /^-?\d{1,9}$/.test(v) ? Number(v) : v;
  }
  const hours: Record<string, unknown[]> = {};
  for (const day of DAYS) {
    const w = windows(f[`hours.${day}`] ?? "");
    if (w.length > 0) hours[day] = w;
  }
  out.hours = hours;
  // Links are not written here: provisioning moves a slug given from whichever calendar has it,
  // which from a console form could take another organization's link.
  return out;
}

export const addCalendar = (deps: Deps, actor: Actor, orgId: number | null, f: CalendarForm) => createNext(deps, actor, "calendars", { org_id: orgId, ...calendarFields(f) });

export const saveCalendar = (deps: Deps, actor: Actor, c: CalendarRow, f: CalendarForm) =>
  applySettings(deps, actor, { calendars: [{ id: c.id, org_id: c.org_id, ...calendarFields(f) }] } as unknown as ProvisioningFile);

export type LinkAnswer = { ok: true; changed: boolean } | { ok: false; taken: boolean; problems: string[] };

/**
 * Adds a booking link to the calendar through the provisioning service. Typed in any case (a slug
 * is stored lowercased, so two spellings are one link); one this organization's other calendar has
 * moves here, one another organization holds is refused as taken without saying whose it is.
 */
export async function addLink(deps: Deps, actor: Actor, c: CalendarRow, typed: string): Promise<LinkAnswer> {
  const slug = typed.trim().toLowerCase();
  if (slug === "") return { ok: false, taken: false, problems: ["Type the link's name (a-z, 0-9 and -, up to 64 characters)."] };
  const r = await applySettings(deps, actor, { calendars: [{ id: c.id, org_id: c.org_id, links: [{ slug }] }] } as unknown as ProvisioningFile);
  if (r.ok) return { ok: true, changed: (r.summary.counts.calendars?.updated ?? 0) > 0 };
  const taken = r.problems.some((p) => p.endsWith(SLUG_TAKEN));
  return { ok: false, taken, problems: taken ? [`The link /book/${slug} is taken: choose another name.`] : r.problems };
}

/**
 * Removes one booking link of the calendar (the page it opens stops working; appointments made
 * through it keep their slug). Confined in SQL to the viewer's organization; audited in the same
 * transaction as calendar.update with the previous and new lists, as a provisioning change is.
 */
export async function removeLink(deps: Deps, actor: Actor, c: CalendarRow, slug: string): Promise<boolean> {
  return deps.sql.begin(async (tx) => {
    const gone = await tx`
      delete from calendar_links l using calendars c
      where l.slug = ${slug} and l.calendar_id = ${c.id} and c.id = l.calendar_id and ${scope(tx, actor)}
      returning l.slug`;
    if (gone.length === 0) return false;
    // Read in the transaction, after the delete: the lists the audit row names are this moment's.
    const left = (await tx<{ slug: string }[]>`select slug from calendar_links where calendar_id = ${c.id} order by slug`).map((r) => r.slug);
    const after = left.map((s) => ({ slug: s }));
    const before = [...left, slug].sort().map((s) => ({ slug: s }));
    await audit(tx, actor, "calendar.update", `calendar:${c.id}`, { changes: { links: { from: before, to: after } } }, c.org_id);
    return true;
  });
}
