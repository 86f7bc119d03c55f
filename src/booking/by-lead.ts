// A lead's appointments, for the console's lead page.
import type { Sql } from "../db/client";

export interface LeadAppointment {
  id: number;
  calendar: string;
  /** The calendar's zone: an appointment's time is shown where it takes place. */
  timezone: string;
  slot_epoch: number;
  status: string;
}

/** Newest slot first (the lead is already confined to the viewer's organization by the caller). */
export function leadAppointments(sql: Sql, leadId: number, limit = 50): Promise<LeadAppointment[]> {
  return sql<LeadAppointment[]>`
    select a.id, c.name as calendar, c.timezone, a.slot_epoch, a.status
    from appointments a join calendars c on c.id = a.calendar_id
    where a.lead_id = ${leadId}
    order by a.slot_epoch desc, a.id desc
    limit ${limit}`;
}
