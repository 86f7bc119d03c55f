// The runs of an appointment's automations (operations.md §3), made and changed by booking in the
// transaction that books, moves or cancels the appointment, so that they can never disagree with
// it: `appointment_booked` is due when booked (after its delay), `appointment_reminder`
// `offset_minutes` before the start. Each run has its job in the job queue (src/jobs/queue.ts,
// claimed with skip locked), written in the same statement; a moved appointment's pending
// reminders and their jobs are deleted and made again for the new start, a cancelled one's deleted.
//
// A reminder's occurrence is its start: a run (and the send's operation_id) is once per
// (automation, appointment, start), so moving an appointment back to a start already reminded of
// sends nothing twice. A reminder whose time is already past when the appointment is booked or
// moved (booked 2 hours ahead with a 24-hour reminder) is not made: the booking's confirmation is
// what that person gets.
import type postgres from "postgres";
import type { Tx } from "../db/client";

type Fragment = postgres.PendingQuery<any>;

/** The job kind of an automation run (ref: the run's id). */
export const AUTOMATION_RUN = "automation.run";

export interface AppointmentRuns {
  apptId: number;
  /** The calendar's organization (null: the house). */
  orgId: number | null;
  /** No lead, no runs: a message belongs to a lead. */
  leadId: number | null;
  /** The start, Unix seconds. */
  epoch: number;
  /** {appointment_time} (the start in the calendar's zone) and {reschedule_url}. */
  merge: { appointment_time: string; reschedule_url: string };
  now: Date;
}

/**
 * CTEs `made` and `made_jobs` that make, at booking, the appointment_booked runs and the
 * reminders, each with its job: part of the statement that inserts the appointment (booking's
 * insertAppointment), whose id `apptId` names (`(select id from appt)`), so a booking costs no
 * round trip more while bookings of one slot wait their turn on its lock.
 */
export const bookedRuns = (tx: Tx, a: Omit<AppointmentRuns, "apptId">, apptId: Fragment) => runsCtes(tx, a, apptId, true);

/**
 * At a move, in one statement: the pending reminders of the old start go (with their jobs), new
 * ones are made for the new start, and a confirmation not sent yet says the new time.
 */
export async function rescheduleRuns(tx: Tx, a: AppointmentRuns): Promise<void> {
  await tx`
    with ${dropPendingReminders(tx, a.apptId)}, relabel as (
      update automation_runs set merge = coalesce(merge, '{}'::jsonb) || ${tx.json(a.merge)}
      where subject_kind = 'appointment' and subject_id = ${a.apptId} and status = 'pending'
        and id not in (select id from gone)
    ), ${runsCtes(tx, a, tx`${a.apptId}::bigint`, false)}
    select count(*) from made`;
}

/** At a cancellation: the pending reminders and their jobs go. (A confirmation not sent yet skips itself when it runs.) */
export async function cancelRuns(tx: Tx, apptId: number): Promise<void> {
  await tx`with ${dropPendingReminders(tx, apptId)} select count(*) from gone`;
}

/** CTEs `gone` (the appointment's pending reminder runs, deleted; their ids) and `gone_jobs` (their jobs, deleted). */
const dropPendingReminders = (tx: Tx, apptId: number) => tx`
  gone as (
    delete from automation_runs r using automations a
    where r.subject_kind = 'appointment' and r.subject_id = ${apptId} and r.status = 'pending'
      and a.id = r.automation_id and a.trigger = 'appointment_reminder'
    returning r.id
  ), gone_jobs as (
    delete from jobs where kind = ${AUTOMATION_RUN} and ref in (select id from gone)
  )`;

/**
 * CTEs `made` (the runs: one per active automation of the calendar's organization, the
 * confirmation only at booking, a reminder only while its time is ahead) and `made_jobs`.
 */
function runsCtes(tx: Tx, a: Omit<AppointmentRuns, "apptId">, apptId: Fragment, booked: boolean) {
  const start = new Date(a.epoch * 1000);
  return tx`
    made as (
      insert into automation_runs (automation_id, lead_id, channel, subject, body, due_at, created_at,
                                   subject_kind, subject_id, occurrence, merge, send_before)
      select x.id, ${a.leadId}::bigint, x.channel, x.subject, x.body, x.due_at, ${a.now}, 'appointment', ${apptId},
             x.occurrence, ${tx.json(a.merge)}, x.send_before
      from (
        select au.id, au.channel, au.subject, au.body, au.trigger,
               case when au.trigger = 'appointment_booked' then ${a.now}::timestamptz + make_interval(secs => au.delay_seconds)
                    else ${start}::timestamptz - make_interval(mins => au.offset_minutes) end as due_at,
               case when au.trigger = 'appointment_reminder' then ${a.epoch}::bigint else 0 end as occurrence,
               case when au.trigger = 'appointment_reminder' then ${start}::timestamptz end as send_before
        from automations au
        where au.active and au.org_id is not distinct from ${a.orgId}::bigint
          and (au.trigger = 'appointment_reminder' and au.offset_minutes is not null
               or au.trigger = 'appointment_booked' and ${booked}::boolean)
      ) x
      where ${a.leadId}::bigint is not null and (x.trigger = 'appointment_booked' or x.due_at > ${a.now})
      order by x.id
      on conflict (automation_id, subject_kind, subject_id, occurrence) do nothing
      returning id, due_at
    ), made_jobs as (
      insert into jobs (kind, ref, run_at)
      select ${AUTOMATION_RUN}, id, due_at from made
      on conflict (kind, ref) where ref is not null do nothing
    )`;
}
