// Acting on the lead from the console (issue 29): callbacks scheduled from the lead page (in the
// organization's zone, refusals back on the form), cancelled there and marked done from My work;
// an appointment booked on the lead's behalf through the booking engine, its reschedule link sent
// through the one send path; every form confined to the viewer's organization.
import { afterAll, beforeAll, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { endOfDay } from "../src/console/my-work";
import { callbackDue } from "../src/workspace/callbacks";
import { call, startApp, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { makeUser, signIn, type ConsoleClient } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";
import { startFakeTwilio, type FakeTwilio } from "./harness/fake-twilio";

setDefaultTimeout(30_000);

const PUBLIC = "https://leadline.example";
/** Monday 2 March 2026, 9:00 in Chicago (CST, UTC-6). */
const MONDAY_9 = Date.UTC(2026, 2, 2, 15);
const clock = new ManualClock(MONDAY_9);

let db: TestDatabase;
let app: TestApp;
let twilio: FakeTwilio;
let agent: ConsoleClient;
let manager: ConsoleClient;
let admin: ConsoleClient;
let bolt: ConsoleClient;
let agentId: string;
let managerId: string;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  twilio = await startFakeTwilio();
  await db.sql`
    update orgs set timezone = 'America/Chicago', quiet_start = '21:00', quiet_end = '08:00',
      sms = ${db.sql.json({ base_url: twilio.url, account_sid: "ACacme", auth_token: "acme-token", from: "5125550100" })}
    where id = 1`;
  await db.sql`update orgs set timezone = 'America/Chicago' where id = 2`;
  await db.sql`insert into org_billing (org_id, status, subscription, credits, sms_cost, email_cost) values (1, 'active', 'active', 10, 0.01, 0.001)`;
  const weekdays = { mon: [["09:00", "17:00"]], tue: [["09:00", "17:00"]], wed: [["09:00", "17:00"]], thu: [["09:00", "17:00"]], fri: [["09:00", "17:00"]] };
  await db.sql`insert into calendars (id, org_id, name, timezone, slot_minutes, capacity, min_notice_minutes, horizon_days, hours)
    values (50, 1, 'Roof estimates', 'America/Chicago', 60, 1, 120, 7, ${db.sql.json(weekdays)}),
           (51, 2, 'Bolt visits', 'America/Chicago', 60, 1, 0, 7, ${db.sql.json(weekdays)}),
           (52, 1, 'No link', 'America/Chicago', 60, 1, 0, 7, ${db.sql.json(weekdays)}),
           (53, 1, 'Crew visits', 'America/Chicago', 60, 3, 0, 7, ${db.sql.json(weekdays)})`;
  await db.sql`insert into calendar_links (slug, calendar_id) values ('acme-roof', 50), ('bolt-visit', 51), ('acme-crew', 53)`;
  app = await startApp(db.url, { BASE_URL: PUBLIC }, { clock });
  const a = await makeUser(db.sql, { role: "agent", orgId: 1, id: "agent7" });
  const m = await makeUser(db.sql, { role: "manager", orgId: 1, name: "Mia Manager" });
  const ad = await makeUser(db.sql, { role: "admin", orgId: null });
  const b = await makeUser(db.sql, { role: "agent", orgId: 2, id: "agent9" });
  agentId = a.id;
  managerId = m.id;
  [agent, manager, admin, bolt] = await Promise.all([a, m, ad, b].map((u) => signIn(app.base, u.email, u.password)));
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await twilio?.stop();
  await db?.drop();
});
beforeEach(() => {
  twilio.reset();
  clock.set(MONDAY_9);
});

let seq = 0;
async function lead(o: { list?: number; first?: string; email?: string } = {}): Promise<number> {
  const phone = `512559${String(++seq).padStart(4, "0")}`;
  const [row] = await db.sql<{ id: number }[]>`
    insert into leads (list_id, phone, first_name, last_name, email, state)
    values (${o.list ?? 101}, ${phone}, ${o.first ?? "Rita"}, 'Reyes', ${o.email ?? ""}, 'TX') returning id`;
  return row.id;
}
const callbacks = (leadId: number) =>
  db.sql<{ id: number; due_at: Date; assignee: string | null; note: string; dial: boolean; status: string }[]>`
    select id, due_at, assignee, note, dial, status from callbacks where lead_id = ${leadId} order by id`;
const audits = (action: string, target: string) => db.sql<{ actor_id: string; details: any }[]>`
  select actor_id, details from audit_log where action = ${action} and target = ${target} order by id`;
/** The value a page's form control holds. */
const valueOf = (page: string, id: string) => new RegExp(`id="${id}"[^>]*value="([^"]*)"`).exec(page)?.[1];

describe("scheduling a callback from the lead page", () => {
  test("the form: a time in the organization's zone, the lead's organization's people, me by default; collapsed beside the timeline", async () => {
    const id = await lead();
    const page = (await agent.get(`/console/leads/${id}`)).body as string;
    expect(page).toContain('<details class="action-form" id="callback-form"><summary>Schedule a callback</summary>');
    expect(page).toContain('<label for="cb-at">Date and time (America/Chicago)</label>');
    expect(page).toContain(`<option value="agent7" selected>`);
    expect(page).toContain(`<option value="${managerId}">Mia Manager</option>`);
    expect(page).not.toContain('value="agent9"');
    // In the side column, after the timeline and its composer.
    expect(page.indexOf('id="callback-form"')).toBeGreaterThan(page.indexOf('id="composer"'));
    expect(page).toContain("No callback scheduled.");
  });

  test("the conversation's assignee is the default; scheduling is audited, listed soonest first, with a cancel form", async () => {
    const id = await lead();
    await db.sql`insert into conversations (lead_id, org_id, status, assignee, last_activity_at, created_at, updated_at) values (${id}, 1, 'open', ${managerId}, now(), now(), now())`;
    expect((await agent.get(`/console/leads/${id}`)).body).toContain(`<option value="${managerId}" selected>Mia Manager</option>`);
    const r = await agent.post(`/console/leads/${id}/callbacks`, { at: "2026-03-03T10:30", note: "Wants a quote", assignee: managerId });
    expect(r.status).toBe(303);
    expect(r.headers.get("location")).toBe(`/console/leads/${id}?done=callback_scheduled`);
    await agent.post(`/console/leads/${id}/callbacks`, { at: "2026-03-02T14:00", assignee: managerId });
    const rows = await callbacks(id);
    // 10:30 in Chicago on 3 March is 16:30 UTC (CST).
    expect(rows.map((c) => [c.due_at.toISOString(), c.assignee, c.note, c.status])).toEqual([
      ["2026-03-03T16:30:00.000Z", managerId, "Wants a quote", "scheduled"],
      ["2026-03-02T20:00:00.000Z", managerId, "", "scheduled"],
    ]);
    const logged = await audits("callback.schedule", `lead:${id}`);
    expect(logged.map((a) => [a.actor_id, a.details.callback_id])).toEqual([
      [agentId, rows[0].id],
      [agentId, rows[1].id],
    ]);
    const page = (await agent.get(`/console/leads/${id}?done=callback_scheduled`)).body as string;
    expect(page).toContain("Callback scheduled.");
    expect(page.indexOf(`id="callback-${rows[1].id}"`)).toBeLessThan(page.indexOf(`id="callback-${rows[0].id}"`));
    expect(page).toContain(`action="/console/callbacks/${rows[0].id}/cancel"`);
    expect(page).toContain("Wants a quote");
  });

  test("with a dial: queued for the assignee when it comes due", async () => {
    const id = await lead();
    await agent.post(`/console/leads/${id}/callbacks`, { at: "2026-03-02T09:30", dial: "yes" });
    const [cb] = await callbacks(id);
    expect([cb.assignee, cb.dial]).toEqual(["agent7", true]);
    clock.set(MONDAY_9 + 31 * 60_000);
    await callbackDue(db.sql, cb.id, clock.now());
    const dials = await db.sql`select agent, status from dials where id = (select dial_id from callbacks where id = ${cb.id})`;
    expect([...dials]).toEqual([{ agent: "agent7", status: "pending" }]);
    // Due: the lead page offers Done beside Cancel.
    const page = (await agent.get(`/console/leads/${id}`)).body as string;
    expect(page).toContain(`action="/console/callbacks/${cb.id}/done"`);
    const r = await agent.post(`/console/callbacks/${cb.id}/done`, { from: "lead" });
    expect(r.headers.get("location")).toBe(`/console/leads/${id}?done=callback_done`);
    expect((await callbacks(id))[0].status).toBe("done");
  });

  test("refusals come back on the form with the values kept and the reason in words; nothing is scheduled", async () => {
    const id = await lead();
    const cases: [ConsoleClient, Record<string, string>, string][] = [
      [agent, { at: "2026-03-02T08:00", note: "too late" }, "That time has passed"],
      // Clocks go forward at 2:00 on 8 March 2026 in Chicago: 2:30 does not exist.
      [agent, { at: "2026-03-08T02:30", note: "gap" }, "That time does not exist in America/Chicago"],
      [agent, { at: "next tuesday", note: "words" }, "That is not a date and a time"],
      [agent, { at: "", note: "empty" }, "Give the date and the time"],
      [agent, { at: "2027-06-01T10:00", note: "far" }, "at most a year ahead"],
      [agent, { at: "2026-03-03T10:00", note: "x".repeat(2001) }, "The note is too long"],
      [agent, { at: "2026-03-03T10:00", note: "someone else's dial", assignee: managerId, dial: "yes" }, "You can queue a dial only for yourself"],
      [agent, { at: "2026-03-03T10:00", note: "other org", assignee: "agent9" }, "Choose someone of the lead&#39;s organization"],
      // An admin belongs to no organization: with nobody chosen, a dial has nobody to ring.
      [admin, { at: "2026-03-03T10:00", note: "nobody", assignee: "", dial: "yes" }, "A callback with a dial needs someone it is for"],
    ];
    for (const [who, form, words] of cases) {
      const r = await who.post(`/console/leads/${id}/callbacks`, form);
      expect([form.note.slice(0, 20), r.status]).toEqual([form.note.slice(0, 20), 200]);
      const page = r.body as string;
      expect(page).toContain('<details class="action-form" id="callback-form" open>');
      expect(/id="callback-refusal">([^<]*)</.exec(page)?.[1]).toContain(words);
      expect(valueOf(page, "cb-at")).toBe(form.at.replace(/&/g, "&amp;"));
      if (form.note.length < 100) expect(page).toContain(`>${form.note.replace(/'/g, "&#39;")}</textarea>`);
      if (form.dial) expect(page).toContain('name="dial" value="yes" checked');
    }
    expect(await callbacks(id)).toHaveLength(0);
    expect(await audits("callback.schedule", `lead:${id}`)).toHaveLength(0);
  });

  test("bad input of every kind is a page, never a 500", async () => {
    const id = await lead();
    for (const form of <Record<string, string>[]>[{ at: "2026-02-30T10:00" }, { at: "2026-03-03T25:00" }, { at: "\u0000" }, { at: "2026-03-03T10:00", assignee: "x".repeat(5000) }, { at: "2026-03-03T10:00", note: "a\u0000b" }]) {
      const r = await agent.post(`/console/leads/${id}/callbacks`, form);
      expect([JSON.stringify(form).slice(0, 40), r.status < 500]).toEqual([JSON.stringify(form).slice(0, 40), true]);
    }
  });
});

describe("cancelling and marking done", () => {
  test("cancel is a POST with the CSRF token, audited, its job dropped; twice changes nothing", async () => {
    const id = await lead();
    await agent.post(`/console/leads/${id}/callbacks`, { at: "2026-03-04T10:00" });
    const [cb] = await callbacks(id);
    const forged = await fetch(`${app.base}/console/callbacks/${cb.id}/cancel`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie: agent.cookie, "content-type": "application/x-www-form-urlencoded" },
      body: "from=lead",
    });
    expect(forged.status).toBe(403);
    expect((await callbacks(id))[0].status).toBe("scheduled");
    const r = await agent.post(`/console/callbacks/${cb.id}/cancel`, { from: "lead" });
    expect(r.headers.get("location")).toBe(`/console/leads/${id}?done=callback_cancelled`);
    expect((await callbacks(id))[0].status).toBe("cancelled");
    expect(await db.sql`select 1 from jobs where kind = 'workspace.callback' and ref = ${cb.id}`).toHaveLength(0);
    expect(await audits("callback.cancel", `lead:${id}`)).toHaveLength(1);
    const again = await agent.post(`/console/callbacks/${cb.id}/cancel`, { from: "lead" });
    expect(again.headers.get("location")).toBe(`/console/leads/${id}?done=callback_closed`);
    expect(await audits("callback.cancel", `lead:${id}`)).toHaveLength(1);
    expect((await agent.get(`/console/leads/${id}`)).body).not.toContain(`id="callback-${cb.id}"`);
  });
});

describe("My work", () => {
  test("the agent's due and later-today callbacks, dials and open conversations, with counts; done from there", async () => {
    // A user of their own, whose work is only this test's.
    const u = await makeUser(db.sql, { role: "agent", orgId: 1, name: "Wes Worker" });
    const agent = await signIn(app.base, u.email, u.password);
    const due = await lead({ first: "Dora" });
    const today = await lead({ first: "Tina" });
    const tomorrow = await lead({ first: "Tom" });
    const dialled = await lead({ first: "Dale" });
    await agent.post(`/console/leads/${due}/callbacks`, { at: "2026-03-02T09:05", note: "call back re roof" });
    await agent.post(`/console/leads/${today}/callbacks`, { at: "2026-03-02T16:00" });
    await agent.post(`/console/leads/${tomorrow}/callbacks`, { at: "2026-03-03T09:00" });
    expect((await agent.post(`/console/leads/${dialled}/dial`, { agent: u.id })).status).toBe(303);
    const [dueCb] = await callbacks(due);
    clock.set(MONDAY_9 + 6 * 60_000);
    await callbackDue(db.sql, dueCb.id, clock.now());

    const page = (await agent.get("/console/my-work")).body as string;
    expect(page).toContain('href="/console/my-work" id="nav-work" aria-current="page">My work</a>');
    const section = (id: string) => page.slice(page.indexOf(`id="${id}"`), page.indexOf("</ul>", page.indexOf(`id="${id}"`)));
    expect(section("work-due")).toContain(`<a href="/console/leads/${due}">Dora Reyes</a>`);
    expect(section("work-due")).toContain("call back re roof");
    expect(section("work-due")).toContain(`action="/console/callbacks/${dueCb.id}/done"`);
    expect(section("work-today")).toContain(`<a href="/console/leads/${today}">Tina Reyes</a>`);
    expect(page).not.toContain("Tom Reyes");
    expect(page).toContain("1 callback scheduled after today.");
    expect(section("work-dials")).toContain(`<a href="/console/leads/${dialled}">Dale Reyes</a>`);
    const [{ id: dueConv }] = await db.sql<{ id: number }[]>`select id from conversations where lead_id = ${due}`;
    expect(section("work-convs")).toContain(`href="/console/inbox?open=${dueConv}"`);
    expect(/id="work-counts">([^<]*)</.exec(page)?.[1]).toContain("1 callback due · 1 more today · 1 dial · ");

    const r = await agent.post(`/console/callbacks/${dueCb.id}/done`, { from: "work" });
    expect(r.headers.get("location")).toBe("/console/my-work?done=callback_done");
    expect((await callbacks(due))[0].status).toBe("done");
    expect(await audits("callback.done", `lead:${due}`)).toHaveLength(1);
    const after = (await agent.get("/console/my-work?done=callback_done")).body as string;
    expect(after).toContain("Callback marked done.");
    expect(after).toContain("No callback is due.");
  });

  test("'later today' ends at the organization's midnight, across a clock change", () => {
    // 8 March 2026 in Chicago is 23 hours long: its midnight after is 05:00 UTC (CDT), the day before's 06:00 (CST).
    expect(new Date(endOfDay(Date.UTC(2026, 2, 8, 18), "America/Chicago")).toISOString()).toBe("2026-03-09T05:00:00.000Z");
    expect(new Date(endOfDay(Date.UTC(2026, 2, 7, 18), "America/Chicago")).toISOString()).toBe("2026-03-08T06:00:00.000Z");
    // Late in the evening there, already the next day in UTC.
    expect(new Date(endOfDay(Date.UTC(2026, 2, 3, 5), "America/Chicago")).toISOString()).toBe("2026-03-03T06:00:00.000Z");
  });

  test("a manager has the link too; an admin (no organization, no queue of their own) has neither the link nor the page", async () => {
    expect((await manager.get("/console/inbox")).body).toContain('id="nav-work"');
    expect((await manager.get("/console/my-work")).status).toBe(200);
    expect((await admin.get("/console/inbox")).body).not.toContain('id="nav-work"');
    expect((await admin.get("/console/my-work")).status).toBe(404);
  });
});

describe("booking on the lead's behalf", () => {
  const slotEpochs = (page: string) => [...page.matchAll(/name="epoch" value="(\d+)"/g)].map((m) => Number(m[1]));

  test("the lead page offers the organization's calendars that have a link; the slots as the booking engine offers them", async () => {
    const id = await lead();
    const page = (await agent.get(`/console/leads/${id}`)).body as string;
    expect(page).toContain('<option value="50">Roof estimates (America/Chicago)</option>');
    expect(page).not.toContain('value="51"');
    expect(page).not.toContain('value="52"');
    expect(page).toContain('<option value="53">Crew visits (America/Chicago)</option>');
    const slots = (await agent.get(`/console/leads/${id}/book?calendar=50`)).body as string;
    const offered = slotEpochs(slots);
    const pub = await call(app.base, "/book/api.php?action=slots&s=acme-roof");
    expect(offered).toEqual(pub.body.slots.map((s: { epoch: number }) => s.epoch));
    // The notice (two hours) holds: the first slot is 11:00 on Monday.
    expect(offered[0]).toBe(Date.UTC(2026, 2, 2, 17) / 1000);
    expect(slots).toContain("times in <strong>America/Chicago</strong>");
  });

  test("books for the lead that exists: the event, the outbox, the audit, the appointment on its page; the reschedule link ready to send and sent by SMS", async () => {
    const id = await lead({ first: "Bea" });
    const leadsBefore = (await db.sql`select count(*)::int as n from leads`)[0].n;
    const epoch = Date.UTC(2026, 2, 3, 16) / 1000; // Tuesday 10:00 in Chicago
    const r = await agent.post(`/console/leads/${id}/book`, { calendar: "50", epoch: String(epoch) });
    expect(r.status).toBe(200);
    const page = r.body as string;
    expect(page).toContain("Appointment booked: it is in the lead&#39;s appointments.");
    const [appt] = await db.sql<{ id: number; lead_id: number; name: string; phone: string; status: string; link_slug: string }[]>`
      select id, lead_id, name, phone, status, link_slug from appointments where calendar_id = 50 and slot_epoch = ${epoch}`;
    expect(appt).toMatchObject({ lead_id: id, name: "Bea Reyes", status: "pending", link_slug: "acme-roof" });
    expect((await db.sql`select count(*)::int as n from leads`)[0].n).toBe(leadsBefore);
    const [event] = await db.sql<{ payload: any }[]>`select payload from outbox_events where type = 'appointment.booked' and (payload->'data'->>'appt_id')::bigint = ${appt.id}`;
    expect(event.payload.data).toMatchObject({ lead_id: id, calendar_id: 50, link: "acme-roof", org_id: 1, epoch, status: "pending" });
    const events = await db.sql<{ actor: string; actor_role: string }[]>`select actor, actor_role from lead_events where lead_id = ${id} and event = 'appointment.booked'`;
    expect([...events]).toEqual([{ actor: "Dana Diaz", actor_role: "user" }]);
    const logged = await audits("appointment.book", `lead:${id}`);
    expect(logged.map((a) => [a.actor_id, a.details])).toEqual([[agentId, { appt_id: appt.id, calendar_id: 50, epoch }]]);
    // The message with the reschedule link, ready in the composer on SMS.
    const body = /<textarea id="body"[^>]*>([^<]*)<\/textarea>/.exec(page)?.[1] ?? "";
    const url = /https:\/\/leadline\.example\/book\/acme-roof\?r=([A-Za-z0-9_-]+)/.exec(body);
    expect(url).not.toBeNull();
    expect(page).toContain('<option value="sms" selected>');
    // The token is the appointment's: the public booking API moves it with it.
    const moved = await call(app.base, "/book/api.php?action=reschedule", { method: "POST", json: { token: url![1], epoch: epoch + 3600 } });
    expect(moved.body).toEqual({ ok: true, appt_id: appt.id, epoch: epoch + 3600 });
    // Sent through the one send path (the composer's form).
    const operation = /name="operation_id" value="([^"]+)"/.exec(page)![1];
    const sent = await agent.post(`/console/leads/${id}/send`, { channel: "sms", body: body.replace(/&amp;/g, "&"), operation_id: operation });
    expect(sent.status).toBe(303);
    await twilio.waitFor(1);
    expect(twilio.requests[0].form.Body).toContain(`${PUBLIC}/book/acme-roof?r=${url![1]}`);
    // The appointment shows on the lead's page (its list and timeline).
    const lead_ = (await agent.get(`/console/leads/${id}`)).body as string;
    expect(lead_.slice(lead_.indexOf('id="h-appts"'))).toContain("Roof estimates");
    expect(lead_).toContain("Appointment booked for");
    // The event names its person as a person reads it, never the kind of actor stored.
    expect(lead_).toContain('<div class="muted">by Dana Diaz</div>');
    expect(lead_).not.toContain("(user)");
  });

  test("the capacity guard: a slot just taken goes back to the open times, nothing booked twice", async () => {
    const a = await lead();
    const b = await lead();
    const epoch = Date.UTC(2026, 2, 4, 16) / 1000;
    const results = await Promise.all([a, b].map((id) => agent.post(`/console/leads/${id}/book`, { calendar: "50", epoch: String(epoch) })));
    expect(results.map((r) => r.status).sort()).toEqual([200, 303]);
    const refused = results.find((r) => r.status === 303)!;
    expect(refused.headers.get("location")).toMatch(/\/book\?calendar=50&done=taken$/);
    expect((await db.sql`select count(*)::int as n from appointments where calendar_id = 50 and slot_epoch = ${epoch}`)[0].n).toBe(1);
    expect((await agent.get(refused.headers.get("location")!)).body).toContain("That time was just taken");
  });

  test("a form sent twice books the lead once, even where the slot has seats to spare", async () => {
    const id = await lead();
    const epoch = Date.UTC(2026, 2, 4, 17) / 1000;
    const results = await Promise.all([1, 2].map(() => agent.post(`/console/leads/${id}/book`, { calendar: "53", epoch: String(epoch) })));
    expect(results.map((r) => r.status).sort()).toEqual([200, 303]);
    expect(results.find((r) => r.status === 303)!.headers.get("location")).toMatch(/done=already$/);
    expect((await db.sql`select count(*)::int as n from appointments where calendar_id = 53 and slot_epoch = ${epoch}`)[0].n).toBe(1);
    expect(await audits("appointment.book", `lead:${id}`)).toHaveLength(1);
    // Another lead still gets one of the seats left.
    expect((await agent.post(`/console/leads/${await lead()}/book`, { calendar: "53", epoch: String(epoch) })).status).toBe(200);
  });

  test("a time the calendar does not offer (within the notice, off hours, in the past, none) is refused", async () => {
    const id = await lead();
    for (const epoch of [Date.UTC(2026, 2, 2, 16) / 1000, Date.UTC(2026, 2, 3, 3) / 1000, MONDAY_9 / 1000 - 3600, "x"]) {
      const r = await agent.post(`/console/leads/${id}/book`, { calendar: "50", epoch: String(epoch) });
      expect([epoch, r.status]).toEqual([epoch, 303]);
    }
    expect((await agent.post(`/console/leads/${id}/book`, { calendar: "50" })).headers.get("location")).toMatch(/done=pick$/);
    expect(await db.sql`select 1 from appointments where lead_id = ${id}`).toHaveLength(0);
  });

  test("no usable phone or email: booked, and the page says the link cannot be sent", async () => {
    const id = await lead();
    // No email, and the phone on the organization's do-not-contact list.
    await db.sql`insert into do_not_contact (org_id, kind, address, source, added_at) values (1, 'phone', (select phone from leads where id = ${id}), 'test', now())`;
    const r = await agent.post(`/console/leads/${id}/book`, { calendar: "50", epoch: String(Date.UTC(2026, 2, 5, 16) / 1000) });
    expect(r.status).toBe(200);
    expect(r.body).toContain("The lead cannot be sent its reschedule link");
    expect(r.body).not.toContain("/book/acme-roof?r=");
  });
});

describe("another organization's ids: not found, nothing changed", () => {
  test("org 2's agent posts with org 1's lead, callback and calendar", async () => {
    const id = await lead();
    await agent.post(`/console/leads/${id}/callbacks`, { at: "2026-03-04T10:00" });
    const [cb] = await callbacks(id);
    expect((await bolt.post(`/console/leads/${id}/callbacks`, { at: "2026-03-04T11:00" })).status).toBe(404);
    expect((await bolt.post(`/console/callbacks/${cb.id}/cancel`, {})).status).toBe(404);
    expect((await bolt.post(`/console/callbacks/${cb.id}/done`, { from: "work" })).status).toBe(404);
    expect((await bolt.get(`/console/leads/${id}/book?calendar=50`)).status).toBe(404);
    expect((await bolt.post(`/console/leads/${id}/book`, { calendar: "50", epoch: String(Date.UTC(2026, 2, 5, 17) / 1000) })).status).toBe(404);
    const boltLead = await lead({ list: 201 });
    // Org 2's own lead on org 1's calendar, and org 1's lead on org 2's calendar: not found.
    expect((await bolt.post(`/console/leads/${boltLead}/book`, { calendar: "50", epoch: String(Date.UTC(2026, 2, 5, 17) / 1000) })).status).toBe(404);
    expect((await agent.get(`/console/leads/${id}/book?calendar=51`)).status).toBe(404);
    expect((await agent.post(`/console/leads/${id}/book`, { calendar: "51", epoch: String(Date.UTC(2026, 2, 5, 17) / 1000) })).status).toBe(404);
    expect((await agent.get(`/console/leads/${id}/book?calendar=52`)).status).toBe(404);
    expect(await callbacks(id)).toHaveLength(1);
    expect((await callbacks(id))[0].status).toBe("scheduled");
    expect(await db.sql`select 1 from appointments where lead_id in (${id}, ${boltLead})`).toHaveLength(0);
    expect(await db.sql`select 1 from audit_log where actor_id = 'agent9' and (action like 'callback.%' or action like 'appointment.%')`).toHaveLength(0);
  });
});
