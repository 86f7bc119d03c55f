// Find anything and a lead's edit on the embedded database (PGlite, what `leadline serve` uses
// without DATABASE_URL): migration 0026 applies there (no extension needed), "jose" finds José and
// "nunez" Núñez, phones by their last digits, message text by full-text search, and the tag
// counters' triggers run.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Actor } from "../src/auth/actor";
import { loadConfig } from "../src/config";
import type { Sql } from "../src/db/client";
import { migrate } from "../src/db/migrate";
import { openDatabase, type Database } from "../src/db/open";
import { updateLead } from "../src/leads/edit";
import { suggestTags } from "../src/leads/tags";
import { searchWorkspace } from "../src/search/workspace";
import { seedWorld } from "./harness/factory";
import { seedSearchWorld, type SearchWorld } from "./harness/search-world";

let dir: string;
let db: Database;
let sql: Sql;
let w: SearchWorld;
const acme: Actor = { orgId: 1, type: "user", id: "u", agent: null, keyId: null };
const bolt: Actor = { orgId: 2, type: "user", id: "u", agent: null, keyId: null };
const ids = async (actor: Actor, text: string, messages = true) => (await searchWorkspace(sql, actor, text, { messages })).hits.map((h) => h.lead_id);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "leadline-search-embedded-"));
  db = await openDatabase(loadConfig({ DATA_DIR: dir, LOG_LEVEL: "error" }), "cli");
  sql = db.sql;
  await migrate(sql);
  await seedWorld(sql);
  w = await seedSearchWorld(sql);
}, 120_000);
afterAll(async () => {
  await db?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("on the embedded database", () => {
  test('"jose" finds José and JOSE, "nunez" finds Núñez, in the organization only', async () => {
    expect((await ids(acme, "jose", false)).sort()).toEqual([w.joseNunez, w.josePerez].sort());
    expect(await ids(acme, "nunez")).toEqual([w.joseNunez]);
    expect(await ids(acme, "zoe angstrom")).toEqual([w.zoe]);
    expect(await ids(bolt, "jose", false)).toEqual([w.boltJose]);
  });

  test("phones by their last 4 or 7 digits and in full; emails without the domain", async () => {
    expect(await ids(acme, "0199")).toEqual([w.joseNunez]);
    expect(await ids(acme, "555 0199")).toEqual([w.joseNunez]);
    expect(await ids(acme, "512.555.0199")).toEqual([w.joseNunez]);
    expect(await ids(acme, "ana.rivera")).toEqual([w.zoe]);
  });

  test("message text and notes, grouped by lead with the snippet", async () => {
    const r = await searchWorkspace(sql, acme, "roof leak");
    expect(r.hits.map((h) => [h.lead_id, h.matched])).toEqual([[w.zoe, "message"], [w.josePerez, "message"]]);
    expect(r.hits[0].snippet?.message_id).toBe(w.zoeLeakNote);
    expect(await ids(acme, "senor")).toEqual([w.josePerez]);
    expect(await ids(bolt, "roof")).toEqual([]);
  });

  test("an edit's tags are counted for the suggestions by the triggers", async () => {
    const r = await updateLead(sql, acme, w.zoe, { tags: { add: ["Roof", "repeat caller"] }, status: "CONTACTED" }, new Date(Date.UTC(2026, 10, 28)));
    expect(r.ok).toBe(true);
    expect(await suggestTags(sql, acme, 1, "r")).toEqual([
      { tag: "repeat caller", uses: 1 },
      { tag: "Roof", uses: 1 },
    ]);
    expect(await sql`select type from outbox_events where type = 'lead.updated'`).toHaveLength(1);
  });
});
