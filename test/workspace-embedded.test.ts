// The workspace on the embedded database (PGlite, one connection): the triggers, the sequencer's
// advisory lock and NOTIFY, the inbox's lateral reads and the actions all run there as on
// PostgreSQL, and the hub is told directly (nothing LISTENs on the embedded database).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type Sql } from "../src/db/client";
import { startEmbedded, type EmbeddedServer } from "../src/db/embedded";
import { migrate } from "../src/db/migrate";
import { FeedHub } from "../src/feed/hub";
import { changesSince } from "../src/feed/queries";
import { sequenceAll } from "../src/feed/sequencer";
import { assignConversation, snoozeConversation } from "../src/workspace/actions";
import { scheduleCallback } from "../src/workspace/callbacks";
import { inboxPage, viewCounts } from "../src/workspace/inbox";
import { openEndedSnoozes } from "../src/workspace/jobs";
import { ManualClock } from "./harness/clock";
import { seedWorld } from "./harness/factory";

let dir: string;
let server: EmbeddedServer;
let sql: Sql;
const T0 = Date.parse("2026-01-14T17:00:00Z");

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "leadline-workspace-embedded-"));
  server = await startEmbedded(dir);
  sql = connect(server.url, { max: 1, socket: server.connect, statementTimeoutMs: 0 });
  await migrate(sql);
  await seedWorld(sql);
  await sql`insert into users (id, org_id, name, email, role) values ('mgr1', 1, 'Mo', 'mgr1@example.test', 'manager'), ('bob', 1, 'Bob', 'bob@example.test', 'agent')`;
}, 120_000);
afterAll(async () => {
  await sql?.end({ timeout: 5 });
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("conversations, actions, views and the feed on PGlite", async () => {
  const mgr = { orgId: 1, type: "user" as const, id: "mgr1", agent: null, keyId: null };
  const [lead] = await sql<{ id: number }[]>`insert into leads (list_id, phone, first_name) values (101, '5125550001', 'Ada') returning id`;
  await sql`insert into messages (lead_id, org_id, channel, direction, body, status, created_at) values (${lead!.id}, 1, 'sms', 'in', 'hello', 'received', ${new Date(T0)})`;
  const page = await inboxPage(sql, mgr, { view: "open" }, null, 50, T0);
  expect(page.rows.map((r) => [r.lead_id, r.snippet, r.name])).toEqual([[lead!.id, "hello", "Ada"]]);
  const id = page.rows[0]!.id;
  await assignConversation(sql, mgr, id, "bob", T0);
  await snoozeConversation(sql, mgr, id, { preset: "hour" }, T0);
  expect(await openEndedSnoozes(sql, T0 + 3_600_000)).toEqual([id]);
  await scheduleCallback(sql, mgr, { leadId: lead!.id, at: T0 + 60_000 }, T0);
  expect(await viewCounts(sql, { ...mgr, id: "bob" }, 999)).toMatchObject({ open: 1, mine: 1, unassigned: 0 });
  const hub = new FeedHub(sql);
  const heard: (number | null)[] = [];
  const off = hub.subscribe(mgr, (upTo) => heard.push(upTo));
  await sequenceAll(sql, new ManualClock(T0), hub);
  const feed = await hub.read(mgr, 0);
  expect(feed.changes.map((c) => c.kind)).toEqual(["status", "message", "assignment", "status", "status", "activity", "callback"]);
  expect(heard).toEqual([feed.last]);
  expect((await changesSince(sql, 2, 0, 10)).changes).toEqual([]);
  off();
});
