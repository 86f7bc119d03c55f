// `leadline webhooks list | deliveries | attempts | replay | enable`, in-process against a real
// database and receiver.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { UsageError } from "../src/errors";
import { webhooksCommand } from "../src/events/command";
import { deliverWebhook, deliveryOptions } from "../src/events/deliver";
import { fanOut } from "../src/events/fanout";
import { createOrDedupLead, resolveList } from "../src/leads/queries";
import { parseLeadInput } from "../src/leads/model";
import { capture } from "./harness/capture";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";
import { WebhookReceiver } from "./harness/webhook-receiver";

let db: TestDatabase;
let rx: WebhookReceiver;
const clock = { now: () => Date.now() };
const secret = "whsec_" + Buffer.from("0123456789abcdef0123456789abcdef").toString("base64");
const ids = { failed: 0, pending: 0, good: [] as number[] };

const webhooks = (...args: string[]) => capture(() => webhooksCommand(db.sql, args, { allowPrivate: true, clock }));

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  rx = await WebhookReceiver.start();
  rx.respond((r) => (r.path === "/bad" ? { status: 500, body: "down for maintenance" } : { status: 200, body: "ok" }));
  await db.sql`
    insert into webhooks (id, org_id, url, secret, events) values
      (1, 1, ${rx.url("/good")}, ${secret}, '{lead.created}'),
      (2, null, ${rx.url("/bad")}, ${secret}, '{*}')`;
  for (const phone of ["5125551001", "5125551002"]) {
    const input = parseLeadInput({ phone, list_id: 101 })!;
    await createOrDedupLead(db.sql, (await resolveList(db.sql, null, 101, null))!, input, new Date(clock.now()));
  }
  const { deliveries } = await fanOut(db.sql, clock);
  for (const d of deliveries) await deliverWebhook(db.sql, clock, { ref: d.id, attempts: 1 }, deliveryOptions(true));
  const bad = deliveries.filter((d) => d.webhook_id === 2);
  ids.failed = bad[0].id;
  ids.pending = bad[1].id;
  ids.good = deliveries.filter((d) => d.webhook_id === 1).map((d) => d.id);
  await db.sql`update webhook_deliveries set status = 'failed' where id = ${ids.failed}`;
});
afterAll(async () => {
  await rx?.stop();
  await db?.drop();
});

describe("webhooks list", () => {
  test("shows every endpoint with its state and counts, never the secret", async () => {
    const r = await webhooks("list");
    expect(r.code).toBe(0);
    const lines = r.out.trimEnd().split("\n");
    expect(lines[0].split(/\s+/)).toEqual(["ID", "ORG", "URL", "EVENTS", "STATE", "PENDING", "FAILED", "LAST_DELIVERED"]);
    expect(lines[1].split(/\s+/).slice(0, 7)).toEqual(["1", "1", rx.url("/good"), "lead.created", "active", "0", "0"]);
    expect(lines[2].split(/\s+/).slice(0, 7)).toEqual(["2", "house", rx.url("/bad"), "*", "active", "1", "1"]);
    expect(r.out).not.toContain(secret.slice(6));
    const json = JSON.parse((await webhooks("list", "--json")).out);
    expect(json.map((e: any) => Object.keys(e).sort())[0]).toEqual(
      ["active", "disabled_at", "disabled_reason", "events", "failed", "id", "last_delivered_at", "org_id", "pending", "url"],
    );
  });
});

describe("webhooks deliveries", () => {
  test("lists the newest first, filtered by endpoint and failure", async () => {
    const all = JSON.parse((await webhooks("deliveries", "--json")).out);
    expect(all.map((d: any) => d.id)).toEqual([...all.map((d: any) => d.id)].sort((a: number, b: number) => b - a));
    expect(all).toHaveLength(4);
    const failed = JSON.parse((await webhooks("deliveries", "--failed", "--json")).out);
    expect(failed.map((d: any) => d.id)).toEqual([ids.failed]);
    expect(failed[0]).toMatchObject({ endpoint: 2, type: "lead.created", status: "failed", attempts: 1, last_status: 500, last_error: "HTTP 500" });
    const mine = JSON.parse((await webhooks("deliveries", "--endpoint", "1", "--json")).out);
    expect(mine.map((d: any) => [d.id, d.status])).toEqual(ids.good.toReversed().map((id) => [id, "delivered"]));
    const text = await webhooks("deliveries", "--endpoint=2");
    expect(text.out.split("\n")[0].split(/\s+/)).toEqual(["ID", "ENDPOINT", "EVENT", "TYPE", "STATUS", "ATTEMPTS", "LAST", "NEXT_ATTEMPT", "CREATED"]);
    expect(text.out).toContain('"HTTP 500"');
  });

  test("bad options are usage errors", async () => {
    await expect(webhooks("deliveries", "--endpoint", "x")).rejects.toBeInstanceOf(UsageError);
    await expect(webhooks("deliveries", "--nope")).rejects.toThrow("webhooks deliveries: unknown option --nope");
    await expect(webhooks("deliveries", "extra")).rejects.toBeInstanceOf(UsageError);
    await expect(webhooks("frobnicate")).rejects.toThrow('webhooks: unknown subcommand "frobnicate"');
    await expect(webhooks()).rejects.toBeInstanceOf(UsageError);
  });
});

describe("webhooks replay and attempts", () => {
  test("replay sends the delivery again now as a new attempt of the same event id", async () => {
    rx.respond({ status: 200, body: "ok now" });
    const before = rx.at("/bad").length;
    const r = await webhooks("replay", String(ids.failed));
    expect(r.code).toBe(0);
    expect(r.out).toMatch(new RegExp(`^delivery ${ids.failed} replayed as attempt \\d+ of evt_\\d+: HTTP 200 in \\d+ ms\\n$`));
    const sent = rx.at("/bad");
    expect(sent).toHaveLength(before + 1);
    const last = sent.at(-1)!;
    const first = sent.find((x) => x.headers["webhook-id"] === last.headers["webhook-id"])!;
    expect(first).not.toBe(last);
    expect(() => new Webhook(secret).verify(last.body, last.headers as any)).not.toThrow();
    const [d] = await db.sql`select status from webhook_deliveries where id = ${ids.failed}`;
    expect(d.status).toBe("delivered");

    const att = JSON.parse((await webhooks("attempts", String(ids.failed), "--json")).out);
    expect(att.map((a: any) => [a.trigger, a.status, a.response])).toEqual([
      ["schedule", 500, "down for maintenance"],
      ["replay", 200, "ok now"],
    ]);
    const text = await webhooks("attempts", String(ids.failed));
    expect(text.out.split("\n")[0].split(/\s+/)).toEqual(["ATTEMPT", "TRIGGER", "STARTED", "MS", "ADDRESS", "STATUS", "ERROR", "RESPONSE"]);
  });

  test("a replay that fails exits non-zero with the reason", async () => {
    rx.respond({ status: 502 });
    await expect(webhooks("replay", String(ids.pending))).rejects.toThrow(`delivery ${ids.pending} replayed as attempt`);
    const r = await webhooks("replay", String(ids.pending), "--json");
    expect(r.code).toBe(1);
    expect(JSON.parse(r.out)).toMatchObject({ delivery_id: ids.pending, ok: false, status: 502, error: "HTTP 502" });
  });

  test("replay and attempts name a missing delivery; a disabled endpoint must be enabled first", async () => {
    await expect(webhooks("replay", "999999")).rejects.toThrow("delivery 999999 does not exist");
    await expect(webhooks("attempts", "999999")).rejects.toThrow("delivery 999999 does not exist");
    await expect(webhooks("replay")).rejects.toThrow("usage: leadline webhooks replay DELIVERY_ID");
    await db.sql`update webhooks set disabled_at = now(), disabled_reason = 'HTTP 410 Gone from delivery 1' where id = 2`;
    expect((await webhooks("list")).out).toContain("disabled (HTTP 410 Gone from delivery 1)");
    await expect(webhooks("replay", String(ids.pending))).rejects.toThrow("enable it with `leadline webhooks enable ID` first");
    const r = await webhooks("enable", "2");
    expect(r.err).toBe("enabled endpoint 2\n");
    rx.respond({ status: 200 });
    expect((await webhooks("replay", String(ids.pending))).code).toBe(0);
    await expect(webhooks("enable", "77")).rejects.toThrow("endpoint 77 does not exist");
  });
});
