// Email unsubscribe by a link (RFC 8058 one-click; issue 31; src/messages/unsubscribe.ts) through
// the served app, the mail received by an SMTP server on 127.0.0.1 and read with mailparser, the
// clock passed in: every non-transactional email carries List-Unsubscribe and
// List-Unsubscribe-Post; a GET of the link changes nothing; its POST opts the address out of the
// organization's email, with the time and source, and the next send is refused; a forged or
// altered link does nothing; an appointment's own email (transactional) has no link.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { systemActor } from "../src/auth/actor";
import { sendMessage } from "../src/messages/service";
import { messageOfToken, unsubscribeToken } from "../src/messages/unsubscribe";
import { call, startApp, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeKey, seedWorld } from "./harness/factory";
import { startFakeSmtp, type FakeSmtp, type ReceivedMail } from "./harness/fake-smtp";

const BASE_URL = "https://leadline.example";
const DAY = Date.UTC(2026, 0, 15, 18);
const clock = new ManualClock(DAY);
let db: TestDatabase;
let app: TestApp;
let smtp: FakeSmtp;
let acme: string;
let bolt: string;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  smtp = await startFakeSmtp();
  app = await startApp(db.url, { BASE_URL }, { clock });
  acme = (await makeKey(db.sql, { scopes: ["messages:write"], org: 1 })).key;
  bolt = (await makeKey(db.sql, { scopes: ["messages:write"], org: 2 })).key;
  for (const org of [1, 2]) {
    await db.sql`
      update orgs set company = ${org === 1 ? "Acme Roofing LLC" : "Bolt Plumbing"}, quiet_start = null, quiet_end = null,
        email = ${db.sql.json({ smtp_url: smtp.url(), from: "Shop <hello@shop.example>" })}
      where id = ${org}`;
    await db.sql`insert into org_billing (org_id, status, subscription, credits, sms_cost, email_cost) values (${org}, 'active', 'active', 100, 0.01, 0.001)`;
  }
});
afterAll(async () => {
  await app?.stop();
  await smtp?.stop();
  await db?.drop();
});
beforeEach(() => {
  clock.set(DAY);
  smtp.reset();
});

let seq = 0;
async function lead(o: { list?: number; email?: string } = {}) {
  const [row] = await db.sql<{ id: number }[]>`
    insert into leads (list_id, phone, first_name, email, state)
    values (${o.list ?? 101}, ${`512558${String(++seq).padStart(4, "0")}`}, 'Dana', ${o.email ?? `reader${seq}@example.com`}, 'TX')
    returning id`;
  return row.id;
}

let op = 0;
const sendEmail = (key: string, leadId: number) =>
  call(app.base, "/hooks/api_v1.php?r=messages", { method: "POST", key, json: { lead_id: leadId, channel: "email", subject: "News", body: "<p>Hi {first_name}</p>", operation_id: `unsub-${++op}` } });

/** A header's raw value as it went over the wire (unfolded). */
function rawHeader(mail: ReceivedMail, name: string): string | null {
  const head = mail.raw.split(/\r?\n\r?\n/)[0].replace(/\r?\n[ \t]+/g, " ");
  const line = head.split(/\r?\n/).find((l) => l.toLowerCase().startsWith(name.toLowerCase() + ":"));
  return line === undefined ? null : line.slice(name.length + 1).trim();
}

/** Sends an email through the API and answers the link its List-Unsubscribe header carries. */
async function mailedLink(leadId: number, key = acme): Promise<{ url: string; path: string; mail: ReceivedMail; messageId: number }> {
  const before = smtp.mails.length;
  const r = await sendEmail(key, leadId);
  const messageId = r.body.message_id;
  expect(r.body).toEqual({ ok: true, message_id: messageId });
  await smtp.waitFor(before + 1);
  const mail = smtp.mails[before];
  const header = rawHeader(mail, "List-Unsubscribe");
  const url = /^<(https:\/\/[^>]+)>$/.exec(header ?? "")?.[1];
  expect(url).toBeDefined();
  return { url: url!, path: new URL(url!).pathname, mail, messageId };
}

const consentOf = (leadId: number) => db.sql`select consent, consent_at, consent_source from lead_channels where lead_id = ${leadId} and channel = 'email'`;
const oneClick = (path: string, body = "List-Unsubscribe=One-Click") =>
  call(app.base, path, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body });

describe("the headers", () => {
  test("a non-transactional email carries one HTTPS List-Unsubscribe link to BASE_URL and List-Unsubscribe-Post: List-Unsubscribe=One-Click", async () => {
    const id = await lead();
    const { url, mail, messageId } = await mailedLink(id);
    expect(url.startsWith(`${BASE_URL}/unsubscribe/${messageId}.`)).toBe(true);
    expect(rawHeader(mail, "List-Unsubscribe-Post")).toBe("List-Unsubscribe=One-Click");
    // mailparser reads both as the message's list headers.
    expect(mail.parsed.headers.get("list")).toEqual({ unsubscribe: { url }, "unsubscribe-post": { name: "List-Unsubscribe=One-Click" } });
    // The link names the message, signed; the key is the installation's.
    expect(messageOfToken(app.running.deps.unsubscribeKey, url.split("/").at(-1)!)).toBe(messageId);
  });

  test("an appointment's own email (it carries the appointment's .ics: transactional) has no unsubscribe link", async () => {
    const id = await lead();
    const env = { baseUrl: BASE_URL, unsubscribeKey: app.running.deps.unsubscribeKey };
    const actor = systemActor("automation", "7", 1);
    const ics = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nEND:VCALENDAR\r\n";
    const sent = await sendMessage(db.sql, actor, { leadId: id, channel: "email", body: "See you", subject: "Booked", operationId: "automation/7/appointment/1", extras: { ics } }, clock.now(), env);
    expect(sent).toMatchObject({ ok: true });
    const plain = await sendMessage(db.sql, actor, { leadId: id, channel: "email", body: "Hi", subject: "Welcome", operationId: "automation/7/lead/1" }, clock.now(), env);
    expect(plain).toMatchObject({ ok: true });
    await smtp.waitFor(2);
    const [appointment, welcome] = smtp.mails;
    expect(appointment.parsed.attachments.map((a) => a.filename)).toEqual(["appointment.ics"]);
    expect(rawHeader(appointment, "List-Unsubscribe")).toBeNull();
    expect(rawHeader(appointment, "List-Unsubscribe-Post")).toBeNull();
    expect(rawHeader(welcome, "List-Unsubscribe")).toMatch(/^<https:\/\/leadline\.example\/unsubscribe\/\d+\.[A-Za-z0-9_-]{22}>$/);
  });

  test("a plain-http BASE_URL (a local installation) gets the link without the one-click claim, which RFC 8058 reserves for HTTPS", async () => {
    const id = await lead();
    const env = { baseUrl: "http://127.0.0.1:8080", unsubscribeKey: app.running.deps.unsubscribeKey };
    const sent = await sendMessage(db.sql, systemActor("automation", "8", 1), { leadId: id, channel: "email", body: "Hi", subject: "Local", operationId: "automation/8/lead/1" }, clock.now(), env);
    expect(sent).toMatchObject({ ok: true });
    await smtp.waitFor(1);
    expect(rawHeader(smtp.mails[0], "List-Unsubscribe")).toMatch(/^<http:\/\/127\.0\.0\.1:8080\/unsubscribe\/\d+\.[A-Za-z0-9_-]{22}>$/);
    expect(rawHeader(smtp.mails[0], "List-Unsubscribe-Post")).toBeNull();
  });
});

describe("the link", () => {
  test("a GET shows a confirm page and changes nothing; the one-click POST opts the address out with its time and source; the next send is refused", async () => {
    const email = `twice${seq}@example.com`;
    const id = await lead({ email });
    const sibling = await lead({ email }); // the same person on a newer lead of the organization
    const { path } = await mailedLink(id);
    const page = await call(app.base, path);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("referrer-policy")).toBe("no-referrer");
    expect(page.body).toContain("Stop emails from Acme Roofing LLC");
    expect(page.body).toContain('<form method="post">');
    expect(page.body).not.toContain(email);
    expect([...(await consentOf(id))]).toEqual([]);

    clock.set(DAY + 3_600_000);
    const done = await oneClick(path);
    expect(done.status).toBe(200);
    expect(done.body).toContain("You are unsubscribed");
    for (const leadId of [id, sibling]) {
      expect([...(await consentOf(leadId))]).toEqual([{ consent: "out", consent_at: new Date(DAY + 3_600_000), consent_source: "unsubscribe_link" }]);
    }
    expect((await db.sql`select label from lead_events where lead_id = ${id} and event = 'consent.changed'`).map((r) => r.label)).toEqual(["Email consent: out (unsubscribe link)"]);
    const again = await sendEmail(acme, id);
    expect(again.body).toEqual({ ok: false, message_id: null, reason: "opted_out" });
    expect((await sendEmail(acme, sibling)).body.reason).toBe("opted_out");

    // Repeated (a mail client retrying), or from the page's button without the field: nothing changes.
    clock.set(DAY + 7_200_000);
    expect((await oneClick(path)).status).toBe(200);
    expect((await oneClick(path, "")).status).toBe(200);
    expect([...(await consentOf(id))]).toEqual([{ consent: "out", consent_at: new Date(DAY + 3_600_000), consent_source: "unsubscribe_link" }]);
    expect((await db.sql`select count(*)::int as n from lead_events where lead_id = ${id} and event = 'consent.changed'`)[0].n).toBe(1);
  });

  test("a forged, altered or foreign link is a 404 page and changes nothing", async () => {
    const id = await lead();
    const { path, messageId } = await mailedLink(id);
    const token = path.split("/").at(-1)!;
    const [, mac] = token.split(".");
    const flipped = mac.slice(0, -1) + (mac.at(-1) === "A" ? "B" : "A");
    // A note of the same lead: a message of ours, but no email went to anyone.
    const note = await call(app.base, "/hooks/api_v1.php?r=messages", { method: "POST", key: acme, json: { lead_id: id, channel: "note", body: "n", operation_id: `unsub-note-${seq}` } });
    const noteToken = unsubscribeToken(app.running.deps.unsubscribeKey, note.body.message_id);
    for (const bad of [
      `${messageId}.${flipped}`,
      `${messageId + 1}.${mac}`,
      `${messageId}.${mac}x`,
      `${messageId}`,
      "0.AAAAAAAAAAAAAAAAAAAAAA",
      `99999999999999999999.${mac}`,
      unsubscribeToken(Buffer.alloc(32, 7), messageId),
      noteToken,
      "%00",
      "x".repeat(500),
    ]) {
      const get = await call(app.base, `/unsubscribe/${bad}`);
      const post = await oneClick(`/unsubscribe/${bad}`);
      expect([bad, get.status, post.status]).toEqual([bad, 404, 404]);
      expect(post.body).toContain("not valid");
    }
    expect([...(await consentOf(id))]).toEqual([]);
    // A body far over a one-click's: refused before anything is read.
    expect((await oneClick(path, "x=" + "y".repeat(10_000))).status).toBe(413);
    expect([...(await consentOf(id))]).toEqual([]);
  });

  test("an address no lead of the organization holds any more goes on its do-not-contact list, so a later lead with it is refused", async () => {
    const email = `moved${seq}@example.com`;
    const id = await lead({ email });
    const { path } = await mailedLink(id);
    await db.sql`update leads set email = 'new-address@example.com' where id = ${id}`;
    expect((await oneClick(path)).status).toBe(200);
    expect([...(await db.sql`select kind, address, source from do_not_contact where org_id = 1 and address = ${email}`)]).toEqual([
      { kind: "email", address: email, source: "unsubscribe_link" },
    ]);
    const [row] = await db.sql`select actor_type, details from audit_log where action = 'dnc.add' and target = ${`dnc:email:${email}`}`;
    expect(row).toMatchObject({ actor_type: "recipient", details: { source: "unsubscribe_link" } });
    const later = await lead({ email });
    expect((await sendEmail(acme, later)).body).toEqual({ ok: false, message_id: null, reason: "do_not_contact" });
    // The lead that moved to another address is not opted out of it.
    expect((await sendEmail(acme, id)).body).toMatchObject({ ok: true });
  });

  test("an unsubscribe from one organization's email leaves another organization's lead on the same address alone", async () => {
    const email = `both${seq}@example.com`;
    const acmeLead = await lead({ list: 101, email });
    const boltLead = await lead({ list: 201, email });
    const { path } = await mailedLink(acmeLead);
    expect((await oneClick(path)).status).toBe(200);
    expect((await sendEmail(acme, acmeLead)).body.reason).toBe("opted_out");
    expect([...(await consentOf(boltLead))]).toEqual([]);
    expect((await sendEmail(bolt, boltLead)).body).toMatchObject({ ok: true });
    // And Bolt's link opts out of Bolt's email only, naming Bolt.
    const boltLink = await mailedLink(boltLead, bolt);
    expect((await call(app.base, boltLink.path)).body).toContain("Bolt Plumbing");
  });
});
