// Attribution travels outward (operations.md §5, §6), through the served app with the webhook
// receiver at the wire and the clock passed in: `lead.created`, `call.completed` and
// `appointment.booked` carry the first touch of the DNI visitor behind the lead — the visitor an
// intake names (`dni_visitor`, `dni_pool`), the one who held the called pool number — and a lead
// keeps the first it is given. The console's lead page and call log show the same first touch.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { dniEngine } from "../src/dni/instance";
import { axeProblems, launchBrowser, pageProblems, SHOTS_DIR } from "./harness/browser";
import { call, startApp, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { browserSignIn, signIn, makeUser, type ConsoleClient, type MadeUser } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { expectEventsMatchModels } from "./harness/events";
import { makeKey, seedWorld } from "./harness/factory";
import { provisionPools } from "./harness/dni";
import { WebhookReceiver } from "./harness/webhook-receiver";

const T0 = Date.parse("2026-11-23T15:00:00.250Z"); // a Monday, 09:00 in Chicago
const HOUR = 3_600_000;
const clock = new ManualClock(T0);
const ENV = { WEBHOOK_ALLOW_PRIVATE: "true", NPK_IP_SALT: "attribution-test", COMMS_INBOUND_LIST_ID: "900" };
const SECRET = "whsec_" + Buffer.from("the attribution test's signing key").toString("base64");

let db: TestDatabase;
let app: TestApp;
let rx: WebhookReceiver;
let acmeKey: string;
let boltKey: string;
let manager: ConsoleClient;
let managerUser: MadeUser;
/** The lead of the calls test, whose first touch the console pages show. */
let touchedLead = 0;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  await provisionPools(db.sql, [
    { key: "acme-site", numbers: ["7375550101", "7375550102", "7375550103", "7375550104"] },
    { key: "acme-ads", numbers: ["7375550201"], fallback: "7375550200", placeholder: "7375550299" },
    { key: "bolt-site", org_id: 2, numbers: ["9035550101"], fallback: "9035550100", placeholder: "9035550199" },
  ]);
  const hours = Object.fromEntries(["mon", "tue", "wed", "thu", "fri", "sat", "sun"].map((d) => [d, [["09:00", "17:00"]]]));
  await db.sql`insert into calendars (id, org_id, name, timezone, slot_minutes, capacity, min_notice_minutes, horizon_days, hours)
               values (1, 1, 'Estimates', 'America/Chicago', 30, 5, 0, 14, ${db.sql.json(hours)})`;
  await db.sql`insert into calendar_links (slug, calendar_id) values ('acme-estimate', 1)`;
  rx = await WebhookReceiver.start();
  await db.sql`insert into webhooks (id, org_id, url, secret, events) values
    (1, 1, ${rx.url("/acme")}, ${SECRET}, ${["lead.created", "call.completed", "appointment.booked"]}),
    (2, 2, ${rx.url("/bolt")}, ${SECRET}, ${["*"]})`;
  app = await startApp(db.url, ENV, { clock });
  acmeKey = (await makeKey(db.sql, { scopes: ["leads:write", "calls:write"], org: 1 })).key;
  boltKey = (await makeKey(db.sql, { scopes: ["leads:write", "calls:write"], org: 2 })).key;
  managerUser = await makeUser(db.sql, { role: "manager", orgId: 1 });
  manager = await signIn(app.base, managerUser.email, managerUser.password);
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await rx?.stop();
  await db?.drop();
});

let ipSeq = 0;
/**
 * A lease from the DNI script's API as a browser on its own address sends it; the number leased
 * (pool numbers hold for 30 minutes: tests that need one move the clock past earlier holds first).
 */
async function lease(visitor: string, body: Record<string, unknown> = {}, pool = "acme-site"): Promise<string> {
  const r = await call(app.base, "/hooks/dni.php?action=lease", {
    method: "POST",
    json: { pool, visitor, ...body },
    headers: { "x-forwarded-for": `10.31.${Math.floor(++ipSeq / 250)}.${ipSeq % 250}` },
  });
  expect(r.status).toBe(200);
  await dniEngine(app.running.deps).flush();
  return r.body.number;
}

let phoneSeq = 5125557000;
const newPhone = () => String(phoneSeq++);

const intake = (json: Record<string, unknown>, key = acmeKey) => call(app.base, "/hooks/lead_intake.php", { method: "POST", key, json: { list_id: 101, ...json } });

const report = (json: Record<string, unknown>, key = acmeKey) =>
  call(app.base, "/hooks/calls.php", { method: "POST", key, json: { status: "ANSWERED", secs: 90, agent: "agent7", ...json } });

/** The data of every event of `type` delivered to `path` so far, waiting up to a few seconds for `match` to appear. */
async function delivered(path: string, type: string, match: (data: any) => boolean): Promise<any> {
  const end = Date.now() + 10_000;
  for (;;) {
    const found = rx.at(path).map((r) => JSON.parse(r.body)).filter((b) => b.type === type && match(b.data));
    if (found.length > 0) return found[0].data;
    if (Date.now() > end) throw new Error(`no ${type} delivered to ${path}`);
    await Bun.sleep(20);
  }
}

const FULL_VISIT = {
  utm: { source: "google", medium: "cpc", campaign: "spring roofs", term: "roof repair", content: "ad-2" },
  gclid: "Cj0KCQ-gclid-1",
  gbraid: "0AAAAA-gbraid",
  wbraid: "CjkKEQ-wbraid",
  fbclid: "IwAR-fbclid",
  msclkid: "ms-click-1",
  landing: "https://acme.example/roofs?gclid=Cj0KCQ-gclid-1",
  referrer: "https://www.google.com/",
};

describe("lead.created carries the first touch of the visitor intake names", () => {
  test("dni_visitor and dni_pool: every field of the first touch; the visitor's later visits change nothing", async () => {
    const at = clock.now();
    await lease("form-visitor-1", FULL_VISIT);
    clock.advance(60_000);
    // A later visit with other parameters: first touch stays.
    await lease("form-visitor-1", { utm: { source: "bing" }, gclid: "later" });
    const r = await intake({ phone: newPhone(), dni_visitor: "form-visitor-1", dni_pool: "acme-site" });
    expect(r.status).toBe(200);
    const data = await delivered("/acme", "lead.created", (d) => d.lead_id === r.body.lead_id);
    expect(data.attribution).toEqual({
      pool: "acme-site", visitor: "form-visitor-1", source: "google", medium: "cpc", campaign: "spring roofs", term: "roof repair",
      content: "ad-2", gclid: "Cj0KCQ-gclid-1", gbraid: "0AAAAA-gbraid", wbraid: "CjkKEQ-wbraid", fbclid: "IwAR-fbclid", msclkid: "ms-click-1",
      landing: "https://acme.example/roofs?gclid=Cj0KCQ-gclid-1", referrer: "https://www.google.com/", first_seen_at: new Date(at).toISOString(),
    });
  });

  test("without dni_pool, any pool of the lead's organization; what a visit lacked is null; a form post works like JSON", async () => {
    await lease("form-visitor-2", { utm: { source: "newsletter" } }, "acme-ads");
    const body = new URLSearchParams({ phone: newPhone(), list_id: "101", dni_visitor: "form-visitor-2" }).toString();
    const r = await call(app.base, "/hooks/lead_intake.php", { method: "POST", key: acmeKey, body, headers: { "content-type": "application/x-www-form-urlencoded" } });
    expect(r.status).toBe(200);
    const data = await delivered("/acme", "lead.created", (d) => d.lead_id === r.body.lead_id);
    expect(data.attribution).toMatchObject({ pool: "acme-ads", visitor: "form-visitor-2", source: "newsletter", medium: null, gclid: null, fbclid: null, referrer: null });
  });

  test("an unknown visitor, another organization's visitor, a wrong pool or junk is ignored: 200 and attribution null", async () => {
    await lease("bolt-visitor", { gclid: "bolt-gclid" }, "bolt-site");
    const cases: Record<string, unknown>[] = [
      { dni_visitor: "nobody-like-this" },
      { dni_visitor: "bolt-visitor" },
      { dni_visitor: "bolt-visitor", dni_pool: "bolt-site" },
      { dni_visitor: "form-visitor-1", dni_pool: "acme-ads" },
      { dni_visitor: "form-visitor-1", dni_pool: "no-such-pool" },
      { dni_visitor: { $ne: null } },
      { dni_visitor: ["form-visitor-1"] },
      { dni_visitor: "!!!", dni_pool: "" },
      { dni_visitor: "x".repeat(10_000), dni_pool: 42 },
      { dni_visitor: null, dni_pool: null },
    ];
    for (const extra of cases) {
      const r = await intake({ phone: newPhone(), ...extra });
      expect({ extra, status: r.status, ok: r.body.ok }).toEqual({ extra, status: 200, ok: true });
      const data = await delivered("/acme", "lead.created", (d) => d.lead_id === r.body.lead_id);
      expect({ extra, attribution: data.attribution }).toEqual({ extra, attribution: null });
    }
    // Organization 2's own intake of its visitor is attributed.
    const bolt = await intake({ phone: newPhone(), list_id: 201, dni_visitor: "bolt-visitor" }, boltKey);
    expect((await delivered("/bolt", "lead.created", (d) => d.lead_id === bolt.body.lead_id)).attribution).toMatchObject({ pool: "bolt-site", gclid: "bolt-gclid" });
  });

  test("a duplicate intake gives the existing lead nothing: it keeps what it has", async () => {
    const phone = newPhone();
    const first = await intake({ phone });
    await lease("late-visitor", { gclid: "late" });
    const again = await intake({ phone, dni_visitor: "late-visitor" });
    expect(again.body).toEqual({ ok: true, lead_id: first.body.lead_id, deduped: true });
    expect((await db.sql`select attribution from leads where id = ${first.body.lead_id}`)[0].attribution).toBeNull();
  });
});

describe("call.completed, the lead's first attribution, and appointment.booked", () => {
  test("a call to a held number gives the lead its visitor; a later call from another visitor keeps the first; a booking carries it", async () => {
    const phone = newPhone();
    const lead = await intake({ phone });
    const leadId = lead.body.lead_id;
    touchedLead = leadId;
    expect((await delivered("/acme", "lead.created", (d) => d.lead_id === leadId)).attribution).toBeNull();

    clock.advance(HOUR);
    const seenA = clock.now();
    const numberA = await lease("caller-a", { utm: { source: "google", medium: "cpc" }, gclid: "gclid-a", msclkid: "ms-a" });
    const numberB = await lease("caller-b", { utm: { source: "facebook" }, fbclid: "fb-b" });
    expect(new Set([numberA, numberB]).size).toBe(2);
    clock.advance(30_000);
    const first = await report({ lead_id: leadId, to_number: numberA });
    expect(first.status).toBe(200);
    const touchA = {
      pool: "acme-site", visitor: "caller-a", source: "google", medium: "cpc", campaign: null, term: null, content: null,
      gclid: "gclid-a", gbraid: null, wbraid: null, fbclid: null, msclkid: "ms-a", landing: null, referrer: null,
      first_seen_at: new Date(seenA).toISOString(),
    };
    expect((await delivered("/acme", "call.completed", (d) => d.call_id === first.body.call_id)).attribution).toEqual(touchA);

    const second = await report({ phone, to_number: numberB });
    expect(second.body.lead_id).toBe(leadId);
    expect((await delivered("/acme", "call.completed", (d) => d.call_id === second.body.call_id)).attribution).toEqual(touchA);
    // The call itself still records whom it reached (the DNI report counts it for caller-b).
    expect((await db.sql`select dni_visitor, attribution->>'visitor' as own from calls where id = ${second.body.call_id}`)[0]).toEqual({ dni_visitor: "caller-b", own: "caller-b" });

    // A call without a lead carries its own visitor.
    const stranger = await report({ phone: "5125550999", to_number: numberB });
    expect(stranger.body.lead_id).toBeNull();
    expect((await delivered("/acme", "call.completed", (d) => d.call_id === stranger.body.call_id)).attribution).toMatchObject({ visitor: "caller-b", fbclid: "fb-b" });

    // The lead's copy outlives the visitor row (visitors are pruned): a booking still carries it.
    await db.sql`delete from dni_visitors where visitor = 'caller-a'`;
    const slots = await call(app.base, "/book/api.php?action=slots&s=acme-estimate");
    const booked = await call(app.base, "/book/api.php?action=book", {
      method: "POST",
      json: { slug: "acme-estimate", epoch: slots.body.slots[0].epoch, name: "Ann Lee", phone },
      headers: { "x-forwarded-for": "198.51.100.31" },
    });
    expect(booked.body.ok).toBe(true);
    const appt = await delivered("/acme", "appointment.booked", (d) => d.appt_id === booked.body.appt_id);
    expect(appt).toMatchObject({ lead_id: leadId, attribution: touchA });

    // The console shows the same first touch: the lead page, and the call log for both calls.
    const page = (await manager.get(`/console/leads/${leadId}`)).body as string;
    for (const s of ["First touch", "gclid-a", "ms-a", "acme-site"]) expect(page).toContain(s);
    expect(page).not.toContain("fb-b");
    const csv = (await manager.get("/console/calls.csv")).body as string;
    const rows = csv.split("\r\n").filter((l) => l.startsWith(`${first.body.call_id},`) || l.startsWith(`${second.body.call_id},`));
    expect(rows).toHaveLength(2);
    for (const row of rows) expect(row.endsWith(",google,cpc,,,gclid-a")).toBe(true);
    const log = (await manager.get("/console/calls?source=google")).body as string;
    expect(log).toContain(`/console/leads/${leadId}`);
  });

  test("a booking's new lead, and a lead of another organization matched by phone, carry no attribution", async () => {
    // The phone of organization 2's attributed lead: the booking matches it (api-v1.md), but
    // organization 1's calendar does not carry organization 2's ad data.
    const boltPhone = newPhone();
    await lease("bolt-booker", { gclid: "bolt-only" }, "bolt-site");
    const bolt = await intake({ phone: boltPhone, list_id: 201, dni_visitor: "bolt-booker" }, boltKey);
    expect((await db.sql`select attribution->>'gclid' as g from leads where id = ${bolt.body.lead_id}`)[0].g).toBe("bolt-only");
    const slots = await call(app.base, "/book/api.php?action=slots&s=acme-estimate");
    for (const phone of [boltPhone, newPhone()]) {
      const booked = await call(app.base, "/book/api.php?action=book", {
        method: "POST",
        json: { slug: "acme-estimate", epoch: slots.body.slots[1].epoch, name: "Bo Park", phone },
        headers: { "x-forwarded-for": `198.51.100.${++ipSeq}` },
      });
      expect(booked.body.ok).toBe(true);
      expect((await delivered("/acme", "appointment.booked", (d) => d.appt_id === booked.body.appt_id)).attribution).toBeNull();
    }
  });

  test("a tenant's call to another organization's pool number is not attributed", async () => {
    clock.advance(HOUR);
    const number = await lease("bolt-caller", { gclid: "bolt-call" }, "bolt-site");
    const r = await report({ phone: newPhone(), to_number: number });
    expect((await delivered("/acme", "call.completed", (d) => d.call_id === r.body.call_id)).attribution).toBeNull();
  });

  test("two calls from different visitors racing for one unattributed lead: both events carry the one the lead kept", async () => {
    for (let round = 0; round < 6; round++) {
      clock.advance(HOUR);
      const lead = await intake({ phone: newPhone() });
      const x = await lease(`race-x-${round}`, { gclid: `gx-${round}` });
      const y = await lease(`race-y-${round}`, { gclid: `gy-${round}` });
      const [a, b] = await Promise.all([report({ lead_id: lead.body.lead_id, to_number: x }), report({ lead_id: lead.body.lead_id, to_number: y })]);
      const [kept] = await db.sql<{ attribution: { visitor: string } }[]>`select attribution from leads where id = ${lead.body.lead_id}`;
      expect([`race-x-${round}`, `race-y-${round}`]).toContain(kept.attribution.visitor);
      for (const c of [a, b]) {
        expect((await delivered("/acme", "call.completed", (d) => d.call_id === c.body.call_id)).attribution).toEqual(kept.attribution);
      }
    }
  }, 60_000);

  test("the lead page and the call log in Chromium: the first touch shown, axe-clean, screenshots at 1280 and 390 px", async () => {
    const browser = await launchBrowser();
    try {
      const page = await (await browser.newContext({ bypassCSP: true })).newPage();
      const problems = pageProblems(page);
      await browserSignIn(page, app.base, managerUser.email, managerUser.password, `/console/leads/${touchedLead}`);
      const touch = page.getByRole("region", { name: "First touch" });
      for (const s of ["google", "cpc", "gclid-a", "msclkid", "ms-a", "acme-site"]) expect(await touch.textContent()).toContain(s);
      expect(await touch.textContent()).not.toContain("fbclid");
      mkdirSync(SHOTS_DIR, { recursive: true });
      for (const [name, path] of [["lead-first-touch", `/console/leads/${touchedLead}`], ["calls-first-touch", "/console/calls"]] as const) {
        await page.goto(app.base + path);
        expect({ path, axe: await axeProblems(page) }).toEqual({ path, axe: [] });
        for (const width of [1280, 390]) {
          await page.setViewportSize({ width, height: 900 });
          await page.screenshot({ path: join(SHOTS_DIR, `console-${name}-${width}.png`), fullPage: true });
        }
      }
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 60_000);

  test("every event written is exactly as /openapi.json's webhooks section documents it", async () => {
    await expectEventsMatchModels(db.sql, ["lead.created", "call.completed", "appointment.booked"]);
    const doc = (await call(app.base, "/openapi.json")).body;
    for (const type of ["lead.created", "call.completed", "appointment.booked"]) {
      const data = doc.webhooks[type].post.requestBody.content["application/json"].schema.properties.data;
      expect(data.required).toContain("attribution");
      const touch = data.properties.attribution.anyOf.find((s: any) => s.type === "object");
      expect(Object.keys(touch.properties)).toEqual([
        "pool", "visitor", "source", "medium", "campaign", "term", "content", "gclid", "gbraid", "wbraid", "fbclid", "msclkid",
        "landing", "referrer", "first_seen_at",
      ]);
    }
  });
});
