// Automations that work the lead (operations.md §3; issue 31) and the booking API's SMS pumping
// (issue 27 §9), through two served instances over HTTP with a fake Twilio and an SMTP server on
// 127.0.0.1 and one injected clock: new_lead's sources, the organization's daily automation cap
// (exact across instances, one warning a day), missed_call, appointment_booked with its merge
// fields and .ics, appointment_reminder (moved by a reschedule, dropped on cancel, never past the
// start, waiting out quiet hours), and exactly-once runs raced across the two instances.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { appointmentIcs, fold, icsText } from "../src/automations/ics";
import { AUTOMATION_RUN, automationOperationId, runAutomation } from "../src/automations/service";
import { changeAppointmentStatus } from "../src/booking/states";
import { systemActor } from "../src/auth/actor";
import { connect } from "../src/db/client";
import { setLogLevel } from "../src/log";
import { capGate, orgDay, sendBeforeGate, AUTOMATION_DAILY_CAP } from "../src/messages/gates";
import { sendDeferred } from "../src/messages/service";
import { applyProvisioning } from "../src/provision/service";
import { parseProvisioning } from "../src/provision/validate";
import { call, startApp, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeKey, makeLead, seedWorld } from "./harness/factory";
import { startFakeSmtp, type FakeSmtp } from "./harness/fake-smtp";
import { startFakeTwilio, type FakeTwilio } from "./harness/fake-twilio";

let db: TestDatabase;
let twilio: FakeTwilio;
let smtp: FakeSmtp;
let a: TestApp;
let b: TestApp;
let leadsKey: string;
let callsKey: string;
const BASE_URL = "https://book.acme.example";
// Monday 2026-11-23 10:00 in Chicago (CST, UTC-6): outside the org's 21:00-08:00 quiet hours.
const T0 = Date.parse("2026-11-23T16:00:00Z");
const clock = new ManualClock(T0);
/** hh:mm Chicago on Nov 23 + `day`, as epoch seconds. */
const at = (hh: number, mm = 0, day = 0) => Date.UTC(2026, 10, 23 + day, hh + 6, mm) / 1000;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  twilio = await startFakeTwilio();
  smtp = await startFakeSmtp();
  const every = [["08:00", "20:00"]];
  const hours = { mon: every, tue: every, wed: every, thu: every, fri: every, sat: every, sun: every };
  await db.sql`insert into calendars (id, org_id, name, timezone, slot_minutes, capacity, min_notice_minutes, horizon_days, hours)
               values (1, 1, 'Estimates', 'America/Chicago', 30, 100, 0, 14, ${db.sql.json(hours)})`;
  await db.sql`insert into calendar_links (slug, calendar_id) values ('acme-estimate', 1)`;
  leadsKey = (await makeKey(db.sql, { scopes: ["leads:write"], org: 1 })).key;
  callsKey = (await makeKey(db.sql, { scopes: ["calls:write"], org: 1 })).key;
  // The booking API makes its unknown bookers leads in org 1's list 101.
  const env = { BASE_URL, COMMS_INBOUND_LIST_ID: "101" };
  a = await startApp(db.url, env, { clock });
  b = await startApp(db.url, env, { clock });
  setLogLevel("error");
});
afterAll(async () => {
  await a?.stop();
  await b?.stop();
  await twilio?.stop();
  await smtp?.stop();
  await db?.drop();
});

beforeEach(async () => {
  clock.set(T0);
  twilio.reset();
  smtp.reset();
  await db.sql`update automations set active = false`;
  await db.sql`delete from jobs where kind = ${AUTOMATION_RUN}`;
  await db.sql`delete from automation_cap_warnings`;
  await db.sql`
    update orgs set timezone = 'America/Chicago', quiet_start = '21:00', quiet_end = '08:00', consent = 'implied',
      automation_daily_cap = null,
      sms = ${db.sql.json({ base_url: twilio.url, account_sid: "ACacme", auth_token: "acme-token", from: "5125550100" })},
      email = ${db.sql.json({ smtp_url: smtp.url(), from: "Acme <hello@acme.example>" })}
    where id = 1`;
  await db.sql`
    insert into org_billing (org_id, status, subscription, credits, sms_cost, email_cost)
    values (1, 'active', 'active', 100, 0.01, 0.001)
    on conflict (org_id) do update set status = 'active', subscription = 'active', credits = 100`;
});

let nextAutomation = 1;
/** Provisions one automation of org 1 (through the provisioning file's checks) and returns its id. */
async function automation(spec: Record<string, unknown>): Promise<number> {
  const id = nextAutomation++;
  const file = parseProvisioning(JSON.stringify({ automations: [{ id, org_id: 1, channel: "sms", body: "Hi {first_name}", ...spec }] }));
  await applyProvisioning(db.sql, file);
  return id;
}

let phoneSeq = 0;
const newPhone = () => `512556${String(++phoneSeq).padStart(4, "0")}`;
let ipSeq = 0;

async function book(app: TestApp, epoch: number, extra: Record<string, unknown> = {}) {
  const r = await call(app.base, "/book/api.php?action=book", {
    method: "POST",
    headers: { "x-forwarded-for": `198.51.100.${++ipSeq % 250}` },
    json: { slug: "acme-estimate", epoch, name: "Jane Public", phone: newPhone(), email: "jane@example.com", ...extra },
  });
  expect(r.body).toMatchObject({ ok: true });
  const [appt] = await db.sql`select id, lead_id from appointments where id = ${r.body.appt_id}`;
  return { ...r.body, lead_id: appt.lead_id as number };
}

async function reschedule(app: TestApp, token: string, epoch: number) {
  const r = await call(app.base, "/book/api.php?action=reschedule", {
    method: "POST",
    headers: { "x-forwarded-for": `198.51.100.${++ipSeq % 250}` },
    json: { token, epoch },
  });
  expect(r.body).toMatchObject({ ok: true });
}

async function intake(app: TestApp, fields: Record<string, unknown> = {}): Promise<number> {
  const r = await call(app.base, "/hooks/lead_intake.php", { method: "POST", key: leadsKey, json: { phone: newPhone(), list_id: 101, first_name: "Dana", ...fields } });
  expect(r.body).toMatchObject({ ok: true, deduped: false });
  return r.body.lead_id;
}

async function until(pred: () => Promise<boolean>, ms = 10_000) {
  const end = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error("timed out");
    await Bun.sleep(20);
  }
}

/** Every trigger so far turned into runs (the services' trigger workers run every 100 ms). */
const triggersDone = () => until(async () => (await db.sql`select count(*)::int as n from automation_triggers where processed_at is null`)[0].n === 0);
const runsOf = (automationId: number) => db.sql`select * from automation_runs where automation_id = ${automationId} order by id`;
const settled = (automationId: number, n: number) =>
  until(async () => {
    const rs = await runsOf(automationId);
    return rs.length === n && rs.every((r) => r.status !== "pending");
  });
const jobsOf = async (runIds: number[]) => [...(await db.sql`select ref, run_at from jobs where kind = ${AUTOMATION_RUN} and ref = any(${runIds}::bigint[]) order by ref`)];

describe("new_lead sources (issue 27 §9: the booking API cannot make the organization text any number)", () => {
  test("without sources, a lead the booking API created is never texted; an intake's lead is", async () => {
    const auto = await automation({ trigger: "new_lead" });
    const booked = await book(a, at(14));
    const [lead] = await db.sql`select source from leads where id = ${booked.lead_id}`;
    expect(lead.source).toBe("booking");
    const intaken = await intake(b);
    await triggersDone();
    await settled(auto, 1);
    const [r] = await runsOf(auto);
    expect(r.lead_id).toBe(intaken);
    expect(r.status).toBe("sent");
    expect(twilio.requests).toHaveLength(1);
    expect(await db.sql`select 1 from automation_runs where lead_id = ${booked.lead_id}`).toHaveLength(0);
  });

  test("with sources, exactly the listed sources: booking only when listed", async () => {
    const forBooking = await automation({ trigger: "new_lead", sources: ["booking"], body: "booked lead" });
    const forWeb = await automation({ trigger: "new_lead", sources: ["web", "ads"], body: "web lead" });
    const booked = await book(a, at(15));
    const web = await intake(a, { source: "web" });
    const plain = await intake(b);
    await triggersDone();
    await settled(forBooking, 1);
    await settled(forWeb, 1);
    expect((await runsOf(forBooking))[0].lead_id).toBe(booked.lead_id);
    expect((await runsOf(forWeb))[0].lead_id).toBe(web);
    expect(await db.sql`select 1 from automation_runs where lead_id = ${plain}`).toHaveLength(0);
    expect(twilio.requests.map((x) => x.form.Body).sort()).toEqual(["booked lead", "web lead"]);
  });
});

describe("the organization's daily automation cap", () => {
  test("pure: the default, the org's own cap, the org's day in its zone, send-before", () => {
    expect(AUTOMATION_DAILY_CAP).toBe(1000);
    expect(capGate({ automationCap: null }, 999)).toEqual({ ok: true });
    expect(capGate({ automationCap: null }, 1000)).toEqual({ ok: false, reason: "automation_cap" });
    expect(capGate({ automationCap: 0 }, 0)).toEqual({ ok: false, reason: "automation_cap" });
    expect(capGate({ automationCap: 3 }, 2)).toEqual({ ok: true });
    // 23:59 in Chicago on Nov 23 is still Nov 23 there (05:59 UTC on the 24th); a minute later, the 24th.
    expect(orgDay(Date.parse("2026-11-24T05:59:00Z"), "America/Chicago")).toEqual({ start: Date.parse("2026-11-23T06:00:00Z"), day: "2026-11-23" });
    expect(orgDay(Date.parse("2026-11-24T06:00:00Z"), "America/Chicago")).toEqual({ start: Date.parse("2026-11-24T06:00:00Z"), day: "2026-11-24" });
    expect(sendBeforeGate(100, null, null)).toEqual({ ok: true });
    expect(sendBeforeGate(100, null, 101)).toEqual({ ok: true });
    expect(sendBeforeGate(100, null, 100)).toEqual({ ok: false, reason: "expired" });
    expect(sendBeforeGate(100, 150, 150)).toEqual({ ok: false, reason: "expired" });
    expect(sendBeforeGate(100, 149, 150)).toEqual({ ok: true });
  });

  test("provisioned: automation_daily_cap set, kept when absent, cleared by null; junk rejected", async () => {
    const org = { id: 1, name: "Acme", company: "Acme Roofing LLC", timezone: "America/Chicago" };
    await applyProvisioning(db.sql, parseProvisioning(JSON.stringify({ orgs: [{ ...org, automation_daily_cap: 7 }] })));
    const cap = async () => (await db.sql`select automation_daily_cap from orgs where id = 1`)[0].automation_daily_cap;
    expect(await cap()).toBe(7);
    await applyProvisioning(db.sql, parseProvisioning(JSON.stringify({ orgs: [org] })));
    expect(await cap()).toBe(7);
    await applyProvisioning(db.sql, parseProvisioning(JSON.stringify({ orgs: [{ ...org, automation_daily_cap: null }] })));
    expect(await cap()).toBe(null);
    for (const bad of [-1, 1.5, "10", true]) {
      expect(() => parseProvisioning(JSON.stringify({ orgs: [{ ...org, automation_daily_cap: bad }] }))).toThrow("orgs[0].automation_daily_cap");
    }
  });

  test("exact across two instances racing: past the cap, sends are refused automation_cap and one warning is logged that day; the next day sends again", async () => {
    await db.sql`update orgs set automation_daily_cap = 3 where id = 1`;
    // This test's day starts from nothing (earlier tests sent automation messages today).
    await db.sql`delete from automation_daily_sends`;
    const auto = await automation({ trigger: "new_lead", body: "capped {first_name}" });
    const lines: string[] = [];
    const write = process.stdout.write;
    process.stdout.write = ((chunk: string | Uint8Array) => (lines.push(String(chunk)), true)) as typeof process.stdout.write;
    setLogLevel("warn");
    try {
      // Ten fresh leads at once, half through each instance: ten runs race for three sends.
      await Promise.all(Array.from({ length: 10 }, (_, i) => intake(i % 2 ? a : b)));
      await triggersDone();
      await settled(auto, 10);
    } finally {
      setLogLevel("error");
      process.stdout.write = write;
    }
    const rs = await runsOf(auto);
    expect(rs.filter((r) => r.status === "sent")).toHaveLength(3);
    const refused = rs.filter((r) => r.status === "blocked");
    expect(refused).toHaveLength(7);
    for (const r of refused) expect([r.reason, r.result]).toEqual(["automation_cap", { ok: false, message_id: null, reason: "automation_cap" }]);
    expect(twilio.requests).toHaveLength(3);
    const warnings = lines.filter((l) => l.includes("automation daily cap reached"));
    expect(warnings).toHaveLength(1);
    expect(JSON.parse(warnings[0])).toMatchObject({ level: "warn", org_id: 1, cap: 3, day: "2026-11-23" });
    // Still the same day in Chicago at 23:59: refused, no second warning.
    clock.set(Date.parse("2026-11-24T05:59:00Z"));
    await db.sql`update orgs set quiet_start = null, quiet_end = null where id = 1`;
    await intake(a);
    await settled(auto, 11);
    expect((await runsOf(auto))[10]).toMatchObject({ status: "blocked", reason: "automation_cap" });
    expect([...(await db.sql`select day::text from automation_cap_warnings where org_id = 1`)]).toEqual([{ day: "2026-11-23" }]);
    // Midnight in Chicago: a new day, a new count.
    clock.set(Date.parse("2026-11-24T06:00:00Z"));
    await intake(b);
    await settled(auto, 12);
    expect((await runsOf(auto))[11]).toMatchObject({ status: "sent" });
    expect(twilio.requests).toHaveLength(4);
    expect([...(await db.sql`select day::text, sends from automation_daily_sends where org_id = 1 order by day`)]).toEqual([
      { day: "2026-11-23", sends: 3 },
      { day: "2026-11-24", sends: 1 },
    ]);
  });
});

describe("missed_call", () => {
  test("a call reported with secs 0 texts the lead back once; an answered call does not", async () => {
    const auto = await automation({ trigger: "missed_call", body: "Sorry we missed your call, {first_name}!" });
    const phone = newPhone();
    const leadId = await makeLead(db.sql, { phone, first: "Cal" });
    const report = (secs: number) =>
      call(a.base, "/hooks/calls.php", { method: "POST", key: callsKey, json: { lead_id: leadId, status: secs ? "ANSWERED" : "NA", secs, agent: "agent7" } });
    const answered = await report(45);
    const missed = await report(0);
    expect(missed.body).toMatchObject({ ok: true, lead_id: leadId });
    await triggersDone();
    await settled(auto, 1);
    const [r] = await runsOf(auto);
    expect(r).toMatchObject({ subject_kind: "call", status: "sent" });
    expect(Number(r.subject_id)).toBe(missed.body.call_id);
    expect(Number(r.subject_id)).not.toBe(answered.body.call_id);
    expect(twilio.requests.map((x) => [x.form.To, x.form.Body])).toEqual([[expect.stringContaining(phone), "Sorry we missed your call, Cal!"]]);
    const [m] = await db.sql`select operation_id from messages where id = ${r.message_id}`;
    expect(m.operation_id).toBe(automationOperationId(auto, missed.body.call_id, "call"));
    // Another instance running the same run again sends nothing more.
    expect(await runAutomation(db.sql, clock, { baseUrl: BASE_URL }, r.id)).toEqual({ done: true });
    expect(twilio.requests).toHaveLength(1);
  });
});

describe("appointment_booked", () => {
  test("the confirmation's merge fields are the start in the calendar's zone and the reschedule URL; its email carries the .ics", async () => {
    const sms = await automation({ trigger: "appointment_booked", body: "Booked: {appointment_time}. To move it: {reschedule_url}" });
    const email = await automation({ trigger: "appointment_booked", channel: "email", subject: "Your appointment", body: "<p>See you {appointment_time}</p>" });
    const booked = await book(b, at(14, 30, 1));
    await settled(sms, 1);
    await settled(email, 1);
    expect(twilio.requests.map((x) => x.form.Body)).toEqual([`Booked: Tuesday, November 24, 2026 at 2:30 PM CST. To move it: ${booked.reschedule_url}`]);
    expect(booked.reschedule_url).toStartWith(`${BASE_URL}/book/acme-estimate?r=`);
    await smtp.waitFor(1);
    const mail = smtp.mails[0].parsed;
    expect(mail.html).toBe("<p>See you Tuesday, November 24, 2026 at 2:30 PM CST</p>");
    const ics = mail.attachments.find((x) => x.contentType.startsWith("text/calendar"));
    expect(ics?.filename).toBe("appointment.ics");
    const text = ics!.content.toString("utf8").replace(/\r\n /g, "");
    expect(text).toContain(`UID:appointment-${booked.appt_id}@book.acme.example`);
    expect(text).toContain("DTSTART:20261124T203000Z");
    expect(text).toContain("DTEND:20261124T210000Z");
    expect(text).toContain("SUMMARY:Estimates with Acme Roofing LLC");
    expect(text).toContain(`URL:${booked.reschedule_url}`);
    // The reschedule URL (a capability) is not kept in the runs once they are done.
    expect((await runsOf(sms))[0].merge).toBe(null);
    const [m] = await db.sql`select operation_id from messages where id = ${(await runsOf(sms))[0].message_id}`;
    expect(m.operation_id).toBe(`automation/${sms}/appointment/${booked.appt_id}`);
  });

  test("the iCalendar text escapes its values and folds long lines at 75 octets", () => {
    expect(icsText("a,b;c\\d\ne")).toBe("a\\,b\\;c\\\\d\\ne");
    const long = "SUMMARY:" + "é".repeat(60);
    const folded = fold(long);
    for (const line of folded.split("\r\n")) expect(Buffer.byteLength(line)).toBeLessThanOrEqual(75);
    expect(folded.replace(/\r\n /g, "")).toBe(long);
    const ics = appointmentIcs({ id: 9, start: 0, minutes: 30, status: "confirmed", calendar: "Visits, home", business: "", rescheduleUrl: null }, "x.example", 0);
    expect(ics).toContain("SUMMARY:Visits\\, home\r\n");
    expect(ics).toContain("STATUS:CONFIRMED\r\n");
    expect(ics.endsWith("END:VCALENDAR\r\n")).toBe(true);
  });
});

describe("appointment_reminder", () => {
  test("provisioning: offset_minutes 5 to 10080 is required for a reminder and refused elsewhere; sources only for new_lead", () => {
    const bad = (spec: Record<string, unknown>) => () => parseProvisioning(JSON.stringify({ automations: [{ id: 1, org_id: 1, channel: "sms", body: "x", ...spec }] }));
    expect(bad({ trigger: "appointment_reminder" })).toThrow("automations[0].offset_minutes: required for appointment_reminder");
    expect(bad({ trigger: "appointment_reminder", offset_minutes: 4 })).toThrow("automations[0].offset_minutes: must be at least 5");
    expect(bad({ trigger: "appointment_reminder", offset_minutes: 10081 })).toThrow("automations[0].offset_minutes: must be at most 10080");
    expect(bad({ trigger: "new_lead", offset_minutes: 60 })).toThrow("automations[0].offset_minutes: only for appointment_reminder");
    expect(bad({ trigger: "missed_call", sources: ["web"] })).toThrow("automations[0].sources: only for new_lead");
    expect(bad({ trigger: "new_lead", sources: [] })).toThrow("automations[0].sources");
    expect(bad({ trigger: "follow_up" })).toThrow("automations[0].trigger");
    expect(bad({ trigger: "appointment_reminder", offset_minutes: 5 })).not.toThrow();
    expect(bad({ trigger: "appointment_reminder", offset_minutes: 10080 })).not.toThrow();
  });

  test("due offset_minutes before the start; a reschedule moves it in its own transaction; sent once at its minute with the new time", async () => {
    const auto = await automation({ trigger: "appointment_reminder", offset_minutes: 60, body: "Reminder: {appointment_time}" });
    const booked = await book(a, at(14));
    let [r] = await runsOf(auto);
    expect(r).toMatchObject({ status: "pending", subject_kind: "appointment", occurrence: at(14) });
    expect(await jobsOf([r.id])).toEqual([{ ref: r.id, run_at: new Date((at(14) - 3600) * 1000) }]);
    await reschedule(b, booked.token, at(16));
    // The old reminder and its job are gone; the new one is due an hour before the new start.
    expect(await jobsOf([r.id])).toEqual([]);
    const rs = await runsOf(auto);
    expect(rs).toHaveLength(1);
    [r] = rs;
    expect(r.occurrence).toBe(at(16));
    expect(await jobsOf([r.id])).toEqual([{ ref: r.id, run_at: new Date((at(16) - 3600) * 1000) }]);
    // At 13:00 (the old reminder's time) nothing is due; at 15:00 the reminder goes, once.
    clock.set(at(13) * 1000);
    await Bun.sleep(600);
    expect(twilio.requests).toHaveLength(0);
    clock.set(at(15) * 1000);
    await settled(auto, 1);
    expect((await runsOf(auto))[0]).toMatchObject({ status: "sent" });
    expect(twilio.requests.map((x) => x.form.Body)).toEqual(["Reminder: Monday, November 23, 2026 at 4:00 PM CST"]);
    const [m] = await db.sql`select operation_id from messages where id = ${(await runsOf(auto))[0].message_id}`;
    expect(m.operation_id).toBe(`automation/${auto}/appointment/${booked.appt_id}/at/${at(16)}`);
  });

  test("a cancellation drops the reminder and its job in the cancel's transaction; a reminder already past when booked is not made", async () => {
    const auto = await automation({ trigger: "appointment_reminder", offset_minutes: 120, body: "Reminder" });
    const booked = await book(a, at(17));
    const [r] = await runsOf(auto);
    expect(await jobsOf([r.id])).toHaveLength(1);
    await db.sql.begin(async (tx) => {
      const done = await changeAppointmentStatus(tx, systemActor("operator", "test", 1), new Date(clock.now()), booked.appt_id, "cancel");
      expect(done).toMatchObject({ ok: true, to: "cancelled" });
    });
    expect(await runsOf(auto)).toHaveLength(0);
    expect(await jobsOf([r.id])).toEqual([]);
    // 11:00 with a two-hour reminder: its time (09:00) has passed, so none is made.
    await book(a, at(11));
    expect(await runsOf(auto)).toHaveLength(0);
  });

  test("quiet hours: a reminder due in them waits and goes when they end if that is still before the start; else it is refused expired", async () => {
    const auto = await automation({ trigger: "appointment_reminder", offset_minutes: 60, body: "Reminder {appointment_time}" });
    // Tuesday 08:00 (due 07:00, quiet until 08:00 = the start) and 08:30 (due 07:30, quiet until 08:00).
    const early = await book(a, at(8, 0, 1));
    const later = await book(a, at(8, 30, 1));
    clock.set(at(7, 30, 1) * 1000);
    await settled(auto, 2);
    const byAppt = async () => new Map((await runsOf(auto)).map((r) => [Number(r.subject_id), r]));
    const runs = await byAppt();
    expect(runs.get(early.appt_id)).toMatchObject({ status: "blocked", reason: "expired" });
    expect(runs.get(later.appt_id)).toMatchObject({ status: "deferred" });
    expect(runs.get(later.appt_id)!.defer_until.getTime()).toBe(at(8, 0, 1) * 1000);
    expect(twilio.requests).toHaveLength(0);
    clock.set(at(8, 0, 1) * 1000);
    await twilio.waitFor(1);
    expect(twilio.requests.map((x) => x.form.Body)).toEqual(["Reminder Tuesday, November 24, 2026 at 8:30 AM CST"]);
    const queued = (await byAppt()).get(later.appt_id)!.message_id;
    await until(async () => (await db.sql`select status from messages where id = ${queued}`)[0].status === "sent");
    expect(twilio.requests).toHaveLength(1);
  });

  test("a queued reminder whose worker comes only at or after the start is refused expired, never sent", async () => {
    const auto = await automation({ trigger: "appointment_reminder", offset_minutes: 60, body: "Late reminder" });
    const booked = await book(a, at(8, 30, 2));
    // Stop the instances' deferred-send jobs from taking it: the test runs its step by hand.
    clock.set(at(7, 30, 2) * 1000);
    await settled(auto, 1);
    const [r] = await runsOf(auto);
    expect(r.status).toBe("deferred");
    await db.sql`delete from jobs where kind = 'message.deferred' and ref = ${r.message_id}`;
    expect(Number(r.subject_id)).toBe(booked.appt_id);
    expect(await sendDeferred(db.sql, r.message_id, at(8, 30, 2) * 1000, { baseUrl: BASE_URL })).toEqual({ done: true });
    const [m] = await db.sql`select status, error from messages where id = ${r.message_id}`;
    expect(m).toEqual({ status: "failed", error: "expired" });
    expect(twilio.requests).toHaveLength(0);
  });
});

describe("exactly once", () => {
  test("reminders due at one minute, claimed by two instances racing, each go once", async () => {
    const auto = await automation({ trigger: "appointment_reminder", offset_minutes: 30, body: "Soon: {appointment_time}" });
    const n = 30;
    for (let i = 0; i < n; i++) await book(i % 2 ? a : b, at(19, 0, 3));
    expect(await runsOf(auto)).toHaveLength(n);
    clock.set(at(18, 30, 3) * 1000);
    await settled(auto, n);
    const rs = await runsOf(auto);
    expect(rs.every((r) => r.status === "sent")).toBe(true);
    expect(twilio.requests).toHaveLength(n);
    expect(new Set(twilio.requests.map((x) => x.form.To)).size).toBe(n);
  });

  test("one run raced by two connections to the database sends once: the operation_id makes it so", async () => {
    const auto = await automation({ trigger: "appointment_reminder", offset_minutes: 30, body: "Raced" });
    await db.sql`update automations set active = false where id <> ${auto}`;
    await book(a, at(19, 30, 4));
    const [r] = await runsOf(auto);
    await db.sql`delete from jobs where kind = ${AUTOMATION_RUN} and ref = ${r.id}`;
    const other = connect(db.url, { max: 2, statementTimeoutMs: 0 });
    try {
      const now = at(19, 0, 4) * 1000;
      clock.set(now);
      const env = { baseUrl: BASE_URL };
      await Promise.all([runAutomation(db.sql, clock, env, r.id), runAutomation(other, clock, env, r.id), runAutomation(other, clock, env, r.id)]);
    } finally {
      await other.end();
    }
    expect(twilio.requests).toHaveLength(1);
    expect([...(await db.sql`select count(*)::int as n from messages where operation_id like ${`automation/${auto}/%`}`)]).toEqual([{ n: 1 }]);
  });
});
