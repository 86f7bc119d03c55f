// An appointment reminder across process deaths, with the built executable (`make build`) as an
// operator runs it: the instance that booked the appointment (and so scheduled the reminder in the
// booking's transaction) is SIGKILLed before the reminder is due; when it comes due, two fresh
// instances race for it and the lead gets it exactly once, as a restart after that sends nothing.
// The executable keeps the real clock, so "the minute has come" is the reminder's job made due.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { call } from "./harness/app";
import { testDatabase, type TestDatabase } from "./harness/db";
import { built, Exe, type Serving } from "./harness/exe";
import { seedWorld } from "./harness/factory";
import { startFakeTwilio, type FakeTwilio } from "./harness/fake-twilio";

let db: TestDatabase;
let twilio: FakeTwilio;
let exe: Exe;

beforeAll(async () => {
  if (!built) return;
  db = await testDatabase();
  await seedWorld(db.sql);
  twilio = await startFakeTwilio();
  exe = new Exe();
  const day = [["00:00", "23:30"]];
  const hours = { mon: day, tue: day, wed: day, thu: day, fri: day, sat: day, sun: day };
  await db.sql`insert into calendars (id, org_id, name, timezone, slot_minutes, capacity, min_notice_minutes, horizon_days, hours)
               values (1, 1, 'Estimates', 'America/Chicago', 30, 10, 0, 14, ${db.sql.json(hours)})`;
  await db.sql`insert into calendar_links (slug, calendar_id) values ('acme-estimate', 1)`;
  await db.sql`
    update orgs set timezone = 'America/Chicago', quiet_start = null, quiet_end = null,
      sms = ${db.sql.json({ base_url: twilio.url, account_sid: "ACacme", auth_token: "acme-token", from: "5125550100" })}
    where id = 1`;
  await db.sql`insert into org_billing (org_id, status, subscription, credits, sms_cost, email_cost) values (1, 'active', 'active', 10, 0.01, 0.001)`;
  await db.sql`insert into automations (id, org_id, trigger, channel, body, offset_minutes) values (1, 1, 'appointment_reminder', 'sms', 'See you {appointment_time}', 30)`;
});
afterAll(async () => {
  exe?.cleanup();
  await twilio?.stop();
  await db?.drop();
});

async function until(pred: () => Promise<boolean>, ms = 20_000) {
  const end = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error("timed out");
    await Bun.sleep(50);
  }
}

test.skipIf(!built)("a reminder scheduled by an instance SIGKILLed before it is due is sent once by the two instances that come after", async () => {
  const env = { DATABASE_URL: db.url, BASE_URL: "https://book.acme.example", COMMS_INBOUND_LIST_ID: "101" };
  const first = await exe.serve(env);
  // A slot at least two hours ahead: its 30-minute reminder is not due yet.
  const slots = await call(first.base, "/book/api.php?action=slots&s=acme-estimate");
  const slot = slots.body.slots.find((s: { epoch: number }) => s.epoch * 1000 > Date.now() + 2 * 3_600_000);
  const booked = await call(first.base, "/book/api.php?action=book", {
    method: "POST",
    json: { slug: "acme-estimate", epoch: slot.epoch, name: "Kim Kill", phone: "5125557700", email: "" },
  });
  expect(booked.body).toMatchObject({ ok: true });
  const [run] = await db.sql`select id, status from automation_runs where subject_kind = 'appointment' and subject_id = ${booked.body.appt_id}`;
  expect(run.status).toBe("pending");
  process.kill(first.pid, "SIGKILL");
  await first.stop();

  // Its minute comes (the job made due), and two instances race for it.
  await db.sql`update jobs set run_at = now() where kind = 'automation.run' and ref = ${run.id}`;
  const racing: Serving[] = await Promise.all([exe.serve(env), exe.serve(env)]);
  try {
    await until(async () => (await db.sql`select status from automation_runs where id = ${run.id}`)[0].status !== "pending");
    await Bun.sleep(500);
  } finally {
    await Promise.all(racing.map((s) => s.stop()));
  }
  const [done] = await db.sql`select status, message_id from automation_runs where id = ${run.id}`;
  expect(done.status).toBe("sent");
  expect(twilio.requests).toHaveLength(1);
  expect(twilio.requests[0].form.Body).toBe(`See you ${slot.label}`);

  // A restart, with the job put back as a crash after the send would leave it: nothing more goes.
  await db.sql`insert into jobs (kind, ref, run_at) values ('automation.run', ${run.id}, now()) on conflict do nothing`;
  await db.sql`update automation_runs set status = 'pending' where id = ${run.id}`;
  const again = await exe.serve(env);
  try {
    await until(async () => (await db.sql`select count(*)::int as n from jobs where kind = 'automation.run' and ref = ${run.id}`)[0].n === 0);
  } finally {
    await again.stop();
  }
  expect(twilio.requests).toHaveLength(1);
  expect((await db.sql`select status from automation_runs where id = ${run.id}`)[0].status).toBe("sent");
  expect((await db.sql`select count(*)::int as n from messages where operation_id like 'automation/1/%'`)[0].n).toBe(1);
}, 180_000);
