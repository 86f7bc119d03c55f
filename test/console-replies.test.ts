// The composer's saved replies over HTTP: the menu lists the organization's replies for the lead's
// channels; `?reply=&reply_channel=` renders the composer filled with the reply merged for the lead
// (the no-JavaScript way, on the lead page and in the inbox's pane); the picker's JSON preview is
// the send path's merge; another organization's reply or lead is never shown or merged.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { startApp, type TestApp } from "./harness/app";
import { makeUser, signIn, type ConsoleClient } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";

setDefaultTimeout(60_000);

let db: TestDatabase;
let app: TestApp;
let acme: ConsoleClient;
let bolt: ConsoleClient;
let lead: number;
let boltLead: number;
let conv: number;
const reply: Record<string, number> = {};

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  [{ id: lead }] = await db.sql<{ id: number }[]>`insert into leads (list_id, phone, first_name, last_name, email) values (101, '5125550142', 'Dana', 'Diaz', 'dana@example.com') returning id`;
  [{ id: boltLead }] = await db.sql<{ id: number }[]>`insert into leads (list_id, phone, first_name, last_name) values (201, '2145550142', 'Bo', 'Bolt') returning id`;
  await db.sql`insert into messages (lead_id, org_id, channel, direction, body, status) values (${lead}, 1, 'sms', 'in', 'hi there', 'received')`;
  [{ id: conv }] = await db.sql<{ id: number }[]>`select id from conversations where lead_id = ${lead}`;
  for (const [key, org, name, body, subject, channels] of [
    ["hours", 1, "Opening hours", "Hi {first_name}, we are open 8–6 at {company}.", "Our hours, {first_name}", ["sms", "email", "note"]],
    ["quote", 1, "Quote follow-up", "Hello {first_name}, any questions about the quote?", "", ["email"]],
    ["secret", 2, "Bolt secret", "Bolt's own words for {first_name}", "", ["sms", "email", "note"]],
  ] as const) {
    [{ id: reply[key] }] = await db.sql<{ id: number }[]>`
      insert into saved_replies (org_id, name, body, subject, channels) values (${org}, ${name}, ${body}, ${subject}, ${channels as unknown as string[]}::text[]) returning id`;
  }
  app = await startApp(db.url);
  const a = await makeUser(db.sql, { role: "agent", orgId: 1 });
  const b = await makeUser(db.sql, { role: "agent", orgId: 2 });
  acme = await signIn(app.base, a.email, a.password);
  bolt = await signIn(app.base, b.email, b.password);
});

afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

const textarea = (body: string) => /<textarea id="body"[^>]*>([^<]*)<\/textarea>/.exec(body)?.[1];

describe("saved replies in the composer", () => {
  test("the menu lists the organization's replies (links that fill the composer), never another organization's", async () => {
    const page = (await acme.get(`/console/leads/${lead}`)).body as string;
    expect(page).toContain('id="composer-replies"');
    expect(page).toContain(`data-replies="/console/api/leads/${lead}/reply"`);
    expect(page).toContain(`href="/console/leads/${lead}?reply=${reply.hours}&amp;reply_channel=sms#composer">Opening hours</a>`);
    // An email-only reply's link fills the email composer.
    expect(page).toContain(`?reply=${reply.quote}&amp;reply_channel=email#composer">Quote follow-up</a>`);
    expect(page).not.toContain("Bolt secret");
    const boltPage = (await bolt.get(`/console/leads/${boltLead}`)).body as string;
    expect(boltPage).toContain("Bolt secret");
    expect(boltPage).not.toContain("Opening hours");
  });

  test("without JavaScript a link renders the composer filled with the merged reply (email: the subject too), on the lead page and in the pane", async () => {
    const sms = (await acme.get(`/console/leads/${lead}?reply=${reply.hours}&reply_channel=sms`)).body as string;
    expect(textarea(sms)).toBe("Hi Dana, we are open 8–6 at Acme Roofing LLC.");
    expect(sms).toContain('<option value="sms" selected>');
    const email = (await acme.get(`/console/leads/${lead}?reply=${reply.quote}&reply_channel=email`)).body as string;
    expect(textarea(email)).toContain("Hello Dana, any questions about the quote?");
    expect(email).toContain('<option value="email" selected>');
    const withSubject = (await acme.get(`/console/leads/${lead}?reply=${reply.hours}&reply_channel=email`)).body as string;
    expect(withSubject).toContain('name="subject" type="text" maxlength="200" autocomplete="off" value="Our hours, Dana"');
    const pane = (await acme.get(`/console/inbox?view=open&open=${conv}&reply=${reply.hours}&reply_channel=note`)).body as string;
    // A note is stored as typed: its merge fields stay.
    expect(textarea(pane)).toBe("Hi {first_name}, we are open 8–6 at {company}.");
    expect(pane).toContain(`/console/inbox?view=open&amp;open=${conv}&amp;reply=${reply.hours}&amp;reply_channel=sms#composer`);
  });

  test("another organization's reply, a missing one, a reply not for the channel and odd input leave the composer empty (never a 500)", async () => {
    for (const q of [`reply=${reply.secret}&reply_channel=sms`, "reply=999999&reply_channel=sms", `reply=${reply.quote}&reply_channel=sms`, "reply=x", "reply=1&reply_channel=fax", "reply=%00"]) {
      const r = await acme.get(`/console/leads/${lead}?${q}`);
      expect(r.status).toBe(200);
      expect(textarea(r.body as string)).toBe("");
      expect(r.body as string).not.toContain("Bolt&#39;s own words");
    }
  });

  test("the picker's preview: the send path's merge; not for the channel is a value; another organization's reply or lead is a 404; bad queries invalid_input (422)", async () => {
    const ok = await acme.get(`/console/api/leads/${lead}/reply?reply=${reply.hours}&channel=email`);
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ ok: true, channel: "email", subject: "Our hours, Dana", body: expect.stringContaining("Hi Dana, we are open 8–6 at Acme Roofing LLC.") });
    expect((await acme.get(`/console/api/leads/${lead}/reply?reply=${reply.quote}&channel=sms`)).body).toEqual({ ok: false, reason: "not_for_channel" });
    const other = await acme.get(`/console/api/leads/${lead}/reply?reply=${reply.secret}&channel=sms`);
    const missing = await acme.get(`/console/api/leads/${lead}/reply?reply=999999&channel=sms`);
    expect(other.status).toBe(404);
    expect(other.body).toEqual(missing.body);
    expect((await bolt.get(`/console/api/leads/${lead}/reply?reply=${reply.secret}&channel=sms`)).status).toBe(404);
    for (const q of ["", "reply=1", "channel=sms", "reply=x&channel=sms", "reply=1&channel=fax", "reply=1&channel=sms&extra=1"]) {
      const r = await acme.get(`/console/api/leads/${lead}/reply?${q}`);
      expect(r.status).toBe(422);
      expect((r.body as { error: string }).error).toBe("invalid_input");
    }
  });
});
