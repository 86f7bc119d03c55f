import type postgres from "postgres";
import { unprepared, type Sql, type Tx } from "../db/client";


export interface NewRun {
  id: number;
  /** Epoch ms. */
  due_at: number;
}

/**
 * Turns up to `limit` unprocessed triggers into runs, one per active automation of the trigger's
 * kind in the lead's organization (house automations for house leads), marking the triggers
 * processed in the same statement. `skip locked`: instances take disjoint triggers. A run's
 * subject is the trigger's (a missed_call's call), else its lead.
 *
 * A new_lead automation applies to the lead sources it lists; one that lists none to every source
 * but `booking`: a lead the anonymous booking API created (src/booking/service.ts) is never texted
 * unasked, or anyone could make the organization text any number (issue 27 §9).
 */
export async function fireTriggers(tx: Tx, now: Date, limit: number): Promise<{ triggers: number; runs: NewRun[] }> {
  const [row] = await unprepared(tx<{ triggers: number; runs: NewRun[] }[]>`
    with t as (
      select id, org_id, trigger, lead_id, coalesce(subject_kind, 'lead') as subject_kind,
             coalesce(subject_id, lead_id) as subject_id
      from automation_triggers
      where processed_at is null
      order by id
      limit ${limit}
      for update skip locked
    ), mark as (
      update automation_triggers a set processed_at = ${now} from t where a.id = t.id
    ), runs as (
      insert into automation_runs (automation_id, lead_id, trigger_id, channel, subject, body, due_at, created_at,
                                   subject_kind, subject_id)
      select a.id, t.lead_id, t.id, a.channel, a.subject, a.body,
             ${now}::timestamptz + make_interval(secs => a.delay_seconds), ${now}, t.subject_kind, t.subject_id
      from t join automations a
        on a.active and a.trigger = t.trigger and a.org_id is not distinct from t.org_id
      join leads l on l.id = t.lead_id
      where a.trigger <> 'new_lead'
         or (case when a.sources is null then l.source <> 'booking' else l.source = any(a.sources) end)
      order by t.id, a.id
      on conflict (automation_id, subject_kind, subject_id, occurrence) do nothing
      returning id, due_at
    )
    select (select count(*)::int from t) as triggers,
           coalesce((select json_agg(json_build_object('id', id, 'due_at', (extract(epoch from due_at) * 1000)::bigint)
                                     order by id) from runs), '[]') as runs`);
  return row;
}

export interface RunRow {
  id: number;
  automation_id: number;
  /** The automation's trigger (new_lead, missed_call, appointment_booked, appointment_reminder). */
  trigger: string;
  lead_id: number;
  /** What the run is about: its lead, a call, an appointment; with `occurrence`, its once-key. */
  subject_kind: "lead" | "call" | "appointment";
  subject_id: number;
  /** A reminder's start (Unix seconds); 0 otherwise. */
  occurrence: number;
  /** Merge values fixed when the run was made ({appointment_time}, {reschedule_url}), or null. */
  merge: Record<string, string> | null;
  send_before: Date | null;
  channel: "sms" | "email" | "note";
  subject: string | null;
  body: string;
  status: string;
  /** The automation's organization: the sender's scope. */
  org_id: number | null;
  active: boolean;
}

export async function loadRun(sql: Sql, id: number): Promise<RunRow | null> {
  const [row] = await sql<RunRow[]>`
    select r.id, r.automation_id, a.trigger, r.lead_id, r.subject_kind, r.subject_id, r.occurrence::float8 as occurrence,
           r.merge, r.send_before, r.channel, r.subject, r.body, r.status, a.org_id, a.active
    from automation_runs r join automations a on a.id = r.automation_id
    where r.id = ${id}`;
  return row ?? null;
}

export interface RunOutcome {
  status: "sent" | "deferred" | "blocked" | "failed" | "skipped";
  reason: string | null;
  messageId: number | null;
  deferUntil: Date | null;
  result: Record<string, unknown> | null;
}

/**
 * Records a pending run's outcome; a run already finished (by another run of its job) is left as
 * it is. Its merge values go with it: a reschedule URL is a capability, kept only until it is sent.
 */
export async function finishRun(sql: Sql, id: number, o: RunOutcome, now: Date): Promise<void> {
  await sql`
    update automation_runs
    set status = ${o.status}, reason = ${o.reason}, message_id = ${o.messageId}, defer_until = ${o.deferUntil},
        result = ${o.result === null ? null : sql.json(o.result as postgres.JSONValue)}, finished_at = ${now}, merge = null
    where id = ${id} and status = 'pending'`;
}

/** What an appointment automation's run reads of its appointment when it runs. */
export interface RunAppointment {
  id: number;
  status: string;
  /** Unix seconds. */
  slot_epoch: number;
  slot_minutes: number;
  calendar: string;
  /** The org's company, else its name ("" for a house calendar). */
  business: string;
}

export async function loadRunAppointment(sql: Sql, id: number): Promise<RunAppointment | null> {
  const [row] = await sql<RunAppointment[]>`
    select a.id, a.status, a.slot_epoch::float8 as slot_epoch, c.slot_minutes, c.name as calendar,
           coalesce(nullif(btrim(o.company), ''), o.name, '') as business
    from appointments a join calendars c on c.id = a.calendar_id left join orgs o on o.id = c.org_id
    where a.id = ${id}`;
  return row ?? null;
}

/** A run as loadRun reads it, with its appointment (an appointment's run) as loadRunAppointment does. */
export type RunWithAppointment = RunRow & { appt: RunAppointment | null };

/** loadRun and loadRunAppointment for many runs in one statement (a batch of the scheduler's jobs). */
export async function loadRuns(sql: Sql, ids: readonly number[]): Promise<RunWithAppointment[]> {
  const rows = await unprepared(sql<(RunRow & { ap_id: number | null; ap_status: string; ap_slot_epoch: number; slot_minutes: number; calendar: string; business: string })[]>`
    select r.id, r.automation_id, a.trigger, r.lead_id, r.subject_kind, r.subject_id, r.occurrence::float8 as occurrence,
           r.merge, r.send_before, r.channel, r.subject, r.body, r.status, a.org_id, a.active,
           ap.id as ap_id, ap.status as ap_status, ap.slot_epoch::float8 as ap_slot_epoch, c.slot_minutes, c.name as calendar,
           coalesce(nullif(btrim(o.company), ''), o.name, '') as business
    from automation_runs r join automations a on a.id = r.automation_id
    left join appointments ap on r.subject_kind = 'appointment' and ap.id = r.subject_id
    left join calendars c on c.id = ap.calendar_id left join orgs o on o.id = c.org_id
    where r.id = any(${ids}::int8[])`);
  return rows.map(({ ap_id, ap_status, ap_slot_epoch, slot_minutes, calendar, business, ...run }) => ({
    ...run,
    appt: ap_id === null ? null : { id: ap_id, status: ap_status, slot_epoch: ap_slot_epoch, slot_minutes, calendar, business },
  }));
}

/**
 * finishRun for many runs, and their jobs deleted, in one statement: a run's record and its job's
 * removal cannot part (the job runner's `removed` outcome). A run already finished is left as it is.
 */
export async function finishRuns(sql: Sql, done: readonly { runId: number; jobId: number; outcome: RunOutcome }[], now: Date): Promise<void> {
  if (done.length === 0) return;
  const o = done.map((d) => d.outcome);
  await unprepared(sql`
    with u as (
      select * from unnest(${done.map((d) => d.runId)}::int8[], ${o.map((x) => x.status)}::text[], ${o.map((x) => x.reason ?? "")}::text[],
                           ${o.map((x) => (x.messageId === null ? "" : String(x.messageId)))}::text[],
                           ${o.map((x) => (x.deferUntil === null ? "" : String(x.deferUntil.getTime())))}::text[],
                           ${o.map((x) => (x.result === null ? "" : JSON.stringify(x.result)))}::text[])
             as u(id, status, reason, message_id, defer_until, result)
    ), fin as (
      update automation_runs r
      set status = u.status, reason = nullif(u.reason, ''), message_id = nullif(u.message_id, '')::bigint,
          defer_until = to_timestamp(nullif(u.defer_until, '')::float8 / 1000), result = nullif(u.result, '')::jsonb,
          finished_at = ${now}, merge = null
      from u where r.id = u.id and r.status = 'pending'
    )
    delete from jobs where id = any(${done.map((d) => d.jobId)}::int8[])`);
}
