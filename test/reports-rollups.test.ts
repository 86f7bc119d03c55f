// The rollups equal a direct computation: random facts of two organizations (leads, inbound and
// outbound messages through their status changes, calls, appointments and their moves) around a
// daylight-saving change, written in time order as the service writes them; every day's Today
// report read from the rollups must equal the same figures computed here from the facts, and so
// must the figures report_rebuild() (the migration's backfill) recomputes. Then the race: writers
// of one counter never wait for each other.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { randomBytes } from "node:crypto";
import type { Actor } from "../src/auth/actor";
import type { AgentFigures, DayFigures } from "../src/reports/model";
import { todayReport } from "../src/reports/today";
import { wallOf } from "../src/zone";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeKey, seedWorld } from "./harness/factory";

let db: TestDatabase;
const ZONES: Record<number, string> = { 1: "America/New_York", 2: "Asia/Kolkata" };
const LISTS: Record<number, number> = { 1: 101, 2: 201 };
// Friday 2026-03-06 00:00 UTC; New York moves its clocks on Sunday the 8th.
const START = Date.UTC(2026, 2, 6);
const MINUTE = 60_000;
const keys: { bound: Record<number, number>; unbound: Record<number, number> } = { bound: {}, unbound: {} };

const dayOf = (t: number, org: number) => new Date(wallOf(t, ZONES[org])).toISOString().slice(0, 10);
const admin: Actor = { orgId: null, type: "user", id: "admin", agent: null, keyId: null };

// ---- the facts --------------------------------------------------------------------------------

const SENT_LIKE = ["sending", "sent", "delivered", "unknown"];
type Sender = "user" | "bound_key" | "automation" | "unbound_key";
type Step =
  | { kind: "lead"; org: number; source: string; house: boolean }
  | { kind: "inbound"; lead: number }
  | { kind: "out"; lead: number; by: Sender; agent: string; channel: "sms" | "email" | "note"; statuses: string[]; cost: number }
  | { kind: "deferred"; lead: number; deferMinutes: number; outcome: "sent" | "failed" | "still_queued"; cost: number }
  | { kind: "call"; lead: number | null; org: number; secs: number; agent: string; attachLater: boolean }
  | { kind: "appointment"; org: number; slotMinutes: number; statuses: string[] };

const agentArb = fc.constantFrom("agent7", "agent9", "house1", "dialer1");
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("lead" as const), org: fc.constantFrom(1, 2), source: fc.constantFrom("", "google", "bing"), house: fc.integer({ min: 0, max: 9 }).map((x) => x === 0) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("inbound" as const), lead: fc.nat(40) }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("out" as const),
      lead: fc.nat(40),
      by: fc.constantFrom<Sender>("user", "bound_key", "automation", "unbound_key"),
      agent: agentArb,
      channel: fc.constantFrom<"sms" | "email" | "note">("sms", "sms", "email", "note"),
      statuses: fc.constantFrom<string[]>(
        ["sending", "sent", "delivered"],
        ["sending", "failed"],
        ["sending", "sent", "undelivered"],
        ["sending", "unknown"],
        ["sent"],
      ),
      cost: fc.integer({ min: 0, max: 300 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("deferred" as const),
      lead: fc.nat(40),
      deferMinutes: fc.integer({ min: 1, max: 14 * 60 }),
      outcome: fc.constantFrom("sent" as const, "failed" as const, "still_queued" as const),
      cost: fc.integer({ min: 1, max: 300 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("call" as const),
      lead: fc.option(fc.nat(40), { nil: null, freq: 4 }),
      org: fc.constantFrom(1, 2),
      secs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 900 })),
      agent: agentArb,
      attachLater: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("appointment" as const),
      org: fc.constantFrom(1, 2),
      slotMinutes: fc.integer({ min: -3 * 24 * 60, max: 3 * 24 * 60 }),
      statuses: fc.constantFrom<string[]>(["pending"], ["pending", "confirmed"], ["pending", "no_show"], ["confirmed", "completed", "no_show"], ["pending", "cancelled"]),
    }),
  },
);
const scenarioArb = fc.array(fc.tuple(stepArb, fc.integer({ min: 1, max: 9 * 60 })), { minLength: 1, maxLength: 45 });

// ---- the direct computation ------------------------------------------------------------------

interface Lead {
  id: number;
  org: number | null;
}
interface Expected {
  days: Map<string, DayFigures>;
  agents: Map<string, Map<string, AgentFigures>>;
}

function emptyDay(day: string): DayFigures {
  return {
    day,
    leads: { total: 0, bySource: [] },
    calls: { answered: 0, missed: 0, talkSecs: 0 },
    firstResponse: { responses: 0, medianSecs: null, p90Secs: null, waiting: 0 },
    appointments: { booked: 0, pending: 0, confirmed: 0, completed: 0, noShows: 0, cancelled: 0 },
    messages: { sent: 0, sms: 0, email: 0, cost: 0, inbound: 0, replies: 0 },
    conversations: 0,
  };
}

/** The nearest-rank percentile: the smallest value with at least p of the values at or below it. */
const nearestRank = (xs: number[], p: number) => (xs.length === 0 ? null : [...xs].sort((a, b) => a - b)[Math.ceil(p * xs.length) - 1]);

class Model {
  facts: { org: number; day: string; fact: string; dim: string; n: number; amount: number }[] = [];
  responses: { org: number; day: string; agent: string; secs: number }[] = [];
  handled = new Set<string>();
  asks = new Map<number, { at: number; org: number }[]>();

  add(org: number | null, t: number, fact: string, dim: string, n = 1, amount = 0) {
    if (org !== null) this.facts.push({ org, day: dayOf(t, org), fact, dim, n, amount });
  }
  ask(lead: Lead, t: number) {
    if (lead.org === null) return;
    const list = this.asks.get(lead.id) ?? [];
    if (!list.some((a) => a.at === t)) list.push({ at: t, org: lead.org });
    this.asks.set(lead.id, list);
  }
  answer(org: number, leadId: number, t: number, agent: string) {
    this.handled.add(JSON.stringify([org, dayOf(t, org), agent, leadId]));
    const list = this.asks.get(leadId) ?? [];
    const answered = list.filter((a) => a.at <= t);
    this.asks.set(leadId, list.filter((a) => a.at > t));
    if (answered.length > 0) this.responses.push({ org, day: dayOf(t, org), agent, secs: (t - Math.min(...answered.map((a) => a.at))) / 1000 });
  }

  expected(org: number, names: Record<string, string>): Expected {
    const days = new Map<string, DayFigures>();
    const agents = new Map<string, Map<string, AgentFigures>>();
    const dayFor = (d: string) => days.get(d) ?? (days.set(d, emptyDay(d)), days.get(d)!);
    const agentFor = (d: string, agent: string) => {
      const m = agents.get(d) ?? (agents.set(d, new Map()), agents.get(d)!);
      if (!m.has(agent)) m.set(agent, { agent, name: names[agent] ?? "", conversations: 0, replies: 0, calls: 0, answered: 0, missed: 0, talkSecs: 0, responses: 0, medianResponseSecs: null });
      return m.get(agent)!;
    };
    const sources = new Map<string, Map<string, number>>();
    for (const f of this.facts.filter((x) => x.org === org)) {
      const d = dayFor(f.day);
      switch (f.fact) {
        case "lead": {
          d.leads.total += f.n;
          const s = sources.get(f.day) ?? (sources.set(f.day, new Map()), sources.get(f.day)!);
          s.set(f.dim, (s.get(f.dim) ?? 0) + f.n);
          break;
        }
        case "inbound":
          d.messages.inbound += f.n;
          break;
        case "reply":
          d.messages.replies += f.n;
          agentFor(f.day, f.dim).replies += f.n;
          break;
        case "sent":
          d.messages.sent += f.n;
          if (f.dim === "sms") d.messages.sms += f.n;
          else d.messages.email += f.n;
          d.messages.cost += f.amount;
          break;
        case "call_answered": {
          d.calls.answered += f.n;
          d.calls.talkSecs += f.amount;
          const a = agentFor(f.day, f.dim);
          a.answered += f.n;
          a.calls += f.n;
          a.talkSecs += f.amount;
          break;
        }
        case "call_missed": {
          d.calls.missed += f.n;
          const a = agentFor(f.day, f.dim);
          a.missed += f.n;
          a.calls += f.n;
          break;
        }
        case "booked":
          d.appointments.booked += f.n;
          break;
        case "appointment": {
          const k = ({ pending: "pending", confirmed: "confirmed", completed: "completed", no_show: "noShows", cancelled: "cancelled" } as const)[f.dim as "pending"];
          d.appointments[k] += f.n;
          break;
        }
      }
    }
    for (const [day, s] of sources) {
      dayFor(day).leads.bySource = [...s].filter(([, n]) => n !== 0).map(([source, leads]) => ({ source, leads })).sort((a, b) => b.leads - a.leads || a.source.localeCompare(b.source));
    }
    for (const d of days.values()) d.messages.cost = Math.round(d.messages.cost * 10_000) / 10_000;
    const byDay = new Map<string, number[]>();
    const byAgent = new Map<string, number[]>();
    for (const r of this.responses.filter((x) => x.org === org)) {
      byDay.set(r.day, [...(byDay.get(r.day) ?? []), r.secs]);
      byAgent.set(JSON.stringify([r.day, r.agent]), [...(byAgent.get(JSON.stringify([r.day, r.agent])) ?? []), r.secs]);
    }
    for (const [day, xs] of byDay) dayFor(day).firstResponse = { ...dayFor(day).firstResponse, responses: xs.length, medianSecs: nearestRank(xs, 0.5), p90Secs: nearestRank(xs, 0.9) };
    for (const [k, xs] of byAgent) {
      const [day, agent] = JSON.parse(k) as [string, string];
      const a = agentFor(day, agent);
      a.responses = xs.length;
      a.medianResponseSecs = nearestRank(xs, 0.5);
    }
    const leadsByDay = new Map<string, Set<number>>();
    for (const h of this.handled) {
      const [o, day, agent, lead] = JSON.parse(h) as [number, string, string, number];
      if (o !== org) continue;
      agentFor(day, agent).conversations++;
      leadsByDay.set(day, (leadsByDay.get(day) ?? new Set()).add(lead));
    }
    for (const [day, s] of leadsByDay) dayFor(day).conversations = s.size;
    for (const list of this.asks.values()) {
      if (list.length === 0 || list[0].org !== org) continue;
      const first = Math.min(...list.map((a) => a.at));
      dayFor(dayOf(first, org)).firstResponse.waiting++;
    }
    return { days, agents };
  }
}

// ---- writing the facts as the service writes them ---------------------------------------------

let apptSeq = 0;

async function play(steps: [Step, number][]): Promise<Model> {
  const sql = db.sql;
  const model = new Model();
  const leads: Lead[] = [];
  const calls: { id: number; org: number; t: number; secs: number; agent: string; attach: boolean }[] = [];
  const appts: { id: number; org: number; slot: number; statuses: string[] }[] = [];
  const finals: (() => Promise<void>)[] = [];
  let t = START;
  const pick = (i: number) => (leads.length === 0 ? null : leads[i % leads.length]);
  for (const [step, gap] of steps) {
    t += gap * MINUTE;
    const when = new Date(t);
    switch (step.kind) {
      case "lead": {
        const list = step.house ? 900 : LISTS[step.org];
        const [r] = await sql<{ id: number; org_id: number | null }[]>`
          insert into leads (list_id, phone, source, created_at) values (${list}, ${`555${String(leads.length).padStart(7, "0")}`}, ${step.source}, ${when})
          returning id, org_id`;
        const lead = { id: r.id, org: r.org_id };
        leads.push(lead);
        model.add(lead.org, t, "lead", step.source);
        model.ask(lead, t);
        break;
      }
      case "inbound": {
        const lead = pick(step.lead);
        if (!lead) break;
        await sql`insert into messages (lead_id, org_id, channel, direction, actor_type, actor_id, status, created_at, updated_at)
                  values (${lead.id}, ${lead.org}, 'sms', 'in', 'provider', 'twilio', 'received', ${when}, ${when})`;
        model.add(lead.org, t, "inbound", "sms");
        model.ask(lead, t);
        break;
      }
      case "out": {
        const lead = pick(step.lead);
        if (!lead) break;
        const org = lead.org ?? 1;
        const [type, id] = {
          user: ["user", step.agent],
          bound_key: ["api_key", String(keys.bound[org])],
          automation: ["automation", "1"],
          unbound_key: ["api_key", String(keys.unbound[org])],
        }[step.by];
        const person = step.by === "user" ? step.agent : step.by === "bound_key" ? `bound${org}` : null;
        const cost = step.cost / 10_000;
        const [m] = await sql<{ id: number }[]>`
          insert into messages (lead_id, org_id, channel, direction, actor_type, actor_id, status, cost, created_at, updated_at)
          values (${lead.id}, ${lead.org}, ${step.channel}, 'out', ${type}, ${id}, ${step.channel === "note" ? "stored" : step.statuses[0]}, ${cost}, ${when}, ${when})
          returning id`;
        if (step.channel === "note") break;
        for (const s of step.statuses.slice(1)) await sql`update messages set status = ${s}, updated_at = ${when} where id = ${m.id}`;
        if (person !== null) {
          model.add(lead.org, t, "reply", person);
          if (lead.org !== null) model.answer(lead.org, lead.id, t, person);
        }
        if (SENT_LIKE.includes(step.statuses[step.statuses.length - 1])) model.add(lead.org, t, "sent", step.channel, 1, cost);
        break;
      }
      case "deferred": {
        const lead = pick(step.lead);
        if (!lead) break;
        const due = t + step.deferMinutes * MINUTE;
        const cost = step.cost / 10_000;
        const [m] = await sql<{ id: number }[]>`
          insert into messages (lead_id, org_id, channel, direction, actor_type, actor_id, status, defer_until, created_at, updated_at)
          values (${lead.id}, ${lead.org}, 'sms', 'out', 'automation', '1', 'queued', ${new Date(due)}, ${when}, ${when})
          returning id`;
        // It goes (or fails) at its time, after everything written before then: last, in time order.
        if (step.outcome !== "still_queued") {
          finals.push(async () => {
            if (step.outcome === "sent") {
              await sql`update messages set status = 'sending', cost = ${cost} where id = ${m.id}`;
              await sql`update messages set status = 'sent' where id = ${m.id}`;
            } else await sql`update messages set status = 'failed' where id = ${m.id}`;
          });
          if (step.outcome === "sent") model.add(lead.org, due, "sent", "sms", 1, cost);
        }
        break;
      }
      case "call": {
        const lead = step.lead === null ? null : pick(step.lead);
        const [c] = await sql<{ id: number }[]>`
          insert into calls (lead_id, key_id, phone, status, secs, agent, occurred_at)
          values (${lead?.id ?? null}, ${lead === null ? keys.unbound[step.org] : null}, '5125550000', 'X', ${step.secs}, ${step.agent}, ${when})
          returning id`;
        const org = lead === null ? step.org : lead.org;
        calls.push({ id: c.id, org: org ?? 0, t, secs: step.secs, agent: step.agent, attach: lead === null && step.attachLater });
        if (lead !== null && lead.org !== null && step.secs > 0) model.answer(lead.org, lead.id, t, step.agent);
        break;
      }
      case "appointment": {
        const org = step.org;
        const slot = Math.floor((t + step.slotMinutes * MINUTE) / MINUTE) * 60;
        const [a] = await sql<{ id: number }[]>`
          insert into appointments (calendar_id, link_slug, slot_epoch, name, phone, status, token_selector, token_hash, created_at, updated_at)
          values (${org}, 'x', ${slot}, ${`A${++apptSeq}`}, '5125550000', ${step.statuses[0]}, ${randomBytes(32)}, ${randomBytes(32)}, ${when}, ${when})
          returning id`;
        for (const s of step.statuses.slice(1)) await sql`update appointments set status = ${s} where id = ${a.id}`;
        model.add(org, t, "booked", "");
        appts.push({ id: a.id, org, slot, statuses: step.statuses });
        break;
      }
    }
  }
  // Unknown callers given a lead afterwards: a lead made from the call, after everything else.
  for (const c of calls) {
    const org: number | null = c.org === 0 ? null : c.org;
    if (c.attach && org !== null) {
      t += MINUTE;
      const [r] = await sql<{ id: number }[]>`
        insert into leads (list_id, phone, source, created_at) values (${LISTS[org]}, ${`556${String(c.id).padStart(7, "0")}`}, 'call', ${new Date(t)})
        returning id`;
      await sql`update calls set lead_id = ${r.id} where id = ${c.id}`;
      const lead = { id: r.id, org };
      model.add(org, t, "lead", "call");
      model.ask(lead, t);
      if (c.secs > 0) model.answer(org, lead.id, c.t, c.agent);
    }
    model.add(org, c.t, c.secs > 0 ? "call_answered" : "call_missed", c.agent, 1, c.secs);
  }
  for (const f of finals) await f();
  for (const a of appts) model.add(a.org, a.slot * 1000, "appointment", a.statuses[a.statuses.length - 1]);
  return model;
}

const NAMES: Record<number, Record<string, string>> = { 1: { agent7: "Dana Diaz", house1: "Hal", bound1: "Bound One" }, 2: { agent9: "Eli Ek", house1: "Hal", bound2: "Bound Two" } };

async function checkEveryDay(model: Model): Promise<void> {
  for (const org of [1, 2]) {
    const want = model.expected(org, NAMES[org]);
    // Every day the model or the rollups know of: a day only the rollups have must be all zeros.
    const stored = await db.sql<{ day: string }[]>`
      select day::text from report_daily where org_id = ${org} union select day::text from report_asks where org_id = ${org}
      union select day::text from report_agent_leads where org_id = ${org} union select day::text from report_responses where org_id = ${org}`;
    const days = [...new Set([...want.days.keys(), ...want.agents.keys(), ...stored.map((r) => r.day)])].sort();
    // The response counter (sql/0033) is the count and summed seconds of each day's responses.
    const [counters, rows] = await Promise.all([
      db.sql`select day::text, sum(n)::int as n, round(sum(amount), 6)::float8 as secs from report_daily
             where org_id = ${org} and fact = 'responses' group by day having sum(n) <> 0 order by day`,
      db.sql`select day::text, count(*)::int as n, round(sum(seconds)::numeric, 6)::float8 as secs from report_responses
             where org_id = ${org} group by day order by day`,
    ]);
    expect({ org, counters: [...counters] }).toEqual({ org, counters: [...rows] });
    for (const day of days) {
      const r = await todayReport(db.sql, admin, { org, day }, new Date(START));
      if (!r.ok) throw new Error(r.reason);
      expect({ org, day, figures: r.today }).toEqual({ org, day, figures: want.days.get(day) ?? emptyDay(day) });
      const agents = [...(want.agents.get(day)?.values() ?? [])].sort((a, b) => b.conversations - a.conversations || b.calls - a.calls || a.agent.localeCompare(b.agent));
      expect({ org, day, agents: r.agents }).toEqual({ org, day, agents });
    }
  }
}

async function reset(): Promise<void> {
  await db.sql`truncate leads, messages, calls, appointments, report_daily, report_asks, report_responses, report_agent_leads, report_waiting, report_day_leads, outbox_events cascade`;
}

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  await db.sql`update orgs set timezone = ${ZONES[1]} where id = 1`;
  await db.sql`update orgs set timezone = ${ZONES[2]} where id = 2`;
  await db.sql`insert into users (id, org_id, name) values ('bound1', 1, 'Bound One'), ('bound2', 2, 'Bound Two')`;
  await db.sql`insert into calendars (id, org_id, name, timezone, capacity) values (1, 1, 'Acme', ${ZONES[1]}, 1000), (2, 2, 'Bolt', ${ZONES[2]}, 1000)`;
  for (const org of [1, 2]) {
    keys.bound[org] = (await makeKey(db.sql, { scopes: ["messages:write"], org, agent: `bound${org}` })).id;
    keys.unbound[org] = (await makeKey(db.sql, { scopes: ["messages:write", "calls:write"], org })).id;
  }
}, 60_000);
afterAll(async () => {
  await db?.drop();
});

describe("rollups", () => {
  test("every day's figures equal the direct computation from the facts, and so do report_rebuild()'s", async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (steps) => {
        await reset();
        const model = await play(steps);
        await checkEveryDay(model);
        await db.sql`select report_rebuild(null)`;
        await checkEveryDay(model);
      }),
      { numRuns: 40 },
    );
  }, 240_000);

  test("writers of one counter never wait for each other: a transaction holding it does not hold up another", async () => {
    await reset();
    // One intake's transaction stays open after writing the day's lead counter of source `web`.
    const held = await db.sql.reserve();
    try {
      await held`begin`;
      await held`insert into leads (list_id, phone, source, created_at) values (101, '5550000001', 'web', ${new Date(START)})`;
      // Another, with a lock wait that would fail at once, writes the same counter.
      await db.sql.begin(async (tx) => {
        await tx`set local lock_timeout = '50ms'`;
        await tx`insert into leads (list_id, phone, source, created_at) values (101, '5550000002', 'web', ${new Date(START)})`;
      });
      await held`commit`;
    } finally {
      held.release();
    }
    const r = await todayReport(db.sql, admin, { org: 1, day: dayOf(START, 1) }, new Date(START));
    expect(r.ok && r.today.leads.bySource).toEqual([{ source: "web", leads: 2 }]);
  });

  test("concurrent writers of the same counters lose nothing", async () => {
    await reset();
    const N = 40;
    await Promise.all(
      Array.from({ length: N }, (_, i) =>
        db.sql.begin(async (tx) => {
          await tx`insert into leads (list_id, phone, source, created_at) values (101, ${`55510${String(i).padStart(5, "0")}`}, 'race', ${new Date(START)})`;
          await tx`select pg_sleep(0.01)`;
        }),
      ),
    );
    const r = await todayReport(db.sql, admin, { org: 1, day: dayOf(START, 1) }, new Date(START));
    expect(r.ok && r.today.leads.total).toBe(N);
    const [{ stripes }] = await db.sql<{ stripes: number }[]>`select count(*)::int as stripes from report_daily where fact = 'lead'`;
    // At most one stripe per transaction that found every other one held.
    expect(stripes).toBeGreaterThanOrEqual(1);
    expect(stripes).toBeLessThanOrEqual(N);
  });
});
