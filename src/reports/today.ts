// The Today report (issue 30, "the manager's day"): one day of an organization in its time zone,
// beside the day before and the same weekday a week before, and the day's people. Read from the
// rollups that the writing transactions keep (sql/0027, sql/0032, sql/0033), so its cost does not grow with history.
import type { Actor } from "../auth/actor";
import type { Sql } from "../db/client";
import type { AgentFigures, DayFigures, TodayOptions, TodayRefusal, TodayReport } from "./model";
import { dayResponses } from "./day-responses";
import { agentNames, dailyFacts, orgDay, responsesByAgent, type FactRow, type ResponseRow } from "./queries";

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const DAY_MS = 86_400_000;

/** A real calendar day YYYY-MM-DD, else null. */
export function calendarDay(v: string): string | null {
  if (!DAY.test(v)) return null;
  const t = Date.parse(`${v}T00:00:00Z`);
  return Number.isNaN(t) || new Date(t).toISOString().slice(0, 10) !== v ? null : v;
}

/** The calendar day `n` days before `day` (days, not 24-hour spans: DST does not move it). */
export const daysBefore = (day: string, n: number): string => new Date(Date.parse(`${day}T00:00:00Z`) - n * DAY_MS).toISOString().slice(0, 10);

/**
 * The report for the actor's organization (an admin names one in `opts.org`). Another
 * organization's figures are never read: the organization is the actor's own whenever it has one.
 */
export async function todayReport(sql: Sql, actor: Actor, opts: TodayOptions, now: Date): Promise<TodayReport | TodayRefusal> {
  if (actor.agent !== null) return { ok: false, reason: "not_allowed" };
  const orgId = actor.orgId ?? opts.org ?? null;
  if (orgId === null) return { ok: false, reason: "org_required" };
  const org = await orgDay(sql, orgId, now);
  if (!org) return { ok: false, reason: "not_found" };
  let day = org.today;
  if (opts.day !== undefined && opts.day !== null) {
    const asked = calendarDay(opts.day);
    if (asked === null) return { ok: false, reason: "bad_day" };
    day = asked;
  }
  const days = [day, daysBefore(day, 1), daysBefore(day, 7)];
  const [facts, agentResponses] = await Promise.all([dailyFacts(sql, orgId, days), responsesByAgent(sql, orgId, day)]);
  const responses = await dayResponses(sql, orgId, days, org.today, facts);
  const figures = (d: string) => dayFigures(d, facts, responses);
  const people = agentRows(facts.filter((f) => f.day === day), agentResponses);
  const names = await agentNames(sql, orgId, people.map((a) => a.agent));
  for (const a of people) a.name = names.get(a.agent) ?? "";
  return {
    ok: true,
    org: { id: org.id, name: org.name, zone: org.zone },
    day,
    today: figures(days[0]),
    yesterday: figures(days[1]),
    lastWeek: figures(days[2]),
    agents: people,
  };
}

/** One day's figures from the rows read for all three. */
export function dayFigures(day: string, facts: FactRow[], responses: ResponseRow[]): DayFigures {
  const of = facts.filter((f) => f.day === day);
  const sum = (fact: string, dim?: string) =>
    of.filter((f) => f.fact === fact && (dim === undefined || f.dim === dim)).reduce((a, f) => ({ n: a.n + f.n, amount: a.amount + f.amount }), { n: 0, amount: 0 });
  const bySource = of
    .filter((f) => f.fact === "lead" && f.n !== 0)
    .map((f) => ({ source: f.dim, leads: f.n }))
    .sort((a, b) => b.leads - a.leads || a.source.localeCompare(b.source));
  const answered = sum("call_answered");
  const sent = sum("sent");
  const r = responses.find((x) => x.key === day);
  return {
    day,
    leads: { total: sum("lead").n, bySource },
    calls: { answered: answered.n, missed: sum("call_missed").n, talkSecs: answered.amount },
    firstResponse: { responses: r?.n ?? 0, medianSecs: r?.p50 ?? null, p90Secs: r?.p90 ?? null, waiting: sum("waiting").n },
    appointments: {
      booked: sum("booked").n,
      pending: sum("appointment", "pending").n,
      confirmed: sum("appointment", "confirmed").n,
      completed: sum("appointment", "completed").n,
      noShows: sum("appointment", "no_show").n,
      cancelled: sum("appointment", "cancelled").n,
    },
    messages: {
      sent: sent.n,
      sms: sum("sent", "sms").n,
      email: sum("sent", "email").n,
      // Money: summed in numeric by the database; rounded here to the ledger's 4 places.
      cost: Math.round(sent.amount * 10_000) / 10_000,
      inbound: sum("inbound").n,
      replies: sum("reply").n,
    },
    conversations: sum("conversations").n,
  };
}

/** The day's people: everyone with a reply, a call, a conversation or a response, most conversations first. */
export function agentRows(facts: FactRow[], responses: ResponseRow[]): AgentFigures[] {
  const rows = new Map<string, AgentFigures>();
  const row = (agent: string) => {
    let a = rows.get(agent);
    if (!a) {
      a = { agent, name: "", conversations: 0, replies: 0, calls: 0, answered: 0, missed: 0, talkSecs: 0, responses: 0, medianResponseSecs: null };
      rows.set(agent, a);
    }
    return a;
  };
  for (const f of facts) {
    if (f.n === 0 && f.amount === 0) continue;
    if (f.fact === "reply") row(f.dim).replies += f.n;
    else if (f.fact === "handled") row(f.dim).conversations += f.n;
    else if (f.fact === "call_answered") {
      const a = row(f.dim);
      a.answered += f.n;
      a.calls += f.n;
      a.talkSecs += f.amount;
    } else if (f.fact === "call_missed") {
      const a = row(f.dim);
      a.missed += f.n;
      a.calls += f.n;
    }
  }
  for (const r of responses) {
    const a = row(r.key);
    a.responses = r.n;
    a.medianResponseSecs = r.p50;
  }
  return [...rows.values()].sort((a, b) => b.conversations - a.conversations || b.calls - a.calls || a.agent.localeCompare(b.agent));
}
