// An operator's change of an appointment's status from the console: booking's rule and writes
// (src/booking/states.ts) with the audit row, in one transaction.
import type { Actor } from "../../auth/actor";
import { changeAppointmentStatus, type StatusAction, type StatusChange } from "../../booking/states";
import type { Clock } from "../../clock";
import type { Sql } from "../../db/client";
import { audit } from "../audit";

/** The audit action of each status action. */
export const AUDIT_ACTION: Record<StatusAction, string> = {
  confirm: "appointment.confirm",
  cancel: "appointment.cancel",
  complete: "appointment.complete",
  no_show: "appointment.no_show",
};

export function changeStatus(sql: Sql, clock: Clock, actor: Actor, id: number, action: StatusAction): Promise<StatusChange> {
  const now = new Date(clock.now());
  return sql.begin(async (tx) => {
    const r = await changeAppointmentStatus(tx, actor, now, id, action);
    // In the appointment's organization's log, also when an admin acts.
    if (r.ok) await audit(tx, actor, AUDIT_ACTION[action], `appointment:${id}`, { from: r.from, to: r.to }, r.org_id);
    return r;
  });
}
