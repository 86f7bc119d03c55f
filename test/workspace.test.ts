// The agents' workspace's model (docs/workspace.md; issue 29) through the real database and the
// served app: conversations kept by the facts that change them (an inbound text through Twilio's
// signed callback, a call report, a reply from the console's composer), the inbox's views, counts
// and keyset pages, the actions one by one and in bulk, callbacks coming due through the job
// runner, and My work — every read and write across two organizations.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Actor } from "../src/auth/actor";
import { AppError } from "../src/errors";
import { inboxPage, viewCounts } from "../src/workspace/inbox";
import {
  assignConversation,
  bulkAssign,
  bulkClose,
  bulkReopen,
  bulkSnooze,
  closeConversation,
  reopenConversation,
  snoozeConversation,
} from "../src/workspace/actions";
import { closeCallback, findCallback, leadCallbacks, scheduleCallback } from "../src/workspace/callbacks";
import { conversationOfLead } from "../src/workspace/conversations";
import { openEndedSnoozes } from "../src/workspace/jobs";
import { myWork } from "../src/workspace/my-work";
import { parseListCursor, type InboxFilter, type InboxRow } from "../src/workspace/model";
import { call, startApp, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { makeUser, signIn, type ConsoleClient } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeKey, seedWorld } from "./harness/factory";
import { postCallback, startFakeTwilio, type FakeTwilio } from "./harness/fake-twilio";

let db: TestDatabase;
let app: TestApp;
let twilio: FakeTwilio;
let callsKey: string;
let agentClient: ConsoleClient;
let adminClient: ConsoleClient;
const BASE_URL = "https://console.acme.example";
const ACME_TOKEN = "acme-token";
const ACME_NUMBER = "+15125550100";
// Wednesday 2026-01-14 11:00 in Chicago (CST, UTC-6): outside Acme's 21:00-08:00 quiet hours.
const T0 = Date.parse("2026-01-14T17:00:00Z");
const clock = new ManualClock(T0);
const MIN = 60_000;

const user = (id: string, orgId: number | null, agent = false): Actor => ({ orgId, type: "user", id, agent: agent ? id : null, keyId: null });
// Acme (org 1): a manager, two agents (agent7 is seedWorld's CTI agent, Dana Diaz). Bolt (org 2): agent9. An admin.
const mgr = user("mgr1", 1);
const ann = user("agent7", 1, true);
const bob = user("bob", 1, true);
const eli = user("agent9", 2, true);
const admin = user("admin1", null);

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  twilio = await startFakeTwilio();
  await db.sql`
    update orgs set timezone = 'America/Chicago', quiet_start = '21:00', quiet_end = '08:00',
      sms = ${db.sql.json({ base_url: twilio.url, account_sid: "ACacme", auth_token: ACME_TOKEN, from: ACME_NUMBER })}
    where id = 1`;
  await db.sql`update orgs set timezone = 'America/New_York', sms = ${db.sql.json({ base_url: twilio.url, account_sid: "ACbolt", auth_token: "bolt-token", from: "+15125550200" })} where id = 2`;
  await db.sql`insert into org_billing (org_id, status, subscription, credits, sms_cost) values (1, 'active', 'active', 100, 0.01), (2, 'active', 'active', 100, 0.01)`;
  const agent = await makeUser(db.sql, { role: "agent", orgId: 1, id: "agent7", name: "Dana Diaz" });
  const root = await makeUser(db.sql, { role: "admin", orgId: null, id: "admin1", name: "Root" });
  await makeUser(db.sql, { role: "agent", orgId: 2, id: "agent9", name: "Eli Ek" });
  await db.sql`insert into users (id, org_id, name, email, role) values
    ('mgr1', 1, 'Mo Manager', 'mgr1@example.test', 'manager'), ('bob', 1, 'Bob Baker', 'bob@example.test', 'agent'),
    ('gone', 1, 'Gone Away', 'gone@example.test', 'agent'), ('plain', 1, 'Plain CTI', null, null)`;
  await db.sql`update users set disabled_at = now() where id = 'gone'`;
  callsKey = (await makeKey(db.sql, { scopes: ["calls:write"], org: 1 })).key;
  app = await startApp(db.url, { BASE_URL }, { clock });
  agentClient = await signIn(app.base, agent.email, agent.password);
  adminClient = await signIn(app.base, root.email, root.password);
});
afterAll(async () => {
  await app?.stop();
  await twilio?.stop();
  await db?.drop();
});

let phones = 0;
/** A new lead (list 101: Acme; 201: Bolt) with a unique phone. */
async function lead(o: { list?: number; first?: string; state?: string; email?: string } = {}): Promise<{ id: number; phone: string }> {
  const phone = `512${String(7_000_000 + ++phones).padStart(7, "0")}`;
  const [row] = await db.sql<{ id: number }[]>`
    insert into leads (list_id, phone, first_name, last_name, state, email)
    values (${o.list ?? 101}, ${phone}, ${o.first ?? "Lee"}, ${"N" + phones}, ${o.state ?? "TX"}, ${o.email ?? ""}) returning id`;
  return { id: row!.id, phone };
}

let sids = 0;
/** A text from `phone` to Acme's number, as Twilio signs and posts it. */
async function inbound(phone: string, body: string) {
  const r = await postCallback(app.base, BASE_URL, "/hooks/sms_inbound.php", ACME_TOKEN, {
    From: `+1${phone}`,
    To: ACME_NUMBER,
    Body: body,
    MessageSid: `SMin${++sids}`,
    AccountSid: "ACacme",
  });
  expect(r.status).toBe(200);
}

const conv = async (leadId: number) => (await db.sql`select * from conversations where lead_id = ${leadId}`)[0]!;
const report = (leadId: number, secs: number) =>
  call(app.base, "/hooks/calls.php", { method: "POST", key: callsKey, json: { lead_id: leadId, status: secs ? "ANSWERED" : "NA", secs, agent: "agent7" } });
const code = async (p: Promise<unknown>) => p.then(() => "ok", (err) => (err instanceof AppError ? err.code : String(err)));

describe("conversations kept by the facts that change them", () => {
  test("an inbound text opens the lead's conversation with its snippet, and the lead waits from it", async () => {
    const l = await lead();
    clock.set(T0);
    await inbound(l.phone, "Hi,\n  is the   quote still good?");
    const c = await conv(l.id);
    expect(c).toMatchObject({ org_id: 1, status: "open", assignee: null, last_channel: "sms", last_direction: "in", snippet: "Hi, is the quote still good?" });
    expect(c.last_activity_at.getTime()).toBe(T0);
    expect(c.waiting_since.getTime()).toBe(T0);
    // A second text keeps the wait's start and moves the activity.
    clock.set(T0 + 5 * MIN);
    await inbound(l.phone, "hello?");
    const again = await conv(l.id);
    expect(again.waiting_since.getTime()).toBe(T0);
    expect(again.last_activity_at.getTime()).toBe(T0 + 5 * MIN);
    expect(again.snippet).toBe("hello?");
  });

  test("an inbound text reopens a closed or snoozed conversation and puts it at the top", async () => {
    const closed = await lead();
    const snoozed = await lead();
    const other = await lead();
    clock.set(T0);
    for (const l of [closed, snoozed, other]) await inbound(l.phone, "first");
    await closeConversation(db.sql, mgr, (await conv(closed.id)).id, T0);
    await snoozeConversation(db.sql, mgr, (await conv(snoozed.id)).id, { preset: "next_week" }, T0);
    expect((await conv(closed.id)).status).toBe("closed");
    expect((await conv(closed.id)).waiting_since).toBeNull();
    expect((await conv(snoozed.id)).status).toBe("snoozed");
    clock.set(T0 + 10 * MIN);
    await inbound(other.phone, "a newer one");
    clock.set(T0 + 20 * MIN);
    await inbound(closed.phone, "back again");
    await inbound(snoozed.phone, "me too");
    expect(await conv(closed.id)).toMatchObject({ status: "open", snoozed_until: null });
    expect(await conv(snoozed.id)).toMatchObject({ status: "open", snoozed_until: null });
    expect((await conv(closed.id)).waiting_since.getTime()).toBe(T0 + 20 * MIN);
    const top = await inboxPage(db.sql, mgr, { view: "open" }, null, 3, clock.now());
    expect(top.rows.slice(0, 2).map((r) => r.lead_id).sort()).toEqual([closed.id, snoozed.id].sort());
    expect(top.rows[2]!.lead_id).toBe(other.id);
  });

  test("a reply from the console assigns an unassigned conversation to the sender and ends the wait", async () => {
    const l = await lead();
    clock.set(T0);
    await inbound(l.phone, "can someone call me");
    const sent = await agentClient.post(`/console/leads/${l.id}/send`, { channel: "sms", body: "On it", operation_id: `console-${crypto.randomUUID()}` });
    expect(sent.status).toBe(303);
    const c = await conv(l.id);
    expect(c).toMatchObject({ assignee: "agent7", status: "open", last_direction: "out", snippet: "On it", waiting_since: null });
    // Reassigned to Bob, a later reply by the agent leaves Bob's assignment alone.
    await assignConversation(db.sql, mgr, c.id, "bob", T0);
    await agentClient.post(`/console/leads/${l.id}/send`, { channel: "sms", body: "Still on it", operation_id: `console-${crypto.randomUUID()}` });
    expect((await conv(l.id)).assignee).toBe("bob");
  });

  test("a note neither assigns nor ends the wait; an admin's reply ends it without assigning (no organization); a key's too", async () => {
    const l = await lead();
    await inbound(l.phone, "hello");
    await agentClient.post(`/console/leads/${l.id}/send`, { channel: "note", body: "called, no answer", operation_id: `console-${crypto.randomUUID()}` });
    expect(await conv(l.id)).toMatchObject({ assignee: null, last_channel: "note", snippet: "called, no answer" });
    expect((await conv(l.id)).waiting_since).not.toBeNull();
    await adminClient.post(`/console/leads/${l.id}/send`, { channel: "sms", body: "Hello from HQ", operation_id: `console-${crypto.randomUUID()}` });
    expect(await conv(l.id)).toMatchObject({ assignee: null, waiting_since: null, last_direction: "out" });
    const k = await lead();
    await inbound(k.phone, "hi");
    const key = (await makeKey(db.sql, { scopes: ["messages:write"], org: 1 })).key;
    const r = await call(app.base, "/hooks/api_v1.php?r=messages", { method: "POST", key, json: { lead_id: k.id, channel: "sms", body: "Thanks!", operation_id: `k-${k.id}` } });
    expect(r.body.ok).toBe(true);
    expect(await conv(k.id)).toMatchObject({ assignee: null, waiting_since: null });
  });

  test("an automation's text makes a closed conversation, and the lead's answer opens it", async () => {
    const l = await lead();
    await db.sql`insert into messages (lead_id, org_id, channel, direction, actor_type, actor_id, body, status, created_at)
                 values (${l.id}, 1, 'sms', 'out', 'automation', '5', 'Welcome!', 'sent', ${new Date(T0)})`;
    expect(await conv(l.id)).toMatchObject({ status: "closed", snippet: "Welcome!", waiting_since: null });
    await inbound(l.phone, "thanks");
    expect((await conv(l.id)).status).toBe("open");
  });

  test("an email's snippet is its subject, else its text without tags", async () => {
    const l = await lead();
    await db.sql`insert into messages (lead_id, org_id, channel, direction, subject, body, status, created_at)
                 values (${l.id}, 1, 'email', 'in', '', ${"<p>Hello <b>there</b>,</p>\n<p>" + "x".repeat(300) + "</p>"}, 'received', ${new Date(T0)})`;
    const c = await conv(l.id);
    expect(c.snippet).toStartWith("Hello there , xxx");
    expect(c.snippet.length).toBe(140);
    await db.sql`insert into messages (lead_id, org_id, channel, direction, subject, body, status, created_at)
                 values (${l.id}, 1, 'email', 'out', 'Your quote', '<p>body</p>', 'sent', ${new Date(T0)})`;
    expect((await conv(l.id)).snippet).toBe("Your quote");
  });

  test("a missed call reopens and puts on top; an answered call moves the activity only; a call-made conversation starts by the call", async () => {
    const l = await lead();
    clock.set(T0);
    await inbound(l.phone, "hi");
    await closeConversation(db.sql, mgr, (await conv(l.id)).id, T0);
    clock.set(T0 + 30 * MIN);
    expect((await report(l.id, 45)).status).toBe(200);
    expect(await conv(l.id)).toMatchObject({ status: "closed" });
    expect((await conv(l.id)).last_activity_at.getTime()).toBe(T0 + 30 * MIN);
    clock.set(T0 + 40 * MIN);
    expect((await report(l.id, 0)).status).toBe(200);
    expect((await conv(l.id)).status).toBe("open");
    expect((await conv(l.id)).last_activity_at.getTime()).toBe(T0 + 40 * MIN);
    const top = await inboxPage(db.sql, mgr, { view: "open" }, null, 1, clock.now());
    expect(top.rows[0]!.lead_id).toBe(l.id);
    // Made by an answered call: closed (the call answered); by a missed one: open.
    const answered = await lead();
    const missed = await lead();
    await report(answered.id, 30);
    await report(missed.id, 0);
    expect((await conv(answered.id)).status).toBe("closed");
    expect((await conv(missed.id)).status).toBe("open");
    expect((await conv(missed.id)).last_message_id).toBeNull();
  });

  test("a lead moved to another organization takes its conversation along, without an assignee of the old one", async () => {
    await db.sql`insert into campaigns (id, org_id, name) values ('MOVE', 1, 'Moving')`;
    await db.sql`insert into lists (id, campaign_id, name) values (150, 'MOVE', 'Moving')`;
    const l = await lead({ list: 150 });
    await inbound(l.phone, "hi");
    await assignConversation(db.sql, mgr, (await conv(l.id)).id, "bob", T0);
    await db.sql`update campaigns set org_id = 2 where id = 'MOVE'`;
    expect(await conv(l.id)).toMatchObject({ org_id: 2, assignee: null });
    expect(await code(assignConversation(db.sql, mgr, (await conv(l.id)).id, "bob", T0))).toBe("not_found");
    expect(await conversationOfLead(db.sql, eli, l.id)).toMatchObject({ org_id: 2 });
  });
});

describe("the inbox's views", () => {
  // A world of its own in a third organization, so the other tests' rows do not count.
  const ORG = 3;
  const m3 = user("m3", ORG);
  const a3 = user("a3", ORG, true);
  const b3 = user("b3", ORG, true);
  const x3 = user("x3", 4); // another organization
  let rows: { id: number; lead_id: number; status: string; assignee: string | null; last_channel: string | null; t: number }[] = [];

  beforeAll(async () => {
    await db.sql`insert into orgs (id, name, timezone) values (3, 'Cedar', 'America/Denver'), (4, 'Dune', 'UTC')`;
    await db.sql`insert into campaigns (id, org_id) values ('CEDAR', 3), ('DUNE', 4)`;
    await db.sql`insert into lists (id, campaign_id) values (301, 'CEDAR'), (401, 'DUNE')`;
    await db.sql`insert into users (id, org_id, name, email, role) values ('m3', 3, 'Cy', 'm3@example.test', 'manager'),
      ('a3', 3, 'Ava', 'a3@example.test', 'agent'), ('b3', 3, 'Ben', 'b3@example.test', 'agent'), ('x3', 4, 'Xu', 'x3@example.test', 'agent')`;
    // 60 conversations in Cedar, 10 in Dune, activity a minute apart (some at the same instant, for
    // the keyset's tie-break), spread over statuses, assignees and channels.
    for (let i = 0; i < 70; i++) {
      const l = await lead({ list: i < 60 ? 301 : 401 });
      const channel = ["sms", "email", "note"][i % 3]!;
      const t = T0 - Math.floor(i / 2) * MIN;
      await db.sql`insert into messages (lead_id, org_id, channel, direction, actor_type, body, status, created_at)
                   values (${l.id}, ${i < 60 ? ORG : 4}, ${channel}, ${i % 2 ? "in" : "out"}, 'api_key', ${"m" + i}, 'sent', ${new Date(t)})`;
    }
    const cs = await db.sql<{ id: number; lead_id: number }[]>`select c.id, c.lead_id from conversations c where c.org_id in (3, 4) order by c.id`;
    const cedar = cs.slice(0, 60).map((c) => c.id);
    await bulkAssign(db.sql, m3, cedar.filter((_, i) => i % 4 === 0), "a3", T0);
    await bulkAssign(db.sql, m3, cedar.filter((_, i) => i % 4 === 1), "b3", T0);
    await bulkSnooze(db.sql, m3, cedar.filter((_, i) => i % 5 === 2), { preset: "tomorrow" }, T0);
    await bulkClose(db.sql, m3, cedar.filter((_, i) => i % 5 === 3), T0);
    rows = (await db.sql`select id, lead_id, status, assignee, last_channel, last_activity_at from conversations where org_id = 3`).map((r) => ({
      id: r.id, lead_id: r.lead_id, status: r.status, assignee: r.assignee, last_channel: r.last_channel, t: r.last_activity_at.getTime(),
    }));
  });

  /** Every page of a view, walked with its cursors. */
  async function walk(actor: Actor, f: InboxFilter, size: number): Promise<InboxRow[]> {
    const out: InboxRow[] = [];
    let cursor = null;
    for (let pages = 0; pages < 100; pages++) {
      const page: Awaited<ReturnType<typeof inboxPage>> = await inboxPage(db.sql, actor, f, cursor, size, T0);
      out.push(...page.rows);
      if (page.next === null) return out;
      cursor = page.next;
    }
    throw new Error("too many pages");
  }
  const newestFirst = (a: { t: number; id: number }, b: { t: number; id: number }) => b.t - a.t || b.id - a.id;
  const expected = (keep: (r: (typeof rows)[number]) => boolean) => rows.filter(keep).sort(newestFirst).map((r) => r.id);

  test("each view lists what its rule says, newest activity first, every page once", async () => {
    const cases: [Actor, InboxFilter, (r: (typeof rows)[number]) => boolean][] = [
      [m3, { view: "open" }, (r) => r.status === "open"],
      [m3, { view: "snoozed" }, (r) => r.status === "snoozed"],
      [m3, { view: "closed" }, (r) => r.status === "closed"],
      [m3, { view: "unassigned" }, (r) => r.status === "open" && r.assignee === null],
      [a3, { view: "mine" }, (r) => r.status === "open" && r.assignee === "a3"],
      [m3, { view: "mine" }, () => false],
      [m3, { view: "open", channel: "email" }, (r) => r.status === "open" && r.last_channel === "email"],
      [m3, { view: "open", assignee: "b3" }, (r) => r.status === "open" && r.assignee === "b3"],
      [m3, { view: "closed", assignee: "none" }, (r) => r.status === "closed" && r.assignee === null],
      [m3, { view: "unassigned", channel: "sms" }, (r) => r.status === "open" && r.assignee === null && r.last_channel === "sms"],
      [m3, { view: "unassigned", assignee: "a3" }, () => false],
    ];
    for (const [actor, f, keep] of cases) {
      const want = expected(keep);
      for (const size of [1, 4, 50]) {
        const got = (await walk(actor, f, size)).map((r) => r.id);
        expect({ actor: actor.id, f, size, got }).toEqual({ actor: actor.id, f, size, got: want });
      }
    }
    expect(expected((r) => r.status === "open").length).toBeGreaterThan(10);
  });

  test("another organization's user sees none of them; an admin sees them among every organization's", async () => {
    const dune = await walk(x3, { view: "open" }, 50);
    expect(dune.every((r) => r.org_id === 4)).toBe(true);
    expect(dune).toHaveLength(10);
    const all = await walk(admin, { view: "open" }, 50);
    const cedarOpen = expected((r) => r.status === "open");
    expect(all.filter((r) => r.org_id === 3).map((r) => r.id)).toEqual(cedarOpen);
    expect(all.some((r) => r.org_id === 1) && all.some((r) => r.org_id === 4)).toBe(true);
    // A filter naming another organization's user finds nothing of Cedar's.
    expect(await walk(x3, { view: "open", assignee: "a3" }, 50)).toEqual([]);
  });

  test("counts per view, exact up to the cap and cap + 1 beyond", async () => {
    const n = (keep: (r: (typeof rows)[number]) => boolean) => rows.filter(keep).length;
    const exact = await viewCounts(db.sql, a3, 1000);
    expect(exact).toEqual({
      open: n((r) => r.status === "open"),
      snoozed: n((r) => r.status === "snoozed"),
      closed: n((r) => r.status === "closed"),
      unassigned: n((r) => r.status === "open" && r.assignee === null),
      mine: n((r) => r.status === "open" && r.assignee === "a3"),
    });
    const capped = await viewCounts(db.sql, a3, 5);
    expect(capped.open).toBe(6);
    expect(capped.mine).toBe(Math.min(6, exact.mine));
    expect(await viewCounts(db.sql, x3, 1000)).toEqual({ open: 10, snoozed: 0, closed: 0, unassigned: 10, mine: 0 });
  });

  test("a row carries what the list shows: name or phone, snippet, channel, direction, wait, assignee's name, opted-out and quiet-hours badges", async () => {
    const l = await lead({ first: "Quinn", state: "HI", email: "q@example.com" });
    clock.set(T0);
    await inbound(l.phone, "aloha");
    await assignConversation(db.sql, mgr, (await conv(l.id)).id, "bob", T0);
    await db.sql`insert into lead_channels (lead_id, channel, address, consent) values (${l.id}, 'email', 'q@example.com', 'out')`;
    const [row] = (await inboxPage(db.sql, mgr, { view: "open", assignee: "bob" }, null, 1, T0)).rows;
    expect(row).toMatchObject({
      lead_id: l.id, name: `Quinn N${phones}`, phone: l.phone, snippet: "aloha", last_channel: "sms", last_direction: "in",
      assignee: "bob", assignee_name: "Bob Baker", sms_opted_out: false, email_opted_out: true, callback_due: false, timezone: "America/Chicago",
    });
    expect(row!.waiting_since!.getTime()).toBe(T0);
    // 07:00 in Honolulu: inside Acme's 21:00-08:00 quiet hours (the recipient's zone, from the state), until 08:00 there.
    expect(row!.quiet_until).toBe(Date.parse("2026-01-14T18:00:00Z"));
    const texan = (await inboxPage(db.sql, mgr, { view: "open" }, null, 50, T0)).rows.find((r) => r.org_id === 1 && r.lead_id !== l.id)!;
    expect(texan.quiet_until).toBeNull();
    // A STOP opts the SMS channel out; the badge follows (every org lead on that phone).
    await inbound(l.phone, "STOP");
    expect((await inboxPage(db.sql, mgr, { view: "open", assignee: "bob" }, null, 1, T0)).rows[0]!.sms_opted_out).toBe(true);
    expect(parseListCursor(row!.cursor)).toEqual({ micros: T0 * 1000, id: row!.id });
  });
});

describe("actions", () => {
  async function pair() {
    const a = await lead();
    const b = await lead({ list: 201 });
    await inbound(a.phone, "acme lead");
    await db.sql`insert into messages (lead_id, org_id, channel, direction, body, status, created_at) values (${b.id}, 2, 'sms', 'in', 'bolt lead', 'received', ${new Date(T0)})`;
    return { acme: (await conv(a.id)).id, bolt: (await conv(b.id)).id, acmeLead: a.id, boltLead: b.id };
  }
  const snapshot = async (id: number) => (await db.sql`select * from conversations where id = ${id}`)[0];
  const audits = async (id: number) => [...(await db.sql`select org_id, actor_id, action, details from audit_log where target = ${"conversation:" + id} order by id`)];

  test("assign to a console user of the conversation's organization, audited with what changed", async () => {
    const { acme } = await pair();
    expect(await assignConversation(db.sql, mgr, acme, "bob", T0)).toEqual({ changed: true });
    expect(await assignConversation(db.sql, mgr, acme, "bob", T0)).toEqual({ changed: false });
    expect(await assignConversation(db.sql, ann, acme, "agent7", T0)).toEqual({ changed: true });
    expect(await assignConversation(db.sql, ann, acme, null, T0)).toEqual({ changed: true });
    expect((await snapshot(acme)).assignee).toBeNull();
    expect(await audits(acme)).toEqual([
      { org_id: 1, actor_id: "mgr1", action: "conversation.assign", details: expect.objectContaining({ from: null, to: "bob" }) },
      { org_id: 1, actor_id: "agent7", action: "conversation.assign", details: expect.objectContaining({ from: "bob", to: "agent7" }) },
      { org_id: 1, actor_id: "agent7", action: "conversation.unassign", details: expect.objectContaining({ from: "agent7", to: null }) },
    ]);
  });

  test("a user of another organization, an admin, a disabled user, a user without a role or none at all is refused as not found, changing nothing", async () => {
    const { acme } = await pair();
    const before = await snapshot(acme);
    for (const who of ["agent9", "admin1", "gone", "plain", "nobody"]) {
      expect({ who, r: await code(assignConversation(db.sql, mgr, acme, who, T0)) }).toEqual({ who, r: "not_found" });
    }
    expect(await snapshot(acme)).toEqual(before);
    expect(await audits(acme)).toEqual([]);
  });

  test("another organization's conversation answers every action not_found and is never touched", async () => {
    const { acme, bolt } = await pair();
    const before = await snapshot(acme);
    const tries = [
      () => assignConversation(db.sql, eli, acme, "agent9", T0),
      () => assignConversation(db.sql, eli, acme, null, T0),
      () => snoozeConversation(db.sql, eli, acme, { preset: "hour" }, T0),
      () => closeConversation(db.sql, eli, acme, T0),
      () => reopenConversation(db.sql, eli, acme, T0),
      () => closeConversation(db.sql, eli, 999_999_999, T0),
    ];
    for (const t of tries) expect(await code(t())).toBe("not_found");
    expect(await snapshot(acme)).toEqual(before);
    expect(await audits(acme)).toEqual([]);
    // Bolt's own works, and an admin reaches both.
    expect(await closeConversation(db.sql, eli, bolt, T0)).toEqual({ changed: true });
    expect(await reopenConversation(db.sql, admin, bolt, T0)).toEqual({ changed: true });
    expect((await audits(bolt)).map((r) => [r.org_id, r.actor_id, r.action])).toEqual([[2, "agent9", "conversation.close"], [2, "admin1", "conversation.reopen"]]);
  });

  test("snooze presets in the organization's zone, close (ending the wait), reopen; a past time is invalid_input", async () => {
    const { acme } = await pair();
    await snoozeConversation(db.sql, mgr, acme, { preset: "tomorrow" }, T0);
    // Wednesday 11:00 in Chicago → Thursday 9:00 CST.
    expect(await snapshot(acme)).toMatchObject({ status: "snoozed", snoozed_until: new Date("2026-01-15T15:00:00Z") });
    await snoozeConversation(db.sql, mgr, acme, { until: "2026-01-20T13:30" }, T0);
    expect((await snapshot(acme)).snoozed_until).toEqual(new Date("2026-01-20T19:30:00Z"));
    expect(await code(snoozeConversation(db.sql, mgr, acme, { until: "2026-01-14T10:59" }, T0))).toBe("invalid_input");
    expect(await code(snoozeConversation(db.sql, mgr, acme, { until: "soon" }, T0))).toBe("invalid_input");
    await closeConversation(db.sql, mgr, acme, T0);
    expect(await snapshot(acme)).toMatchObject({ status: "closed", snoozed_until: null, waiting_since: null });
    await reopenConversation(db.sql, mgr, acme, T0);
    expect(await snapshot(acme)).toMatchObject({ status: "open", snoozed_until: null });
    expect((await audits(acme)).map((r) => r.action)).toEqual(["conversation.snooze", "conversation.snooze", "conversation.close", "conversation.reopen"]);
  });

  test("bulk actions change the actor's organization's conversations only; other ids are left out and untouched", async () => {
    const p = await Promise.all([pair(), pair(), pair()]);
    const acmeIds = p.map((x) => x.acme).sort((a, b) => a - b);
    const boltIds = p.map((x) => x.bolt).sort((a, b) => a - b);
    const bolts = await Promise.all(boltIds.map(snapshot));
    const mixed = [...acmeIds, ...boltIds, 999_999_998];
    expect(await bulkAssign(db.sql, mgr, mixed, "bob", T0)).toEqual({ changed: acmeIds, unchanged: [] });
    expect(await bulkAssign(db.sql, mgr, mixed, "agent9", T0)).toEqual({ changed: [], unchanged: acmeIds });
    expect(await bulkSnooze(db.sql, mgr, mixed, { preset: "hour" }, T0)).toEqual({ changed: acmeIds, unchanged: [] });
    expect((await snapshot(acmeIds[0]!)).snoozed_until).toEqual(new Date(T0 + 60 * MIN));
    expect(await bulkClose(db.sql, mgr, mixed, T0)).toEqual({ changed: acmeIds, unchanged: [] });
    expect(await bulkReopen(db.sql, mgr, [...mixed.map(String)], T0)).toEqual({ changed: acmeIds, unchanged: [] });
    expect(await Promise.all(boltIds.map(snapshot))).toEqual(bolts);
    for (const id of boltIds) expect(await audits(id)).toEqual([]);
    expect((await audits(acmeIds[0]!)).map((r) => r.action)).toEqual(["conversation.assign", "conversation.snooze", "conversation.close", "conversation.reopen"]);
    // An admin's bulk spans organizations; an assignee still only within their own.
    expect(await bulkAssign(db.sql, admin, mixed, "agent9", T0)).toEqual({ changed: boltIds, unchanged: acmeIds });
    expect((await audits(boltIds[0]!)).map((r) => [r.org_id, r.action])).toEqual([[2, "conversation.assign"]]);
  });

  test("bulk input out of bounds is invalid_input", async () => {
    for (const ids of [[], Array.from({ length: 501 }, (_, i) => i + 1), ["x"], [0], [1.5], [null]]) {
      expect(await code(bulkClose(db.sql, mgr, ids as unknown[], T0))).toBe("invalid_input");
    }
    expect(await code(bulkSnooze(db.sql, mgr, [1], { until: "nope" }, T0))).toBe("invalid_input");
  });

  test("bulk actions racing over the same conversations in opposite orders all finish (rows are locked in id order)", async () => {
    const p = await Promise.all(Array.from({ length: 30 }, () => pair()));
    const ids = p.map((x) => x.acme);
    const runs = Array.from({ length: 60 }, (_, i) =>
      i % 2 ? bulkAssign(db.sql, mgr, [...ids].reverse(), i % 4 === 1 ? "bob" : "agent7", T0) : bulkSnooze(db.sql, mgr, ids, { preset: "hour" }, T0 + i),
    );
    const results = await Promise.allSettled(runs);
    expect(results.filter((r) => r.status === "rejected")).toEqual([]);
  });

  test("snoozes that have ended are opened by the sweep, at their end's place; later ones stay", async () => {
    const { acme } = await pair();
    const { acme: later } = await pair();
    await snoozeConversation(db.sql, mgr, acme, { preset: "hour" }, T0);
    await snoozeConversation(db.sql, mgr, later, { preset: "tomorrow" }, T0);
    expect(await openEndedSnoozes(db.sql, T0 + 59 * MIN)).not.toContain(acme);
    expect(await openEndedSnoozes(db.sql, T0 + 60 * MIN)).toContain(acme);
    expect(await snapshot(acme)).toMatchObject({ status: "open", snoozed_until: null, last_activity_at: new Date(T0 + 60 * MIN) });
    expect((await snapshot(later)).status).toBe("snoozed");
  });

  test("the served instance's sweep opens a snooze once its clock passes the end", async () => {
    const { acme } = await pair();
    clock.set(T0);
    await snoozeConversation(db.sql, mgr, acme, { preset: "hour" }, T0);
    clock.set(T0 + 61 * MIN);
    for (let i = 0; i < 100 && (await snapshot(acme)).status === "snoozed"; i++) await Bun.sleep(50);
    expect((await snapshot(acme)).status).toBe("open");
    clock.set(T0);
  });
});

describe("callbacks", () => {
  const dialsOf = async (agent: string, leadId: number) => [...(await db.sql`select agent, lead_id, phone, status, queued_org_id from dials where agent = ${agent} and lead_id = ${leadId}`)];
  const waitFor = async (ok: () => Promise<boolean>) => {
    for (let i = 0; i < 200 && !(await ok()); i++) await Bun.sleep(25);
    expect(await ok()).toBe(true);
  };

  test("scheduled in the organization's zone for the conversation's assignee, else for the console user scheduling it", async () => {
    const l = await lead();
    clock.set(T0);
    const cb = await scheduleCallback(db.sql, ann, { leadId: l.id, at: "2026-01-15T10:00", note: " call about the roof " }, T0);
    expect(cb).toMatchObject({ lead_id: l.id, assignee: "agent7", assignee_name: "Dana Diaz", status: "scheduled", note: "call about the roof", dial: false, due_at: new Date("2026-01-15T16:00:00Z") });
    // The lead had no conversation: scheduling made it, open.
    expect((await conv(l.id)).status).toBe("open");
    await assignConversation(db.sql, mgr, (await conv(l.id)).id, "bob", T0);
    expect((await scheduleCallback(db.sql, mgr, { leadId: l.id, at: T0 + 60 * MIN }, T0)).assignee).toBe("bob");
    expect((await scheduleCallback(db.sql, mgr, { leadId: l.id, at: T0 + 60 * MIN, assignee: "agent7" }, T0)).assignee).toBe("agent7");
    const listed = await leadCallbacks(db.sql, mgr, l.id);
    expect(listed).toHaveLength(3);
    expect(await leadCallbacks(db.sql, eli, l.id)).toEqual([]);
    expect(await db.sql`select action, target from audit_log where action = 'callback.schedule' and target = ${"lead:" + l.id}`).toHaveLength(3);
  });

  test("refused: another organization's lead or assignee (not_found), an agent's dial for someone else (not_found), a dial with nobody to dial, a past time", async () => {
    const l = await lead();
    const theirs = await lead({ list: 201 });
    expect(await code(scheduleCallback(db.sql, eli, { leadId: l.id, at: T0 + MIN }, T0))).toBe("not_found");
    expect(await code(scheduleCallback(db.sql, mgr, { leadId: theirs.id, at: T0 + MIN }, T0))).toBe("not_found");
    expect(await code(scheduleCallback(db.sql, mgr, { leadId: l.id, at: T0 + MIN, assignee: "agent9" }, T0))).toBe("not_found");
    expect(await code(scheduleCallback(db.sql, mgr, { leadId: l.id, at: T0 + MIN, assignee: "gone" }, T0))).toBe("not_found");
    expect(await code(scheduleCallback(db.sql, ann, { leadId: l.id, at: T0 + MIN, assignee: "bob", dial: true }, T0))).toBe("not_found");
    expect(await code(scheduleCallback(db.sql, admin, { leadId: l.id, at: T0 + MIN, dial: true }, T0))).toBe("invalid_input");
    expect(await code(scheduleCallback(db.sql, mgr, { leadId: l.id, at: T0 - MIN }, T0))).toBe("invalid_input");
    expect(await code(scheduleCallback(db.sql, mgr, { leadId: l.id, at: "2026-13-01T10:00" }, T0))).toBe("invalid_input");
    expect(await code(scheduleCallback(db.sql, mgr, { leadId: l.id, at: T0 + MIN, note: "x".repeat(2001) }, T0))).toBe("invalid_input");
    // Nothing was made for the other organization's lead, and no callback for anyone.
    expect(await conv(theirs.id)).toBeUndefined();
    expect([...(await db.sql`select 1 from callbacks where lead_id in (${l.id}, ${theirs.id})`)]).toEqual([]);
  });

  test("a due callback reopens its conversation at the top, gives it to the assignee, queues the dial, and shows in the assignee's Mine view and work", async () => {
    const l = await lead();
    const busy = await lead();
    clock.set(T0);
    await inbound(l.phone, "call me tomorrow");
    await closeConversation(db.sql, mgr, (await conv(l.id)).id, T0);
    const cb = await scheduleCallback(db.sql, mgr, { leadId: l.id, at: T0 + 30 * MIN, assignee: "bob", dial: true, note: "tomorrow" }, T0);
    clock.set(T0 + 20 * MIN);
    await inbound(busy.phone, "newer than the callback's scheduling");
    expect((await findCallback(db.sql, mgr, cb.id))!.status).toBe("scheduled");
    expect(await dialsOf("bob", l.id)).toEqual([]);
    clock.set(T0 + 31 * MIN);
    await waitFor(async () => (await findCallback(db.sql, mgr, cb.id))!.status === "due");
    expect(await conv(l.id)).toMatchObject({ status: "open", assignee: "bob" });
    expect((await conv(l.id)).last_activity_at.getTime()).toBe(T0 + 31 * MIN);
    expect(await dialsOf("bob", l.id)).toEqual([{ agent: "bob", lead_id: l.id, phone: l.phone, status: "pending", queued_org_id: 1 }]);
    expect((await findCallback(db.sql, mgr, cb.id))!.dial_id).not.toBeNull();
    // At the top of what happened by now: earlier tests' callbacks (due at T0 + 60 min) may have
    // been made due by the worker while their clock ran ahead, and sort above it.
    const bobs = await inboxPage(db.sql, bob, { view: "mine" }, null, 50, clock.now());
    const now = bobs.rows.filter((r) => r.last_activity_at.getTime() <= T0 + 31 * MIN);
    expect(now[0]).toMatchObject({ lead_id: l.id, callback_due: true });
    const work = await myWork(db.sql, bob, clock.now());
    expect(work.dueCallbacks.map((c) => c.id)).toContain(cb.id);
    expect(work.dials.map((d) => d.lead_id)).toContain(l.id);
    expect(work.conversations.map((c) => c.lead_id)).toContain(l.id);
    expect((await myWork(db.sql, eli, clock.now())).dueCallbacks).toEqual([]);
    clock.set(T0);
  });

  test("a due callback of a conversation assigned to someone else surfaces in the callback's assignee's Mine view too", async () => {
    const l = await lead();
    clock.set(T0);
    await inbound(l.phone, "hi");
    await assignConversation(db.sql, mgr, (await conv(l.id)).id, "agent7", T0);
    const cb = await scheduleCallback(db.sql, mgr, { leadId: l.id, at: T0 + MIN, assignee: "bob" }, T0);
    clock.set(T0 + 2 * MIN);
    await waitFor(async () => (await findCallback(db.sql, mgr, cb.id))!.status === "due");
    expect((await conv(l.id)).assignee).toBe("agent7");
    const mine = await inboxPage(db.sql, bob, { view: "mine" }, null, 200, clock.now());
    expect(mine.rows.map((r) => r.lead_id)).toContain(l.id);
    expect((await viewCounts(db.sql, bob, 1000)).mine).toBe(mine.rows.length);
    // Done, it leaves Bob's Mine; the conversation stays Dana's.
    expect(await closeCallback(db.sql, bob, cb.id, "done", clock.now())).toEqual({ changed: true });
    expect((await inboxPage(db.sql, bob, { view: "mine" }, null, 200, clock.now())).rows.map((r) => r.lead_id)).not.toContain(l.id);
    clock.set(T0);
  });

  test("cancelled before its time it never comes due; done and cancelled are final; another organization's is not found", async () => {
    const l = await lead();
    clock.set(T0);
    const cb = await scheduleCallback(db.sql, mgr, { leadId: l.id, at: T0 + MIN, assignee: "bob", dial: true }, T0);
    expect(await code(closeCallback(db.sql, eli, cb.id, "cancelled", T0))).toBe("not_found");
    expect(await closeCallback(db.sql, mgr, cb.id, "cancelled", T0)).toEqual({ changed: true });
    expect(await closeCallback(db.sql, mgr, cb.id, "done", T0)).toEqual({ changed: false });
    expect([...(await db.sql`select 1 from jobs where kind = 'workspace.callback' and ref = ${cb.id}`)]).toEqual([]);
    clock.set(T0 + 5 * MIN);
    await Bun.sleep(600);
    expect((await findCallback(db.sql, mgr, cb.id))!.status).toBe("cancelled");
    expect(await dialsOf("bob", l.id)).toEqual([]);
    clock.set(T0);
  });
});

describe("my work", () => {
  test("an agent's pending and claimed dials (within reach), due callbacks, next callbacks and open conversations; nothing of another agent's or organization's", async () => {
    const l = await lead();
    const other = await lead({ list: 201 });
    await db.sql`insert into dials (agent, queued_org_id, lead_id, phone, status) values
      ('agent9', 2, ${other.id}, ${other.phone}, 'pending'), ('agent9', 2, ${other.id}, ${other.phone}, 'dialing'),
      ('agent9', 2, ${other.id}, ${other.phone}, 'done'), ('bob', 1, ${l.id}, ${l.phone}, 'pending')`;
    await scheduleCallback(db.sql, eli, { leadId: other.id, at: T0 + 90 * MIN }, T0);
    const work = await myWork(db.sql, eli, T0);
    expect(work.dials.map((d) => [d.lead_id, d.status])).toEqual([[other.id, "pending"], [other.id, "dialing"]]);
    expect(work.nextCallbacks.map((c) => c.lead_id)).toEqual([other.id]);
    expect(work.conversations.every((c) => c.org_id === 2)).toBe(true);
    expect((await myWork(db.sql, admin, T0)).dials).toEqual([]);
  });
});
