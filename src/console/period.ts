// What the Calls, Number insertion, KPI and Billing pages share: the organization a viewer looks
// at (an admin may pick one; everyone else sees their own), its time zone, and a date range typed
// as days in that zone.
import type { Sql } from "../db/client";
import { instantOf, wallOf } from "../zone";
import { html, type Html } from "./html";
import type { Viewer } from "./route";

const DAY_MS = 86_400_000;
const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** A query value that is a real calendar day, else null. */
export function dayParam(v: string | undefined): string | null {
  if (!v || !DAY.test(v)) return null;
  const t = Date.parse(`${v}T00:00:00Z`);
  return Number.isNaN(t) || new Date(t).toISOString().slice(0, 10) !== v ? null : v;
}

/** A query value that is a positive integer id, else null. */
export function idParam(v: string | undefined): number | null {
  if (!v || !/^\d{1,15}$/.test(v)) return null;
  const n = Number(v);
  return n > 0 ? n : null;
}

/** A free-text filter value, trimmed; empty is no filter. */
export const textParam = (v: string | undefined, max = 200): string | null => {
  const s = (v ?? "").trim().slice(0, max);
  return s === "" ? null : s;
};

/** The organization the page shows: the viewer's own, or for an admin the one picked (null: every organization). */
export const orgOf = (viewer: Viewer, query: Record<string, string | undefined>): number | null =>
  viewer.actor.orgId ?? idParam(query.org);

/** The organization's time zone; UTC for every organization at once or an unknown one. */
export async function zoneOf(sql: Sql, orgId: number | null): Promise<string> {
  if (orgId === null) return "UTC";
  const [row] = await sql<{ timezone: string }[]>`select timezone from orgs where id = ${orgId}`;
  return row?.timezone ?? "UTC";
}

/** The day (YYYY-MM-DD) in the zone at `now`, and `days` before it. */
export function today(now: number, zone: string, back = 0): string {
  return new Date(wallOf(now, zone) - back * DAY_MS).toISOString().slice(0, 10);
}

/** [from, to] days in the zone as instants [start of from, start of the day after to). */
export function instantsOf(from: string | null, to: string | null, zone: string): { from: Date | null; to: Date | null } {
  const at = (day: string, plus: number) => new Date(instantOf(Date.parse(`${day}T00:00:00Z`) + plus, zone));
  return { from: from === null ? null : at(from, 0), to: to === null ? null : at(to, DAY_MS) };
}

export interface OrgChoice {
  id: number;
  name: string;
}

/** An admin's organization picker; nothing for a viewer confined to one. */
export async function orgChoices(sql: Sql, viewer: Viewer): Promise<OrgChoice[]> {
  if (viewer.actor.orgId !== null) return [];
  return sql<OrgChoice[]>`select id, name from orgs order by name, id`;
}

export function orgSelect(choices: OrgChoice[], selected: number | null): Html | null {
  if (choices.length === 0) return null;
  return html`<div><label for="f-org">Organization</label>
    <select id="f-org" name="org"><option value="">Every organization</option>${choices.map(
      (o) => html`<option value="${o.id}"${o.id === selected ? html` selected` : null}>${o.name}</option>`,
    )}</select></div>`;
}

/** The query string of a page's filters, without empty values, for pager and export links. */
export function queryOf(params: Record<string, string | number | null | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s === "" ? "" : `?${s}`;
}
