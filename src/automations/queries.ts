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
 * processed in the same statement. `skip locked`: instances take disjoint triggers.
 */
export async function fireTriggers(tx: Tx, now: Date, limit: number): Promise<{ triggers: number; runs: NewRun[] }> {
  const [row] = await unprepared(tx<{ triggers: number; runs: NewRun[] }[]>`
    with t as (
      select id, org_id, trigger, lead_id from automation_triggers
      where processed_at is null
      order by id
      limit ${limit}
      for update skip locked
    ), mark as (
      update automation_triggers a set processed_at = ${now} from t where a.id = t.id
    ), runs as (
      insert into automation_runs (automation_id, lead_id, trigger_id, channel, subject, body, due_at, created_at)
      select a.id, t.lead_id, t.id, a.channel, a.subject, a.body,
             ${now}::timestamptz + make_interval(secs => a.delay_seconds), ${now}
      from t join automations a
        on a.active and a.trigger = t.trigger and a.org_id is not distinct from t.org_id
      where t.lead_id is not null
      order by t.id, a.id
      on conflict (automation_id, lead_id) do nothing
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
  lead_id: number;
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
    select r.id, r.automation_id, r.lead_id, r.channel, r.subject, r.body, r.status, a.org_id, a.active
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

/** Records a pending run's outcome; a run already finished (by another run of its job) is left as it is. */
export async function finishRun(sql: Sql, id: number, o: RunOutcome, now: Date): Promise<void> {
  await sql`
    update automation_runs
    set status = ${o.status}, reason = ${o.reason}, message_id = ${o.messageId}, defer_until = ${o.deferUntil},
        result = ${o.result === null ? null : sql.json(o.result as postgres.JSONValue)}, finished_at = ${now}
    where id = ${id} and status = 'pending'`;
}
