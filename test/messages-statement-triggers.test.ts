// Messages inserted several to a statement (the reminder batch inserts 200 at once) must leave the
// conversations, the live feed and the report's figures exactly as the per-row triggers they
// replaced left them for the same messages inserted one by one (sql/0031: the `after insert on
// messages` triggers run per statement, in rounds of one message per lead). The reference is the
// landed per-row code itself: its trigger definitions, read from sql/0023 and sql/0027, put back
// in place of the new ones inside the reference world's transaction. Each case builds the worlds
// from the same starting state, in transactions rolled back afterwards, with the same message ids:
// the reference (per-row triggers, one insert a message), the new triggers one insert a message
// (a one-row insert behaves exactly as before), and the new triggers, one statement.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import type { Tx } from "../src/db/client";
import { landedPerRow } from "./harness/per-row-triggers";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeKey, makeLead, seedWorld } from "./harness/factory";

let db: TestDatabase;
let perRowTriggers: string[];
let boundKey: number;
let unboundKey: number;
/** Org 1's leads 0–4, org 2's leads 5–6. */
const leads: number[] = [];
const orgOf = (i: number) => (i < 5 ? 1 : 2);

// Sunday 2026-03-08 06:30 UTC (01:30 in New York, 12:00 in Kolkata): New York moves its clocks at
// 07:00 UTC, within the cases' hour, and the lead creations a day before fall on another day.
const T0 = Date.UTC(2026, 2, 8, 6, 30);
const at = (secs: number) => new Date(T0 + secs * 1000);

beforeAll(async () => {
  perRowTriggers = landedPerRow();
  db = await testDatabase();
  await seedWorld(db.sql);
  await db.sql`update orgs set timezone = 'America/New_York' where id = 1`;
  await db.sql`update orgs set timezone = 'Asia/Kolkata' where id = 2`;
  // agent7 is a console user of org 1 (a replier there), agent9 of org 2; house1 has no role;
  // agent8 and agent10 are who the conversations assigned beforehand are assigned to.
  await db.sql`insert into users (id, org_id, name) values ('agent8', 1, 'Ana'), ('agent10', 2, 'Bo')`;
  await db.sql`update users set role = 'agent' where id in ('agent7', 'agent8', 'agent9', 'agent10')`;
  boundKey = (await makeKey(db.sql, { scopes: ["messages:write"], org: 1, agent: "agent7" })).id;
  unboundKey = (await makeKey(db.sql, { scopes: ["messages:write"], org: 1 })).id;
  for (let i = 0; i < 7; i++) leads.push(await makeLead(db.sql, { list: i < 5 ? 101 : 201, phone: `512555${String(1000 + i)}`, at: at(-86_400 - i) }));
});
afterAll(async () => {
  await db?.drop();
});

// ---- a case: the state before, and the messages ------------------------------------------------

interface Existing {
  kind: "open" | "snoozed" | "closed";
  assigned: boolean;
  waiting: boolean;
  lastMessage: "none" | "older" | "newer";
  activity: number;
  asked: boolean;
}
type Before = { kind: "none" } | Existing;
type Sender = "inbound" | "automation" | "user_org" | "user_other" | "user_norole" | "key_bound" | "key_unbound";
interface Msg {
  lead: number;
  sender: Sender;
  channel: "sms" | "email" | "note";
  status: "sending" | "sent" | "failed" | "queued";
  offset: number;
  cost: number;
}

interface Row {
  id: number;
  lead_id: number;
  org_id: number;
  channel: string;
  direction: string;
  actor_type: string;
  actor_id: string;
  subject: string;
  body: string;
  status: string;
  cost: number;
  defer_until: Date | null;
  created_at: Date;
  updated_at: Date;
}

function rowOf(m: Msg, i: number): Row {
  const lead = leads[m.lead];
  const org = orgOf(m.lead);
  const inbound = m.sender === "inbound";
  const actor: Record<Sender, [string, string]> = {
    inbound: ["", ""],
    automation: ["automation", "42"],
    user_org: ["user", org === 1 ? "agent7" : "agent9"],
    user_other: ["user", org === 1 ? "agent9" : "agent7"],
    user_norole: ["user", "house1"],
    key_bound: ["api_key", String(boundKey)],
    key_unbound: ["api_key", String(unboundKey)],
  };
  const channel = inbound && m.channel === "note" ? "sms" : m.channel;
  const status = inbound ? "received" : channel === "note" ? "stored" : m.status;
  return {
    id: 1_000_000 + i,
    lead_id: lead,
    org_id: org,
    channel,
    direction: inbound ? "in" : "out",
    actor_type: actor[m.sender][0],
    actor_id: actor[m.sender][1],
    subject: channel === "email" ? `Subject ${i}` : "",
    body: `Message   ${i}\n<b>body</b>`,
    status,
    cost: status === "sending" || status === "sent" || status === "failed" || status === "queued" ? m.cost / 100 : 0,
    defer_until: status === "queued" ? at(m.offset + 3_600) : null,
    created_at: at(m.offset),
    updated_at: at(m.offset),
  };
}

async function setBefore(tx: Tx, before: Before[]) {
  for (const [i, b] of before.entries()) {
    if (b.kind === "none") continue;
    const assignee = b.assigned ? (orgOf(i) === 1 ? "agent8" : "agent10") : null;
    const last = b.lastMessage === "none" ? null : b.lastMessage === "older" ? 500 : 5_000_000;
    await tx`
      insert into conversations (lead_id, org_id, status, snoozed_until, assignee, last_activity_at, last_message_id, last_channel,
                                 last_direction, snippet, waiting_since, created_at, updated_at)
      values (${leads[i]}, ${orgOf(i)}, ${b.kind}, ${b.kind === "snoozed" ? at(7_200) : null}, ${assignee}, ${at(b.activity)},
              ${last}, ${last === null ? null : "sms"}, ${last === null ? null : "in"}, ${last === null ? "" : "before"},
              ${b.waiting ? at(b.activity - 60) : null}, ${at(-3_600)}, ${at(b.activity)})`;
    // The lead's creation asked; it was answered already unless `asked`.
    if (!b.asked) await tx`delete from report_asks where lead_id = ${leads[i]}`;
  }
}

const COLUMNS = ["id", "lead_id", "org_id", "channel", "direction", "actor_type", "actor_id", "subject", "body", "status", "cost", "defer_until", "created_at", "updated_at"] as const;

async function snapshot(tx: Tx) {
  const conversations = await tx`
    select lead_id, org_id, status, snoozed_until, assignee, last_activity_at, last_message_id, last_channel, last_direction,
           snippet, waiting_since, created_at, updated_at
    from conversations order by lead_id`;
  // The feed's promise is per conversation: each conversation's changes, in order.
  const feed = await tx`
    select c.lead_id, p.org_id, p.kind, p.data, p.at
    from workspace_pending p join conversations c on c.id = p.conversation_id order by c.lead_id, p.id`;
  const counters = await tx`
    select org_id, day::text, fact, dim, sum(n)::int as n, sum(amount)::text as amount
    from report_daily group by org_id, day, fact, dim having sum(n) <> 0 or sum(amount) <> 0 order by 1, 2, 3, 4`;
  const asks = await tx`select lead_id, at, org_id, day::text from report_asks order by lead_id, at`;
  const responses = await tx`
    select org_id, day::text, lead_id, agent, via, asked_at, answered_at, seconds
    from report_responses order by lead_id, answered_at, asked_at`;
  const handled = await tx`select org_id, day::text, agent, lead_id from report_agent_leads order by 1, 2, 3, 4`;
  return { conversations, feed, counters, asks, responses, handled };
}
type Snapshot = Awaited<ReturnType<typeof snapshot>>;

class Rollback extends Error {
  constructor(readonly snap: Snapshot) {
    super("rollback");
  }
}
class Rollback2 extends Error {
  constructor(readonly snaps: [Snapshot, Snapshot]) {
    super("rollback");
  }
}

type How = "reference" | "one_by_one" | "together";

/** The world after `before` and the messages, inserted as `how` says; nothing kept. */
async function world(before: Before[], msgs: Msg[], how: How): Promise<Snapshot> {
  const rows = msgs.map(rowOf);
  try {
    await db.sql.begin(async (tx) => {
      if (how === "reference") for (const ddl of perRowTriggers) await tx.unsafe(ddl);
      await setBefore(tx, before);
      if (how === "together") {
        await tx`insert into messages ${tx(rows, ...COLUMNS)}`;
      } else {
        for (const r of rows) await tx`insert into messages ${tx([r], ...COLUMNS)}`;
      }
      throw new Rollback(await snapshot(tx));
    });
  } catch (err) {
    if (err instanceof Rollback) return err.snap;
    throw err;
  }
  throw new Error("unreachable");
}

async function compare(before: Before[], msgs: Msg[]): Promise<Snapshot> {
  const reference = await world(before, msgs, "reference");
  expect(await world(before, msgs, "one_by_one")).toEqual(reference);
  const together = await world(before, msgs, "together");
  expect(together).toEqual(reference);
  return together;
}

// ---- the cases ------------------------------------------------------------------------------

const none: Before = { kind: "none" };
const state = (kind: "open" | "snoozed" | "closed", more: Partial<Existing> = {}): Before => ({
  kind,
  assigned: false,
  waiting: false,
  lastMessage: "older",
  activity: -600,
  asked: false,
  ...more,
});
const msg = (lead: number, sender: Sender, offset: number, more: Partial<Msg> = {}): Msg => ({ lead, sender, channel: "sms", status: "sending", offset, cost: 1, ...more });

describe("messages inserted in one statement", () => {
  test("a batch like the reminders' (two messages of one lead, inbound and outbound mixed, a snoozed and a closed conversation) ends exactly as one-by-one inserts", async () => {
    const before: Before[] = [state("snoozed"), state("closed", { asked: true }), state("open", { waiting: true, asked: true }), none, none, state("closed"), none];
    const msgs = [
      msg(0, "automation", 60), // the snoozed conversation: a reminder out…
      msg(1, "inbound", 60, { channel: "email" }), // the closed one: the lead writes…
      msg(0, "inbound", 90), // …and the snoozed lead answers it
      msg(1, "user_org", 120), // …and an agent replies in the same statement
      msg(2, "automation", 60),
      msg(3, "automation", 60),
      msg(4, "key_bound", 60, { channel: "email" }),
      msg(5, "automation", 60, { status: "queued" }),
      msg(6, "inbound", 30),
      msg(6, "user_org", 20), // a reply timed before the text it follows: answers only the creation's ask
    ];
    const after = await compare(before, msgs);
    const conv = (i: number) => after.conversations.find((c) => c.lead_id === leads[i])!;
    // The rules themselves, spelled out for the two conversations the brief names.
    expect(conv(0)).toMatchObject({ status: "open", snoozed_until: null, last_message_id: 1_000_002, last_direction: "in", waiting_since: at(90) });
    expect(conv(1)).toMatchObject({ status: "open", assignee: "agent7", last_message_id: 1_000_003, last_direction: "out", waiting_since: null });
    expect(conv(3)).toMatchObject({ status: "closed", assignee: null, last_message_id: 1_000_005 });
    expect(conv(6)).toMatchObject({ status: "open", assignee: "agent9", waiting_since: null, last_activity_at: at(30) });
    // One `message` feed row per message, each with the state after it.
    const messagesOf = (i: number) => after.feed.filter((f) => f.lead_id === leads[i] && f.kind === "message").map((f) => f.data.message_id).filter((id) => id >= 1_000_000);
    expect(messagesOf(0)).toEqual([1_000_000, 1_000_002]);
    expect(messagesOf(1)).toEqual([1_000_001, 1_000_003]);
    // The report: agent7's reply answered lead 1, waiting since its creation (a day and 1 s before
    // T0); lead 6's reply, timed before its text, answered its creation only, and the text waits.
    expect(after.responses.filter((r) => r.lead_id === leads[1]).map((r) => r.seconds)).toEqual([120 + 86_401]);
    expect(after.responses.filter((r) => r.lead_id === leads[6]).map((r) => r.seconds)).toEqual([20 + 86_406]);
    expect(after.asks.filter((a) => a.lead_id === leads[6]).map((a) => a.at)).toEqual([at(30)]);
    expect(after.counters.filter((c) => c.fact === "sent").reduce((n, c) => n + c.n, 0)).toBe(6);
  });

  test("a statement that inserts nothing (a replayed operation, an empty select) changes nothing", async () => {
    const insert = (tx: Tx, body: string, secs: number) => tx`
      insert into messages (lead_id, org_id, channel, direction, actor_type, actor_id, body, status, operation_id, op_scope, created_at)
      values (${leads[0]}, 1, 'sms', 'out', 'automation', '1', ${body}, 'sending', 'op-empty', 1, ${at(secs)})
      on conflict (coalesce(op_scope, -1), operation_id) where operation_id is not null do nothing`;
    const [first, after] = await db.sql
      .begin(async (tx) => {
        await insert(tx, "once", 0);
        const first = await snapshot(tx);
        await insert(tx, "again", 60);
        await tx`insert into messages (lead_id, org_id, channel, direction, body, status, created_at)
                 select id, org_id, 'sms', 'in', '', 'received', now() from leads where false`;
        throw new Rollback2([first, await snapshot(tx)]);
      })
      .catch((err) => {
        if (err instanceof Rollback2) return err.snaps;
        throw err;
      });
    expect(first.conversations).toHaveLength(1);
    expect(after).toEqual(first);
  });

  test("any statement of messages, of any leads, senders and times, from any state: the same as one by one", async () => {
    const beforeArb: fc.Arbitrary<Before> = fc.oneof(
      fc.constant(none),
      fc.record({
        kind: fc.constantFrom("open" as const, "snoozed" as const, "closed" as const),
        assigned: fc.boolean(),
        waiting: fc.boolean(),
        lastMessage: fc.constantFrom("none" as const, "older" as const, "newer" as const),
        activity: fc.integer({ min: -1_200, max: 1_200 }),
        asked: fc.boolean(),
      }),
    );
    const msgArb: fc.Arbitrary<Msg> = fc.record({
      lead: fc.nat(6),
      sender: fc.constantFrom<Sender>("inbound", "inbound", "automation", "user_org", "user_other", "user_norole", "key_bound", "key_unbound"),
      channel: fc.constantFrom("sms" as const, "sms" as const, "email" as const, "note" as const),
      status: fc.constantFrom("sending" as const, "sent" as const, "failed" as const, "queued" as const),
      // A few instants, so that messages share one, and an hour that crosses New York's change.
      offset: fc.constantFrom(-1_800, 0, 0, 30, 60, 1_800),
      cost: fc.integer({ min: 0, max: 5 }),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(beforeArb, { minLength: 7, maxLength: 7 }), fc.array(msgArb, { minLength: 1, maxLength: 12 }), async (before, msgs) => {
        await compare(before, msgs);
      }),
      { numRuns: 120 },
    );
  });
});
