// The console's reads of appointments: a list confined to the viewer's organization in SQL (an
// appointment belongs to its calendar's organization), filtered by calendar, start range and
// status, in keyset pages by start.
import type { Sql } from "../../db/client";
import type { AppointmentStatus } from "../../booking/states";

export interface AppointmentFilter {
  /** The viewer's organization; null: every organization (admins). */
  orgId: number | null;
  calendar: number | null;
  /** Starts from (inclusive) and before (exclusive), Unix seconds. */
  from: number | null;
  to: number | null;
  status: AppointmentStatus | null;
  /** The keyset cursor: the last row of the previous page. */
  after: { epoch: number; id: number } | null;
  limit: number;
}

export interface AppointmentItem {
  id: number;
  calendar_id: number;
  calendar: string;
  slot_epoch: number;
  status: AppointmentStatus;
  name: string;
  phone: string;
  email: string;
  lead_id: number | null;
  /** The zone its times are shown in: its organization's, else its calendar's (house calendars). */
  zone: string;
}

const inOrg = (sql: Sql, orgId: number | null) => (orgId === null ? sql`true` : sql`c.org_id = ${orgId}`);

/** One page in start order (then id); `limit + 1` rows are read to know whether a next page exists. */
export function listAppointments(sql: Sql, f: AppointmentFilter): Promise<AppointmentItem[]> {
  return sql<AppointmentItem[]>`
    select a.id, a.calendar_id, c.name as calendar, a.slot_epoch, a.status, a.name, a.phone, a.email, a.lead_id,
           coalesce(o.timezone, c.timezone) as zone
    from appointments a
    join calendars c on c.id = a.calendar_id
    left join orgs o on o.id = c.org_id
    where ${inOrg(sql, f.orgId)}
      and ${f.calendar === null ? sql`true` : sql`a.calendar_id = ${f.calendar}`}
      and ${f.from === null ? sql`true` : sql`a.slot_epoch >= ${f.from}`}
      and ${f.to === null ? sql`true` : sql`a.slot_epoch < ${f.to}`}
      and ${f.status === null ? sql`true` : sql`a.status = ${f.status}`}
      and ${f.after === null ? sql`true` : sql`(a.slot_epoch, a.id) > (${f.after.epoch}, ${f.after.id})`}
    order by a.slot_epoch, a.id
    limit ${f.limit + 1}`;
}

/** The calendars the viewer may filter by. */
export function calendarsOf(sql: Sql, orgId: number | null): Promise<{ id: number; name: string }[]> {
  return sql<{ id: number; name: string }[]>`
    select c.id, c.name from calendars c where ${inOrg(sql, orgId)} order by c.name, c.id`;
}
