// The outbound envelope {type, timestamp, data} is built in one place (src/events/envelope.ts),
// with one source of time, the clock: an intake and a call report, with the clock set to a past
// instant, write events whose timestamp (and the lead's and call's own times) are that instant,
// and whose whole payload is exactly what /openapi.json's webhooks section documents.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { Value } from "@sinclair/typebox/value";
import { call, startApp, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeKey, seedWorld } from "./harness/factory";
import { eventEnvelope } from "../src/events/model";
import type { EventType } from "../src/events/types";

const T0 = Date.parse("2026-03-01T10:00:00.123Z");
const clock = new ManualClock(T0);

let db: TestDatabase;
let app: TestApp;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  app = await startApp(db.url, {}, { clock });
});
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

async function eventOf(type: EventType): Promise<{ payload: any; created_at: Date }> {
  const [row] = await db.sql<{ payload: any; created_at: Date }[]>`
    select payload, created_at from outbox_events where type = ${type} order by id desc limit 1`;
  return row;
}

describe("the event envelope", () => {
  test("lead.created: the clock's time in the envelope, the row and the lead; the payload as documented", async () => {
    const key = (await makeKey(db.sql, { scopes: ["leads:write"], org: 1 })).key;
    const r = await call(app.base, "/hooks/lead_intake.php", { method: "POST", key, json: { phone: "5125550199", list_id: 101 } });
    expect(r.status).toBe(200);
    const { payload, created_at } = await eventOf("lead.created");
    expect(Object.keys(payload).sort()).toEqual(["data", "timestamp", "type"]);
    expect(payload.timestamp).toBe("2026-03-01T10:00:00.123Z");
    expect(created_at.getTime()).toBe(T0);
    expect(payload.data.created_at).toBe("2026-03-01T10:00:00.123Z");
    expect(Value.Errors(eventEnvelope("lead.created"), payload).First()).toBeUndefined();
    expect(payload.data).toMatchObject({ lead_id: r.body.lead_id, list_id: 101, org_id: 1, phone: "5125550199" });
  });

  test("call.completed: the clock's time in the envelope and as the call's time when the report has no epoch", async () => {
    clock.set(T0 + 60_000);
    const key = (await makeKey(db.sql, { scopes: ["calls:write"], org: 1 })).key;
    const r = await call(app.base, "/hooks/calls.php", { method: "POST", key, json: { phone: "5125550199", status: "ANSWERED", secs: 42, agent: "a7" } });
    expect(r.status).toBe(200);
    const { payload, created_at } = await eventOf("call.completed");
    expect(payload.timestamp).toBe("2026-03-01T10:01:00.123Z");
    expect(created_at.getTime()).toBe(T0 + 60_000);
    expect(payload.data.occurred_at).toBe("2026-03-01T10:01:00.123Z");
    expect(Value.Errors(eventEnvelope("call.completed"), payload).First()).toBeUndefined();
    expect(payload.data).toMatchObject({ call_id: r.body.call_id, secs: 42, agent: "a7", status: "ANSWERED" });
  });

  test("no statement outside src/events/envelope.ts builds an envelope", () => {
    const root = join(import.meta.dir, "../src");
    const files = (dir: string): string[] =>
      readdirSync(dir).flatMap((name) => {
        const path = join(dir, name);
        return statSync(path).isDirectory() ? files(path) : path.endsWith(".ts") ? [path] : [];
      });
    const builders = files(root).filter((f) => /'timestamp',/.test(readFileSync(f, "utf8")) || /insert into outbox_events/.test(readFileSync(f, "utf8")));
    expect(builders.map((f) => f.slice(root.length + 1))).toEqual(["events/envelope.ts"]);
  });
});
