// The Today page's kept counts (sql/0032): `waiting` (leads by the day of their earliest open ask),
// `conversations` (distinct leads handled a day) and `handled` (per agent) must always equal a
// recount of the rows they count — when two transactions change one lead's asks at the same time
// (an inbound text while a reply or an answered call is recorded), when many race over a few leads,
// when a lead is deleted, after report_rebuild, and for thousands of leads in one statement.
// (Their values through every writer, day by day, are checked against a model of the facts in
// reports-rollups.test.ts.)
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import type { Sql } from "../src/db/client";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeLead, seedWorld } from "./harness/factory";

let db: TestDatabase;
// Wednesday 2026-03-04 15:00 UTC; the org is in New York (10:00 there).
const T0 = Date.UTC(2026, 2, 4, 15);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const at = (ms: number) => new Date(T0 + ms);

interface Counted {
  org_id: number;
  day: string;
  fact: string;
  dim: string;
  n: number;
}

/** The kept counters, summed over their stripes. */
async function counters(sql: Sql): Promise<Counted[]> {
  return [...(await sql<Counted[]>`
    select org_id::int, day::text, fact, dim, sum(n)::int as n
    from report_daily where fact in ('waiting', 'conversations', 'handled')
    group by org_id, day, fact, dim having sum(n) <> 0 order by 1, 2, 3, 4`)];
}

/** The same figures counted from the rows (the queries the page ran before sql/0032). */
async function recount(sql: Sql): Promise<Counted[]> {
  return [...(await sql<Counted[]>`
    select org_id::int, day::text, fact, dim, n from (
      select a.org_id, a.day, 'waiting' as fact, '' as dim, count(*)::int as n
      from report_asks a where not exists (select 1 from report_asks b where b.lead_id = a.lead_id and b.at < a.at)
      group by a.org_id, a.day
      union all
      select org_id, day, 'conversations', '', count(distinct lead_id)::int from report_agent_leads group by org_id, day
      union all
      select org_id, day, 'handled', agent, count(*)::int from report_agent_leads group by org_id, day, agent
    ) r order by 1, 2, 3, 4`)];
}

async function expectCounted(sql: Sql) {
  expect(await counters(sql)).toEqual(await recount(sql));
}

const inbound = (sql: Sql, lead: number, t: Date) =>
  sql`insert into messages (lead_id, org_id, channel, direction, actor_type, actor_id, status, created_at, updated_at)
      values (${lead}, 1, 'sms', 'in', '', '', 'received', ${t}, ${t})`;
const reply = (sql: Sql, lead: number, t: Date, agent = "agent7") =>
  sql`insert into messages (lead_id, org_id, channel, direction, actor_type, actor_id, status, created_at, updated_at)
      values (${lead}, 1, 'sms', 'out', 'user', ${agent}, 'sent', ${t}, ${t})`;
const answeredCall = (sql: Sql, lead: number, t: Date, agent = "agent7") =>
  sql`insert into calls (lead_id, phone, status, secs, agent, occurred_at) values (${lead}, '5125550000', 'ANSWERED', 42, ${agent}, ${t})`;

/** Resolves once some other backend of this database waits for a lock. */
async function someoneWaits(sql: Sql) {
  for (let i = 0; i < 500; i++) {
    const [row] = await sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`;
    if (row.n > 0) return;
    await Bun.sleep(10);
  }
  throw new Error("nobody waited for a lock");
}

/**
 * `first` runs in a transaction left open; `second` starts while it is open (and waits for the
 * lead's lock); then `first` commits and `second` ends.
 */
async function interleave(first: (tx: Sql) => Promise<unknown>, second: (tx: Sql) => Promise<unknown>) {
  const held = await db.sql.reserve();
  try {
    await held`begin`;
    await first(held as unknown as Sql);
    const later = db.sql.begin((tx) => second(tx as unknown as Sql));
    await someoneWaits(db.sql);
    await held`commit`;
    await later;
  } finally {
    await held`rollback`.catch(() => {});
    held.release();
  }
}

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  await db.sql`update orgs set timezone = 'America/New_York' where id = 1`;
}, 60_000);
afterAll(async () => {
  await db?.drop();
});
beforeEach(async () => {
  await db.sql`truncate leads, messages, calls, report_daily, report_asks, report_responses, report_agent_leads, report_waiting, report_day_leads, outbox_events cascade`;
});

describe("Today's kept counts", () => {
  test("a new lead waits from its creation's day; a reply ends the wait and counts a conversation and the agent's lead", async () => {
    const lead = await makeLead(db.sql, { phone: "5125551001", at: at(0) });
    expect(await counters(db.sql)).toEqual([{ org_id: 1, day: "2026-03-04", fact: "waiting", dim: "", n: 1 }]);
    await reply(db.sql, lead, at(DAY));
    expect(await counters(db.sql)).toEqual([
      { org_id: 1, day: "2026-03-05", fact: "conversations", dim: "", n: 1 },
      { org_id: 1, day: "2026-03-05", fact: "handled", dim: "agent7", n: 1 },
    ]);
    // A second agent the same day: one more handled, still one conversation.
    await inbound(db.sql, lead, at(DAY + HOUR));
    await answeredCall(db.sql, lead, at(DAY + 2 * HOUR), "agent9");
    await expectCounted(db.sql);
    expect((await counters(db.sql)).filter((r) => r.fact === "conversations")).toEqual([{ org_id: 1, day: "2026-03-05", fact: "conversations", dim: "", n: 1 }]);
  });

  type Write = (tx: Sql) => Promise<unknown>;

  /**
   * A lead created on day 0; `writes(lead)` gives an answer to its creation and a later text that
   * asks again, run in two transactions at once, in both orders: the lead ends counted once,
   * under the text's day.
   */
  async function race(writes: (lead: number) => Promise<[answer: Write, text: Write]>, waitingDay: string) {
    for (const answerFirst of [true, false]) {
      await db.sql`truncate leads, messages, calls, report_daily, report_asks, report_responses, report_agent_leads, report_waiting, report_day_leads, outbox_events cascade`;
      const [answer, text] = await writes(await makeLead(db.sql, { phone: "5125551002", at: at(0) }));
      if (answerFirst) await interleave(answer, text);
      else await interleave(text, answer);
      await expectCounted(db.sql);
      expect((await counters(db.sql)).filter((r) => r.fact === "waiting")).toEqual([{ org_id: 1, day: waitingDay, fact: "waiting", dim: "", n: 1 }]);
    }
  }

  test("an inbound text and a reply to the same lead at once: counted once, under the ask that stays open, whichever commits first", async () => {
    await race(async (lead) => [(tx) => reply(tx, lead, at(DAY)), (tx) => inbound(tx, lead, at(2 * DAY))], "2026-03-06");
  });

  test("an inbound text while an answered call is reported: counted once, under the open ask", async () => {
    await race(async (lead) => [(tx) => answeredCall(tx, lead, at(DAY)), (tx) => inbound(tx, lead, at(3 * DAY))], "2026-03-07");
  });

  test("an inbound text while an unknown caller's answered call is given the lead (no conversation row orders them): counted once", async () => {
    await race(async (lead) => {
      const [call] = await db.sql<{ id: number }[]>`
        insert into calls (lead_id, phone, status, secs, agent, occurred_at) values (null, '5125551002', 'ANSWERED', 42, 'agent7', ${at(DAY)}) returning id`;
      return [(tx) => tx`update calls set lead_id = ${lead} where id = ${call!.id}`, (tx) => inbound(tx, lead, at(3 * DAY))];
    }, "2026-03-07");
  });

  test("two agents answering one lead at once count one conversation and one lead each", async () => {
    const lead = await makeLead(db.sql, { phone: "5125551004", at: at(0) });
    await interleave(
      (tx) => reply(tx, lead, at(HOUR), "agent7"),
      (tx) => answeredCall(tx, lead, at(2 * HOUR), "agent9"),
    );
    await expectCounted(db.sql);
    const counted = await counters(db.sql);
    expect(counted.filter((r) => r.fact !== "waiting")).toEqual([
      { org_id: 1, day: "2026-03-04", fact: "conversations", dim: "", n: 1 },
      { org_id: 1, day: "2026-03-04", fact: "handled", dim: "agent7", n: 1 },
      { org_id: 1, day: "2026-03-04", fact: "handled", dim: "agent9", n: 1 },
    ]);
  });

  test("many transactions racing over three leads leave the counts equal to a recount", async () => {
    const leads: number[] = [];
    for (let i = 0; i < 3; i++) leads.push(await makeLead(db.sql, { phone: `512555200${i}`, at: at(-i * HOUR) }));
    // A fixed pseudo-random mix of texts, replies and answered calls at times over four days, each
    // transaction held open a moment so that they overlap.
    let seed = 7;
    const next = (n: number) => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) % n;
    const writes = Array.from({ length: 60 }, (_, i) => {
      const lead = leads[next(3)];
      const t = at(next(4 * 24) * HOUR + i * 1000);
      const kind = next(3);
      const agent = next(2) === 0 ? "agent7" : "agent9";
      return () =>
        db.sql.begin(async (tx) => {
          const s = tx as unknown as Sql;
          if (kind === 0) await inbound(s, lead, t);
          else if (kind === 1) await reply(s, lead, t, agent);
          else await answeredCall(s, lead, t, agent);
          await tx`select pg_sleep(0.005)`;
        });
    });
    await Promise.all(writes.map((w) => w()));
    await expectCounted(db.sql);
  });

  test("a deleted lead waits no more", async () => {
    const kept = await makeLead(db.sql, { phone: "5125551005", at: at(0) });
    const gone = await makeLead(db.sql, { phone: "5125551006", at: at(HOUR) });
    await inbound(db.sql, gone, at(2 * HOUR));
    await db.sql`delete from leads where id = ${gone}`;
    await expectCounted(db.sql);
    expect((await counters(db.sql)).filter((r) => r.fact === "waiting")).toEqual([{ org_id: 1, day: "2026-03-04", fact: "waiting", dim: "", n: 1 }]);
    expect(kept).toBeGreaterThan(0);
  });

  test("report_rebuild recounts them from the rows, whatever the counters said", async () => {
    const a = await makeLead(db.sql, { phone: "5125551007", at: at(0) });
    const b = await makeLead(db.sql, { phone: "5125551008", at: at(DAY) });
    await reply(db.sql, a, at(DAY + HOUR));
    await inbound(db.sql, b, at(2 * DAY));
    const before = await counters(db.sql);
    await db.sql`update report_daily set n = n + 5 where fact in ('waiting', 'conversations', 'handled')`;
    await db.sql`delete from report_waiting`;
    await db.sql`select report_rebuild(1)`;
    expect(await counters(db.sql)).toEqual(before);
    await expectCounted(db.sql);
    // The triggers are live again after the rebuild.
    await reply(db.sql, b, at(2 * DAY + HOUR));
    await expectCounted(db.sql);
  });

  test("two thousand leads created in one statement are each counted", async () => {
    await db.sql`
      insert into leads (list_id, phone, created_at)
      select 101, '513' || lpad(i::text, 7, '0'), ${at(0)} from generate_series(1, 2000) i`;
    expect(await counters(db.sql)).toEqual([{ org_id: 1, day: "2026-03-04", fact: "waiting", dim: "", n: 2000 }]);
  });
});
