// The reminder scheduler (issue 31): REMINDERS appointment reminders (default 100,000), all due
// at one minute (or, with SLOTS=k, spread evenly over k consecutive minutes: the reminders of k
// appointment slots, their minutes brought one apart), sent by one instance of the executable
// through the one send path to a `sink:` SMS provider (taken in the process: the figure is the
// scheduler's and the send path's, not a provider's). Lag: from a reminder's due time to its
// message recorded sent, per reminder. The due minute is chosen once the service is up (the jobs
// are written far ahead, then moved to it): a start slowed by a busy machine is not counted as lag.
//
// The runs and their jobs are written in one statement shaped as booking writes them
// (src/automations/appointments.ts): a booking each through the API would measure the booking API.
//
//   node_modules/.bin/bun bench/reminders.ts        (REMINDERS=10000 for a short run)
import { num, Suite } from "./lib";

const suite = new Suite("reminders", "Reminder scheduler", ["reminders"]);
const N = num("REMINDERS", 100_000);
const SLOTS = num("SLOTS", 1);
/** How far ahead of the service's start at least the first reminders are due: time to move the jobs (1 ms each on a busy machine). */
const LEAD_MS = 20_000 + N;

await suite.run(async () => {
  const sql = await suite.database();
  await suite.seedAccount();
  await sql`update orgs set timezone = 'America/Chicago', quiet_start = null, quiet_end = null, automation_daily_cap = ${N * 2},
              sms = ${sql.json({ base_url: "sink:", account_sid: "ACbench", auth_token: "bench", from: "5125550100" })} where id = 1`;
  await sql`insert into org_billing (org_id, status, subscription, credits, sms_cost) values (1, 'active', 'active', 1000000000, 0.0001)`;
  await sql`insert into calendars (id, org_id, name, timezone, slot_minutes, capacity, hours) values (1, 1, 'Visits', 'America/Chicago', 30, ${N}, '{}')`;
  await sql`insert into automations (id, org_id, trigger, channel, body, offset_minutes) values (1, 1, 'appointment_reminder', 'sms', 'See you {appointment_time}', 60)`;
  suite.say(`seeding ${N} leads, appointments, reminder runs and jobs`);
  // Written a day ahead, moved to their minute once the service is up.
  const ahead = new Date(Math.ceil((Date.now() + 86_400_000) / 60_000) * 60_000);
  const start = Math.floor(ahead.getTime() / 1000) + 3600;
  // The appointments are spread over 1,000 one-minute slots from a day ahead (their reminders are
  // all made due at one minute below): the booking's capacity trigger (sql/0004) counts a slot's
  // appointments at each insert, so 100,000 in one slot took quadratic time to write (still
  // writing after 9 minutes). In chunks of 2,000, each its own transaction.
  for (let from = 1; from <= N; from += 2000) {
    const to = Math.min(N, from + 1999);
    await sql`
      with l as (
        insert into leads (list_id, phone, first_name, last_name, state)
        select 101, '555' || lpad(i::text, 7, '0'), 'First' || i, 'Last' || i, 'TX' from generate_series(${from}::int, ${to}::int) i
        returning id, phone
      )
      insert into appointments (calendar_id, link_slug, slot_epoch, lead_id, name, phone, token_selector, token_hash)
      select 1, 'visits', ${start} + (l.id % 1000) * 60, l.id, 'Bench', l.phone, decode(md5(l.id::text), 'hex'), decode(md5('h' || l.id), 'hex')
      from l`;
  }
  await sql`
    with made as (
      insert into automation_runs (automation_id, lead_id, channel, subject, body, due_at, created_at,
                                   subject_kind, subject_id, occurrence, merge, send_before)
      select 1, a.lead_id, 'sms', null, 'See you {appointment_time}', ${ahead}, now(), 'appointment', a.id, a.slot_epoch,
             jsonb_build_object('appointment_time', 'Monday at 10:00 AM CST', 'reschedule_url', 'https://x.example/book/visits?r=t'),
             to_timestamp(a.slot_epoch)
      from appointments a
      returning id, due_at
    )
    insert into jobs (kind, ref, run_at) select 'automation.run', id, due_at from made`;
  await sql`vacuum analyze leads, appointments, automation_runs, jobs, messages`;

  await suite.service();
  const due = new Date(Math.ceil((Date.now() + LEAD_MS) / 60_000) * 60_000);
  // Reminder i is due at minute i mod SLOTS after `due`, its job with it.
  await sql`
    with r as (
      update automation_runs set due_at = ${due}::timestamptz + make_interval(mins => ((id - 1) % ${SLOTS})::int)
      returning id, due_at
    )
    update jobs j set run_at = r.due_at from r where j.kind = 'automation.run' and j.ref = r.id`;
  if (Date.now() >= due.getTime()) throw new Error("moving the jobs took past their minute: run again on a quieter machine");
  suite.say(`due at ${due.toISOString()}${SLOTS > 1 ? ` and the ${SLOTS - 1} minutes after` : ""}; waiting for ${N} sends`);
  const deadline = due.getTime() + 30 * 60_000;
  for (;;) {
    const [{ left }] = await sql<{ left: number }[]>`select count(*)::int as left from automation_runs where status = 'pending'`;
    if (left === 0) break;
    if (Date.now() > deadline) throw new Error(`${left} reminders still pending 30 minutes after their minute`);
    await Bun.sleep(1000);
  }
  const [r] = await sql<{ sent: number; p50: number; p99: number; max: number; span: number }[]>`
    with lag as (
      select extract(epoch from (m.updated_at - r.due_at)) * 1000 as ms, m.updated_at
      from automation_runs r join messages m on m.id = r.message_id
      where r.status = 'sent' and m.status = 'sent'
    )
    select count(*)::int as sent,
           percentile_cont(0.5) within group (order by ms) as p50,
           percentile_cont(0.99) within group (order by ms) as p99,
           max(ms) as max,
           extract(epoch from (max(updated_at) - ${due})) as span
    from lag`;
  const [{ other }] = await sql<{ other: number }[]>`select count(*)::int as other from automation_runs where status <> 'sent'`;
  const rate = r.sent / Math.max(0.001, r.span);
  const pass = r.p99 < 5000;
  suite.extra.reminders = { reminders: N, sent: r.sent, not_sent: other, p50_ms: r.p50, p99_ms: r.p99, max_ms: r.max, per_second: rate };
  suite.notes.push(
    `| reminders | due | sent | not sent | lag p50 | lag p99 | lag max | sends/s | target p99 < 5 s |`,
    `|---:|---|---:|---:|---:|---:|---:|---:|---|`,
    `| ${N} | ${SLOTS === 1 ? "all at one minute" : `${N / SLOTS} at each of ${SLOTS} minutes`} | ${r.sent} | ${other} | ${(r.p50 / 1000).toFixed(1)} s | ${(r.p99 / 1000).toFixed(1)} s | ${(r.max / 1000).toFixed(1)} s | ${rate.toFixed(0)} | ${pass ? "pass" : "**MISS**"} |`,
  );
  suite.say(`sent ${r.sent}/${N}, lag p50 ${(r.p50 / 1000).toFixed(1)} s, p99 ${(r.p99 / 1000).toFixed(1)} s, ${rate.toFixed(0)}/s`);
  return `One instance, the automation job handler's batches (src/automations/jobs.ts), sink SMS provider.`;
});
