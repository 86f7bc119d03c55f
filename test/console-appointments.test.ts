// The console's appointments page through HTTP: the list per role and organization, its filters
// and keyset pages, each status action with its audit row, refusals, another organization's ids,
// and a cancellation's seat offered again through the real booking API.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { call, startApp, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { makeUser, signIn, type ConsoleClient } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";

setDefaultTimeout(60_000);

let db: TestDatabase;
let app: TestApp;
const T0 = Date.parse("2026-11-23T12:00:00Z"); // Monday 06:00 in Chicago
const clock = new ManualClock(T0);
/** Mon Nov 23 2026 at hh:mm Chicago (CST, UTC-6), `day` days later, as epoch seconds. */
const at = (hh: number, mm = 0, day = 0) => Date.UTC(2026, 10, 23 + day, hh + 6, mm) / 1000;

let manager: ConsoleClient;
let agent: ConsoleClient;
let admin: ConsoleClient;
let bolt: ConsoleClient;
const ids: Record<string, string> = {};
const logins: Record<string, { email: string; password: string }> = {};

let ipSeq = 0;
async function book(slug: string, epoch: number, name: string): Promise<number> {
  const r = await call(app.base, "/book/api.php?action=book", {
    method: "POST",
    json: { slug, epoch, name, phone: `512555${String(3000 + ++ipSeq)}` },
    headers: { "x-forwarded-for": `198.51.100.${ipSeq}` },
  });
  if (r.body?.ok !== true) throw new Error(JSON.stringify(r.body));
  return r.body.appt_id;
}

const slotsOf = async (slug: string) => (await call(app.base, `/book/api.php?action=slots&s=${slug}`)).body.slots as { epoch: number; remaining: number }[];

async function auditRows(action: string, target: string) {
  return db.sql`select * from audit_log where action = ${action} and target = ${target}`;
}

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  await db.sql`update orgs set timezone = 'America/Chicago' where id = 1`;
  const hours = { mon: [["09:00", "17:00"]], tue: [["09:00", "17:00"]], wed: [["09:00", "17:00"]] };
  for (const [id, org, slug, name] of [[1, 1, "acme-estimate", "Estimates"], [2, 2, "bolt-estimate", "Bolt visits"], [3, null, "house-calls", "House calls"], [4, 1, "acme-crew", "Crew"]] as const) {
    await db.sql`insert into calendars (id, org_id, name, timezone, slot_minutes, capacity, min_notice_minutes, horizon_days, hours)
                 values (${id}, ${org}, ${name}, 'America/Chicago', 30, 1, 0, 14, ${db.sql.json(hours)})`;
    await db.sql`insert into calendar_links (slug, calendar_id) values (${slug}, ${id})`;
  }
  app = await startApp(db.url, { BASE_URL: "https://acme.example", COMMS_INBOUND_LIST_ID: "101" }, { clock });
  const m = await makeUser(db.sql, { role: "manager", orgId: 1 });
  const a = await makeUser(db.sql, { role: "agent", orgId: 1 });
  const s = await makeUser(db.sql, { role: "admin", orgId: null });
  const b = await makeUser(db.sql, { role: "manager", orgId: 2 });
  Object.assign(ids, { manager: m.id, agent: a.id, admin: s.id, bolt: b.id });
  logins.manager = m;
  [manager, agent, admin, bolt] = await Promise.all([
    signIn(app.base, m.email, m.password),
    signIn(app.base, a.email, a.password),
    signIn(app.base, s.email, s.password),
    signIn(app.base, b.email, b.password),
  ]);
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

describe("the list", () => {
  let acmeId: number;
  let boltId: number;
  let houseId: number;
  beforeAll(async () => {
    acmeId = await book("acme-estimate", at(9), "Ann Acme");
    boltId = await book("bolt-estimate", at(9), "Bob Bolt");
    houseId = await book("house-calls", at(9), "Hal House");
  });

  test("a manager and an agent see their organization's appointments only, in its zone, with the actions open now", async () => {
    for (const client of [manager, agent]) {
      const r = await client.get("/console/appointments");
      expect(r.status).toBe(200);
      expect(r.body).toContain("<h1>Appointments</h1>");
      expect(r.body).toContain("Ann Acme");
      expect(r.body).not.toContain("Bob Bolt");
      expect(r.body).not.toContain("Hal House");
      expect(r.body).toContain("Nov 23, 2026, 9:00 AM");
      expect(r.body).toContain(`action="/console/appointments/${acmeId}/status"`);
      expect(r.body).toContain('name="action" value="confirm"');
      expect(r.body).toContain('name="action" value="cancel"');
      expect(r.body).not.toContain('name="action" value="no_show"');
      // The calendars to filter by are the organization's.
      expect(r.body).toContain("Estimates");
      expect(r.body).not.toContain("Bolt visits");
    }
  });

  test("an admin sees every organization's, the house's included", async () => {
    const r = await admin.get("/console/appointments");
    expect(r.status).toBe(200);
    for (const name of ["Ann Acme", "Bob Bolt", "Hal House"]) expect(r.body).toContain(name);
  });

  test("filters: calendar, status and the date range (in the organization's zone, the last day included)", async () => {
    const crew = await book("acme-crew", at(10, 0, 1), "Cora Crew");
    expect((await manager.get("/console/appointments?calendar=4")).body).toContain("Cora Crew");
    expect((await manager.get("/console/appointments?calendar=4")).body).not.toContain("Ann Acme");
    // Another organization's calendar id shows nothing.
    expect((await manager.get("/console/appointments?calendar=2")).body).not.toContain("Bob Bolt");
    expect((await manager.get("/console/appointments?from=2026-11-24&to=2026-11-24")).body).toContain("Cora Crew");
    expect((await manager.get("/console/appointments?from=2026-11-24&to=2026-11-24")).body).not.toContain("Ann Acme");
    expect((await manager.get("/console/appointments?from=2026-11-23&to=2026-11-23")).body).not.toContain("Cora Crew");
    expect((await manager.get("/console/appointments?status=confirmed")).body).not.toContain("Cora Crew");
    expect((await manager.get("/console/appointments?status=pending")).body).toContain("Cora Crew");
    // Junk in a filter reads as no filter, never an error.
    const junk = await manager.get("/console/appointments?calendar=x&from=yesterday&status=%3Cb%3E&after=1;drop");
    expect(junk.status).toBe(200);
    expect(junk.body).not.toContain("<b>");
    void crew;
  });

  test("keyset pages by start: 50 a page, then the later ones", async () => {
    for (let i = 0; i < 55; i++) {
      await db.sql`insert into appointments (calendar_id, link_slug, slot_epoch, name, phone, token_selector, token_hash)
                   values (4, 'acme-crew', ${at(9, 0, 7) + i * 60}, ${`Bulk ${String(i).padStart(2, "0")}`}, '5125550000', ${randomBytes(32)}, ${randomBytes(32)})`;
    }
    const first = await manager.get("/console/appointments?calendar=4&from=2026-11-30&to=2026-11-30");
    expect(first.body.match(/<td>Bulk \d\d<br>/g)).toHaveLength(50);
    const next = /href="([^"]*after=[^"]*)"/.exec(first.body)?.[1].replaceAll("&amp;", "&");
    expect(next).toBeDefined();
    const second = await manager.get(next!);
    expect(second.body.match(/<td>Bulk \d\d<br>/g)).toEqual(["50", "51", "52", "53", "54"].map((n) => `<td>Bulk ${n}<br>`));
    expect(second.body).not.toContain("Later appointments");
  });

  test("another organization's appointment cannot be changed: the 404 page, as for a missing one", async () => {
    for (const id of [boltId, houseId, 99_999_999]) {
      const r = await manager.post(`/console/appointments/${id}/status`, { action: "cancel" });
      expect(r.status).toBe(404);
    }
    for (const path of ["/console/appointments/abc/status", "/console/appointments/1e3/status"]) {
      expect((await manager.post(path, { action: "cancel" })).status).toBe(404);
    }
    const rows = await db.sql`select status from appointments where id in ${db.sql([boltId, houseId])}`;
    expect(rows.map((r) => r.status)).toEqual(["pending", "pending"]);
    expect(await db.sql`select 1 from audit_log where action like 'appointment.%' and target in ${db.sql([`appointment:${boltId}`, `appointment:${houseId}`])}`).toHaveLength(0);
  });

  test("a signed-out visitor is sent to sign in", async () => {
    const r = await call(app.base, "/console/appointments", { redirect: "manual" });
    expect(r.status).toBe(303);
    expect(r.headers.get("location")).toStartWith("/console/login");
  });
});

describe("actions", () => {
  test("cancel: 303 back with a notice, the audit row, the conversation event, appointment.cancelled, and the seat offered again", async () => {
    const id = await book("acme-estimate", at(11), "Cathy Cancel");
    expect((await slotsOf("acme-estimate")).some((s) => s.epoch === at(11))).toBe(false);
    const back = "/console/appointments?calendar=1&from=2026-11-23&to=&status=";
    const r = await agent.post(`/console/appointments/${id}/status`, { action: "cancel", back });
    expect(r.status).toBe(303);
    expect(r.headers.get("location")).toBe(`${back}&done=cancel`);
    const page = await agent.get(r.headers.get("location")!);
    expect(page.body).toContain("Appointment cancelled; its slot is offered again on the booking page.");
    expect(page.body).toContain("Cancelled");
    const [row] = await db.sql`select status, lead_id from appointments where id = ${id}`;
    expect(row.status).toBe("cancelled");
    const audits = await auditRows("appointment.cancel", `appointment:${id}`);
    expect(audits).toHaveLength(1);
    expect(audits[0]).toMatchObject({ org_id: 1, actor_type: "user", actor_id: ids.agent });
    const [ev] = await db.sql`select actor, actor_role from lead_events where lead_id = ${row.lead_id} and event = 'appointment.cancelled'`;
    expect(ev).toEqual({ actor: ids.agent, actor_role: "user" });
    const [out] = await db.sql`select payload from outbox_events where type = 'appointment.cancelled' and (payload->'data'->>'appt_id')::bigint = ${id}`;
    expect(out.payload.data).toMatchObject({ status: "cancelled", previous_status: "pending", actor_type: "user", actor_id: ids.agent });
    expect((await slotsOf("acme-estimate")).find((s) => s.epoch === at(11))?.remaining).toBe(1);
  });

  test("confirm, then completed and no-show once it has started; a refusal says why and writes nothing", async () => {
    const id = await book("acme-estimate", at(12), "Connie Confirm");
    expect((await manager.post(`/console/appointments/${id}/status`, { action: "complete" })).headers.get("location")).toBe("/console/appointments?error=not_started");
    expect((await manager.get("/console/appointments?error=not_started")).body).toContain("has not started yet");
    expect(await auditRows("appointment.complete", `appointment:${id}`)).toHaveLength(0);
    expect((await manager.post(`/console/appointments/${id}/status`, { action: "confirm" })).headers.get("location")).toBe("/console/appointments?done=confirm");
    expect(await auditRows("appointment.confirm", `appointment:${id}`)).toHaveLength(1);
    clock.set(at(12, 5) * 1000);
    try {
      // Hours later than the other sessions' last use: past their idle timeout, so a new one.
      const manager = await signIn(app.base, logins.manager.email, logins.manager.password);
      const page = await manager.get("/console/appointments?from=2026-11-23");
      const from = page.body.slice(page.body.indexOf(`>Connie Confirm<`));
      const actions = from.slice(0, from.indexOf("</tr>"));
      expect(actions).toContain('name="action" value="no_show"');
      expect(actions).toContain('name="action" value="complete"');
      expect(actions).not.toContain('name="action" value="cancel"');
      expect((await manager.post(`/console/appointments/${id}/status`, { action: "cancel" })).headers.get("location")).toBe("/console/appointments?error=already_started");
      expect((await manager.post(`/console/appointments/${id}/status`, { action: "no_show" })).headers.get("location")).toBe("/console/appointments?done=no_show");
      expect((await manager.post(`/console/appointments/${id}/status`, { action: "complete" })).headers.get("location")).toBe("/console/appointments?done=complete");
      expect(await auditRows("appointment.no_show", `appointment:${id}`)).toHaveLength(1);
      const [audit] = await auditRows("appointment.complete", `appointment:${id}`);
      expect(audit.details).toEqual({ from: "no_show", to: "completed" });
      const [row] = await db.sql`select status from appointments where id = ${id}`;
      expect(row.status).toBe("completed");
    } finally {
      clock.set(T0);
    }
  });

  test("an admin's change is written to the appointment's organization's log, which its manager reads", async () => {
    const id = await book("bolt-estimate", at(14), "Bree Bolt");
    expect((await admin.post(`/console/appointments/${id}/status`, { action: "confirm" })).status).toBe(303);
    const [row] = await auditRows("appointment.confirm", `appointment:${id}`);
    expect(row).toMatchObject({ org_id: 2, actor_type: "user", actor_id: ids.admin });
    expect((await bolt.get("/console/audit")).body).toContain(`appointment:${id}`);
    expect((await manager.get("/console/audit")).body).not.toContain(`appointment:${id}`);
  });

  test("a post without the session's CSRF token, or from another site, is refused and changes nothing", async () => {
    const id = await book("acme-estimate", at(15), "Cora Csrf");
    expect((await manager.post(`/console/appointments/${id}/status`, { action: "cancel", _csrf: "x".repeat(manager.csrf.length) })).status).toBe(403);
    expect((await manager.post(`/console/appointments/${id}/status`, { action: "cancel" }, { origin: "https://evil.example", "sec-fetch-site": "cross-site" })).status).toBe(403);
    const [row] = await db.sql`select status from appointments where id = ${id}`;
    expect(row.status).toBe("pending");
  });

  test("an unknown action answers the 404 page; `back` cannot lead outside the page", async () => {
    const id = await book("acme-estimate", at(13), "Bea Back");
    expect((await manager.post(`/console/appointments/${id}/status`, { action: "delete" })).status).toBe(404);
    for (const back of ["https://evil.example/", "//evil.example/console/appointments", "/console/keys", "/console/appointmentsX"]) {
      const r = await manager.post(`/console/appointments/${id}/status`, { action: back === "/console/keys" ? "confirm" : "cancel", back });
      expect(r.headers.get("location")).toStartWith("/console/appointments?");
    }
  });
});
