// The console's inbox as conversations (issue 29) over HTTP, against PostgreSQL with a fake Twilio:
// the views and their counts, filters and keyset pages, the reading pane, each action as a plain
// form through the workspace's services (audited), bulk actions that touch only the organization's
// conversations, a reply through the one send path that assigns an unassigned conversation to the
// sender, a refused send that keeps the draft; another organization's conversation is a 404 like
// a missing one.
import { afterAll, beforeAll, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { TestApp } from "./harness/app";
import { startApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { makeUser, signIn, type ConsoleClient } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { acmeTexting, seedWorld } from "./harness/factory";
import { postCallback, startFakeTwilio, type FakeTwilio } from "./harness/fake-twilio";

setDefaultTimeout(60_000);
const PUBLIC = "https://leadline.example";
// 20:00 on Thu 2026-01-15 in Chicago, outside quiet hours (21:00–08:00).
const DAY = Date.UTC(2026, 0, 16, 2);

let db: TestDatabase;
let app: TestApp;
let twilio: FakeTwilio;
const clock = new ManualClock(DAY);
let manager: ConsoleClient;
let agent: ConsoleClient;
let bolt: ConsoleClient;
let admin: ConsoleClient;
let phones = 0;

const audits = (action: string) => db.sql<{ actor_id: string; target: string; details: Record<string, unknown> }[]>`
  select actor_id, target, details from audit_log where action = ${action} order by id`;

/** A new lead of organization 1 (or `list` 201: Bolt) and an inbound SMS from it through the real webhook; its conversation's id. */
async function conversationWith(body: string, o: { first?: string; list?: number } = {}): Promise<{ id: number; lead: number }> {
  const phone = `51255${String(70000 + ++phones).padStart(5, "0")}`;
  const [{ id: lead }] = await db.sql<{ id: number }[]>`
    insert into leads (list_id, phone, first_name, last_name, state) values (${o.list ?? 101}, ${phone}, ${o.first ?? "Dana"}, 'Diaz', 'TX') returning id`;
  if ((o.list ?? 101) === 101) {
    const r = await postCallback(app.base, PUBLIC, "/hooks/sms_inbound.php", "acme-token", { From: `+1${phone}`, To: "+15125550100", Body: body, MessageSid: `SM${phone}`, AccountSid: "ACacme" });
    expect(r.status).toBe(200);
  } else {
    await db.sql`insert into messages (lead_id, org_id, channel, direction, actor_type, body, status) values (${lead}, 2, 'sms', 'in', 'provider', ${body}, 'received')`;
  }
  const [c] = await db.sql<{ id: number }[]>`select id from conversations where lead_id = ${lead}`;
  return { id: c!.id, lead };
}

const conv = async (id: number) =>
  (await db.sql<{ status: string; assignee: string | null; snoozed_until: Date | null; waiting_since: Date | null }[]>`
    select status, assignee, snoozed_until, waiting_since from conversations where id = ${id}`)[0]!;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  twilio = await startFakeTwilio();
  await acmeTexting(db.sql, twilio.url);
  app = await startApp(db.url, { BASE_URL: PUBLIC }, { clock });
  const m = await makeUser(db.sql, { role: "manager", orgId: 1, name: "Mia Manager" });
  const a = await makeUser(db.sql, { role: "agent", orgId: 1, id: "agent7" });
  const b = await makeUser(db.sql, { role: "agent", orgId: 2, id: "agent9" });
  const ad = await makeUser(db.sql, { role: "admin", orgId: null });
  [manager, agent, bolt, admin] = await Promise.all([m, a, b, ad].map((u) => signIn(app.base, u.email, u.password)));
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await twilio?.stop();
  await db?.drop();
});
beforeEach(() => {
  twilio.reset();
  clock.set(DAY);
});

const count = (page: string, view: string) => new RegExp(`data-count="${view}">([^<]+)<`).exec(page)?.[1];
const rowIds = (page: string) => [...page.matchAll(/<li class="conv[^"]*" id="conv-(\d+)"/g)].map((m) => Number(m[1]));

describe("the list", () => {
  test("one row per conversation in Unassigned and All open with counts; the organization's only", async () => {
    const c = await conversationWith("Is the quote still good?", { first: "Quincy" });
    await postCallback(app.base, PUBLIC, "/hooks/sms_inbound.php", "acme-token", {
      From: `+1${(await db.sql`select phone from leads where id = ${c.lead}`)[0]!.phone}`,
      To: "+15125550100",
      Body: "Hello again?",
      MessageSid: `SMagain${c.id}`,
      AccountSid: "ACacme",
    });
    const page = (await manager.get("/console/inbox?view=unassigned")).body as string;
    expect(rowIds(page).filter((id) => id === c.id)).toHaveLength(1); // two messages, one row
    expect(page).toContain("Hello again?");
    expect(page).toMatch(/SMS in<\/span> Hello again\?/);
    expect(page).toContain("Quincy Diaz");
    expect(Number(count(page, "unassigned"))).toBeGreaterThanOrEqual(1);
    expect(Number(count(page, "open"))).toBeGreaterThanOrEqual(1);
    expect(page).toMatch(/Waiting (\d+m|under a minute)/);
    const other = (await bolt.get("/console/inbox?view=open")).body as string;
    expect(other).not.toContain("Hello again?");
    expect(rowIds(other)).not.toContain(c.id);
    expect((await admin.get("/console/inbox?view=open")).body).toContain("Hello again?");
    // The default view is Mine: nothing assigned to the manager yet.
    expect((await manager.get("/console/inbox")).body).toContain("Nothing is waiting for you.");
  });

  test("filters by channel and assignee; keyset pages with an older link", async () => {
    const made = [];
    for (let i = 0; i < 52; i++) made.push(await conversationWith(`page ${i}`));
    const first = (await manager.get("/console/inbox?view=unassigned&channel=sms")).body as string;
    expect(rowIds(first)).toHaveLength(50);
    const older = /href="([^"]+)" rel="next">Older</.exec(first)?.[1]?.replaceAll("&amp;", "&");
    expect(older).toMatch(/after=\d+\.\d+/);
    const second = (await manager.get(older!)).body as string;
    const all = [...rowIds(first), ...rowIds(second)];
    expect(new Set(all).size).toBe(all.length); // no repeat across pages
    for (const m of made) expect(all).toContain(m.id);
    // Notes only: none of these.
    expect(rowIds((await manager.get("/console/inbox?view=unassigned&channel=note")).body as string)).toHaveLength(0);
    await manager.post(`/console/inbox/${made[0]!.id}/assign`, { to: "agent7" });
    const agent7 = rowIds((await manager.get("/console/inbox?view=open&assignee=agent7")).body as string);
    expect(agent7).toEqual([made[0]!.id]);
    // A filter value the page does not know is ignored, never a 500.
    expect((await manager.get("/console/inbox?view=nope&channel=fax&assignee=%00&after=x")).status).toBe(200);
  });
});

describe("the reading pane", () => {
  test("opens beside the list: the timeline oldest first, the composer under it, tel: and mailto: links", async () => {
    const c = await conversationWith("first question");
    await db.sql`update leads set email = 'dana@example.com' where id = ${c.lead}`;
    clock.advance(60_000);
    await db.sql`insert into messages (lead_id, org_id, channel, direction, actor_type, actor_id, body, status, created_at)
      values (${c.lead}, 1, 'note', 'out', 'user', 'agent7', 'called, no answer', '', now() + interval '1 minute')`;
    const page = (await agent.get(`/console/inbox?view=open&open=${c.id}`)).body as string;
    expect(page).toContain('class="inbox-split has-open"');
    expect(page).toContain(`id="conv-${c.id}"`); // the list is still there
    const pane = page.slice(page.indexOf('id="pane"'));
    expect(pane.indexOf("first question")).toBeGreaterThan(0);
    expect(pane.indexOf("first question")).toBeLessThan(pane.indexOf("called, no answer"));
    expect(pane.indexOf("called, no answer")).toBeLessThan(pane.indexOf('id="composer"'));
    expect(page).toMatch(/class="tl tl-note"[\s\S]*?by Dana Diaz/); // a note, named by its author
    expect(page).toMatch(/href="tel:\+1512557\d{4}"/);
    expect(page).toContain('href="mailto:dana@example.com"');
    expect(page).toContain(`action="/console/inbox/${c.id}/send"`);
    expect(page).toContain('data-sms-cost="0.01"');
  });

  test("another organization's conversation is a 404 like a missing one", async () => {
    const theirs = await conversationWith("bolt's", { list: 201 });
    const a = await manager.get(`/console/inbox?open=${theirs.id}`);
    const b = await manager.get(`/console/inbox?open=999999999`);
    expect(a.status).toBe(404);
    expect(b.status).toBe(404);
    expect(a.body).toBe(b.body);
    expect((await manager.get(`/console/inbox?open=abc`)).status).toBe(404);
    for (const action of ["assign", "snooze", "close", "reopen", "send"]) {
      const form = { to: "me", preset: "hour", body: "x", channel: "sms", operation_id: `console-${action}-x` };
      const r1 = await manager.post(`/console/inbox/${theirs.id}/${action}`, form);
      const r2 = await manager.post(`/console/inbox/999999999/${action}`, form);
      expect([action, r1.status]).toEqual([action, 404]);
      expect(r2.status).toBe(404);
    }
    expect(await conv(theirs.id)).toMatchObject({ status: "open", assignee: null });
  });
});

describe("actions", () => {
  test("assign to me, to a user, to nobody: audited, and back to the same list with the pane open", async () => {
    const c = await conversationWith("assign me");
    const r = await agent.post(`/console/inbox/${c.id}/assign`, { to: "me", view: "unassigned", open: String(c.id) });
    expect(r.status).toBe(303);
    expect(r.headers.get("location")).toBe(`/console/inbox?view=unassigned&open=${c.id}&done=assigned`);
    expect((await conv(c.id)).assignee).toBe("agent7");
    expect((await audits("conversation.assign")).at(-1)).toMatchObject({ actor_id: "agent7", target: `conversation:${c.id}`, details: { from: null, to: "agent7" } });
    expect(rowIds((await agent.get("/console/inbox?view=mine")).body as string)).toContain(c.id);
    // Another organization's user is refused like a missing conversation.
    expect((await manager.post(`/console/inbox/${c.id}/assign`, { to: "agent9" })).status).toBe(404);
    expect((await conv(c.id)).assignee).toBe("agent7");
    const none = await manager.post(`/console/inbox/${c.id}/assign`, { to: "none" });
    expect(none.headers.get("location")).toContain("done=unassigned");
    expect((await conv(c.id)).assignee).toBeNull();
    expect((await manager.post(`/console/inbox/${c.id}/assign`, { to: "none" })).headers.get("location")).toContain("done=unchanged");
    expect((await manager.post(`/console/inbox/${c.id}/assign`, {})).headers.get("location")).toContain("done=form_error");
  });

  test("snooze: tomorrow 9:00 in the organization's zone, a chosen time, a past time refused; close and reopen", async () => {
    const c = await conversationWith("snooze me");
    const r = await agent.post(`/console/inbox/${c.id}/snooze`, { preset: "tomorrow", view: "open" });
    expect(r.headers.get("location")).toBe("/console/inbox?view=open&done=snoozed");
    // 20:00 Thursday in Chicago → Friday 9:00 CST = 15:00 UTC.
    expect((await conv(c.id)).snoozed_until?.toISOString()).toBe("2026-01-16T15:00:00.000Z");
    expect(rowIds((await agent.get("/console/inbox?view=snoozed")).body as string)).toContain(c.id);
    expect(rowIds((await agent.get("/console/inbox?view=open")).body as string)).not.toContain(c.id);
    await agent.post(`/console/inbox/${c.id}/snooze`, { until: "2026-01-20T10:30" });
    expect((await conv(c.id)).snoozed_until?.toISOString()).toBe("2026-01-20T16:30:00.000Z");
    const past = await agent.post(`/console/inbox/${c.id}/snooze`, { until: "2026-01-10T10:30" });
    expect(past.headers.get("location")).toContain("done=snooze_invalid");
    expect((await agent.get(past.headers.get("location")!)).body).toContain("Choose a time in the future");
    expect((await agent.post(`/console/inbox/${c.id}/snooze`, { preset: "someday" })).headers.get("location")).toContain("done=snooze_invalid");
    expect((await audits("conversation.snooze")).filter((a) => a.target === `conversation:${c.id}`)).toHaveLength(2);

    const closed = await agent.post(`/console/inbox/${c.id}/close`, { view: "open" });
    expect(closed.headers.get("location")).toBe("/console/inbox?view=open&done=closed");
    expect(await conv(c.id)).toMatchObject({ status: "closed", waiting_since: null });
    expect(rowIds((await agent.get("/console/inbox?view=closed")).body as string)).toContain(c.id);
    await agent.post(`/console/inbox/${c.id}/reopen`, {});
    expect((await conv(c.id)).status).toBe("open");
    expect((await audits("conversation.reopen")).at(-1)).toMatchObject({ target: `conversation:${c.id}`, details: { from: "closed" } });
  });

  test("bulk close, assign and snooze touch only the organization's ticked conversations", async () => {
    const mine = [await conversationWith("bulk 1"), await conversationWith("bulk 2")];
    const theirs = await conversationWith("bolt bulk", { list: 201 });
    const tick = (ids: number[]) => Object.fromEntries(ids.map((id) => [`c${id}`, "on"]));
    const all = [...mine.map((c) => c.id), theirs.id];
    const before = await db.sql`select * from conversations where id = ${theirs.id}`;
    const auditsBefore = (await db.sql`select count(*)::int as n from audit_log`)[0]!.n;

    const assigned = await manager.post("/console/inbox/bulk", { action: "assign", to: "agent7", view: "unassigned", ...tick(all) });
    expect(assigned.headers.get("location")).toBe("/console/inbox?view=unassigned&done=bulk_assigned&n=2");
    expect((await manager.get(assigned.headers.get("location")!)).body).toContain("Assigned: 2 conversations.");
    const snoozed = await manager.post("/console/inbox/bulk", { action: "snooze", preset: "hour", ...tick(all) });
    expect(snoozed.headers.get("location")).toContain("done=bulk_snoozed&n=2");
    const closed = await manager.post("/console/inbox/bulk", { action: "close", ...tick(all) });
    expect(closed.headers.get("location")).toContain("done=bulk_closed&n=2");
    for (const c of mine) expect(await conv(c.id)).toMatchObject({ status: "closed", assignee: "agent7" });
    // Bolt's conversation: not a column changed, not an audit row about it.
    expect(await db.sql`select * from conversations where id = ${theirs.id}`).toEqual(before);
    expect(await db.sql`select 1 from audit_log where target = ${`conversation:${theirs.id}`}`).toHaveLength(0);
    expect((await db.sql`select count(*)::int as n from audit_log`)[0]!.n).toBe(auditsBefore + 6);

    expect((await manager.post("/console/inbox/bulk", { action: "close" })).headers.get("location")).toContain("done=bulk_none");
    expect((await manager.post("/console/inbox/bulk", { action: "explode", ...tick(all) })).headers.get("location")).toContain("done=form_error");
    expect((await manager.post("/console/inbox/bulk", { action: "snooze", preset: "never", ...tick(all) })).headers.get("location")).toContain("done=snooze_invalid");
    // Without the CSRF token: refused, nothing changed.
    const forged = await fetch(`${app.base}/console/inbox/bulk`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie: manager.cookie, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ action: "assign", to: "none", ...tick(mine.map((c) => c.id)) }).toString(),
    });
    expect(forged.status).toBe(403);
    expect((await conv(mine[0]!.id)).assignee).toBe("agent7");
  });
});

describe("replying", () => {
  test("a reply goes through the send path and assigns the unassigned conversation to the sender", async () => {
    const c = await conversationWith("call me back", { first: "Rita" });
    const page = (await agent.get(`/console/inbox?view=unassigned&open=${c.id}`)).body as string;
    const op = /name="operation_id" value="([^"]+)"/.exec(page)![1]!;
    const r = await agent.post(`/console/inbox/${c.id}/send`, { channel: "sms", body: "Hi {first_name}, calling at 3", operation_id: op, view: "unassigned" });
    expect(r.status).toBe(303);
    expect(r.headers.get("location")).toBe(`/console/inbox?view=unassigned&open=${c.id}&sent=ok#composer`);
    expect(twilio.requests.map((q) => q.form.Body)).toEqual(["Hi Rita, calling at 3"]);
    expect(await conv(c.id)).toMatchObject({ assignee: "agent7", waiting_since: null });
    const after = (await agent.get(r.headers.get("location")!.split("#")[0]!)).body as string;
    expect(after).toContain("Sent.");
    expect(rowIds(after)).not.toContain(c.id); // it left Unassigned
    expect(rowIds((await agent.get("/console/inbox?view=mine")).body as string)).toContain(c.id);
    expect((await audits("message.send")).at(-1)).toMatchObject({ actor_id: "agent7", details: { channel: "sms", operation_id: op } });
    // An assigned conversation keeps its assignee when someone else replies.
    const op2 = /name="operation_id" value="([^"]+)"/.exec((await manager.get(`/console/inbox?open=${c.id}`)).body as string)![1]!;
    await manager.post(`/console/inbox/${c.id}/send`, { channel: "note", body: "following up", operation_id: op2 });
    expect((await conv(c.id)).assignee).toBe("agent7");
  });

  test("an opted-out lead: SMS disabled with the reason; a refused send keeps the draft and says why", async () => {
    const c = await conversationWith("STOP");
    const page = (await agent.get(`/console/inbox?view=open&open=${c.id}`)).body as string;
    expect(page).toMatch(/<option value="sms"[^>]* disabled>SMS — unavailable/);
    expect(page).toContain("SMS: the lead opted out of SMS.");
    expect(page).toContain("SMS opted out");
    const op = /name="operation_id" value="([^"]+)"/.exec(page)![1]!;
    const r = await agent.post(`/console/inbox/${c.id}/send`, { channel: "sms", body: "Please reconsider {first_name}", operation_id: op });
    expect(r.status).toBe(200);
    expect(r.body).toContain("Not sent: the lead opted out of this channel.");
    expect(r.body).toContain(">Please reconsider {first_name}</textarea>");
    expect(twilio.requests).toHaveLength(0);
  });

  test("in quiet hours the composer says when a text will go", async () => {
    const c = await conversationWith("late question");
    clock.set(Date.UTC(2026, 0, 16, 3, 15)); // 21:15 in Chicago
    const page = (await agent.get(`/console/inbox?view=open&open=${c.id}`)).body as string;
    expect(page).toContain("Quiet hours for the lead: a text sent now goes at 8:00 AM on Fri, Jan 16 (America/Chicago).");
    expect(page).toContain(">Quiet hours</span>");
  });
});

describe("the lead is a conversation", () => {
  test("the lead page: timeline oldest first, the composer under it; every entry names its actor as a person reads it", async () => {
    const c = await conversationWith("what time works?");
    const [{ id: key }] = await db.sql<{ id: number }[]>`
      insert into api_keys (key_hash, key_prefix, name, org_id) values (${Buffer.from("k".repeat(32))}, 'lk_test', 'Zapier bridge', 1) returning id`;
    const [{ id: auto }] = await db.sql<{ id: number }[]>`
      insert into automations (id, org_id, trigger, channel, body) values (7001, 1, 'missed_call', 'sms', 'Sorry we missed you') returning id`;
    await db.sql`insert into messages (lead_id, org_id, channel, direction, actor_type, actor_id, body, status, created_at) values
      (${c.lead}, 1, 'sms', 'out', 'api_key', ${String(key)}, 'from the key', 'sent', now() + interval '1 minute'),
      (${c.lead}, 1, 'sms', 'out', 'automation', ${String(auto)}, 'from the automation', 'sent', now() + interval '2 minutes'),
      (${c.lead}, 1, 'note', 'out', 'user', 'agent7', 'a note of the team', '', now() + interval '3 minutes')`;
    await db.sql`insert into calls (lead_id, phone, status, secs, agent, occurred_at)
      select ${c.lead}, phone, 'answered', 65, 'agent7', now() + interval '4 minutes' from leads where id = ${c.lead}`;
    const page = (await agent.get(`/console/leads/${c.lead}`)).body as string;
    const order = ["what time works?", "by API key: Zapier bridge", "by Automation: missed call #7001", "a note of the team", "agent Dana Diaz", 'id="composer"'].map((t) => page.indexOf(t));
    for (const i of order) expect(i).toBeGreaterThan(0);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(page).toMatch(/class="tl tl-note">\s*<div class="tl-head"><span class="badge badge-note">NOTE<\/span> <span class="muted">by Dana Diaz/);
    expect(page).toMatch(/<a href="tel:\+1512557\d{4}">Call \(512\) 557-\d{4}<\/a>/);
    // No subject for SMS: the subject row is hidden by the chosen channel (CSS), the counter is told the cost.
    expect(page).toContain('<option value="sms" selected>SMS</option>');
    expect(page).toContain('data-sms-cost="0.01"');
  });
});
