// Dials and the do-not-contact list and calling windows (issue 31), through the served app with the
// clock passed in: a dial of a listed number is queued as the contract says and handed out by
// cti_queue.php marked `dnc: true`, in its turn; every handed-out dial says `outside_window` and
// the lead's `local_time`, by the clock, across zones and a daylight-saving change; the console's
// lead page shows the lead's local time beside Queue dial and asks for a confirmation outside the
// window, shows the do-not-contact list and adds to it (audited); nothing crosses organizations.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { call, startApp, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { makeUser, signIn, type ConsoleClient } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeKey, seedWorld } from "./harness/factory";

let db: TestDatabase;
let app: TestApp;
// 2026-01-15 13:30Z: 08:30 in New York, 07:30 in Chicago, 05:30 in Los Angeles.
const MORNING = Date.parse("2026-01-15T13:30:00Z");
const clock = new ManualClock(MORNING);
let acme7: string;
let bolt9: string;
let agent: ConsoleClient;
let boltManager: ConsoleClient;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  app = await startApp(db.url, {}, { clock });
  acme7 = (await makeKey(db.sql, { scopes: ["cti"], org: 1, agent: "agent7" })).key;
  bolt9 = (await makeKey(db.sql, { scopes: ["cti"], org: 2, agent: "agent9" })).key;
  const a = await makeUser(db.sql, { role: "agent", orgId: 1, id: "agent7" });
  agent = await signIn(app.base, a.email, a.password);
  const m = await makeUser(db.sql, { role: "manager", orgId: 2 });
  boltManager = await signIn(app.base, m.email, m.password);
});
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});
beforeEach(async () => {
  clock.set(MORNING);
  await db.sql`update dials set status = 'done' where status = 'pending'`;
});

let seq = 0;
async function lead(o: { list?: number; phone?: string; state?: string } = {}) {
  const phone = o.phone ?? `512559${String(++seq).padStart(4, "0")}`;
  const [row] = await db.sql<{ id: number }[]>`
    insert into leads (list_id, phone, first_name, last_name, email, state)
    values (${o.list ?? 101}, ${phone}, 'Lee', 'Ng', ${`lee${seq}@example.com`}, ${o.state ?? "TX"}) returning id`;
  return { id: row.id, phone };
}
const list = (org: number, phone: string) => db.sql`insert into do_not_contact (org_id, kind, address, source, added_at) values (${org}, 'phone', ${phone}, 'test', now())`;
const dial = (key: string, phone: string) => call(app.base, "/hooks/api_v1.php?r=cti/dial", { method: "POST", key, json: { phone } });
const claim = (key: string) => call(app.base, "/hooks/cti_queue.php", { key });

describe("cti_queue.php", () => {
  test("a dial of a listed number is queued as the contract says and handed out marked dnc, in its turn", async () => {
    const listed = await lead();
    const plain = await lead();
    await list(1, listed.phone);
    const first = await dial(acme7, `+1 ${listed.phone}`);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ ok: true, id: expect.any(Number), lead_id: listed.id });
    const firstId = (await db.sql`select max(id)::int as id from dials`)[0].id;
    const second = await dial(acme7, plain.phone);
    // A number with no lead, listed: the queuing key's organization's list decides.
    const nobody = `512559${String(++seq).padStart(4, "0")}`;
    await list(1, nobody);
    await dial(acme7, nobody);
    const claims = [await claim(acme7), await claim(acme7), await claim(acme7), await claim(acme7)];
    expect(claims.map((c) => c.status)).toEqual([200, 200, 200, 200]);
    expect(claims.map((c) => c.body.dial && [c.body.dial.phone, c.body.dial.dnc])).toEqual([
      [`1${listed.phone}`, true],
      [plain.phone, false],
      [nobody, true],
      null,
    ]);
    expect(claims[0].body.dial.id).toBe(firstId);
    expect(second.body.lead_id).toBe(plain.id);
  });

  test("another organization's list marks nothing: the same number dialled for Bolt is dnc false", async () => {
    const shared = `512559${String(++seq).padStart(4, "0")}`;
    await list(1, shared);
    await lead({ list: 201, phone: shared });
    await dial(bolt9, shared);
    expect((await claim(bolt9)).body.dial).toMatchObject({ phone: shared, dnc: false });
    await dial(acme7, shared);
    expect((await claim(acme7)).body.dial).toMatchObject({ phone: shared, dnc: true });
  });

  test("outside_window and local_time by the clock: the lead's state's zone, else its area code's, else unknown", async () => {
    const texas = await lead({ state: "TX" });
    const newYork = await lead({ state: "NY" });
    const losAngeles = await lead({ state: "", phone: "2135550142" });
    const unknown = await lead({ state: "", phone: "8005550142" });
    for (const l of [texas, newYork, losAngeles, unknown]) await dial(acme7, l.phone);
    const got = [];
    for (let i = 0; i < 4; i++) {
      const d = (await claim(acme7)).body.dial;
      got.push([d.lead_id, d.outside_window, d.local_time]);
    }
    expect(got).toEqual([
      [texas.id, true, "2026-01-15T07:30:00-06:00"],
      [newYork.id, false, "2026-01-15T08:30:00-05:00"],
      [losAngeles.id, true, "2026-01-15T05:30:00-08:00"],
      [unknown.id, false, null],
    ]);
    // Later the same day everyone is inside; at 21:00 in New York it is outside there only.
    clock.set(Date.parse("2026-01-16T02:00:00Z"));
    for (const l of [texas, newYork]) await dial(acme7, l.phone);
    expect([(await claim(acme7)).body.dial, (await claim(acme7)).body.dial].map((d) => [d.outside_window, d.local_time])).toEqual([
      [false, "2026-01-15T20:00:00-06:00"],
      [true, "2026-01-15T21:00:00-05:00"],
    ]);
  });

  test("across the spring change: 12:00Z is outside in New York on Saturday and inside on Sunday, with the new offset", async () => {
    const ny = await lead({ state: "NY" });
    clock.set(Date.parse("2026-03-07T12:00:00Z"));
    await dial(acme7, ny.phone);
    expect((await claim(acme7)).body.dial).toMatchObject({ outside_window: true, local_time: "2026-03-07T07:00:00-05:00" });
    clock.set(Date.parse("2026-03-08T12:00:00Z"));
    await dial(acme7, ny.phone);
    expect((await claim(acme7)).body.dial).toMatchObject({ outside_window: false, local_time: "2026-03-08T08:00:00-04:00" });
  });
});

describe("/openapi.json", () => {
  test("describes the dial's new fields and the unsubscribe routes", async () => {
    const doc = (await call(app.base, "/openapi.json")).body;
    const ok = doc.paths["/hooks/cti_queue.php"].get.responses["200"].content["application/json"].schema;
    const text = JSON.stringify(ok);
    for (const field of ["dnc", "outside_window", "local_time"]) expect(text).toContain(`"${field}"`);
    expect(Object.keys(doc.paths["/unsubscribe/{token}"]).sort()).toEqual(["get", "post"]);
  });
});

describe("the console's lead page", () => {
  test("shows the lead's local time beside Queue dial; outside the window the dial needs the confirmation, and its audit row says so", async () => {
    const texas = await lead({ state: "TX" });
    const page = (await agent.get(`/console/leads/${texas.id}`)).body as string;
    expect(page).toContain("Lead's local time: <strong>Jan 15, 2026, 7:30 AM</strong>");
    expect(page).toContain("Outside calling hours");
    expect(page).toContain('name="confirm_outside" value="yes" required');
    const dials = async () => (await db.sql`select count(*)::int as n from dials where lead_id = ${texas.id}`)[0].n;
    const refused = await agent.post(`/console/leads/${texas.id}/dial`, { agent: "agent7" });
    expect(refused.status).toBe(303);
    expect(refused.headers.get("location")).toBe(`/console/leads/${texas.id}?done=dial_outside_window`);
    expect(await dials()).toBe(0);
    const confirmed = await agent.post(`/console/leads/${texas.id}/dial`, { agent: "agent7", confirm_outside: "yes" });
    expect(confirmed.headers.get("location")).toContain("done=dial_queued");
    expect(await dials()).toBe(1);
    const [row] = await db.sql`select details from audit_log where action = 'dial.queue' and target = ${`lead:${texas.id}`}`;
    expect(row.details).toMatchObject({ agent: "agent7", outside_window: true });
    // Inside the window (an hour and a half later) no confirmation is asked or needed.
    clock.set(MORNING + 90 * 60_000);
    const inside = (await agent.get(`/console/leads/${texas.id}`)).body as string;
    expect(inside).toContain("Within calling hours");
    expect(inside).not.toContain("confirm_outside");
    expect((await agent.post(`/console/leads/${texas.id}/dial`, { agent: "agent7" })).headers.get("location")).toContain("done=dial_queued");
    expect(await dials()).toBe(2);
  });

  test("shows the do-not-contact list and adds the lead's phone to it, audited with the user as source; another organization's user gets the 404", async () => {
    const l = await lead({ state: "NY" });
    const before = (await agent.get(`/console/leads/${l.id}`)).body as string;
    expect(before).toContain("Not on the organization's do-not-contact list.");
    expect((await boltManager.post(`/console/leads/${l.id}/dnc`, { kind: "phone" })).status).toBe(404);
    expect((await agent.post(`/console/leads/${l.id}/dnc`, { kind: "fax" })).headers.get("location")).toContain("done=dnc_invalid");
    const added = await agent.post(`/console/leads/${l.id}/dnc`, { kind: "phone", note: "  asked   twice " });
    expect(added.headers.get("location")).toBe(`/console/leads/${l.id}?done=dnc_added`);
    expect([...(await db.sql`select org_id, kind, address, source, note, added_at from do_not_contact where address = ${l.phone}`)]).toEqual([
      { org_id: 1, kind: "phone", address: l.phone, source: "console:agent7", note: "asked twice", added_at: new Date(MORNING) },
    ]);
    const [row] = await db.sql`select org_id, actor_type, actor_id, details from audit_log where action = 'dnc.add' and target = ${`dnc:phone:${l.phone}`}`;
    expect(row).toEqual({ org_id: 1, actor_type: "user", actor_id: "agent7", details: { source: "console:agent7", note: "asked twice" } });
    const after = (await agent.get(`/console/leads/${l.id}?done=dnc_added`)).body as string;
    expect(after).toContain("Added to the do-not-contact list.");
    expect(after).toContain('<span class="badge badge-bad">Do not contact</span> <strong>Phone</strong>');
    expect(after).toContain("(console:agent7) · asked twice");
    expect(after).toContain("This phone is on the do-not-contact list");
    // The send path agrees with the page.
    const sent = await agent.post(`/console/leads/${l.id}/send`, { channel: "sms", body: "hi", operation_id: `console-dnc-${l.id}` });
    expect(sent.headers.get("location")).toContain("sent=do_not_contact");
  });
});
