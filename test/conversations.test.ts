import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testDatabase, type TestDatabase } from "./harness/db";
import { call, startApp, type TestApp } from "./harness/app";
import { makeKey, makeLead, seedWorld } from "./harness/factory";

let db: TestDatabase;
let app: TestApp;
let acme: string;
let bolt: string;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  app = await startApp(db.url);
  acme = (await makeKey(db.sql, { scopes: ["conversations:read"], org: 1 })).key;
  bolt = (await makeKey(db.sql, { scopes: ["conversations:read"], org: 2 })).key;
});
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

const at = (s: number) => new Date(s * 1000);
const conv = (key: string, id: number) => call(app.base, `/hooks/api_v1.php?r=conversations/${id}`, { key });

describe("conversation", () => {
  test("merges messages, calls and events oldest first with every field of each kind", async () => {
    const id = await makeLead(db.sql, { phone: "5125550001", first: "Dana", last: "Diaz" });
    await db.sql`insert into messages (lead_id, org_id, channel, direction, actor_type, actor_id, subject, body, status, created_at)
                 values (${id}, 1, 'sms', 'out', 'api_key', '7', '', 'Hello <b>', 'sent', ${at(1_700_000_300)})`;
    await db.sql`insert into messages (lead_id, org_id, channel, direction, body, status, meta, created_at)
                 values (${id}, 1, 'sms', 'in', 'STOP', 'received', '{"from":"5125550001"}', ${at(1_700_000_500)})`;
    await db.sql`insert into calls (lead_id, status, secs, agent, recording_id, occurred_at)
                 values (${id}, 'ANSWERED', 42, 'agent7', 9001, ${at(1_700_000_100)})`;
    await db.sql`insert into lead_events (lead_id, event, label, actor, actor_role, note, created_at)
                 values (${id}, 'appt.booked', 'Appointment booked', 'Dana', 'lead', 'Tue 9:00', ${at(1_700_000_400)})`;
    const r = await conv(acme, id);
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(["entries", "lead", "ok"]);
    expect(r.body.lead).toEqual({ lead_id: id, name: "Dana Diaz", phone: "5125550001", status: "NEW" });
    expect(r.body.entries).toEqual([
      { kind: "call", status: "ANSWERED", secs: 42, agent: "agent7", recording_id: 9001, ai_summary: null, epoch: 1_700_000_100 },
      {
        kind: "msg", id: expect.any(Number), channel: "sms", direction: "out", actor_type: "api_key", actor_id: "7",
        subject: "", body: "Hello <b>", status: "sent", error: "", meta: null, epoch: 1_700_000_300,
      },
      { kind: "event", event: "appt.booked", label: "Appointment booked", actor: "Dana", actor_role: "lead", note: "Tue 9:00", epoch: 1_700_000_400 },
      {
        kind: "msg", id: expect.any(Number), channel: "sms", direction: "in", actor_type: "", actor_id: "",
        subject: "", body: "STOP", status: "received", error: "", meta: { from: "5125550001" }, epoch: 1_700_000_500,
      },
    ]);
  });

  test("reads at most 200 per source and keeps the latest 200, oldest first", async () => {
    const id = await makeLead(db.sql, { phone: "5125550002" });
    // 250 messages at t=0..249, 250 calls at t=1000..1249: the latest 200 are all calls 1050..1249.
    await db.sql`insert into messages (lead_id, channel, direction, body, created_at)
                 select ${id}, 'note', 'out', 'm' || g, to_timestamp(1700000000 + g) from generate_series(0, 249) g`;
    await db.sql`insert into calls (lead_id, status, secs, occurred_at)
                 select ${id}, 'ANSWERED', g, to_timestamp(1700001000 + g) from generate_series(0, 249) g`;
    const r = await conv(acme, id);
    expect(r.body.entries.length).toBe(200);
    expect(r.body.entries.every((e: { kind: string }) => e.kind === "call")).toBe(true);
    expect(r.body.entries[0].epoch).toBe(1_700_001_050);
    expect(r.body.entries[199].epoch).toBe(1_700_001_249);
    const epochs = r.body.entries.map((e: { epoch: number }) => e.epoch);
    expect([...epochs].sort((a, b) => a - b)).toEqual(epochs);
  });

  test("a lead with nothing has an empty list; a null name part is an empty string", async () => {
    const id = await makeLead(db.sql, { phone: "5125550003" });
    const r = await conv(acme, id);
    expect(r.body).toEqual({ ok: true, lead: { lead_id: id, name: "", phone: "5125550003", status: "NEW" }, entries: [] });
  });

  test("missing and out-of-org leads are the same 404", async () => {
    const id = await makeLead(db.sql, { phone: "5125550004" });
    const a = await conv(bolt, id);
    const b = await conv(bolt, 99_999_999);
    expect(a.status).toBe(404);
    expect(a.body).toEqual({ ok: false, error: "not_found" });
    expect(b.body).toEqual(a.body);
  });
});
