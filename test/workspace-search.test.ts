// Find anything (issue 29, src/search/workspace.ts) on PostgreSQL: names without their accents,
// phones by their last 4 or 7 digits or in full, emails with or without the domain, the words of
// messages and notes; grouped by lead with the matching text; confined to the actor's
// organization, tried across two. test/workspace-search-embedded.test.ts runs the same on PGlite.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import type { Actor } from "../src/auth/actor";
import { searchLeads } from "../src/leads/search";
import { connect } from "../src/db/client";
import { messageRead } from "../src/search/messages";
import { searchWorkspace, workspaceQuery } from "../src/search/workspace";
import { snippetOf } from "../src/search/snippet";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeLead, seedWorld } from "./harness/factory";
import { seedSearchWorld, type SearchWorld } from "./harness/search-world";

let db: TestDatabase;
let w: SearchWorld;
const user = (orgId: number | null): Actor => ({ orgId, type: "user", id: "u", agent: null, keyId: null });
const acme = user(1);
const bolt = user(2);
const admin = user(null);

const ids = async (actor: Actor, text: string, opts = {}) => (await searchWorkspace(db.sql, actor, text, opts)).hits.map((h) => h.lead_id);

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  w = await seedSearchWorld(db.sql);
});
afterAll(() => db?.drop());

describe("names, without their accents", () => {
  test('"jose" finds José and JOSE; "nunez" finds Núñez; in the organization only', async () => {
    const names = { messages: false };
    expect((await ids(acme, "jose", names)).sort()).toEqual([w.joseNunez, w.josePerez].sort());
    expect(await ids(acme, "nunez")).toEqual([w.joseNunez]);
    expect(await ids(acme, "NÚÑEZ")).toEqual([w.joseNunez]);
    expect(await ids(acme, "jose nunez")).toEqual([w.joseNunez]);
    expect(await ids(acme, "Jose\u0301 Nun\u0303ez")).toEqual([w.joseNunez]); // typed decomposed
    expect(await ids(acme, "zoe angstrom")).toEqual([w.zoe]);
    expect(await ids(bolt, "jose")).toEqual([w.boltJose]);
    expect((await ids(admin, "jose", names)).sort()).toEqual([w.joseNunez, w.josePerez, w.boltJose].sort());
    const hit = (await searchWorkspace(db.sql, acme, "nunez")).hits[0];
    expect(hit).toMatchObject({ lead_id: w.joseNunez, name: "José Núñez", matched: "name", snippet: null });
  });

  test("the console's lead search folds names the same way (one set of indexes)", async () => {
    const f = (q: string) => ({ q, campaign: null, list: null, status: null, from: null, to: null, zone: "UTC" });
    expect((await searchLeads(db.sql, 1, f("núñez"), null, 10)).rows.map((r) => r.id)).toEqual([w.joseNunez]);
    expect((await searchLeads(db.sql, 1, f("jose nu"), null, 10)).rows.map((r) => r.id)).toEqual([w.joseNunez]);
    expect((await searchLeads(db.sql, 1, f("\u0301"), null, 10)).rows).toEqual([]);
  });

  test("the name indexes serve the folded search (no scan of the leads)", async () => {
    const plan = await db.sql.unsafe(`explain select id from leads l where leadline_fold(l.first_name) like 'jos%' and leadline_fold(l.first_name) ~>=~ 'jos' and leadline_fold(l.first_name) ~<~ 'jot'`);
    expect(plan.map((r) => r["QUERY PLAN"]).join("\n")).toContain("leads_first_name");
  });
});

describe("phones", () => {
  test("by their last 4 or 7 digits, or in full in any format; fewer than 4 digits are too short", async () => {
    expect(await ids(acme, "0199")).toEqual([w.joseNunez]);
    expect(await ids(acme, "555-0199")).toEqual([w.joseNunez]);
    expect(await ids(acme, "(512) 555-0199")).toEqual([w.joseNunez]);
    expect(await ids(acme, "+1 512 555 0199")).toEqual([w.joseNunez]);
    expect(await searchWorkspace(db.sql, acme, "199")).toEqual({ query: "too_short", hits: [] });
    // Org 2's lead ends in the same digits: not org 1's to see.
    expect(await ids(bolt, "0199")).toEqual([w.boltJose]);
    expect((await ids(admin, "0199")).sort()).toEqual([w.joseNunez, w.boltJose].sort());
    expect((await searchWorkspace(db.sql, acme, "0199")).hits[0].matched).toBe("phone");
  });

  test("the suffix is an index prefix (leads_phone_reversed)", async () => {
    const plan = await db.sql.unsafe(`explain select id from leads l where reverse(l.phone) ~>=~ '9910' and reverse(l.phone) ~<~ '9911'`);
    expect(plan.map((r) => r["QUERY PLAN"]).join("\n")).toContain("leads_phone_reversed");
  });
});

describe("emails", () => {
  test("with the domain, part of it, or without it", async () => {
    expect(await ids(acme, "ana.rivera@acme-mail.example")).toEqual([w.zoe]);
    expect(await ids(acme, "ANA.Rivera@acme")).toEqual([w.zoe]);
    expect(await ids(acme, "ana.rivera")).toEqual([w.zoe]);
    expect((await searchWorkspace(db.sql, acme, "ana.rivera")).hits[0].matched).toBe("email");
    expect(await ids(bolt, "ana.rivera")).toEqual([w.boltJose]);
  });
});

describe("message text and notes", () => {
  test("every word, each as a word's start, without accents; grouped by lead with the newest matching message around its match", async () => {
    const r = await searchWorkspace(db.sql, acme, "roof leak");
    expect(r.query).toBe("words");
    expect(r.hits.map((h) => h.lead_id)).toEqual([w.zoe, w.josePerez]);
    expect(r.hits[0]).toMatchObject({ matched: "message", snippet: { message_id: w.zoeLeakNote, channel: "note", direction: "out" } });
    expect(r.hits[0].snippet!.text).toBe("Called back: the ROOF is leaking over the kitchen again, wants an estimate Friday.");
    expect(r.hits[1].snippet!.text).toBe("Hola señor Perez, about the roof leak you reported last week: our crew can come Tuesday.");
    expect(await ids(acme, "senor")).toEqual([w.josePerez]);
    expect(await ids(acme, "estimate friday")).toEqual([w.zoe]);
  });

  test("an email's HTML is searched and shown as text", async () => {
    const r = await searchWorkspace(db.sql, acme, "warranty");
    expect(r.hits.map((h) => h.lead_id)).toEqual([w.josePerez]);
    expect(r.hits[0].snippet!.text).toBe("Your quote — Hi José, the warranty covers 10 years.");
  });

  test("a lead found by its own fields comes first and carries its matching message", async () => {
    // "Jose" is a name (José Núñez, JOSE Perez) and a word of a message to Zoë.
    const r = await searchWorkspace(db.sql, acme, "jose");
    expect(r.hits.slice(0, 2).map((h) => h.matched)).toEqual(["name", "name"]);
    expect(r.hits.map((h) => h.lead_id)).toContain(w.zoe);
    const perez = r.hits.find((h) => h.lead_id === w.josePerez)!;
    expect(perez.snippet?.text).toContain("José");
  });

  test("another organization's messages are never found; the admin finds every organization's", async () => {
    expect(await ids(acme, "plumbing")).toEqual([]);
    expect(await ids(bolt, "plumbing")).toEqual([w.boltJose]);
    expect(await ids(bolt, "roof")).toEqual([]);
    expect((await ids(admin, "leak")).sort()).toEqual([w.zoe, w.josePerez].sort());
    expect(await ids(acme, "roof", { messages: false })).toEqual([]);
  });

  test("another organization's newer messages never crowd out the organization's own", async () => {
    await db.sql`insert into messages (lead_id, org_id, channel, direction, body, status) values (${w.josePerez}, 1, 'sms', 'out', 'Your invoice is attached', 'sent')`;
    await db.sql`
      insert into messages (lead_id, org_id, channel, direction, body, status)
      select ${w.boltJose}, 2, 'sms', 'out', 'invoice ' || g, 'sent' from generate_series(1, 250) g`;
    expect(await ids(acme, "invoice")).toEqual([w.josePerez]);
    expect(await ids(bolt, "invoice")).toEqual([w.boltJose]);
  });

  test("messages are walked newest first for words most of them hold, read from the index for rare ones (the planner's statistics)", async () => {
    await db.sql`analyze messages`;
    // Statistics are kept per pool for minutes: a pool that has not read them yet.
    const fresh = connect(db.url, { max: 1, statementTimeoutMs: 0, applicationName: "leadline-test" });
    try {
      expect(await messageRead(fresh, ["invoice"])).toBe("walk"); // 251 of the 268 messages
      expect(await messageRead(fresh, ["INVOICE", "your"])).toBe("index"); // one of them
      expect(await messageRead(fresh, ["warranty"])).toBe("index");
      // Either read finds the same messages.
      expect(await ids(acme, "invoice")).toEqual([w.josePerez]);
      expect(await ids(bolt, "invoice")).toEqual([w.boltJose]);
    } finally {
      await fresh.end({ timeout: 5 });
    }
  });

  test("a word the statistics do not list is read from the index even when every listed word is in every message (templates)", async () => {
    // A database of 20,000 reminders of one template: the statistics list its few words, each in
    // every message. A word in none of them was taken to be in half of them, and walked for.
    const other = await testDatabase();
    const fresh = connect(other.url, { max: 1, statementTimeoutMs: 0, applicationName: "leadline-test" });
    try {
      await seedWorld(other.sql);
      const lead = await makeLead(other.sql, { phone: "5125550199" });
      await other.sql.begin(async (tx) => {
        await tx`set local session_replication_role = replica`;
        await tx`
          insert into messages (lead_id, org_id, channel, direction, body, status)
          select ${lead}, 1, 'sms', 'out', 'Reminder: your visit is booked for tomorrow', 'sent' from generate_series(1, 20000)`;
      });
      await other.sql`analyze messages`;
      expect(await messageRead(fresh, ["visit"])).toBe("walk");
      expect(await messageRead(fresh, ["xylophone"])).toBe("index");
    } finally {
      await fresh.end({ timeout: 5 });
      await other.drop();
    }
  });

  test("at most `limit` leads, however many messages match", async () => {
    expect(await ids(acme, "hello", { limit: 3 })).toHaveLength(3);
    expect((await ids(acme, "hello", { limit: 50 })).length).toBe(w.helloLeads);
  });
});

describe("any text", () => {
  test("what the box is taken for", () => {
    expect(workspaceQuery("  ")).toEqual({ kind: "none" });
    expect(workspaceQuery("(512) 555-01")).toEqual({ kind: "phone_suffix", digits: "51255501" });
    expect(workspaceQuery("12")).toEqual({ kind: "too_short" });
    expect(workspaceQuery("a@b")).toEqual({ kind: "email", prefix: "a@b" });
    expect(workspaceQuery("roof & leak | !x:*")).toEqual({ kind: "words", text: "roof & leak | !x:*", tokens: ["roof", "leak", "x"] });
  });

  test("never an error: query syntax, NUL, lone surrogates, long text", async () => {
    for (const text of ["&", "!", "a:*", "'", "\\", "(", "roof & !", "\u0000", "\ud800x", "x".repeat(5000), "%_", "@", "-", "日本語"]) {
      await searchWorkspace(db.sql, acme, text);
    }
    await fc.assert(
      fc.asyncProperty(fc.string({ maxLength: 40 }), async (text) => {
        const r = await searchWorkspace(db.sql, acme, text, { limit: 5 });
        expect(r.hits.length).toBeLessThanOrEqual(5);
      }),
      { numRuns: 60 },
    );
  });

  test("a snippet is cut around the match at word boundaries, never inside a surrogate pair", () => {
    const long = "word ".repeat(60) + "the roof leak " + "tail ".repeat(60);
    const s = snippetOf("sms", "", long, ["leak"]);
    expect(s.startsWith("…")).toBe(true);
    expect(s.endsWith("…")).toBe(true);
    expect(s).toContain("roof leak");
    expect(s.length).toBeLessThanOrEqual(162);
    const emoji = "😀".repeat(200) + " leak";
    const e = snippetOf("sms", "", emoji, ["leak"]);
    expect(e.isWellFormed()).toBe(true);
  });
});
