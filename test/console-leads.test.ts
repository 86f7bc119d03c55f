// The console's inbox, leads and lead pages over HTTP (C1), against PostgreSQL with a fake Twilio:
// each route's status and content per role, another organization's ids answered like missing ones,
// every change through the feature's service with its audit row.
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
// 20:00 on Thu 2026-01-15 in Chicago (the lead's zone: Texas), outside quiet hours (21:00–08:00);
// 21:15 inside them, 75 minutes later (within a session's idle time). They end at 8:00 on Fri.
const DAY = Date.UTC(2026, 0, 16, 2);
const NIGHT = Date.UTC(2026, 0, 16, 3, 15);

let db: TestDatabase;
let app: TestApp;
let twilio: FakeTwilio;
const clock = new ManualClock(DAY);
let manager: ConsoleClient;
let agent: ConsoleClient;
let bolt: ConsoleClient;
let admin: ConsoleClient;
let leadId: number;
let boltLead: number;

const audits = (action: string) => db.sql<{ actor_id: string; target: string; details: Record<string, unknown> }[]>`
  select actor_id, target, details from audit_log where action = ${action} order by id`;

/** An inbound SMS through the real webhook route, signed as Twilio signs it. */
async function inbound(from: string, body: string, sid: string) {
  const r = await postCallback(app.base, PUBLIC, "/hooks/sms_inbound.php", "acme-token", { From: from, To: "+15125550100", Body: body, MessageSid: sid, AccountSid: "ACacme" });
  expect(r.status).toBe(200);
}

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  twilio = await startFakeTwilio();
  await acmeTexting(db.sql, twilio.url);
  [{ id: leadId }] = await db.sql<{ id: number }[]>`
    insert into leads (list_id, phone, first_name, last_name, state, email) values (101, '5125550142', 'Dana', 'Diaz', 'TX', 'dana@example.com') returning id`;
  [{ id: boltLead }] = await db.sql<{ id: number }[]>`insert into leads (list_id, phone, first_name) values (201, '5125550142', 'Bolt') returning id`;
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

const operationOf = (page: string) => /name="operation_id" value="([^"]+)"/.exec(page)?.[1] ?? "";

describe("leads", () => {
  test("search by a formatted phone finds the organization's lead only", async () => {
    const r = await manager.get(`/console/leads?q=${encodeURIComponent("(512) 555-0142")}`);
    expect(r.status).toBe(200);
    expect(r.body).toContain(`href="/console/leads/${leadId}"`);
    expect(r.body).not.toContain(`href="/console/leads/${boltLead}"`);
    const b = await bolt.get(`/console/leads?q=${encodeURIComponent("+1 512.555.0142")}`);
    expect(b.body).toContain(`href="/console/leads/${boltLead}"`);
    expect(b.body).not.toContain(`href="/console/leads/${leadId}"`);
    expect((await admin.get("/console/leads?q=5125550142")).body).toContain(`href="/console/leads/${boltLead}"`);
  });

  test("a NUL in a filter is never a 500: the search box drops it, another filter is invalid input", async () => {
    const search = await manager.get(`/console/leads?q=${encodeURIComponent("Dana\u0000")}`);
    expect(search.status).toBe(200);
    expect(search.body).toContain("Dana Diaz");
    for (const path of [`/console/calls?agent=a%00b`, `/console/calls?source=%00`, `/console/leads?campaign=A%00`]) {
      const r = await manager.get(path);
      expect([path, r.status]).toEqual([path, 422]);
    }
  });

  test("keyset pages: the next link carries the cursor and the filter", async () => {
    await db.sql`insert into leads (list_id, phone, first_name, created_at) select 102, '51255601' || lpad(g::text, 2, '0'), 'Page', now() - g * interval '1 minute' from generate_series(1, 60) g`;
    const first = (await manager.get("/console/leads?q=page")).body as string;
    expect(first.match(/href="\/console\/leads\/\d+"/g)).toHaveLength(50);
    const next = /href="(\/console\/leads\?q=page&amp;after=[^"]+)" rel="next"/.exec(first)![1].replaceAll("&amp;", "&");
    const second = (await manager.get(next)).body as string;
    expect(second.match(/href="\/console\/leads\/\d+"/g)).toHaveLength(10);
    expect(second).not.toContain('rel="next"');
  });

  test("the CSV export streams the filtered set, formulas made text", async () => {
    await db.sql`insert into leads (list_id, phone, first_name, last_name) values (101, '5125557777', '=HYPERLINK("http://x")', 'Csv')`;
    const r = await manager.get("/console/leads.csv?q=csv");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(r.headers.get("content-disposition")).toMatch(/^attachment; filename="leads-\d{4}-\d{2}-\d{2}\.csv"$/);
    const lines = (r.body as string).trimEnd().split("\r\n");
    expect(lines[0]).toBe("lead_id,first_name,last_name,phone,email,status,campaign,list_id,address1,city,state,postal_code,source,created_at");
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain(`"'=HYPERLINK(""http://x"")",Csv,5125557777`);
    expect(((await bolt.get("/console/leads.csv?q=csv")).body as string).trimEnd().split("\r\n")).toHaveLength(1);
  });

  test("the CSV export: a ; or , followed by = + - @ anywhere in a value is a formula too (locales that split on ;)", async () => {
    await db.sql`insert into leads (list_id, phone, first_name, last_name, email, address1) values
      (101, '5125557778', 'Semi', 'Colon;=HYPERLINK("http://x")', 'a,@b.example', 'x;  -1+2'),
      (101, '5125557779', 'Semi', 'Plain; Jones', 'ok@example.com', '1 Main St, Suite 2')`;
    const r = await manager.get("/console/leads.csv?q=semi");
    const [, plain, formula] = (r.body as string).trimEnd().split("\r\n");
    expect(formula).toContain(`,Semi,"'Colon;=HYPERLINK(""http://x"")",5125557778,"'a,@b.example",`);
    expect(formula).toContain(`,"'x;  -1+2",`);
    // Split on ; as such a locale does (outside quotes): no cell starts a formula.
    const cellsOf = (line: string, sep: string) => line.match(new RegExp(`("([^"]|"")*"|[^${sep}"]*)(${sep}|$)`, "g"))!.map((c) => c.replace(new RegExp(`${sep}$`), "").replace(/^"|"$/g, ""));
    for (const sep of [";", ","]) for (const cell of cellsOf(formula, sep)) expect(cell).not.toMatch(/^\s*[=+\-@]/);
    expect(plain).toContain(`,Semi,"Plain; Jones",5125557779,ok@example.com,`);
    expect(plain).toContain(`,"1 Main St, Suite 2",`);
  });
});

describe("a lead", () => {
  test("its page for each role of its organization; another organization's and a non-id are 404", async () => {
    for (const c of [manager, agent, admin]) {
      const r = await c.get(`/console/leads/${leadId}`);
      expect(r.status).toBe(200);
      expect(r.body).toContain("<h1>Dana Diaz</h1>");
      expect(r.body).toContain("(512) 555-0142");
    }
    expect((await bolt.get(`/console/leads/${leadId}`)).status).toBe(404);
    expect((await bolt.get(`/console/leads/999999`)).status).toBe(404);
    expect((await manager.get(`/console/leads/abc`)).status).toBe(404);
    expect((await manager.get(`/console/leads/${boltLead}`)).status).toBe(404);
    const anon = await fetch(`${app.base}/console/leads/${leadId}`, { redirect: "manual" });
    expect(anon.status).toBe(303);
  });

  test("an SMS from the composer: merged text at Twilio, in the timeline, as the user; a resubmitted form sends once", async () => {
    const op = operationOf((await agent.get(`/console/leads/${leadId}`)).body);
    expect(op).toMatch(/^console-[0-9a-f-]{36}$/);
    const form = { channel: "sms", body: "Hello {first_name}!", operation_id: op };
    const [a, b] = await Promise.all([agent.post(`/console/leads/${leadId}/send`, form), agent.post(`/console/leads/${leadId}/send`, form)]);
    expect([a.status, b.status]).toEqual([303, 303]);
    expect(a.headers.get("location")).toBe(`/console/leads/${leadId}?sent=ok`);
    expect(twilio.requests.map((q) => q.form.Body)).toEqual(["Hello Dana!"]);
    const page = (await agent.get(a.headers.get("location")!)).body as string;
    expect(page).toContain("Sent.");
    expect(page).toContain("Hello Dana!");
    expect([...(await db.sql`select actor_type, actor_id from messages where operation_id = ${op}`)]).toEqual([{ actor_type: "user", actor_id: "agent7" }]);
    // One audit row, for the one message recorded: the second submit replayed the first's answer.
    const rows = (await audits("message.send")).filter((a) => a.details.operation_id === op);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ actor_id: "agent7", target: `lead:${leadId}`, details: { channel: "sms" } });
  });

  test("a send in the lead's quiet hours says when it will go, in the lead's time zone", async () => {
    clock.set(NIGHT);
    const op = operationOf((await manager.get(`/console/leads/${leadId}`)).body);
    const r = await manager.post(`/console/leads/${leadId}/send`, { channel: "sms", body: "Late one", operation_id: op });
    expect(r.headers.get("location")).toBe(`/console/leads/${leadId}?sent=queued&until=${Date.UTC(2026, 0, 16, 14) / 1000}`);
    expect(twilio.requests).toHaveLength(0);
    const page = (await manager.get(r.headers.get("location")!)).body as string;
    expect(page).toContain("Queued for quiet hours: will send at 8:00 AM on Fri, Jan 16 in the lead&#39;s time zone (America/Chicago).");
    expect((await audits("message.send")).at(-1)?.details).toMatchObject({ operation_id: op, defer_until: Date.UTC(2026, 0, 16, 14) / 1000 });
  });

  test("every gate answer in words: opted out, no consent, insufficient credits, empty, a note", async () => {
    const send = async (c: ConsoleClient, body: string, channel = "sms") => {
      const op = operationOf((await c.get(`/console/leads/${leadId}`)).body);
      const r = await c.post(`/console/leads/${leadId}/send`, { channel, body, operation_id: op, subject: "S" });
      // Refused: the page again, with the draft kept; sent or saved: on to the page that says so.
      if (r.status === 200) {
        expect(r.body as string).toContain(`${body.replace(/</g, "&lt;").replace(/>/g, "&gt;")}</textarea>`);
        return r.body as string;
      }
      return (await c.get(r.headers.get("location")!)).body as string;
    };
    expect(await send(manager, "a note", "note")).toContain("Note saved.");
    expect(await send(manager, "   ")).toContain("Nothing was sent: the message is empty.");
    // Email (with its subject) through the same path: this organization has no email provider.
    expect(await send(manager, "<p>Quote attached</p>", "email")).toContain("Not sent: the organization has no provider set up for this channel.");
    await db.sql`update org_billing set credits = 0 where org_id = 1`;
    expect(await send(manager, "x")).toContain("Not sent: insufficient credits.");
    await db.sql`update org_billing set credits = 10 where org_id = 1`;
    await db.sql`update orgs set consent = 'explicit' where id = 1`;
    expect(await send(manager, "x")).toContain("Not sent: no consent on this channel");
    await db.sql`update orgs set consent = 'implied' where id = 1`;
    await inbound("5125550142", "STOP", "SMstop1");
    const audited = (await audits("message.send")).length;
    expect(await send(manager, "x")).toContain("Not sent: the lead opted out of this channel.");
    expect(twilio.requests).toHaveLength(0);
    // A refusal records nothing, so it audits nothing.
    expect(await audits("message.send")).toHaveLength(audited);
    // Back in, for the tests after this one.
    await inbound("5125550142", "START", "SMstart1");
  });

  test("the timeline route: entries after the mark, as list items; 401 signed out, 404 elsewhere, 422 for a bad mark", async () => {
    const page = (await manager.get(`/console/leads/${leadId}`)).body as string;
    const mark = /data-mark="([^"]+)"/.exec(page)![1];
    const empty = await manager.get(`/console/api/leads/${leadId}/timeline?after=${mark}`);
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ ok: true, after: mark, count: 0, html: "" });
    await inbound("5125550142", "<b>new</b> text", "SMtl1");
    const r = await manager.get(`/console/api/leads/${leadId}/timeline?after=${mark}`);
    expect(r.body).toMatchObject({ ok: true, count: 1 });
    expect(r.body.html).toContain("&lt;b&gt;new&lt;/b&gt; text");
    expect(r.body.after).not.toBe(mark);
    expect((await fetch(`${app.base}/console/api/leads/${leadId}/timeline`)).status).toBe(401);
    const other = await bolt.get(`/console/api/leads/${leadId}/timeline`);
    expect([other.status, other.body.error]).toEqual([404, "not_found"]);
    expect((await manager.get(`/console/api/leads/${leadId}/timeline?after=x`)).status).toBe(422);
  });

  test("a long timeline: the page shows the newest 50 and links to older pages, which walk the rest and do not poll", async () => {
    const [{ id: busy }] = await db.sql<{ id: number }[]>`insert into leads (list_id, phone, first_name) values (101, '5125550177', 'Busy') returning id`;
    await db.sql`insert into messages (lead_id, org_id, channel, direction, body, created_at)
      select ${busy}, 1, 'note', 'out', 'entry ' || g || '.', now() - (130 - g) * interval '1 minute' from generate_series(1, 130) g`;
    const seen: string[] = [];
    let path = `/console/leads/${busy}`;
    for (let pages = 0; ; pages++) {
      const r = await agent.get(path);
      expect(r.status).toBe(200);
      const body = r.body as string;
      expect(body.includes("data-mark=")).toBe(pages === 0); // only the newest page polls
      if (pages > 0) expect(body).toContain("Back to the newest");
      seen.unshift(...[...body.matchAll(/entry (\d+)\./g)].map((m) => m[1]!));
      const older = /href="([^"]+)">Show older entries/.exec(body);
      if (!older) break;
      path = older[1]!.replaceAll("&amp;", "&").replace(/#.*/, "");
    }
    expect(seen).toEqual(Array.from({ length: 130 }, (_, i) => String(i + 1)));
    // An older page of another organization's lead is the same 404; a malformed cursor shows the newest.
    expect((await bolt.get(`${path}`)).status).toBe(404);
    const odd = (await agent.get(`/console/leads/${busy}?before=x`)).body as string;
    expect(odd).toContain("entry 130.");
    expect(odd).toContain("data-mark=");
  });

  test("consent: changed by channel, audited, in the timeline; another organization's lead is a 404", async () => {
    const r = await agent.post(`/console/leads/${leadId}/consent`, { channel: "email", consent: "in" });
    expect(r.headers.get("location")).toBe(`/console/leads/${leadId}?done=consent_changed`);
    expect([...(await db.sql`select consent, consent_source from lead_channels where lead_id = ${leadId} and channel = 'email'`)]).toEqual([{ consent: "in", consent_source: "console:agent7" }]);
    expect((await audits("consent.change")).at(-1)).toMatchObject({ actor_id: "agent7", target: `lead:${leadId}`, details: { channel: "email", consent: "in" } });
    const page = (await agent.get(r.headers.get("location")!)).body as string;
    expect(page).toContain("Consent changed.");
    expect(page).toContain("Email consent: in");
    expect((await bolt.post(`/console/leads/${leadId}/consent`, { channel: "sms", consent: "out" })).status).toBe(404);
    // An admin's change is recorded under the lead's organization, where its managers read it.
    await admin.post(`/console/leads/${leadId}/consent`, { channel: "email", consent: "none" });
    expect([...(await db.sql`select org_id, actor_type from audit_log where action = 'consent.change' order by id desc limit 1`)]).toEqual([{ org_id: 1, actor_type: "user" }]);
    expect((await agent.post(`/console/leads/${leadId}/consent`, { channel: "fax", consent: "in" })).headers.get("location")).toContain("consent_invalid");
  });

  test("after a STOP only a manager records a new consent on that channel, with a reason, audited", async () => {
    const origin = { origin: PUBLIC };
    await inbound("+15125550142", "STOP", "SMstop-consent");
    const sms = async () => (await db.sql`select consent from lead_channels where lead_id = ${leadId} and channel = 'sms'`)[0]?.consent;
    expect(await sms()).toBe("out");
    const before = (await audits("consent.change")).length;
    // An agent's page offers no change of the opted-out channel; a post is refused.
    const agentsPage = (await agent.get(`/console/leads/${leadId}`)).body as string;
    expect(agentsPage).toContain("Only a manager can record a new consent after an opt-out.");
    expect(agentsPage).not.toContain('id="consent-sms"');
    expect(agentsPage).toContain('id="consent-email"');
    for (const consent of ["in", "none"]) {
      const r = await agent.post(`/console/leads/${leadId}/consent`, { channel: "sms", consent, reason: "they asked me to" }, origin);
      expect(r.headers.get("location")).toBe(`/console/leads/${leadId}?done=consent_manager_only`);
    }
    expect((await agent.get(`/console/leads/${leadId}?done=consent_manager_only`)).body).toContain("only a manager can record a new consent");
    // A manager must say why (at most 500 characters).
    const managersPage = (await manager.get(`/console/leads/${leadId}`)).body as string;
    expect(managersPage).toContain('id="consent-sms-reason"');
    for (const reason of [undefined, "   ", "x".repeat(501)]) {
      const r = await manager.post(`/console/leads/${leadId}/consent`, { channel: "sms", consent: "in", ...(reason === undefined ? {} : { reason }) }, origin);
      expect(r.headers.get("location")).toBe(`/console/leads/${leadId}?done=consent_reason`);
    }
    expect(await sms()).toBe("out");
    expect(await audits("consent.change")).toHaveLength(before);
    // With one: recorded, audited with the reason, in the timeline.
    const r = await manager.post(`/console/leads/${leadId}/consent`, { channel: "sms", consent: "in", reason: " Signed   web form, 2026-01-15 " }, origin);
    expect(r.headers.get("location")).toBe(`/console/leads/${leadId}?done=consent_changed`);
    expect(await sms()).toBe("in");
    expect((await audits("consent.change")).at(-1)).toMatchObject({
      target: `lead:${leadId}`,
      details: { channel: "sms", consent: "in", lifted_opt_out: true, reason: "Signed web form, 2026-01-15" },
    });
    const page = (await manager.get(`/console/leads/${leadId}`)).body as string;
    expect(page).toContain("SMS consent: in (opt-out lifted)");
    expect(page).toContain("Signed web form, 2026-01-15");
    // No longer opted out: an agent may change it again, and needs no reason.
    expect((await agent.post(`/console/leads/${leadId}/consent`, { channel: "sms", consent: "in" }, origin)).headers.get("location")).toContain("consent_changed");
  });

  test("dial: an agent queues to themselves only; a manager to an agent of the organization; audited", async () => {
    const r = await agent.post(`/console/leads/${leadId}/dial`, { agent: "agent7" });
    expect(r.status).toBe(303);
    const [d] = await db.sql`select agent, lead_id, phone, status from dials order by id desc limit 1`;
    expect(d).toEqual({ agent: "agent7", lead_id: leadId, phone: "5125550142", status: "pending" });
    expect((await audits("dial.queue")).at(-1)).toMatchObject({ actor_id: "agent7", details: { agent: "agent7" } });
    expect((await agent.post(`/console/leads/${leadId}/dial`, { agent: "house1" })).status).toBe(404);
    expect((await manager.post(`/console/leads/${leadId}/dial`, { agent: "agent9" })).status).toBe(404);
    expect((await manager.post(`/console/leads/${leadId}/dial`, { agent: "agent7" })).status).toBe(303);
    expect((await bolt.post(`/console/leads/${leadId}/dial`, { agent: "agent9" })).status).toBe(404);
  });

  test("first touch and appointments are shown", async () => {
    // The first touch the lead was given (src/dni/attribution.ts), and its call.
    await db.sql`update leads set attribution = ${db.sql.json({ pool: "acme-web", visitor: "v1", source: "google", medium: "cpc", campaign: "roofs-q1",
      gclid: "GCLID123", landing: "https://acme.example/roofs?x=1", first_seen_at: "2026-11-20T10:00:00.000Z" })} where id = ${leadId}`;
    await db.sql`insert into calls (lead_id, phone, status, secs, occurred_at) values (${leadId}, '5125550142', 'answered', 65, now())`;
    await db.sql`insert into calendars (id, org_id, name, timezone) values (1, 1, 'Estimates', 'America/Chicago')`;
    await db.sql`insert into appointments (calendar_id, link_slug, slot_epoch, lead_id, name, phone, token_selector, token_hash)
      values (1, 'est', ${DAY / 1000 + 86400}, ${leadId}, 'Dana', '5125550142', '\\x01', '\\x02')`;
    const page = (await manager.get(`/console/leads/${leadId}`)).body as string;
    for (const s of ["google", "cpc", "roofs-q1", "GCLID123", "https://acme.example/roofs?x=1", "Estimates", "pending", "1m 05s"]) expect(page).toContain(s);
  });
});
