// Messaging on the embedded database (PGlite: one connection): sends, idempotency, the deferred
// send worker and a provider that hangs while the single connection keeps serving.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { start, type Running } from "../src/app/server";
import { loadConfig } from "../src/config";
import { breakerOf } from "../src/db/breaker";
import { openDatabase } from "../src/db/open";
import { call } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { makeKey, seedWorld } from "./harness/factory";
import { startFakeTwilio, type FakeTwilio } from "./harness/fake-twilio";

const NIGHT = Date.UTC(2026, 0, 16, 4); // 22:00 in Texas
const MORNING_TX = Date.UTC(2026, 0, 16, 14);

let dir: string;
let running: Running;
let base: string;
let twilio: FakeTwilio;
let k: string;
const clock = new ManualClock(NIGHT);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "leadline-msg-embedded-"));
  twilio = await startFakeTwilio();
  // A provider's wait far beyond the test: a hanging send ends only when the fake lets it go.
  const config = loadConfig({ DATA_DIR: dir, PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "error", BASE_URL: "https://leadline.example" });
  const db = await openDatabase(config, "serve");
  running = await start(config, db, { clock, providerTimeoutMs: 120_000 });
  base = `http://127.0.0.1:${running.port}`;
  const sql = running.deps.sql;
  await seedWorld(sql);
  await sql`
    update orgs set quiet_start = '21:00', quiet_end = '08:00',
      sms = ${sql.json({ base_url: twilio.url, account_sid: "AC1", auth_token: "t", from: "5125550100" })}
    where id = 1`;
  await sql`insert into org_billing (org_id, status, subscription, credits, sms_cost) values (1, 'active', 'active', 1, 0.01)`;
  k = (await makeKey(sql, { scopes: ["messages:write"], org: 1 })).key;
}, 60_000);
afterAll(async () => {
  await running?.stop();
  await twilio?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function lead(phone: string): Promise<number> {
  const [row] = await running.deps.sql<{ id: number }[]>`
    insert into leads (list_id, phone, first_name, state) values (101, ${phone}, 'Dana', 'TX') returning id`;
  return row.id;
}
const post = (json: unknown) => call(base, "/hooks/api_v1.php?r=messages", { method: "POST", json, key: k });

describe("messaging on the embedded database", () => {
  test("no breaker: the database is in the process, never unreachable (src/db/breaker.ts)", () => {
    expect(breakerOf(running.deps.sql)).toBeNull();
  });

  test("a deferred send goes when the clock reaches the end of quiet hours; retries replay", async () => {
    const id = await lead("5125550401");
    const r = await post({ lead_id: id, channel: "sms", body: "morning", operation_id: "emb-1" });
    expect(r.body).toEqual({ ok: true, message_id: expect.any(Number), defer_until: MORNING_TX / 1000 });
    const again = await Promise.all(Array.from({ length: 5 }, () => post({ lead_id: id, channel: "sms", body: "morning", operation_id: "emb-1" })));
    for (const a of again) expect(a.body).toEqual(r.body);
    clock.set(MORNING_TX);
    await twilio.waitFor(1, 5000);
    expect(twilio.requests[0].form.Body).toBe("morning");
    const status = async () => (await running.deps.sql`select status from messages where id = ${r.body.message_id}`)[0].status;
    const end = performance.now() + 5000;
    while ((await status()) !== "sent" && performance.now() < end) await Bun.sleep(25);
    expect(await status()).toBe("sent");
  }, 20_000);

  test("a hanging provider does not hold the one connection", async () => {
    clock.set(MORNING_TX);
    twilio.reset();
    twilio.setMode({ kind: "hang" });
    const id = await lead("5125550402");
    let answered = false;
    const hanging = post({ lead_id: id, channel: "sms", body: "x", operation_id: "emb-2" }).finally(() => (answered = true));
    await twilio.waitFor(1);
    // The note goes while the send still waits on the provider, so the one connection was not held.
    const note = await post({ lead_id: id, channel: "note", body: "meanwhile", operation_id: "emb-3" });
    expect(note.body.ok).toBe(true);
    expect(answered).toBe(false);
    twilio.reset(); // the held request gets a 503
    expect((await hanging).body).toMatchObject({ ok: false, reason: "provider_unavailable" });
  }, 20_000);
});
