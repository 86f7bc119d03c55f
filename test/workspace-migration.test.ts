// Migration 0023 on an installation with history (docs/workspace.md, "Existing installations"):
// the conversations the old inbox showed (leads with an inbound message nobody handled) are made
// open, with their last message and the wait's start; every other lead gets its conversation later,
// and the backfill writes no feed rows.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { migrate } from "../src/db/migrate";
import { migrations } from "../src/db/migrations";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";

let db: TestDatabase;
const WORKSPACE = migrations.findIndex((m) => m.name.endsWith("_workspace"));

beforeAll(async () => {
  db = await testDatabase();
  await db.sql`drop schema public cascade`;
  await db.sql`create schema public`;
  await migrate(db.sql, migrations.slice(0, WORKSPACE));
});
afterAll(async () => {
  await db?.drop();
});

test("leads with unhandled inbound messages get an open conversation; others none until their next fact", async () => {
  await seedWorld(db.sql);
  const at = (m: number) => new Date(Date.UTC(2026, 0, 10, 12, m));
  const [waiting, handled, quiet, bolt] = await db.sql<{ id: number }[]>`
    insert into leads (list_id, phone, first_name) values (101, '5125550001', 'Wai'), (101, '5125550002', 'Han'), (101, '5125550003', 'Qui'), (201, '5125550004', 'Bo')
    returning id`;
  await db.sql`insert into messages (lead_id, org_id, channel, direction, body, status, handled_at, created_at) values
    (${waiting!.id}, 1, 'sms', 'out', 'Hello from Acme', 'sent', null, ${at(0)}),
    (${waiting!.id}, 1, 'sms', 'in', 'first question', 'received', null, ${at(1)}),
    (${waiting!.id}, 1, 'sms', 'in', 'second   question', 'received', null, ${at(2)}),
    (${handled!.id}, 1, 'sms', 'in', 'thanks', 'received', ${at(4)}, ${at(3)}),
    (${quiet!.id}, 1, 'email', 'out', 'newsletter', 'sent', null, ${at(5)}),
    (${bolt!.id}, 2, 'sms', 'in', 'bolt question', 'received', null, ${at(6)})`;
  await migrate(db.sql);
  const rows = await db.sql`select lead_id, org_id, status, assignee, last_channel, last_direction, snippet, waiting_since, last_activity_at from conversations order by lead_id`;
  expect(rows.map((r) => ({ ...r }))).toEqual([
    { lead_id: waiting!.id, org_id: 1, status: "open", assignee: null, last_channel: "sms", last_direction: "in", snippet: "second question", waiting_since: at(1), last_activity_at: at(2) },
    { lead_id: bolt!.id, org_id: 2, status: "open", assignee: null, last_channel: "sms", last_direction: "in", snippet: "bolt question", waiting_since: at(6), last_activity_at: at(6) },
  ]);
  expect([...(await db.sql`select 1 from workspace_pending`)]).toEqual([]);
  // The next fact of a lead without one makes it.
  await db.sql`insert into messages (lead_id, org_id, channel, direction, body, status, created_at) values (${quiet!.id}, 1, 'sms', 'in', 'hi', 'received', ${at(9)})`;
  expect((await db.sql`select status from conversations where lead_id = ${quiet!.id}`)[0]).toEqual({ status: "open" });
});
