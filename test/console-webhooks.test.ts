// The console's webhooks pages through HTTP: endpoints per role and organization, one endpoint's
// deliveries (failed first) and attempts, a replay delivered to a real receiver, re-enable, each
// change's audit row, and another organization's ids answered as missing ones.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { call, startApp, type TestApp } from "./harness/app";
import { makeUser, signIn, type ConsoleClient } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";
import { WebhookReceiver } from "./harness/webhook-receiver";

setDefaultTimeout(60_000);

let db: TestDatabase;
let app: TestApp;
let rx: WebhookReceiver;
let manager: ConsoleClient;
let agent: ConsoleClient;
let admin: ConsoleClient;
const ids: Record<string, string> = {};
const secret = "whsec_" + Buffer.from("0123456789abcdef0123456789abcdef").toString("base64");

/** A delivery as the schedule leaves it after its attempts failed: its event, the delivery, one attempt. */
async function failedDelivery(webhook: number, org: number | null, status = "failed"): Promise<{ delivery: number; event: number }> {
  const payload = { type: "lead.created", timestamp: "2026-11-23T12:00:00.000Z", data: { lead_id: 1, list_id: 101, campaign: "ACME", org_id: org, phone: "5125550100", source: "test", created_at: "2026-11-23T12:00:00.000Z" } };
  const [e] = await db.sql`insert into outbox_events (org_id, type, payload, dispatched_at) values (${org}, 'lead.created', ${db.sql.json(payload)}, now()) returning id`;
  const [d] = await db.sql`insert into webhook_deliveries (event_id, webhook_id, status, attempts, last_status, last_error, updated_at)
                           values (${e.id}, ${webhook}, ${status}, 1, 500, 'HTTP 500', now()) returning id`;
  await db.sql`insert into webhook_attempts (delivery_id, trigger, started_at, finished_at, duration_ms, address, status, error, response)
               values (${d.id}, 'schedule', now(), now(), 12, '127.0.0.1', 500, 'HTTP 500', 'down for maintenance')`;
  return { delivery: d.id, event: e.id };
}

const audits = (action: string, target: string) => db.sql`select * from audit_log where action = ${action} and target = ${target}`;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  rx = await WebhookReceiver.start();
  rx.respond({ status: 200, body: "thanks" });
  await db.sql`
    insert into webhooks (id, org_id, url, secret, events) values
      (1, 1, ${rx.url("/acme")}, ${secret}, '{lead.created}'),
      (2, 2, ${rx.url("/bolt")}, ${secret}, '{*}'),
      (3, null, ${rx.url("/house")}, ${secret}, '{*}')`;
  app = await startApp(db.url, { WEBHOOK_ALLOW_PRIVATE: "true" });
  const m = await makeUser(db.sql, { role: "manager", orgId: 1 });
  const a = await makeUser(db.sql, { role: "agent", orgId: 1 });
  const s = await makeUser(db.sql, { role: "admin", orgId: null });
  Object.assign(ids, { manager: m.id, admin: s.id });
  [manager, agent, admin] = await Promise.all([signIn(app.base, m.email, m.password), signIn(app.base, a.email, a.password), signIn(app.base, s.email, s.password)]);
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await rx?.stop();
  await db?.drop();
});

describe("pages", () => {
  test("a manager sees its organization's endpoints; an admin every one; an agent the 404 page", async () => {
    const mine = await manager.get("/console/webhooks");
    expect(mine.status).toBe(200);
    expect(mine.body).toContain("<h1>Webhooks</h1>");
    expect(mine.body).toContain(rx.url("/acme"));
    expect(mine.body).not.toContain(rx.url("/bolt"));
    expect(mine.body).not.toContain(rx.url("/house"));
    expect(mine.body).not.toContain(secret.slice(6));
    const all = await admin.get("/console/webhooks");
    for (const path of ["/acme", "/bolt", "/house"]) expect(all.body).toContain(rx.url(path));
    for (const path of ["/console/webhooks", "/console/webhooks/1"]) expect((await agent.get(path)).status).toBe(404);
  });

  test("one endpoint: failed deliveries first, each with its attempts on request; another organization's is the 404 page", async () => {
    const failed = await failedDelivery(1, 1);
    const [ok] = await db.sql`insert into webhook_deliveries (event_id, webhook_id, status, attempts, delivered_at, updated_at)
                              values (${(await failedDelivery(2, 2)).event}, 1, 'delivered', 1, now(), now()) returning id`;
    const r = await manager.get("/console/webhooks/1");
    expect(r.status).toBe(200);
    expect(r.body).toContain("<h1>Webhook endpoint 1</h1>");
    const rows = [...r.body.matchAll(/<tr>\s*<td>(\d+)<\/td>/g)].map((m) => Number(m[1]));
    expect(rows.indexOf(failed.delivery)).toBeLessThan(rows.indexOf(ok.id));
    expect(r.body).toContain(`aria-label="Replay delivery ${failed.delivery}"`);
    expect(r.body).not.toContain('id="attempts"');
    const withAttempts = await manager.get(`/console/webhooks/1?delivery=${failed.delivery}`);
    expect(withAttempts.body).toContain(`Attempts of delivery ${failed.delivery}`);
    expect(withAttempts.body).toContain("down for maintenance");
    // A delivery of another endpoint is not shown on this one's page.
    const other = await failedDelivery(2, 2);
    expect((await manager.get(`/console/webhooks/1?delivery=${other.delivery}`)).body).not.toContain('id="attempts"');
    for (const path of ["/console/webhooks/2", "/console/webhooks/3", "/console/webhooks/999", "/console/webhooks/x"]) {
      expect((await manager.get(path)).status).toBe(404);
    }
    expect((await admin.get("/console/webhooks/3")).status).toBe(200);
  });

  test("a signed-out visitor is sent to sign in", async () => {
    const r = await call(app.base, "/console/webhooks/1", { redirect: "manual" });
    expect(r.status).toBe(303);
  });
});

describe("actions", () => {
  test("replay: the receiver gets the event again with its id, the delivery is delivered, the audit row written with the attempt", async () => {
    const { delivery, event } = await failedDelivery(1, 1);
    rx.clear();
    const r = await manager.post("/console/webhooks/1/replay", { delivery: String(delivery) });
    expect(r.status).toBe(303);
    expect(r.headers.get("location")).toBe(`/console/webhooks/1?delivery=${delivery}&done=replayed#attempts`);
    expect(rx.at("/acme")).toHaveLength(1);
    expect(rx.at("/acme")[0].headers["webhook-id"]).toBe(`evt_${event}`);
    const [d] = await db.sql`select status, delivered_at from webhook_deliveries where id = ${delivery}`;
    expect(d.status).toBe("delivered");
    const [attempt] = await db.sql`select id, trigger, status from webhook_attempts where delivery_id = ${delivery} order by id desc limit 1`;
    expect(attempt).toMatchObject({ trigger: "replay", status: 200 });
    const rows = await audits("webhook.replay", `delivery:${delivery}`);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ org_id: 1, actor_type: "user", actor_id: ids.manager });
    expect(rows[0].details).toEqual({ endpoint: 1, event_id: `evt_${event}`, attempt_id: attempt.id, status: 200, error: null });
    const page = await manager.get(`/console/webhooks/1?delivery=${delivery}&done=replayed`);
    expect(page.body).toContain("Delivery replayed");
    expect(page.body).toContain("HTTP 200");
  });

  test("another organization's delivery, or one of another endpoint, is not replayed: the 404 page, nothing sent", async () => {
    const bolt = await failedDelivery(2, 2);
    const house = await failedDelivery(3, null);
    rx.clear();
    for (const [path, delivery] of [["/console/webhooks/1/replay", bolt.delivery], ["/console/webhooks/2/replay", bolt.delivery], ["/console/webhooks/3/replay", house.delivery], ["/console/webhooks/1/replay", 99_999_999]] as const) {
      expect((await manager.post(path, { delivery: String(delivery) })).status).toBe(404);
    }
    expect((await manager.post("/console/webhooks/1/replay", { delivery: "x" })).status).toBe(404);
    expect((await agent.post("/console/webhooks/1/replay", { delivery: String(bolt.delivery) })).status).toBe(404);
    expect(rx.received).toHaveLength(0);
    expect(await db.sql`select 1 from audit_log where action = 'webhook.replay' and target in ${db.sql([`delivery:${bolt.delivery}`, `delivery:${house.delivery}`])}`).toHaveLength(0);
    // An admin reaches the house's.
    expect((await admin.post("/console/webhooks/3/replay", { delivery: String(house.delivery) })).status).toBe(303);
    expect(rx.at("/house")).toHaveLength(1);
  });

  test("a disabled endpoint: replay refused until re-enabled; re-enable audited", async () => {
    const { delivery } = await failedDelivery(1, 1);
    await db.sql`update webhooks set disabled_at = now(), disabled_reason = 'HTTP 410 Gone from delivery 1' where id = 1`;
    const page = await manager.get("/console/webhooks/1");
    expect(page.body).toContain("Disabled");
    expect(page.body).toContain("HTTP 410 Gone from delivery 1");
    expect(page.body).toContain('action="/console/webhooks/1/enable"');
    rx.clear();
    const refused = await manager.post("/console/webhooks/1/replay", { delivery: String(delivery) });
    expect(refused.headers.get("location")).toBe(`/console/webhooks/1?delivery=${delivery}&error=closed#attempts`);
    expect(rx.received).toHaveLength(0);
    expect((await agent.post("/console/webhooks/1/enable", {})).status).toBe(404);
    expect((await manager.post("/console/webhooks/2/enable", {})).status).toBe(404);
    const r = await manager.post("/console/webhooks/1/enable", { back: "/console/webhooks" });
    expect(r.status).toBe(303);
    expect(r.headers.get("location")).toBe("/console/webhooks?done=enabled");
    const [w] = await db.sql`select disabled_at from webhooks where id = 1`;
    expect(w.disabled_at).toBeNull();
    expect(await audits("webhook.enable", "webhook:1")).toHaveLength(1);
    expect((await manager.post("/console/webhooks/1/replay", { delivery: String(delivery) })).headers.get("location")).toContain("done=replayed");
    expect(rx.at("/acme")).toHaveLength(1);
  });
});
