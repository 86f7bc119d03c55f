// Calendars for a manager (their organization's) or an admin (all). The form's plain fields are
// read from the provisioning field table (CALENDAR_FIELDS): every integer or text field besides
// the organization, the hours and the links gets an input, so a field added to the table (a
// booking rule) appears in the console without a change here. Hours are one line per weekday
// ("09:00-12:00, 13:00-17:00"); booking links are shown, added with the provisioning file.
// Writes are provisioning fragments (apply.ts); every calendar is found confined in SQL.
import type { TSchema } from "@sinclair/typebox";
import type { Actor } from "../../auth/actor";
import type { Sql } from "../../db/client";
import type { Deps } from "../../http/deps";
import type { Field } from "../../provision/fields";
import { CALENDAR_FIELDS, DAYS, type ProvisioningFile } from "../../provision/model";
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

const scope = (sql: Sql, actor: Actor) => sql`(${actor.orgId}::bigint is null or c.org_id = ${actor.orgId}::bigint)`;

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
