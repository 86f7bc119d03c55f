// The live change feed (docs/workspace.md, "The live feed"): every change a workspace shows is a
// row of its organization's feed, written in the change's transaction and numbered in commit
// order; a tab resuming from its last id misses nothing and sees nothing twice, under concurrent
// writers and across two served instances (a change committed through one reaches a subscriber
// of the other); retention tells a tab away too long to reload; a callback comes due once however
// many instances run its job.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Actor } from "../src/auth/actor";
import { changesSince, pruneChanges, sequenceChanges, type Change } from "../src/feed/queries";
import { FeedHub } from "../src/feed/hub";
import { sequenceAll } from "../src/feed/sequencer";
import { assignConversation, closeConversation, reopenConversation, snoozeConversation } from "../src/workspace/actions";
import { callbackDue, closeCallback, scheduleCallback } from "../src/workspace/callbacks";
import { call, startApp, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeKey, seedWorld } from "./harness/factory";

let db: TestDatabase;
let a: TestApp;
let b: TestApp;
let callsKey: string;
const T0 = Date.parse("2026-01-14T17:00:00Z");
const clock = new ManualClock(T0);
const MIN = 60_000;
const user = (id: string, orgId: number | null): Actor => ({ orgId, type: "user", id, agent: null, keyId: null });
const mgr = user("mgr1", 1);
const boltMgr = user("mgr2", 2);
const admin = user("admin1", null);

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  await db.sql`update orgs set timezone = 'America/Chicago' where id = 1`;
  await db.sql`insert into users (id, org_id, name, email, role) values
    ('mgr1', 1, 'Mo', 'mgr1@example.test', 'manager'), ('bob', 1, 'Bob', 'bob@example.test', 'agent'),
    ('ann', 1, 'Ann', 'ann@example.test', 'agent'), ('mgr2', 2, 'Max', 'mgr2@example.test', 'manager'),
    ('admin1', null, 'Root', 'root@example.test', 'admin')`;
  callsKey = (await makeKey(db.sql, { scopes: ["calls:write"], org: 1 })).key;
  a = await startApp(db.url, {}, { clock });
  b = await startApp(db.url, {}, { clock });
});
afterAll(async () => {
  await a?.stop();
  await b?.stop();
  await db?.drop();
});

let phones = 0;
async function lead(list = 101): Promise<number> {
  const [row] = await db.sql<{ id: number }[]>`
    insert into leads (list_id, phone, first_name, state) values (${list}, ${`512${String(8_000_000 + ++phones).padStart(7, "0")}`}, 'Lee', 'TX') returning id`;
  return row!.id;
}
/** An inbound text on the lead, as Twilio's callback records it (the trigger makes the conversation). */
async function textIn(leadId: number, org = 1): Promise<number> {
  await db.sql`insert into messages (lead_id, org_id, channel, direction, body, status, created_at)
               values (${leadId}, ${org}, 'sms', 'in', 'hello', 'received', ${new Date(clock.now())})`;
  return (await db.sql<{ id: number }[]>`select id from conversations where lead_id = ${leadId}`)[0]!.id;
}
const head = async () => Number((await db.sql`select coalesce(max(id), 0) as h from workspace_changes`)[0]!.h);
/** Everything pending numbered now (the instances' sequencers may be numbering too: one at a time). */
const settle = async () => {
  for (let i = 0; i < 100; i++) {
    await sequenceAll(db.sql, clock, null);
    if ((await db.sql`select count(*)::int as n from workspace_pending`)[0]!.n === 0) return;
    await Bun.sleep(10);
  }
  throw new Error("pending changes never numbered");
};
async function readAll(orgId: number | null, from: number, limit = 50): Promise<Change[]> {
  const out: Change[] = [];
  let last = from;
  for (;;) {
    const page = await changesSince(db.sql, orgId, last, limit);
    expect(page.reset).toBe(false);
    out.push(...page.changes);
    last = page.last;
    if (!page.more) return out;
  }
}

describe("what the feed holds", () => {
  test("every change a workspace shows is a row of its organization's feed, with the state after it", async () => {
    const start = await head();
    clock.set(T0);
    const l = await lead();
    const c = await textIn(l);
    await assignConversation(db.sql, mgr, c, "bob", T0);
    await snoozeConversation(db.sql, mgr, c, { preset: "hour" }, T0);
    await closeConversation(db.sql, mgr, c, T0);
    await reopenConversation(db.sql, mgr, c, T0);
    const cb = await scheduleCallback(db.sql, mgr, { leadId: l, at: T0 + MIN }, T0);
    await closeCallback(db.sql, mgr, cb.id, "done", T0);
    await db.sql`update leads set first_name = 'Lena' where id = ${l}`;
    await db.sql`insert into lead_channels (lead_id, channel, address, consent) values (${l}, 'sms', 'x', 'out')`;
    clock.set(T0 + 5 * MIN);
    expect((await call(a.base, "/hooks/calls.php", { method: "POST", key: callsKey, json: { lead_id: l, status: "NA", secs: 0, agent: "bob" } })).status).toBe(200);
    await settle();
    const got = (await readAll(1, start)).filter((x) => x.lead_id === l);
    expect(got.map((x) => [x.kind, x.conversation_id])).toEqual([
      ["status", c], ["message", c], ["assignment", c], ["status", c], ["status", c], ["status", c],
      ["callback", c], ["callback", c], ["lead", c], ["lead", c], ["activity", c],
    ]);
    expect(got[2]!.data).toMatchObject({ assignee: "bob", was: null, status: "open" });
    expect(got[3]!.data).toMatchObject({ status: "snoozed", was: "open", snoozed_until: new Date(T0 + 60 * MIN).toISOString().replace(/\.000Z$/, "+00:00") });
    expect(got[4]!.data).toMatchObject({ status: "closed", was: "snoozed" });
    expect(got[6]!.data).toMatchObject({ state: "scheduled", callback_id: cb.id });
    expect(got[7]!.data).toMatchObject({ state: "done" });
    expect(got[8]!.data).toEqual({ what: "fields" });
    expect(got[9]!.data).toEqual({ what: "consent" });
    expect(got[1]!.data).toMatchObject({ channel: "sms", direction: "in", message_id: expect.any(Number) });
    // A missed call on a conversation already open: its activity (the list's order), no status change.
    expect(got[10]!.at).toEqual(new Date(T0 + 5 * MIN));
    expect(got.every((x) => x.org_id === 1)).toBe(true);
    // Another organization reads none of it; an admin reads it among every organization's.
    expect((await readAll(2, start)).filter((x) => x.lead_id === l)).toEqual([]);
    expect((await readAll(null, start)).filter((x) => x.lead_id === l)).toEqual(got);
  });

  test("a change that writes nothing new (an assignment to the same user) writes no row", async () => {
    const c = await textIn(await lead());
    await assignConversation(db.sql, mgr, c, "bob", T0);
    await settle();
    const start = await head();
    expect(await assignConversation(db.sql, mgr, c, "bob", T0)).toEqual({ changed: false });
    await settle();
    expect((await readAll(1, start)).filter((x) => x.conversation_id === c)).toEqual([]);
  });
});

describe("no loss, no repeat", () => {
  test("a change whose transaction commits after a later one's is still read, once: ids are given in commit order", async () => {
    const c1 = await textIn(await lead());
    const c2 = await textIn(await lead());
    await settle();
    const start = await head();
    let release!: () => void;
    const held = new Promise<void>((ok) => (release = ok));
    let entered!: () => void;
    const inside = new Promise<void>((ok) => (entered = ok));
    // T1 changes c1 and stays open; T2 changes c2 and commits first.
    let pendingT1 = 0;
    const t1 = db.sql.begin(async (tx) => {
      await tx`update conversations set assignee = 'ann', updated_at = now() where id = ${c1}`;
      pendingT1 = Number((await tx`select max(id) as id from workspace_pending`)[0]!.id);
      entered();
      await held;
    });
    await inside;
    // Its pending id read in its own transaction: once committed, an instance's sequencer may number
    // (and delete) it before a read after the commit (seen beside other work: NaN).
    const pendingT2 = await db.sql.begin(async (tx) => {
      await tx`update conversations set assignee = 'bob', updated_at = now() where id = ${c2}`;
      return Number((await tx`select max(id) as id from workspace_pending`)[0]!.id);
    });
    await settle();
    const first = await changesSince(db.sql, 1, start, 100);
    expect(first.changes.map((x) => x.conversation_id)).toEqual([c2]);
    release();
    await t1;
    await settle();
    const second = await changesSince(db.sql, 1, first.last, 100);
    expect(second.changes.map((x) => x.conversation_id)).toEqual([c1]);
    // Numbered at insert, T1's change had the lower id: a reader already past T2's would have lost it.
    expect(pendingT1).toBeLessThan(pendingT2);
    expect(second.changes[0]!.id).toBeGreaterThan(first.changes[0]!.id);
  });

  test("one numbering at a time: while one is uncommitted, no other numbers later changes past it", async () => {
    const cx = await textIn(await lead());
    const cy = await textIn(await lead());
    await settle();
    const start = await head();
    let release!: () => void;
    const held = new Promise<void>((ok) => (release = ok));
    let numbered!: () => void;
    const inside = new Promise<void>((ok) => (numbered = ok));
    // A sequencer numbers X and has not committed yet (a slow commit, a paused process). X is
    // written in that transaction: written before it, the instances' own sequencers numbered X
    // first beside other work, nothing was left to number and the test waited for ever. When an
    // instance holds the sequencer's turn at that moment, nothing is numbered: roll back, again.
    class NotMyTurn extends Error {}
    const slow = (async () => {
      for (let tries = 1; ; tries++) {
        const mine = await db.sql
          .begin(async (tx) => {
            await tx`update conversations set assignee = 'ann', updated_at = now() where id = ${cx}`;
            const r = await sequenceChanges(tx as never, new Date(clock.now()), 1000);
            if (r.moved === 0) throw new NotMyTurn();
            numbered();
            await held;
            return true;
          })
          .catch((err: unknown) => {
            if (err instanceof NotMyTurn && tries < 500) return false;
            throw err;
          });
        if (mine) return;
        await Bun.sleep(10);
      }
    })();
    await Promise.race([inside, slow]);
    // Y is written and every other sequencer (here and in both instances) runs meanwhile.
    await db.sql`update conversations set assignee = 'bob', updated_at = now() where id = ${cy}`;
    await sequenceAll(db.sql, clock, null);
    await Bun.sleep(150);
    const during = await changesSince(db.sql, 1, start, 100);
    release();
    await slow;
    await settle();
    const after = await changesSince(db.sql, 1, during.last, 100);
    const read = [...during.changes, ...after.changes].filter((x) => x.conversation_id === cx || x.conversation_id === cy);
    expect(read.map((x) => x.conversation_id)).toEqual([cx, cy]);
  });

  test("concurrent writers on both instances' watch, a reader dropping and resuming from its last id: every change once, each conversation's in order", async () => {
    const WRITERS = 8;
    const STEPS = 20;
    const convs = await Promise.all(Array.from({ length: WRITERS }, async () => textIn(await lead())));
    await settle();
    const start = await head();
    let writing = true;
    const seen: Change[] = [];
    let drops = 0;
    // The reader: pages of 7, and every third page it "loses its connection" and resumes from the
    // last id it handled, as a tab does with Last-Event-ID.
    const reader = (async () => {
      let last = start;
      for (let page = 0; writing || page % 3 !== 0 || (await db.sql`select 1 from workspace_pending limit 1`).length > 0; page++) {
        const p = await changesSince(db.sql, 1, last, 7);
        expect(p.reset).toBe(false);
        if (page % 3 === 2 && p.changes.length > 0) {
          drops++;
          // The connection dropped after half of this page was handled.
          const handled = p.changes.slice(0, Math.ceil(p.changes.length / 2));
          seen.push(...handled);
          last = handled[handled.length - 1]!.id;
          continue;
        }
        seen.push(...p.changes);
        last = p.last;
        if (!p.more) await Bun.sleep(5);
      }
      const rest = await readAll(1, last, 7);
      seen.push(...rest);
    })();
    // Writers: each assigns its conversation back and forth, some holding their transaction open a while.
    await Promise.all(
      convs.map(async (c, w) => {
        for (let i = 0; i < STEPS; i++) {
          const to = i % 2 === 0 ? "ann" : "bob";
          await db.sql.begin(async (tx) => {
            await tx`update conversations set assignee = ${to}, updated_at = now() where id = ${c}`;
            if ((i + w) % 4 === 0) await Bun.sleep(15);
          });
        }
      }),
    );
    writing = false;
    await settle();
    await reader;
    const mine = seen.filter((x) => convs.includes(x.conversation_id!));
    const ids = mine.map((x) => x.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual([...ids].sort((x, y) => x - y));
    expect(mine).toHaveLength(WRITERS * STEPS);
    for (const c of convs) {
      expect(mine.filter((x) => x.conversation_id === c).map((x) => x.data.assignee)).toEqual(Array.from({ length: STEPS }, (_, i) => (i % 2 === 0 ? "ann" : "bob")));
    }
    expect(drops).toBeGreaterThan(0);
  });

  test("a tab away longer than the retention is told to reload (reset), from the head; one within it is not", async () => {
    const c = await textIn(await lead());
    await settle();
    const old = await head();
    await assignConversation(db.sql, mgr, c, "ann", T0);
    await settle();
    const recent = await head();
    await db.sql`update workspace_changes set created_at = ${new Date(T0 - 48 * 3_600_000)} where id <= ${recent - 1}`;
    expect(await pruneChanges(db.sql, new Date(T0), 24 * 3_600_000)).toBeGreaterThan(0);
    const away = await changesSince(db.sql, 1, old - 1, 10);
    expect(away).toMatchObject({ reset: true, changes: [], last: recent });
    const back = await changesSince(db.sql, 1, recent - 1, 10);
    expect(back.reset).toBe(false);
    expect(back.changes.map((x) => x.id)).toEqual([recent]);
    // An id beyond anything numbered (another database's) is a reset too.
    expect((await changesSince(db.sql, 1, recent + 1_000_000, 10)).reset).toBe(true);
  });
});

describe("across instances", () => {
  test("a change committed through instance A reaches a subscriber on instance B, which reads it; another organization's subscriber is not told", async () => {
    const l = await lead();
    await textIn(l);
    await settle();
    const from = await head();
    const heard: (number | null)[] = [];
    const boltHeard: (number | null)[] = [];
    const adminHeard: (number | null)[] = [];
    let told!: () => void;
    const toldOnce = new Promise<void>((ok) => (told = ok));
    const hub = b.running.deps.feed;
    const off = hub.subscribe(mgr, (upTo) => {
      heard.push(upTo);
      told();
    });
    const offBolt = hub.subscribe(boltMgr, (upTo) => boltHeard.push(upTo));
    const offAdmin = hub.subscribe(admin, (upTo) => adminHeard.push(upTo));
    clock.set(T0 + 9 * MIN);
    expect((await call(a.base, "/hooks/calls.php", { method: "POST", key: callsKey, json: { lead_id: l, status: "NA", secs: 0, agent: "bob" } })).status).toBe(200);
    await Promise.race([toldOnce, Bun.sleep(5000)]);
    expect(heard.length).toBeGreaterThan(0);
    // The first word B hears may be of a change numbered just before this one (the text's, on a
    // busy machine): read until the call's is there, as a tab reads again at the next word.
    const ofLead = (p: Awaited<ReturnType<typeof hub.read>>) => p.changes.filter((x) => x.lead_id === l).map((x) => x.kind);
    let page = await hub.read(mgr, from);
    const caughtUp = () => ofLead(page).length > 0 && (heard[heard.length - 1] ?? 0) >= page.changes[page.changes.length - 1]!.id;
    for (let i = 0; i < 100 && !caughtUp(); i++) {
      await Bun.sleep(50);
      page = await hub.read(mgr, from);
    }
    expect(ofLead(page)).toEqual(["activity"]);
    expect(heard[heard.length - 1]).toBeGreaterThanOrEqual(page.changes[page.changes.length - 1]!.id);
    expect(adminHeard.length).toBeGreaterThan(0);
    expect(boltHeard).toEqual([]);
    off();
    offBolt();
    offAdmin();
    expect(hub.subscribers).toBe(0);
  });

  test("tabs reading the same changes at once share one read", async () => {
    const hub = b.running.deps.feed;
    const from = await head();
    const reads = Array.from({ length: 50 }, () => hub.read(mgr, from));
    expect(new Set(reads).size).toBe(1);
    await Promise.all(reads);
    // Another organization's tab never shares an organization's read.
    expect(hub.read(boltMgr, from)).not.toBe(hub.read(mgr, from));
  });

  test("a tab woken by a notification never joins a read already on its way: that read's snapshot may predate the change, and the tab would miss it", async () => {
    await settle();
    const from = await head();
    // Tab 1's read: its statement runs (its snapshot taken) and its answer is held back, as a busy
    // database or event loop holds one back; the real statement, the real snapshot.
    let ran!: () => void;
    const statementRan = new Promise<void>((ok) => (ran = ok));
    let release!: () => void;
    const held = new Promise<void>((ok) => (release = ok));
    let statements = 0;
    const hub = new FeedHub(db.sql, async (...args) => {
      const first = ++statements === 1;
      const page = await changesSince(...args);
      if (first) {
        ran();
        await held;
      }
      return page;
    });
    const words: (number | null)[] = [];
    const off = hub.subscribe(mgr, (upTo) => words.push(upTo));
    const tab1 = hub.read(mgr, from);
    await statementRan;
    // Meanwhile a text comes in, is numbered, and the word arrives (as the LISTEN callback passes it).
    const l = await lead();
    await textIn(l);
    await settle();
    hub.publish(1, await head());
    expect(words.length).toBe(1);
    // Tab 2, woken by that word, reads from the same place as tab 1.
    const tab2 = hub.read(mgr, from);
    release();
    const [one, two] = await Promise.all([tab1, tab2]);
    const hasIt = (p: typeof one) => p.changes.some((c) => c.lead_id === l);
    expect(hasIt(one)).toBe(false); // the window is real: tab 1's snapshot predates the change
    expect(hasIt(two)).toBe(true);
    expect(statements).toBe(2);
    // Tabs asking in the same generation still share one read.
    const many = Array.from({ length: 20 }, () => hub.read(mgr, from));
    expect(new Set(many).size).toBe(1);
    await Promise.all(many);
    off();
  });

  test("subscribers are freed when their tabs go", async () => {
    const hub = a.running.deps.feed;
    const offs = Array.from({ length: 500 }, (_, i) => hub.subscribe(i % 2 ? mgr : boltMgr, () => {}));
    expect(hub.subscribers).toBe(500);
    for (const off of offs) off();
    offs[0]!();
    expect(hub.subscribers).toBe(0);
  });

  test("when the listening connection drops, every subscriber is told to read (what was sent meanwhile is lost)", async () => {
    const hub = b.running.deps.feed;
    const heard: (number | null)[] = [];
    const off = hub.subscribe(mgr, (upTo) => heard.push(upTo));
    await db.sql`select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and query ilike 'listen %'`;
    for (let i = 0; i < 200 && !heard.includes(null); i++) await Bun.sleep(25);
    expect(heard).toContain(null);
    off();
  });

  test("a callback comes due once, however many instances run its job and however often the job runs", async () => {
    const leads = await Promise.all(Array.from({ length: 10 }, () => lead()));
    clock.set(T0);
    const cbs = [];
    for (const l of leads) {
      for (let i = 0; i < 3; i++) cbs.push(await scheduleCallback(db.sql, mgr, { leadId: l, at: T0 + MIN, assignee: "bob", dial: true }, T0));
    }
    // Raced by hand as well: ten runs of one callback's step at once.
    const raced = cbs[0]!;
    clock.set(T0 + 2 * MIN);
    await Promise.all(Array.from({ length: 10 }, () => callbackDue(db.sql, raced.id, T0 + 2 * MIN)));
    const ids = cbs.map((c) => c.id);
    for (let i = 0; i < 400; i++) {
      const [row] = await db.sql`select count(*)::int as n from callbacks where id = any(${ids}::bigint[]) and status = 'due'`;
      if (row!.n === ids.length) break;
      await Bun.sleep(25);
    }
    for (const id of ids) await callbackDue(db.sql, id, T0 + 3 * MIN);
    await settle();
    const dials = await db.sql`select lead_id, count(*)::int as n from dials where agent = 'bob' and lead_id = any(${leads}::bigint[]) group by lead_id`;
    expect(dials.map((d) => d.n)).toEqual(leads.map(() => 3));
    const linked = await db.sql`select count(distinct dial_id)::int as n from callbacks where id = any(${ids}::bigint[])`;
    expect(linked[0]!.n).toBe(ids.length);
    const due = await db.sql`select data->>'callback_id' as id, count(*)::int as n from workspace_changes
                             where kind = 'callback' and data->>'state' = 'due' and (data->>'callback_id')::bigint = any(${ids}::bigint[])
                             group by 1`;
    expect(due).toHaveLength(ids.length);
    expect(due.every((r) => r.n === 1)).toBe(true);
    clock.set(T0);
  });
});
