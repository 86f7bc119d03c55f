// The Today report (src/reports/) on hand-built facts written straight to the tables, as any
// writer writes them (the rollups follow by trigger): each figure on a daylight-saving day, the day
// before and the same weekday a week before, the organization's midnight on either side, per-agent
// figures, and confinement to one organization.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import type { Actor } from "../src/auth/actor";
import { todayCsvRows } from "../src/reports/csv";
import type { TodayReport } from "../src/reports/model";
import { todayReport } from "../src/reports/today";
import { instantOf } from "../src/zone";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeKey, seedWorld } from "./harness/factory";

let db: TestDatabase;
const NY = "America/New_York";
const TOKYO = "Asia/Tokyo";

/** "2026-03-08 09:00" on the wall clock of `zone`, as an instant. */
const at = (local: string, zone = NY) => new Date(instantOf(Date.parse(`${local.replace(" ", "T")}:00Z`), zone));

const manager = (orgId: number): Actor => ({ orgId, type: "user", id: `manager${orgId}`, agent: null, keyId: null });
const admin: Actor = { orgId: null, type: "user", id: "admin", agent: null, keyId: null };

async function lead(list: number, when: Date, source = "", phone = `512${randomBytes(4).readUInt32BE() % 10_000_000}`.padEnd(10, "0")): Promise<number> {
  const [r] = await db.sql<{ id: number }[]>`
    insert into leads (list_id, phone, source, created_at) values (${list}, ${phone}, ${source}, ${when}) returning id`;
  return r.id;
}

interface Msg {
  lead: number;
  org: number;
  when: Date;
  direction?: "in" | "out";
  channel?: "sms" | "email" | "note";
  by?: [type: string, id: string];
  status?: string;
  cost?: number;
  deferUntil?: Date;
}

async function message(m: Msg): Promise<number> {
  const [type, id] = m.by ?? (m.direction === "in" ? ["provider", "twilio"] : ["automation", "1"]);
  const [r] = await db.sql<{ id: number }[]>`
    insert into messages (lead_id, org_id, channel, direction, actor_type, actor_id, status, cost, defer_until, created_at, updated_at)
    values (${m.lead}, ${m.org}, ${m.channel ?? "sms"}, ${m.direction ?? "out"}, ${type}, ${id},
            ${m.status ?? (m.direction === "in" ? "received" : "sent")}, ${m.cost ?? 0}, ${m.deferUntil ?? null}, ${m.when}, ${m.when})
    returning id`;
  return r.id;
}

async function call(c: { lead?: number; key?: number; when: Date; secs: number; agent: string }): Promise<void> {
  await db.sql`insert into calls (lead_id, key_id, phone, status, secs, agent, occurred_at)
    values (${c.lead ?? null}, ${c.key ?? null}, '5125550000', ${c.secs > 0 ? "ANSWERED" : "NO ANSWER"}, ${c.secs}, ${c.agent}, ${c.when})`;
}

let apptSeq = 0;
async function appointment(calendar: number, made: Date, slot: Date, status = "pending"): Promise<number> {
  const n = ++apptSeq;
  const [r] = await db.sql<{ id: number }[]>`
    insert into appointments (calendar_id, link_slug, slot_epoch, name, phone, status, token_selector, token_hash, created_at, updated_at)
    values (${calendar}, 'link', ${slot.getTime() / 1000}, ${`Booker ${n}`}, '5125550000', ${status}, ${randomBytes(32)}, ${randomBytes(32)}, ${made}, ${made})
    returning id`;
  return r.id;
}

const report = async (actor: Actor, opts: { org?: number | null; day?: string | null }, now = at("2026-03-08 20:00")) => {
  const r = await todayReport(db.sql, actor, opts, now);
  if (!r.ok) throw new Error(`refused: ${r.reason}`);
  return r;
};

let keyOfAgent7 = 0;
let unboundKey = 0;
let acmeDialer = 0;
const leads: Record<string, number> = {};

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  await db.sql`update orgs set timezone = ${NY} where id = 1`;
  await db.sql`update orgs set timezone = ${TOKYO} where id = 2`;
  await db.sql`insert into calendars (id, org_id, name, timezone, capacity) values (1, 1, 'Acme visits', ${NY}, 10), (2, 2, 'Bolt visits', ${TOKYO}, 10)`;
  keyOfAgent7 = (await makeKey(db.sql, { scopes: ["messages:write"], org: 1, agent: "agent7" })).id;
  unboundKey = (await makeKey(db.sql, { scopes: ["messages:write"], org: 1 })).id;
  acmeDialer = (await makeKey(db.sql, { scopes: ["calls:write"], org: 1 })).id;

  // 2026-03-08 is the day New York moves its clocks forward (23 hours: 00:30 is EST, 09:00 EDT).
  leads.L1 = await lead(101, at("2026-03-08 00:30"), "google");
  leads.L2 = await lead(102, at("2026-03-08 09:00"), "google");
  leads.L3 = await lead(101, at("2026-03-08 23:59"), "facebook");
  leads.L4 = await lead(101, at("2026-03-09 00:00"), "google");
  leads.L5 = await lead(101, at("2026-03-07 23:59"), "bing");
  leads.L6 = await lead(101, at("2026-03-01 12:00"));
  leads.L7 = await lead(101, at("2026-03-01 12:00"));

  // L5 writes in the morning; agent7 replies ten minutes later (its wait began at its creation).
  await message({ lead: leads.L5, org: 1, when: at("2026-03-08 08:00"), direction: "in" });
  await message({ lead: leads.L5, org: 1, when: at("2026-03-08 08:10"), by: ["user", "agent7"], cost: 0.01 });
  // An automation's text to L1 (sent, not a person's reply), an email by agent7's dialer key to L2.
  await message({ lead: leads.L1, org: 1, when: at("2026-03-08 00:31"), status: "delivered", cost: 0.01 });
  await message({ lead: leads.L2, org: 1, when: at("2026-03-08 09:05"), channel: "email", by: ["api_key", String(keyOfAgent7)], cost: 0.001 });
  // An unbound key's text that failed (refunded: not sent, and no person's reply); a note.
  await message({ lead: leads.L3, org: 1, when: at("2026-03-08 23:59"), by: ["api_key", String(unboundKey)], status: "failed", cost: 0.01 });
  await message({ lead: leads.L1, org: 1, when: at("2026-03-08 10:00"), channel: "note", by: ["user", "agent7"], status: "stored" });
  // Queued last night by quiet hours until 08:00, then charged and sent: sent on the 8th.
  const deferred = await message({ lead: leads.L5, org: 1, when: at("2026-03-07 22:00"), status: "queued", deferUntil: at("2026-03-08 08:00") });
  await db.sql`update messages set status = 'sending', cost = 0.01 where id = ${deferred}`;
  await db.sql`update messages set status = 'sent' where id = ${deferred}`;
  await db.sql`update messages set status = 'delivered' where id = ${deferred}`;
  // agent7 texts L4 after midnight: the 9th.
  await message({ lead: leads.L4, org: 1, when: at("2026-03-09 00:05"), by: ["user", "agent7"], cost: 0.01 });

  await call({ lead: leads.L1, when: at("2026-03-08 10:00"), secs: 120, agent: "agent7" });
  await call({ lead: leads.L1, when: at("2026-03-08 11:00"), secs: 0, agent: "agent7" });
  await call({ lead: leads.L2, when: at("2026-03-08 12:00"), secs: 30, agent: "agent7" });
  await call({ key: acmeDialer, when: at("2026-03-08 13:00"), secs: 45, agent: "ext1" });
  await call({ lead: leads.L5, when: at("2026-03-07 12:00"), secs: 0, agent: "agent7" });

  await appointment(1, at("2026-03-08 09:30"), at("2026-03-10 10:00"));
  await appointment(1, at("2026-03-07 10:00"), at("2026-03-08 15:00"), "confirmed");
  const a3 = await appointment(1, at("2026-03-01 10:00"), at("2026-03-08 16:00"));
  await appointment(1, at("2026-03-01 10:00"), at("2026-03-08 17:00"), "cancelled");
  const a5 = await appointment(1, at("2026-03-01 10:00"), at("2026-03-08 18:00"));
  await db.sql`update appointments set status = 'no_show' where id = ${a3}`;
  await db.sql`update appointments set status = 'completed' where id = ${a5}`;

  // Organization 2, at the same instants: never in organization 1's figures.
  const b = await lead(201, at("2026-03-08 09:00"), "google");
  await message({ lead: b, org: 2, when: at("2026-03-08 09:01"), direction: "in" });
  await message({ lead: b, org: 2, when: at("2026-03-08 09:02"), by: ["user", "agent9"], cost: 0.02 });
  await call({ lead: b, when: at("2026-03-08 11:30"), secs: 600, agent: "agent7" });
  await appointment(2, at("2026-03-08 09:30"), at("2026-03-08 16:00"), "confirmed");
}, 60_000);
afterAll(async () => {
  await db?.drop();
});

describe("the Today report", () => {
  test("each figure of a 23-hour day, the day before and the same weekday a week before", async () => {
    const r = await report(manager(1), {});
    expect(r.day).toBe("2026-03-08");
    expect(r.org).toEqual({ id: 1, name: "Acme", zone: NY });
    expect(r.today).toEqual({
      day: "2026-03-08",
      leads: { total: 3, bySource: [{ source: "google", leads: 2 }, { source: "facebook", leads: 1 }] },
      calls: { answered: 3, missed: 1, talkSecs: 195 },
      // L2 by agent7's email after 5 min; L5 after 7 h 11 min (23:59 EST to 08:10 EDT); L1 by
      // agent7's call after 8 h 30 min (00:30 EST to 10:00 EDT). L3 still waits.
      firstResponse: { responses: 3, medianSecs: 7 * 3600 + 11 * 60, p90Secs: 8.5 * 3600, waiting: 1 },
      appointments: { booked: 1, pending: 0, confirmed: 1, completed: 1, noShows: 1, cancelled: 1 },
      messages: { sent: 4, sms: 3, email: 1, cost: 0.031, inbound: 1, replies: 2 },
      conversations: 3,
    });
    expect(r.yesterday).toEqual({
      day: "2026-03-07",
      leads: { total: 1, bySource: [{ source: "bing", leads: 1 }] },
      calls: { answered: 0, missed: 1, talkSecs: 0 },
      firstResponse: { responses: 0, medianSecs: null, p90Secs: null, waiting: 0 },
      appointments: { booked: 1, pending: 0, confirmed: 0, completed: 0, noShows: 0, cancelled: 0 },
      messages: { sent: 0, sms: 0, email: 0, cost: 0, inbound: 0, replies: 0 },
      conversations: 0,
    });
    expect(r.lastWeek.day).toBe("2026-03-01");
    expect(r.lastWeek.leads).toEqual({ total: 2, bySource: [{ source: "", leads: 2 }] });
    expect(r.lastWeek.firstResponse.waiting).toBe(2);
    expect(r.lastWeek.appointments.booked).toBe(3);
  });

  test("per person: conversations, replies, calls, talk time, response time; names only of the organization's users", async () => {
    const r = await report(manager(1), {});
    expect(r.agents).toEqual([
      { agent: "agent7", name: "Dana Diaz", conversations: 3, replies: 2, calls: 3, answered: 2, missed: 1, talkSecs: 150, responses: 3, medianResponseSecs: 7 * 3600 + 11 * 60 },
      { agent: "ext1", name: "", conversations: 0, replies: 0, calls: 1, answered: 1, missed: 0, talkSecs: 45, responses: 0, medianResponseSecs: null },
    ]);
  });

  test("the day after: midnight in the organization's zone decides, and what happened after it is the next day's", async () => {
    const r = await report(manager(1), { day: "2026-03-09" });
    expect(r.today.leads.total).toBe(1);
    expect(r.today.messages).toEqual({ sent: 1, sms: 1, email: 0, cost: 0.01, inbound: 0, replies: 1 });
    // agent7 answered L4 five minutes after it came in.
    expect(r.today.firstResponse).toEqual({ responses: 1, medianSecs: 300, p90Secs: 300, waiting: 0 });
    expect(r.yesterday.day).toBe("2026-03-08");
    expect(r.yesterday.leads.total).toBe(3);
  });

  test("the default day is the organization's at `now`, not UTC's", async () => {
    // 2026-03-09 03:30 UTC is still the 8th in New York and already the 9th in Tokyo.
    const now = new Date("2026-03-09T03:30:00Z");
    expect((await report(manager(1), {}, now)).day).toBe("2026-03-08");
    expect((await report(manager(2), {}, now)).day).toBe("2026-03-09");
  });

  test("a manager's figures are its organization's whatever it names; an admin picks one", async () => {
    const own = await report(manager(1), {});
    expect(await report(manager(1), { org: 2 })).toEqual(own);
    const bolt = await report(admin, { org: 2, day: "2026-03-08" });
    expect(bolt.org).toEqual({ id: 2, name: "Bolt", zone: TOKYO });
    const boltByManager = await report(manager(2), { day: "2026-03-08" });
    expect(boltByManager).toEqual(bolt);
    // In Tokyo, 09:00 in New York on the 8th is 23:00 on the 8th.
    expect(bolt.today.leads).toEqual({ total: 1, bySource: [{ source: "google", leads: 1 }] });
    expect(bolt.today.firstResponse).toEqual({ responses: 1, medianSecs: 120, p90Secs: 120, waiting: 0 });
    expect(bolt.agents.map((a) => [a.agent, a.name, a.replies, a.calls])).toEqual([["agent9", "Eli Ek", 1, 0]]);
    // The call at 11:30 New York time is the 9th in Tokyo; agent7 is not a user of Bolt: no name.
    const next = await report(admin, { org: 2, day: "2026-03-09" });
    expect(next.today.calls).toEqual({ answered: 1, missed: 0, talkSecs: 600 });
    expect(next.agents).toEqual([
      { agent: "agent7", name: "", conversations: 1, replies: 0, calls: 1, answered: 1, missed: 0, talkSecs: 600, responses: 0, medianResponseSecs: null },
    ]);
  });

  test("refusals: an admin without an organization, a missing one, a day that is not one, an agent", async () => {
    expect(await todayReport(db.sql, admin, {}, new Date())).toEqual({ ok: false, reason: "org_required" });
    expect(await todayReport(db.sql, admin, { org: 999 }, new Date())).toEqual({ ok: false, reason: "not_found" });
    for (const day of ["2026-02-30", "2026-3-8", "today", "2026-03-08T00:00", ""]) {
      expect({ day, r: await todayReport(db.sql, manager(1), { day }, new Date()) }).toEqual({ day, r: { ok: false, reason: "bad_day" } });
    }
    const agent: Actor = { orgId: 1, type: "user", id: "agent7", agent: "agent7", keyId: null };
    expect(await todayReport(db.sql, agent, {}, new Date())).toEqual({ ok: false, reason: "not_allowed" });
  });

  test("CSV: every figure of the three days, then each person's", async () => {
    const r: TodayReport = await report(manager(1), {});
    const rows = todayCsvRows(r);
    expect(rows.slice(0, 4)).toEqual([
      ["2026-03-08", "leads", "", "new", 3],
      ["2026-03-08", "leads", "google", "new", 2],
      ["2026-03-08", "leads", "facebook", "new", 1],
      ["2026-03-08", "calls", "", "answered", 3],
    ]);
    expect(rows).toContainEqual(["2026-03-08", "first_response", "", "median_secs", 25_860]);
    expect(rows).toContainEqual(["2026-03-07", "calls", "", "missed", 1]);
    expect(rows).toContainEqual(["2026-03-01", "first_response", "", "waiting", 2]);
    expect(rows).toContainEqual(["2026-03-08", "messages", "", "cost", 0.031]);
    expect(rows.filter((x) => x[1] === "agent")).toContainEqual(["2026-03-08", "agent", "agent7", "name", "Dana Diaz"]);
    expect(rows.filter((x) => x[1] === "agent" && x[3] === "talk_secs")).toEqual([
      ["2026-03-08", "agent", "agent7", "talk_secs", 150],
      ["2026-03-08", "agent", "ext1", "talk_secs", 45],
    ]);
  });
});

describe("the first responses of days before today, kept in memory (src/reports/day-responses.ts)", () => {
  // 2026-04-10 is nobody else's day in this file: the tests above never read it.
  const day = "2026-04-10";
  const nextDay = at("2026-04-11 12:00");
  const firstResponse = async () => (await report(manager(1), {}, nextDay)).yesterday.firstResponse;

  test("a late answer to the day before counts at once, and so do rows rewritten with the same count and sum", async () => {
    const a = await lead(101, at("2026-04-10 09:00"));
    const b = await lead(101, at("2026-04-10 09:00"));
    await message({ lead: a, org: 1, when: at("2026-04-10 09:01"), by: ["user", "agent7"] });
    await message({ lead: b, org: 1, when: at("2026-04-10 09:10"), by: ["user", "agent7"] });
    expect(await firstResponse()).toEqual({ responses: 2, medianSecs: 60, p90Secs: 600, waiting: 0 });
    expect(await firstResponse()).toEqual({ responses: 2, medianSecs: 60, p90Secs: 600, waiting: 0 });

    // A dialer reports a call of the day before, answered two minutes after its lead came in.
    const c = await lead(101, at("2026-04-10 09:00"));
    await call({ lead: c, when: at("2026-04-10 09:02"), secs: 30, agent: "agent7" });
    expect(await firstResponse()).toEqual({ responses: 3, medianSecs: 120, p90Secs: 600, waiting: 0 });

    // What a rebuild does (rows and counter deleted and written again in one transaction), with
    // the same count and sum of seconds but other times: the kept figures must not be served.
    await db.sql.begin(async (tx) => {
      await tx`delete from report_daily where org_id = 1 and day = ${day} and fact = 'responses'`;
      await tx`delete from report_responses where org_id = 1 and day = ${day}`;
      await tx`insert into report_responses (org_id, day, lead_id, agent, via, asked_at, answered_at, seconds)
        select 1, ${day}, l, 'agent7', 'reply', ${at("2026-04-10 09:00")}, ${at("2026-04-10 09:00")}, s
        from unnest(${[a, b, c]}::bigint[], ${[30, 150, 600]}::float8[]) as t(l, s)`;
    });
    expect(await firstResponse()).toEqual({ responses: 3, medianSecs: 150, p90Secs: 600, waiting: 0 });
  });

  test("each organization's days are its own", async () => {
    const own = await firstResponse();
    const bolt = await report(admin, { org: 2, day: "2026-04-11" }, nextDay);
    expect(bolt.yesterday.firstResponse).toEqual({ responses: 0, medianSecs: null, p90Secs: null, waiting: 0 });
    expect(await firstResponse()).toEqual(own);
  });
});

describe("days that are not 24 hours, and the zone's midnight", () => {
  test("the day clocks go back (25 hours) holds its last hour; half-hour zones split at their own midnight", async () => {
    await db.sql`insert into orgs (id, name, timezone) values (3, 'Chai', 'Asia/Kolkata')`;
    await db.sql`insert into campaigns (id, org_id) values ('CHAI', 3)`;
    await db.sql`insert into lists (id, campaign_id) values (301, 'CHAI')`;
    // New York, 2026-11-01: 00:30 EDT, then 01:30 twice, 23:30 EST (04:30 UTC on the 2nd).
    await lead(101, at("2026-11-01 00:30"), "fall");
    await lead(101, new Date("2026-11-01T06:30:00Z"), "fall"); // the second 01:30 (EST)
    await lead(101, at("2026-11-01 23:30"), "fall");
    await lead(101, at("2026-11-02 00:00"), "fall");
    await lead(101, at("2026-10-31 23:59"), "fall");
    const ny = await report(manager(1), { day: "2026-11-01" });
    expect(ny.today.leads.total).toBe(3);
    expect(ny.yesterday.leads.total).toBe(1);
    // Kolkata is UTC+5:30: 18:29 UTC is 23:59 there, 18:30 UTC the next day's midnight.
    await lead(301, new Date("2026-06-10T18:29:00Z"), "web");
    await lead(301, new Date("2026-06-10T18:30:00Z"), "web");
    await lead(301, new Date("2026-06-09T18:30:00Z"), "web");
    const kolkata = await report(admin, { org: 3, day: "2026-06-10" });
    expect(kolkata.org.zone).toBe("Asia/Kolkata");
    expect([kolkata.today.leads.total, kolkata.yesterday.leads.total]).toEqual([2, 0]);
    expect((await report(admin, { org: 3, day: "2026-06-11" })).today.leads.total).toBe(1);
  });

  test("an organization whose zone PostgreSQL does not know counts in UTC and still takes its leads", async () => {
    await db.sql`insert into orgs (id, name, timezone) values (4, 'Nowhere', 'Mars/Olympus_Mons')`;
    await db.sql`insert into campaigns (id, org_id) values ('NOWHERE', 4)`;
    await db.sql`insert into lists (id, campaign_id) values (401, 'NOWHERE')`;
    await lead(401, new Date("2026-06-10T23:59:00Z"), "web");
    const r = await report(admin, { org: 4, day: "2026-06-10" });
    expect(r.org.zone).toBe("UTC");
    expect(r.today.leads.total).toBe(1);
  });
});
