// Dump → restore keeps every value a visitor or an API client can put in a text column, byte for
// byte (issue 27 §4: a DNI lease whose utm.source held U+2028 made `leadline restore` fail, its
// reader splitting lines at U+2028/U+2029/U+0085 too). Random strings (fast-check's full Unicode,
// NUL excluded, with the characters that end a line somewhere mixed in) go through the served
// app into every text field of lead intake, messages, call reports, KPI points, DNI leases and
// events and booking; the database is dumped (writeDump, what `leadline dump` runs) and restored
// into an empty one (restoreDump, what `leadline restore` runs); every table then reads the same.
import { afterAll, beforeAll, expect, test } from "bun:test";
import fc from "fast-check";
import { createWriteStream, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type Sql } from "../src/db/client";
import { dniEngine } from "../src/dni/instance";
import { writeDump } from "../src/dump/dump";
import { restoreDump } from "../src/dump/restore";
import { applyProvisioning } from "../src/provision/service";
import type { ProvisioningFile } from "../src/provision/model";
import { drained } from "../src/args";
import { call, startApp, type TestApp } from "./harness/app";
import { databaseUrl, testDatabase, type TestDatabase } from "./harness/db";
import { ALL_SCOPES, makeKey } from "./harness/factory";

/** Characters that end a line for some reader, and COPY's own specials. */
const LINE_ENDS = ["\u2028", "\u2029", "\u0085", "\n", "\r", "\r\n", "\u000b", "\u000c", "\u001c", "\u001d", "\u001e"];
const SPECIALS = ["\\", "\\.", "\\N", "\t", "\uFEFF", "\u{1F600}", "\u00e9", "'", '"', "$$", ";"];
const RUNS = 60;
const POOL = Array.from({ length: 40 }, (_, i) => `512555${String(1101 + i)}`);

let db: TestDatabase;
let restored: { sql: Sql; name: string } | null = null;
let app: TestApp;
const dir = mkdtempSync(join(tmpdir(), "leadline-roundtrip-"));
const admin = () => connect(process.env.LEADLINE_TEST_ADMIN_URL!, { max: 1, statementTimeoutMs: 0, applicationName: "leadline-test-admin" });

beforeAll(async () => {
  db = await testDatabase();
  await applyProvisioning(db.sql, {
    orgs: [{ id: 1, name: "Acme", timezone: "UTC" }],
    campaigns: [{ id: "ACME", org_id: 1, name: "Acme" }],
    lists: [{ id: 101, campaign_id: "ACME", name: "Web" }],
    users: [{ id: "agent7", org_id: 1, name: "Dana" }],
    dni_pools: [{ key: "site", org_id: 1, name: "Site", numbers: POOL, fallback: "5125550100", placeholder: "5125550199", ttl_seconds: 1800 }],
    calendars: [{ id: 1, org_id: 1, name: "Visits", timezone: "UTC", slot_minutes: 60, capacity: 500, min_notice_minutes: 0, horizon_days: 7,
                  hours: Object.fromEntries(["mon", "tue", "wed", "thu", "fri", "sat", "sun"].map((d) => [d, [["00:00", "23:00"]]])),
                  links: [{ slug: "visit" }] }],
  } as unknown as ProvisioningFile);
  app = await startApp(db.url, { NPK_IP_SALT: "roundtrip-salt" });
});

afterAll(async () => {
  await app?.stop();
  await db?.drop();
  if (restored) {
    await restored.sql.end({ timeout: 5 });
    const a = admin();
    await a`drop database if exists ${a(restored.name)} with (force)`;
    await a.end({ timeout: 5 });
  }
  rmSync(dir, { recursive: true, force: true });
});

/** Full Unicode without NUL (PostgreSQL's text cannot hold it), the line ends and specials mixed in. */
const text = fc.string({
  unit: fc.oneof(
    { weight: 4, arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }).filter((c) => c !== "\u0000") },
    { weight: 1, arbitrary: fc.constantFrom(...LINE_ENDS, ...SPECIALS) },
  ),
  minLength: 1,
  maxLength: 40,
});

const post = (path: string, init: { json: unknown; key?: string; headers?: Record<string, string> }) => call(app.base, path, { method: "POST", ...init });

let address = 0;
/** Each request from an address of its own (the DNI and booking limits count per address). */
const from = () => ({ "x-forwarded-for": `10.9.${Math.floor(++address / 250)}.${address % 250}` });

test("every text a visitor or an API client can store survives dump → restore unchanged", async () => {
  const seed = Date.now() % 1_000_000;
  const records = fc.sample(fc.array(text, { minLength: 12, maxLength: 12 }), { numRuns: RUNS, seed });
  // The characters that broke the reader, for certain, whatever the seed drew.
  records.push(LINE_ENDS.map((c) => `a${c}b`).concat(["\uFEFFfirst"]), SPECIALS.map((c) => `${c}x${c}`).concat(["\\."]));
  const slots = (await call(app.base, "/book/api.php?action=slots&s=visit")).body.slots as { epoch: number }[];
  expect(slots.length).toBeGreaterThan(0);
  let i = 0;
  let key = "";
  for (const r of records) {
    // A key's families share one hourly counter, intake's threshold 120: a key per 20 records.
    if (i % 20 === 0) key = (await makeKey(db.sql, { scopes: ALL_SCOPES, org: 1, agent: "agent7" })).key;
    const t = (n: number) => r[n % r.length];
    const phone = `5125${String(600000 + i).padStart(6, "0")}`;
    const visitor = `v${i}`;
    const ok = (reply: { status: number; body: { ok?: boolean } }, what: string) => expect([what, reply.status, reply.body.ok, reply.status === 200 ? "" : JSON.stringify(reply.body)]).toEqual([what, 200, true, ""]);
    const lead = await post("/hooks/lead_intake.php", {
      key,
      json: { phone, list_id: 101, first_name: t(0), last_name: t(1), address1: t(2), city: t(3), state: t(4), postal_code: t(5), source: t(6), extra: t(7) },
    });
    ok(lead, "lead intake");
    ok(await post("/hooks/api_v1.php?r=messages", { key, json: { lead_id: lead.body.lead_id, channel: "note", body: `${t(8)}.`, operation_id: `n${i}` } }), "note");
    const lease = await post("/hooks/dni.php?action=lease", {
      headers: from(),
      json: { pool: "site", visitor, utm: { source: t(0), medium: t(1), campaign: t(2), term: t(3), content: t(4) }, gclid: t(5), landing: t(6), referrer: t(7) },
    });
    ok(lease, "lease");
    ok(await post("/hooks/dni.php?action=event", { headers: from(), json: { pool: "site", visitor, kind: "custom", name: t(8), meta: { [t(9)]: t(10), list: [t(11)] } } }), "event");
    ok(await post("/hooks/calls.php", { key, json: { phone, status: `s${t(9)}`, secs: 5, agent: "agent7", ai_summary: t(10), to_number: lease.body.number } }), "call");
    ok(await post("/hooks/kpi_ingest.php", { key, json: { points: [{ metric_key: "calls_made", value: 1, dim_key: t(11) }] } }), "kpi");
    const slot = slots[i % slots.length].epoch;
    ok(await post("/book/api.php?action=book", { headers: from(), json: { s: "visit", epoch: slot, name: `${t(2)}x`, phone } }), "book");
    i++;
  }
  await dniEngine(app.running.deps).flush();
  await app.stop();

  // The values reached the columns: the line ends did not stop at the API.
  const [reached] = await db.sql<{ n: number }[]>`
    select count(*)::int as n from dni_visitors where utm_source like ${"%\u2028%"} or utm_medium like ${"%\u2029%"} or referrer like ${"%\u0085%"}`;
  expect(reached.n).toBeGreaterThan(0);

  const file = join(dir, "dump.sql");
  const stream = createWriteStream(file);
  await writeDump(db.sql, { out: (s) => void stream.write(s), err: () => {}, readInput: async () => "", flush: () => drained(stream) }, new Date());
  await new Promise<void>((ok) => stream.end(ok));

  const name = `roundtrip_${Date.now().toString(36)}`;
  const a = admin();
  await a`create database ${a(name)}`;
  await a.end({ timeout: 5 });
  restored = { name, sql: connect(databaseUrl(process.env.LEADLINE_TEST_ADMIN_URL!, name), { max: 1, statementTimeoutMs: 0, applicationName: "leadline-test" }) };
  expect(await restoreDump(restored.sql, file)).toBeGreaterThan(RUNS * 7);

  const tables = (await db.sql<{ name: string }[]>`select format('%I.%I', schemaname, tablename) as name from pg_tables where schemaname = 'public' order by 1`).map((t) => t.name);
  expect(tables).toContain("public.dni_visitors");
  const rows = async (sql: Sql, table: string) =>
    (await sql.unsafe(`select coalesce(array_agg(t::text order by t::text), '{}') as rows from ${table} t`))[0].rows as string[];
  for (const table of tables) {
    const before = await rows(db.sql, table);
    const after = await rows(restored.sql, table);
    if (before.length !== after.length || before.some((r, k) => r !== after[k])) {
      throw new Error(`seed ${seed}: ${table} differs after dump → restore: ${JSON.stringify(before.find((r, k) => r !== after[k]))}`);
    }
  }
}, 240_000);
