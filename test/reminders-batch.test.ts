// The reminder scheduler's batches (src/automations/service.ts runAutomations, the send path's
// sendNow over a batch): due run jobs claimed together, the sends of one organization gated and
// charged under one lock of its billing row. Against PostgreSQL with a fake Twilio on 127.0.0.1 and
// an injected clock: a batch across two organizations, a batch larger than the credit or the
// daily automation cap, two instances racing over the same due reminders, and a process SIGKILLed
// between its batch's claim and its provider calls.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { TEST_DEADLINE_MS } from "./harness/deadline";
import type { Subprocess } from "bun";
import { systemActor } from "../src/auth/actor";
import { AUTOMATION_RUN, runAutomation, runAutomations } from "../src/automations/service";
import { connect, type Sql } from "../src/db/client";
import { JobRunner, type Job, type JobHandler } from "../src/jobs/queue";
import { setLogLevel } from "../src/log";
import { sendMessage, type SendEnv } from "../src/messages/service";
import { startApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";
import { startFakeTwilio, type FakeTwilio } from "./harness/fake-twilio";

let db: TestDatabase;
let twilio: FakeTwilio;
const env: SendEnv = { baseUrl: "https://book.acme.example" };
// Monday 2026-11-23 10:00 in Chicago: no quiet hours are set anyway.
const T0 = Date.parse("2026-11-23T16:00:00Z");
const clock = new ManualClock(T0);
/** Org → its list (seedWorld: org 1 Acme list 101, org 2 Bolt list 201). */
const LIST: Record<number, number> = { 1: 101, 2: 201 };

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  twilio = await startFakeTwilio();
  setLogLevel("error");
  for (const org of [1, 2]) {
    await db.sql`insert into calendars (id, org_id, name, timezone, slot_minutes, capacity, hours)
                 values (${org}, ${org}, 'Visits', 'America/Chicago', 30, 1000, '{}')`;
    await db.sql`insert into automations (id, org_id, trigger, channel, body, offset_minutes)
                 values (${org}, ${org}, 'appointment_reminder', 'sms', 'See you {appointment_time}, {first_name}', 60)`;
  }
});
afterAll(async () => {
  await twilio?.stop();
  await db?.drop();
});

beforeEach(async () => {
  clock.set(T0);
  twilio.reset();
  twilio.setMode({ kind: "ok" });
  await db.sql`delete from jobs`;
  await db.sql`delete from automation_daily_sends`;
  await db.sql`
    update orgs set timezone = 'America/Chicago', quiet_start = null, quiet_end = null, consent = 'implied', automation_daily_cap = null,
      sms = ${db.sql.json({ base_url: twilio.url, account_sid: "ACtest", auth_token: "token", from: "5125550100" })}`;
  await db.sql`
    insert into org_billing (org_id, status, subscription, credits, sms_cost, email_cost)
    values (1, 'active', 'active', 100, 0.01, 0.001), (2, 'active', 'active', 50, 0.02, 0.001)
    on conflict (org_id) do update set status = 'active', subscription = 'active', credits = excluded.credits, sms_cost = excluded.sms_cost`;
});

let seq = 0;
/**
 * `n` reminders of `org`'s automation due at `due` (epoch ms) for appointments an hour later, with
 * their runs and jobs written as booking writes them (src/automations/appointments.ts). Run ids.
 */
async function reminders(org: number, n: number, due = T0): Promise<number[]> {
  const start = Math.floor(due / 1000) + 3600;
  const rows = await db.sql<{ id: number }[]>`
    with l as (
      insert into leads (list_id, phone, first_name, state)
      select ${LIST[org]!}, '5125' || lpad((${seq} + i)::text, 6, '0'), 'Pat' || (${seq} + i), 'TX' from generate_series(1, ${n}) i
      returning id, phone
    ), a as (
      insert into appointments (calendar_id, link_slug, slot_epoch, lead_id, name, phone, token_selector, token_hash)
      select ${org}, 'visits', ${start}, l.id, 'Pat', l.phone, decode(md5('s' || l.id), 'hex'), decode(md5('h' || l.id), 'hex') from l
      returning id, lead_id, slot_epoch
    ), r as (
      insert into automation_runs (automation_id, lead_id, channel, subject, body, due_at, created_at, subject_kind, subject_id, occurrence, merge, send_before)
      select ${org}, a.lead_id, 'sms', null, 'See you {appointment_time}, {first_name}', ${new Date(due)}, ${new Date(due)}, 'appointment', a.id, a.slot_epoch,
             jsonb_build_object('appointment_time', 'at 11:00 AM'), to_timestamp(a.slot_epoch)
      from a
      returning id, due_at
    ), j as (insert into jobs (kind, ref, run_at) select ${AUTOMATION_RUN}, id, due_at from r)
    select id from r order by id`;
  seq += n;
  return rows.map((r) => r.id);
}

/** The scheduler's handler (as src/automations/jobs.ts builds it) over `sql`, with a batch size. */
const handler = (sql: Sql, batchSize: number, concurrency = 1): JobHandler => ({
  kind: AUTOMATION_RUN,
  concurrency,
  batchSize,
  run: (job) => runAutomation(sql, clock, env, job.ref!),
  runBatch: (jobs) => runAutomations(sql, clock, env, jobs),
});

async function until(pred: () => Promise<boolean>, ms = 20_000) {
  const end = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error("timed out");
    await Bun.sleep(20);
  }
}

const runsOf = (ids: number[]) => db.sql`select id, status, reason, message_id from automation_runs where id = any(${ids}::int8[]) order by id`;
const pending = async (ids: number[]) => (await db.sql`select count(*)::int as n from automation_runs where id = any(${ids}::int8[]) and status = 'pending'`)[0].n as number;
const credits = async (org: number) => Number((await db.sql`select credits from org_billing where org_id = ${org}`)[0].credits);
const ledger = (org: number) => db.sql`select message_id, amount::float8 as amount, balance::float8 as balance from credit_ledger where org_id = ${org} order by id`;

/** Runs every due run job with one runner until `ids` are finished. */
async function drain(runner: JobRunner, ids: number[]) {
  runner.start();
  try {
    await until(async () => (await pending(ids)) === 0);
  } finally {
    await runner.stop();
  }
}

/** The ledger steps down one charge at a time, in order, from `from` to what the org has left. */
async function expectLedgerSteps(org: number, from: number, cost: number, n: number) {
  const rows = await ledger(org);
  expect(rows.length).toBe(n);
  rows.forEach((r, k) => {
    expect(r.amount).toBeCloseTo(-cost, 6);
    expect(r.balance).toBeCloseTo(from - cost * (k + 1), 6);
  });
  expect(await credits(org)).toBeCloseTo(from - cost * n, 6);
}

describe("a batch of due reminders", () => {
  test("across two organizations: each org's reminders go once, each org charged exactly its own, its ledger stepping down a send at a time", async () => {
    await db.sql`delete from credit_ledger`;
    const acme = await reminders(1, 6);
    const bolt = await reminders(2, 4);
    // One batch holds them all: both organizations' groups in one claim.
    await drain(new JobRunner(db.sql, clock, [handler(db.sql, 50)], { pollMs: 10 }), [...acme, ...bolt]);
    const runs = await runsOf([...acme, ...bolt]);
    expect(runs.map((r) => [r.status, r.reason])).toEqual(runs.map(() => ["sent", null]));
    expect(twilio.requests).toHaveLength(10);
    expect(new Set(twilio.requests.map((r) => r.form.To)).size).toBe(10);
    expect(twilio.requests[0]!.form.Body).toMatch(/^See you at 11:00 AM, Pat\d+$/);
    await expectLedgerSteps(1, 100, 0.01, 6);
    await expectLedgerSteps(2, 50, 0.02, 4);
    const [{ sent }] = await db.sql`select count(*)::int as sent from messages where status = 'sent' and operation_id like 'automation/%' and id = any(${runs.map((r) => r.message_id)}::int8[])`;
    expect(sent).toBe(10);
    const [{ events }] = await db.sql`select count(*)::int as events from outbox_events where type = 'message.sent' and (payload->'data'->>'message_id')::bigint = any(${runs.map((r) => r.message_id)}::int8[])`;
    expect(events).toBe(10);
    expect((await db.sql`select count(*)::int as n from jobs`)[0].n).toBe(0);
  });

  test("larger than the remaining credit: exactly the covered number goes, the rest refused insufficient_credits as a single send is", async () => {
    await db.sql`delete from credit_ledger`;
    await db.sql`update org_billing set credits = 0.05 where org_id = 1`;
    const ids = await reminders(1, 8);
    await drain(new JobRunner(db.sql, clock, [handler(db.sql, 50)], { pollMs: 10 }), ids);
    const runs = await runsOf(ids);
    expect(runs.map((r) => [r.status, r.reason])).toEqual([...Array(5).fill(["sent", null]), ...Array(3).fill(["blocked", "insufficient_credits"])]);
    expect(twilio.requests).toHaveLength(5);
    await expectLedgerSteps(1, 0.05, 0.01, 5);
    expect(await credits(1)).toBe(0);
    // A single send now is refused with the same reason.
    const [lead] = await db.sql`select id from leads where list_id = 101 order by id desc limit 1`;
    const single = await sendMessage(db.sql, systemActor("automation", "1", 1), { leadId: lead.id, channel: "sms", body: "one more", subject: null, operationId: `single-${seq}` }, clock.now(), env);
    expect(single).toEqual({ ok: false, message_id: null, reason: "insufficient_credits" });
  });

  test("larger than what is left of the daily automation cap: exactly up to the cap goes, the rest refused automation_cap", async () => {
    await db.sql`update orgs set automation_daily_cap = 5 where id = 1`;
    await db.sql`insert into automation_daily_sends (org_id, day, sends) values (1, '2026-11-23', 2)`;
    const ids = await reminders(1, 6);
    await drain(new JobRunner(db.sql, clock, [handler(db.sql, 50)], { pollMs: 10 }), ids);
    const runs = await runsOf(ids);
    expect(runs.map((r) => [r.status, r.reason])).toEqual([...Array(3).fill(["sent", null]), ...Array(3).fill(["blocked", "automation_cap"])]);
    expect(twilio.requests).toHaveLength(3);
    expect((await db.sql`select sends from automation_daily_sends where org_id = 1 and day = '2026-11-23'`)[0].sends).toBe(5);
  });

  test("a reminder whose appointment was cancelled or moved is skipped inside the batch; the others go", async () => {
    const ids = await reminders(1, 4);
    const [r0, r1] = await db.sql`select subject_id from automation_runs where id = any(${ids.slice(0, 2)}::int8[]) order by id`;
    await db.sql`update appointments set status = 'cancelled' where id = ${r0.subject_id}`;
    await db.sql`update appointments set slot_epoch = slot_epoch + 1800 where id = ${r1.subject_id}`;
    await drain(new JobRunner(db.sql, clock, [handler(db.sql, 50)], { pollMs: 10 }), ids);
    expect((await runsOf(ids)).map((r) => [r.status, r.reason])).toEqual([
      ["skipped", "appointment_cancelled"],
      ["skipped", "appointment_moved"],
      ["sent", null],
      ["sent", null],
    ]);
    expect(twilio.requests).toHaveLength(2);
  });
});

describe("exactly once across instances", () => {
  test("two instances' runners racing over the same due reminders, in small batches: each reminder goes once, credits exact", async () => {
    await db.sql`delete from credit_ledger`;
    const ids = [...(await reminders(1, 40)), ...(await reminders(2, 20))];
    const other = connect(db.url, { max: 4, statementTimeoutMs: 0 });
    try {
      const a = new JobRunner(db.sql, clock, [handler(db.sql, 7, 3)], { pollMs: 5 });
      const b = new JobRunner(other, clock, [handler(other, 7, 3)], { pollMs: 5 });
      b.start();
      await drain(a, ids);
      await until(async () => (await pending(ids)) === 0);
      await b.stop();
    } finally {
      await other.end();
    }
    expect((await runsOf(ids)).every((r) => r.status === "sent")).toBe(true);
    expect(twilio.requests).toHaveLength(60);
    expect(new Set(twilio.requests.map((r) => r.form.To)).size).toBe(60);
    await expectLedgerSteps(1, 100, 0.01, 40);
    await expectLedgerSteps(2, 50, 0.02, 20);
  });

  test("one batch run by two instances at once (a lease that ran out): each reminder goes once, the loser replays", async () => {
    const ids = await reminders(1, 12);
    const jobs = await db.sql<Job[]>`select id, kind, ref, grp, payload, attempts from jobs where ref = any(${ids}::int8[]) order by id`;
    const other = connect(db.url, { max: 4, statementTimeoutMs: 0 });
    try {
      await Promise.all([runAutomations(db.sql, clock, env, [...jobs]), runAutomations(other, clock, env, [...jobs]), runAutomations(other, clock, env, [...jobs].reverse())]);
    } finally {
      await other.end();
    }
    expect((await runsOf(ids)).every((r) => r.status === "sent")).toBe(true);
    expect(twilio.requests).toHaveLength(12);
    const [{ n }] = await db.sql`select count(*)::int as n from messages m join automation_runs r on r.message_id = m.id where r.id = any(${ids}::int8[])`;
    expect(n).toBe(12);
  });
});

describe("a process killed between its batch's claim and its provider calls", () => {
  test("never sends those reminders again: after the leases, they end outcome_unknown, charged, each texted once", async () => {
    // The child runs on the real clock: its reminders are due now, their appointments an hour on.
    const now = Date.now();
    const ids = await reminders(1, 5, now - 1000);
    twilio.setMode({ kind: "hang" });
    const child: Subprocess<"ignore", "pipe", "inherit"> = Bun.spawn([process.execPath, "src/main.ts", "serve"], {
      cwd: new URL("..", import.meta.url).pathname,
      env: { ...process.env, DATABASE_URL: db.url, PORT: "0", HOST: "127.0.0.1", BASE_URL: env.baseUrl, LOG_LEVEL: "error", REQUEST_DEADLINE_MS: String(TEST_DEADLINE_MS) },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "inherit",
    });
    try {
      // Its batch claimed, charged and recorded `sending`, its provider calls under way: killed.
      await twilio.waitFor(5, 20_000);
      child.kill("SIGKILL");
      await child.exited;
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
    }
    twilio.setMode({ kind: "ok" });
    const sending = await db.sql`select id, sending_until from messages where status = 'sending' order by id`;
    expect(sending).toHaveLength(5);
    expect((await runsOf(ids)).every((r) => r.status === "pending")).toBe(true);
    // Another instance, once the jobs' lease and the messages' `sending` lease are over.
    const [{ lease }] = await db.sql`select max(run_at) as lease from jobs where ref = any(${ids}::int8[])`;
    clock.set(Math.max(lease.getTime(), ...sending.map((m) => m.sending_until.getTime())) + 1000);
    const app = await startApp(db.url, { BASE_URL: env.baseUrl }, { clock });
    try {
      await until(async () => (await pending(ids)) === 0);
    } finally {
      await app.stop();
    }
    expect((await runsOf(ids)).map((r) => [r.status, r.reason])).toEqual(ids.map(() => ["failed", "outcome_unknown"]));
    expect(twilio.requests).toHaveLength(5);
    expect((await db.sql`select status from messages where id = any(${sending.map((m) => m.id)}::int8[])`).every((m) => m.status === "unknown")).toBe(true);
  }, 60_000);
});
