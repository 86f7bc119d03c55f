import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testDatabase, type TestDatabase } from "./harness/db";
import { call, startApp, type TestApp } from "./harness/app";
import { ALL_SCOPES, makeKey, seedWorld } from "./harness/factory";
import { expectLimited } from "./harness/limited";

let db: TestDatabase;
let a: TestApp;
let b: TestApp;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  // Two instances with their own pools and caches on one database, as two processes would be.
  [a, b] = await Promise.all([startApp(db.url), startApp(db.url)]);
});
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await db?.drop();
});

/** Hits drawn from the key's sequence (each hit, accepted or refused, draws one value). */
const drawn = async (keyId: number) =>
  (await db.sql`select case when is_called then last_value else 0 end::int as n from ${db.sql(`rate_seq_${keyId}`)}`)[0].n;

const getLead = (app: TestApp, key: string) => call(app.base, "/hooks/api_v1.php?r=leads/1", { key });
const intake = (app: TestApp, key: string) =>
  call(app.base, "/hooks/lead_intake.php", { method: "POST", key, json: { phone: "5125550000", list_id: 101 } });
const kpi = (app: TestApp, key: string) =>
  call(app.base, "/hooks/kpi_ingest.php", { method: "POST", key, json: { metric_key: "m", value: 1 } });

describe("shared hourly limit", () => {
  test("300 api_v1 requests per key per hour across two instances, then 429 rate_limited without Retry-After", async () => {
    const { id, key } = await makeKey(db.sql, { scopes: ALL_SCOPES, org: 1 });
    // 320 concurrent requests, alternating instances.
    const replies = await Promise.all(Array.from({ length: 320 }, (_, i) => getLead(i % 2 ? a : b, key)));
    const allInTime = expectLimited(replies, 300, 404);
    await Promise.all([a.running.deps.limits.flush(), b.running.deps.limits.flush()]);
    // Every request drew its hit (a 503's may still be on its way when it answered).
    if (allInTime) expect(await drawn(id)).toBe(320);
  });

  test("families share one counter: intake's 120 is exhausted by api_v1 traffic; KPI's 600 still has room", async () => {
    const { key } = await makeKey(db.sql, { scopes: ALL_SCOPES, org: 1 });
    for (let i = 0; i < 150; i++) expect((await getLead(i % 2 ? a : b, key)).status).toBe(404);
    const r = await intake(a, key);
    expect(r.status).toBe(429);
    expect(r.body).toEqual({ ok: false, error: "rate_limited" });
    expect((await kpi(b, key)).status).toBe(200);
  });

  test("a key over its limit is refused from memory, and those refusals still count in the shared counter", async () => {
    const { id, key } = await makeKey(db.sql, { scopes: ALL_SCOPES, org: 1 });
    // 299 hits already counted this hour.
    await db.sql`select setval(format('rate_seq_%s', ${id}::bigint)::regclass, 1299)`;
    await db.sql`insert into rate_windows (key_id, hour, base) values (${id}, floor(extract(epoch from now()) / 3600)::bigint, 1000)`;
    expect((await getLead(a, key)).status).toBe(404); // 300th
    expect((await getLead(a, key)).status).toBe(429); // 301st: the instance now knows
    await a.running.deps.limits.flush();
    const before = await drawn(id);
    const replies = await Promise.all(Array.from({ length: 200 }, () => getLead(a, key)));
    expect(replies.every((r) => r.status === 429)).toBe(true);
    // Refusals from memory did not each write; they arrive as a batch.
    await a.running.deps.limits.flush();
    const after = await drawn(id);
    expect(after).toBe(before + 200);
    // KPI (600) is still open for this key on the other instance.
    expect((await kpi(b, key)).status).toBe(200);
  });

  test("past every family's threshold (600), refusals answer from memory and draw nothing more", async () => {
    const { id, key } = await makeKey(db.sql, { scopes: ALL_SCOPES, org: 1 });
    // 700 hits already counted this hour: over intake's 120, api_v1's 300 and KPI's 600.
    await db.sql`select setval(format('rate_seq_%s', ${id}::bigint)::regclass, 1700)`;
    await db.sql`insert into rate_windows (key_id, hour, base) values (${id}, floor(extract(epoch from now()) / 3600)::bigint, 1000)`;
    expect((await getLead(a, key)).status).toBe(429); // drawn: the instance learns where the key is
    await a.running.deps.limits.flush();
    const before = await drawn(id);
    const replies = await Promise.all(Array.from({ length: 100 }, () => getLead(a, key)));
    expect(replies.every((r) => r.status === 429)).toBe(true);
    await a.running.deps.limits.flush();
    expect(await drawn(id)).toBe(before);
    // Every family still refuses it, on the instance that knows and on the one that does not.
    for (const app of [a, b]) {
      expect((await kpi(app, key)).status).toBe(429);
      expect((await intake(app, key)).status).toBe(429);
    }
  });

  test("a CTI lookup refused for its phone still counts, and over the limit answers 429 first", async () => {
    const { id, key } = await makeKey(db.sql, { scopes: ALL_SCOPES, org: 1, agent: "agent7" });
    const lookup = (phone: string) => call(a.base, `/hooks/api_v1.php?r=cti/lookup&phone=${phone}`, { key });
    const r = await lookup("12345");
    expect(r.status).toBe(422);
    expect(r.body).toMatchObject({ ok: false, error: "bad_phone" });
    expect((await lookup("5125550199")).status).toBe(200);
    await a.running.deps.limits.flush();
    expect(await drawn(id)).toBe(2);
    // At the limit: the 301st request is refused for the limit, not for its phone.
    await db.sql`select setval(format('rate_seq_%s', ${id}::bigint)::regclass, 300 + (select base from rate_windows where key_id = ${id}))`;
    expect((await lookup("12345")).status).toBe(429);
  });

  test("another key is unaffected", async () => {
    const { key } = await makeKey(db.sql, { scopes: ALL_SCOPES, org: 1 });
    expect((await getLead(a, key)).status).toBe(404);
  });
});
