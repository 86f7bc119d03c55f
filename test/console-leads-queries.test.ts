// The console's lead queries against PostgreSQL (C1): search with keyset pages, the streamed
// export's cells, the inbox count, the timeline's polling mark, consent changes and console dials.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Actor } from "../src/auth/actor";
import { csvCell, csvStream } from "../src/console/csv";
import { inboxCount, INBOX_CAP } from "../src/console/inbox-count";
import { leadTimeline } from "../src/conversations/timeline";
import { queueDialFor } from "../src/cti/service";
import { leadConsent, setConsent } from "../src/leads/consent";
import { leadsForExport, searchLeads, textMatch, type LeadFilter } from "../src/leads/search";
import { recordInbound } from "../src/messages/callback-queries";
import { markHandled } from "../src/messages/inbox";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";

let db: TestDatabase;
const user = (orgId: number | null, id: string, agent = false): Actor => ({ orgId, type: "user", id, agent: agent ? id : null, keyId: null });
const filter = (f: Partial<LeadFilter> = {}): LeadFilter => ({ q: "", campaign: null, list: null, status: null, from: null, to: null, zone: "America/New_York", ...f });

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  // 30 Acme leads a minute apart (two with the same timestamp), one Bolt lead with a phone Acme also has.
  const t0 = Date.UTC(2026, 0, 10, 15);
  for (let i = 0; i < 30; i++) {
    await db.sql`insert into leads (list_id, phone, first_name, last_name, email, created_at)
      values (${i % 2 ? 101 : 102}, ${`51255500${String(i).padStart(2, "0")}`}, ${i === 7 ? "=cmd|' /C calc'!A0" : `Name${i}`},
              ${i === 3 ? "Diaz" : "Smith"}, ${i === 5 ? "dana@example.com" : ""}, ${new Date(t0 + (i === 29 ? 28 : i) * 60_000)})`;
  }
  await db.sql`insert into leads (list_id, phone, first_name) values (201, '5125550003', 'Bolt lead')`;
});
afterAll(() => db?.drop());

describe("lead search", () => {
  test("the text box: email, phone in any format, name; short phones match nothing", () => {
    expect(textMatch("Dana@Example.com")).toEqual({ kind: "email", prefix: "dana@example.com" });
    expect(textMatch("+1 (512) 555-0003")).toEqual({ kind: "phone", last10: "5125550003" });
    expect(textMatch("555-0003")).toEqual({ kind: "short_phone" });
    expect(textMatch("  dana  diaz ")).toEqual({ kind: "name", words: ["dana", "diaz"] });
  });

  test("keyset pages visit every lead once, newest first, equal timestamps included", async () => {
    const seen: number[] = [];
    let cursor = null;
    for (let page = 0; page < 10; page++) {
      const r = await searchLeads(db.sql, 1, filter(), cursor, 7);
      seen.push(...r.rows.map((x) => x.id));
      if (!r.next) break;
      cursor = r.next;
    }
    expect(seen).toHaveLength(30);
    expect(new Set(seen).size).toBe(30);
    const all = await db.sql<{ id: number }[]>`select id from leads where org_id = 1 order by created_at desc, id desc`;
    expect(seen).toEqual(all.map((r) => r.id));
  });

  test("phone, name, email, list and date filters; another organization's leads never match", async () => {
    const phone = await searchLeads(db.sql, 1, filter({ q: "(512) 555-0003" }), null, 50);
    expect(phone.rows.map((r) => r.name)).toEqual(["Name3 Diaz"]);
    expect((await searchLeads(db.sql, 2, filter({ q: "512.555.0003" }), null, 50)).rows.map((r) => r.name)).toEqual(["Bolt lead"]);
    expect((await searchLeads(db.sql, null, filter({ q: "5125550003" }), null, 50)).rows).toHaveLength(2);
    expect((await searchLeads(db.sql, 1, filter({ q: "name1 smi" }), null, 50)).rows.map((r) => r.name).sort()).toEqual(
      ["Name1 Smith", ...Array.from({ length: 10 }, (_, i) => `Name${10 + i} Smith`)].sort(),
    );
    expect((await searchLeads(db.sql, 1, filter({ q: "diaz" }), null, 50)).rows).toHaveLength(1);
    expect((await searchLeads(db.sql, 1, filter({ q: "DANA@ex" }), null, 50)).rows.map((r) => r.email)).toEqual(["dana@example.com"]);
    expect((await searchLeads(db.sql, 1, filter({ q: "%" }), null, 50)).rows).toHaveLength(0);
    expect((await searchLeads(db.sql, 1, filter({ list: 101 }), null, 50)).rows).toHaveLength(15);
    expect((await searchLeads(db.sql, 1, filter({ campaign: "BOLT" }), null, 50)).rows).toHaveLength(0);
    // 10:00–10:09 New York on Jan 10 are the leads 0…9.
    expect((await searchLeads(db.sql, 1, filter({ from: "2026-01-10", to: "2026-01-10" }), null, 50)).rows).toHaveLength(30);
    expect((await searchLeads(db.sql, 1, filter({ from: "2026-01-11" }), null, 50)).rows).toHaveLength(0);
    expect((await searchLeads(db.sql, 1, filter({ to: "2026-01-09" }), null, 50)).rows).toHaveLength(0);
  });

  test("the export streams every match in keyset batches, with formula cells made text", async () => {
    const stream = csvStream(["lead_id", "first_name"], leadsForExport(db.sql, 1, filter(), 4), (r) => [r.lead_id, r.first_name]);
    const text = await new Response(stream).text();
    const lines = text.trimEnd().split("\r\n");
    expect(lines).toHaveLength(31);
    expect(lines[0]).toBe("lead_id,first_name");
    // Batches of 4 are keyset pages: every lead once, in order, the two with one timestamp included.
    const all = await db.sql<{ id: number }[]>`select id from leads where org_id = 1 order by created_at desc, id desc`;
    expect(lines.slice(1).map((l) => Number(l.split(",")[0]))).toEqual(all.map((r) => r.id));
    expect(lines.some((l) => l.endsWith(",'=cmd|' /C calc'!A0"))).toBe(true);
    expect([csvCell("+1"), csvCell("-x"), csvCell("@a"), csvCell('a"b,c'), csvCell("ok")]).toEqual(["'+1", "'-x", "'@a", '"a""b,c"', "ok"]);
  });
});

describe("inbox, timeline, consent, dials", () => {
  test("the inbox count is per organization, capped, and falls when a message is handled", async () => {
    const [lead] = await db.sql<{ id: number }[]>`select id from leads where phone = '5125550003' and org_id = 1`;
    await db.sql`insert into messages (lead_id, org_id, channel, direction, body, status)
      select ${lead.id}, 1, 'sms', 'in', 'hello ' || g, 'received' from generate_series(1, 3) g`;
    expect(await inboxCount(db.sql, user(1, "u1"))).toBe(3);
    expect(await inboxCount(db.sql, user(2, "u2"))).toBe(0);
    expect(await inboxCount(db.sql, user(null, "admin"))).toBe(3);
    const [m] = await db.sql<{ id: number }[]>`select id from messages where direction = 'in' order by id limit 1`;
    expect(await db.sql.begin((tx) => markHandled(tx, 2, m.id, new Date()))).toBeNull();
    expect(await db.sql.begin((tx) => markHandled(tx, 1, m.id, new Date()))).toEqual({ lead_id: lead.id, org_id: 1 });
    expect(await db.sql.begin((tx) => markHandled(tx, 1, m.id, new Date()))).toBeNull();
    expect(await inboxCount(db.sql, user(1, "u1"))).toBe(2);
    await db.sql`insert into messages (lead_id, org_id, channel, direction, body) select ${lead.id}, 1, 'sms', 'in', 'x' from generate_series(1, 1005)`;
    expect(await inboxCount(db.sql, user(1, "u1"))).toBe(INBOX_CAP + 1);
  });

  test("the timeline's mark brings only rows recorded after it, whatever their timestamps", async () => {
    const [lead] = await db.sql<{ id: number }[]>`select id from leads where phone = '5125550010'`;
    await db.sql`insert into messages (lead_id, org_id, channel, direction, body, created_at) values (${lead.id}, 1, 'note', 'out', 'first', now())`;
    const t = (await leadTimeline(db.sql, 1, lead.id, 200))!;
    expect(t.entries.map((e) => (e.kind === "msg" ? e.body : ""))).toEqual(["first"]);
    expect(await leadTimeline(db.sql, 2, lead.id, 200)).toBeNull();
    await db.sql`insert into messages (lead_id, org_id, channel, direction, body, created_at) values (${lead.id}, 1, 'note', 'out', 'backdated', now() - interval '1 day')`;
    await db.sql`insert into lead_events (lead_id, event, label) values (${lead.id}, 'x', 'an event')`;
    const after = (await leadTimeline(db.sql, 1, lead.id, 200, t.mark))!;
    expect(after.entries.map((e) => e.kind)).toEqual(["msg", "event"]);
    expect((await leadTimeline(db.sql, 1, lead.id, 200, after.mark))!.entries).toEqual([]);
  });

  test("older pages walk the whole timeline once, in order, through ties across and within sources", async () => {
    const [lead] = await db.sql<{ id: number }[]>`select id from leads where phone = '5125550012'`;
    // 137 entries on 9 distinct instants: every page boundary falls among equal timestamps.
    await db.sql`insert into messages (lead_id, org_id, channel, direction, body, created_at)
      select ${lead.id}, 1, 'note', 'out', 'm' || g, timestamptz '2026-01-01' + (g % 9) * interval '1.5 second' from generate_series(1, 50) g`;
    await db.sql`insert into calls (lead_id, phone, status, secs, occurred_at)
      select ${lead.id}, '5125550012', 'ANSWERED', g, timestamptz '2026-01-01' + (g % 9) * interval '1.5 second' from generate_series(1, 47) g`;
    await db.sql`insert into lead_events (lead_id, event, label, created_at)
      select ${lead.id}, 'x', 'e' || g, timestamptz '2026-01-01' + (g % 9) * interval '1.5 second' from generate_series(1, 40) g`;
    const key = (e: { kind: string; epoch: number } & Record<string, unknown>) => (e.kind === "msg" ? `m${e.id}` : e.kind === "call" ? `c${e.secs}` : `e${e.label}`);
    const all = (await leadTimeline(db.sql, 1, lead.id, 500))!;
    expect(all.entries).toHaveLength(137);
    expect(all.older).toBeNull();
    const walked: string[][] = [];
    let page = (await leadTimeline(db.sql, 1, lead.id, 10))!;
    for (;;) {
      walked.unshift(page.entries.map((e) => key(e as never)));
      if (page.older === null) break;
      page = (await leadTimeline(db.sql, 1, lead.id, 10, null, page.older))!;
    }
    expect(walked).toHaveLength(14);
    expect(walked.flat()).toEqual(all.entries.map((e) => key(e as never)));
    // Another organization's viewer gets nothing older either.
    expect(await leadTimeline(db.sql, 2, lead.id, 10, null, { micros: Date.UTC(2027, 0, 1) * 1000, src: 3, sid: 1 })).toBeNull();
  });

  test("a consent change covers the organization's leads on the address and shows in the timeline", async () => {
    const [a] = await db.sql<{ id: number }[]>`select id from leads where phone = '5125550003' and org_id = 1`;
    const [b] = await db.sql<{ id: number }[]>`insert into leads (list_id, phone) values (101, '5125550003') returning id`;
    const changed = await db.sql.begin((tx) => setConsent(tx, a.id, "sms", "out", { name: "Dana", source: "console:u1" }, new Date()));
    expect(changed.ok && changed.leads.sort()).toEqual([a.id, b.id].sort());
    expect((await leadConsent(db.sql, b.id)).map((c) => [c.channel, c.consent])).toEqual([["sms", "out"], ["email", "none"]]);
    // The Bolt lead on the same phone is another organization's: untouched.
    expect(await db.sql`select 1 from lead_channels c join leads l on l.id = c.lead_id where l.org_id = 2`).toHaveLength(0);
    expect(await db.sql.begin((tx) => setConsent(tx, a.id, "email", "in", { name: "Dana", source: "s" }, new Date()))).toEqual({ ok: false, reason: "no_address" });
    // Opted out: another value only with liftOptOut, then for every lead on the address.
    for (const value of ["in", "none"] as const) {
      expect(await db.sql.begin((tx) => setConsent(tx, b.id, "sms", value, { name: "Eve", source: "s" }, new Date()))).toEqual({ ok: false, reason: "opted_out" });
    }
    expect((await leadConsent(db.sql, a.id))[0].consent).toBe("out");
    const lifted = await db.sql.begin((tx) => setConsent(tx, b.id, "sms", "in", { name: "Mia", source: "s", note: "signed form" }, new Date(), true));
    expect(lifted).toEqual({ ok: true, leads: expect.any(Array), liftedOptOut: true });
    expect((await leadConsent(db.sql, a.id))[0].consent).toBe("in");
    const [event] = await db.sql`select label, note from lead_events where lead_id = ${b.id} and event = 'consent.changed' order by id desc limit 1`;
    expect(event).toEqual({ label: "SMS consent: in (opt-out lifted)", note: "signed form" });
  });

  test("a STOP that commits while an opt-in is being written wins: the opt-in is undone and refused", async () => {
    // Two leads of organization 1 on one phone; the older is the one the console changes, the newer
    // the one a STOP lands on (as the SMS webhook does, recordInbound, for every lead on the phone).
    const [a] = await db.sql<{ id: number }[]>`insert into leads (list_id, phone, first_name) values (101, '5125550777', 'Older') returning id`;
    await db.sql`insert into leads (list_id, phone, first_name) values (101, '5125550777', 'Newer')`;
    // Both opted in at intake: the STOP updates their rows (locking only those rows, not the leads).
    await db.sql`insert into lead_channels (lead_id, channel, address, consent) select id, 'sms', phone, 'in' from leads where phone = '5125550777'`;
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let stopped!: () => void;
    const stopWritten = new Promise<void>((r) => (stopped = r));
    const stop = db.sql.begin(async (tx) => {
      await recordInbound(tx as never, { orgId: 1, from10: "5125550777", from: "+15125550777", to: "+15125550100", body: "STOP", sid: "SMrace1", consent: "out", now: new Date() });
      stopped();
      await released;
    });
    await stopWritten;
    // The opt-in does not see the uncommitted STOP, writes into the rows it holds and waits for it.
    const optIn = db.sql.begin((tx) => setConsent(tx, a.id, "sms", "in", { name: "Ann", source: "console:agent7" }, new Date()));
    for (let i = 0; ; i++) {
      const [w] = await db.sql<{ n: number }[]>`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`;
      if (w.n > 0) break;
      if (i > 500) throw new Error("the opt-in never waited for the STOP's rows");
      await Bun.sleep(10);
    }
    release();
    await stop;
    expect(await optIn).toEqual({ ok: false, reason: "opted_out" });
    const rows = await db.sql`select c.consent from lead_channels c join leads l on l.id = c.lead_id where l.phone = '5125550777' and c.channel = 'sms'`;
    expect(rows.map((r) => r.consent)).toEqual(["out", "out"]);
    expect(await db.sql`select 1 from lead_events where lead_id = ${a.id} and event = 'consent.changed'`).toHaveLength(0);
  });

  test("a console dial: an agent only to themselves, a manager to their organization's users", async () => {
    const dial = (actor: Actor, agent: string) => db.sql.begin((tx) => queueDialFor(tx, actor, agent, "512-555-0003", 1));
    expect((await dial(user(1, "agent7", true), "agent7")).lead_id).toEqual(expect.any(Number));
    await expect(dial(user(1, "agent7", true), "house1")).rejects.toMatchObject({ code: "not_found" });
    await expect(dial(user(1, "m1"), "agent9")).rejects.toMatchObject({ code: "not_found" });
    expect((await dial(user(1, "m1"), "agent7")).id).toEqual(expect.any(Number));
    expect((await dial(user(null, "admin"), "agent7")).id).toEqual(expect.any(Number));
  });
});
