// The demo's living workspace (src/demo/workspace.ts): `serve --demo` on an empty database opens on
// an agent's shift under way — a lead waiting for an answer, a missed call texted back by the
// automation, a due callback in the agent's Mine view, an opt-out, a snoozed and a closed
// conversation, an upcoming appointment — all made through the real services at times set back
// from the start, with the automations' texts at their triggers' times, not at the start.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Actor } from "../src/auth/actor";
import type { Clock } from "../src/clock";
import { provisionDemo } from "../src/demo/provision";
import { seedDemoWorkspace } from "../src/demo/workspace";
import { inboxPage, viewCounts } from "../src/workspace/inbox";
import { myWork } from "../src/workspace/my-work";
import { startApp, type TestApp } from "./harness/app";
import { testDatabase, type TestDatabase } from "./harness/db";

const MIN = 60_000;
// A Tuesday afternoon in the demo's zone (America/Chicago).
const NOW = Date.parse("2026-03-10T20:00:00Z");
const clock: Clock = { now: () => NOW };
const agent: Actor = { orgId: 1, type: "user", id: "demo-agent", agent: "demo-agent", keyId: null };

let db: TestDatabase;
let app: TestApp;

beforeAll(async () => {
  db = await testDatabase();
  expect(await provisionDemo(db.sql, new Date(NOW), null)).toMatchObject({ applied: true });
  app = await startApp(db.url, {}, { clock, prepare: seedDemoWorkspace });
});

afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

const leadOf = async (first: string) => (await db.sql<{ id: number }[]>`select id::int as id from leads where first_name = ${first}`)[0]!.id;
const conversation = async (first: string) =>
  (await db.sql<{ status: string; assignee: string | null; snoozed_until: Date | null; waiting_since: Date | null }[]>`
    select c.status, c.assignee, c.snoozed_until, c.waiting_since from conversations c join leads l on l.id = c.lead_id where l.first_name = ${first}`)[0]!;
const messages = (first: string) =>
  db.sql<{ channel: string; direction: string; actor_type: string; body: string; status: string; created_at: Date }[]>`
    select m.channel, m.direction, m.actor_type, m.body, m.status, m.created_at
    from messages m join leads l on l.id = m.lead_id where l.first_name = ${first} order by m.created_at, m.id`;

describe("the demo's living workspace", () => {
  test("six leads of the demo organization, their conversations in every view", async () => {
    expect((await db.sql`select 1 from leads where org_id = 1`).length).toBe(6);
    expect(await conversation("José")).toMatchObject({ status: "open", assignee: null, waiting_since: new Date(NOW - 12 * MIN) });
    expect(await conversation("Ken")).toMatchObject({ status: "snoozed" });
    expect((await conversation("Ken")).snoozed_until!.getTime()).toBeGreaterThan(NOW);
    expect(await conversation("Amy")).toMatchObject({ status: "closed" });
    const counts = await viewCounts(db.sql, agent);
    expect(counts.snoozed).toBe(1);
    expect(counts.closed).toBe(1);
    expect(counts.unassigned).toBeGreaterThanOrEqual(1);
    // José's unanswered question is the newest activity of Unassigned.
    const unassigned = await inboxPage(db.sql, agent, { view: "unassigned" }, null, 10, NOW);
    expect(unassigned.rows[0]).toMatchObject({ lead_id: await leadOf("José") });
  });

  test("the automations' texts went at their triggers' times: the welcome text at intake, the text-back after the missed call", async () => {
    const linda = await messages("Linda");
    expect(linda.map((m) => [m.actor_type, m.status, m.created_at.getTime()])).toEqual([
      ["automation", "sent", NOW - 70 * MIN],
      ["automation", "sent", NOW - 45 * MIN],
    ]);
    expect(linda[1]!.body).toContain("Sorry we missed your call, Linda!");
    expect((await db.sql`select secs from calls where lead_id = ${await leadOf("Linda")}`).map((c) => c.secs)).toEqual([0]);
    const jose = await messages("José");
    expect(jose.map((m) => [m.direction, m.actor_type])).toEqual([
      ["out", "automation"],
      ["in", "provider"],
    ]);
  });

  test("Tom opted out by STOP; Maria has an estimate tomorrow morning and a callback due in the agent's work", async () => {
    const tom = await leadOf("Tom");
    expect((await messages("Tom")).at(-1)).toMatchObject({ direction: "in", body: "STOP" });
    const open = await inboxPage(db.sql, agent, { view: "open" }, null, 10, NOW);
    expect(open.rows.find((r) => r.lead_id === tom)).toMatchObject({ sms_opted_out: true });
    const maria = await leadOf("Maria");
    const [appt] = await db.sql<{ epoch: number; status: string }[]>`select slot_epoch::float8 as epoch, status from appointments where lead_id = ${maria}`;
    expect(appt!.status).toBe("pending");
    // Tomorrow (Wednesday in Chicago), from 10:00 on.
    const local = new Intl.DateTimeFormat("en-CA", { timeZone: "America/Chicago", dateStyle: "short", timeStyle: "short", hourCycle: "h23" }).format(appt!.epoch * 1000);
    expect(local).toBe("2026-03-11, 10:00");
    // The callback worker makes it due once the service runs.
    const deadline = Date.now() + 20_000;
    let work = await myWork(db.sql, agent, NOW);
    while (work.dueCallbacks.length === 0 && Date.now() < deadline) {
      await Bun.sleep(100);
      work = await myWork(db.sql, agent, NOW);
    }
    expect(work.dueCallbacks.map((c) => c.lead_id)).toEqual([maria]);
    const mine = await inboxPage(db.sql, agent, { view: "mine" }, null, 10, NOW);
    expect(mine.rows.map((r) => r.lead_id)).toContain(maria);
  });
});
