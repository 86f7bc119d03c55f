// The tags screen of the console's settings over HTTP, across two organizations: the organization's
// tags with how many leads carry each, rename, merge into an existing tag and delete (through the
// tag service, audited with how many leads), refusals on the form, bad input never a 500.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { startApp, type TestApp } from "./harness/app";
import { makeUser, signIn, type ConsoleClient } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeLead, seedWorld } from "./harness/factory";
import type { Sql } from "../src/db/client";
import { renameTag } from "../src/leads/tags";

setDefaultTimeout(60_000);

let db: TestDatabase;
let app: TestApp;
let acme: ConsoleClient;
let bolt: ConsoleClient;
let admin: ConsoleClient;
let agent: ConsoleClient;
const acmeLeads: number[] = [];
let boltLead: number;

const text = (r: { body: unknown }) => String(r.body);
const tag = (sql: Sql, lead: number, org: number, t: string) => sql`insert into lead_tags (lead_id, org_id, tag, tag_key) values (${lead}, ${org}, ${t}, ${t.toLowerCase()})`;
/** Each lead's tags of an organization, as `lead: tag, tag`. */
const tagsOf = async (org: number) =>
  (await db.sql<{ lead_id: number; tags: string }[]>`select lead_id, string_agg(tag, ', ' order by tag_key) as tags from lead_tags where org_id = ${org} group by lead_id order by lead_id`).map(
    (r) => `${r.lead_id}: ${r.tags}`,
  );
const counts = async (org: number) => (await db.sql<{ tag: string; uses: number }[]>`select tag, uses from org_tags where org_key = ${org} and uses > 0 order by tag_key`).map((r) => `${r.tag}=${r.uses}`);
const audits = () => db.sql<{ action: string; target: string; org_id: number; details: Record<string, unknown> }[]>`select action, target, org_id, details from audit_log where action like 'tag.%' order by id`;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  app = await startApp(db.url);
  const [m, b, s, a] = await Promise.all([
    makeUser(db.sql, { role: "manager", orgId: 1 }),
    makeUser(db.sql, { role: "manager", orgId: 2 }),
    makeUser(db.sql, { role: "admin", orgId: null }),
    makeUser(db.sql, { role: "agent", orgId: 1 }),
  ]);
  [acme, bolt, admin, agent] = await Promise.all([signIn(app.base, m.email, m.password), signIn(app.base, b.email, b.password), signIn(app.base, s.email, s.password), signIn(app.base, a.email, a.password)]);
  for (let i = 0; i < 4; i++) acmeLeads.push(await makeLead(db.sql, { phone: `512555020${i}` }));
  const [l0, l1, l2, l3] = acmeLeads as [number, number, number, number];
  for (const [lead, t] of [[l0, "VIP"], [l1, "VIP"], [l2, "VIP"], [l0, "Roof"], [l1, "roofing"], [l3, "Roofing"], [l2, "<script>x</script>"], [l3, "Spam"]] as const) await tag(db.sql, lead, 1, t);
  boltLead = await makeLead(db.sql, { list: 201, phone: "5125550299" });
  await tag(db.sql, boltLead, 2, "VIP");
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

describe("tags", () => {
  test("the organization's tags with how many leads carry each, escaped; a Settings tab; the manager's own organization; agents get the 404 page", async () => {
    expect((await acme.get("/console/settings/tags?org=2")).headers.get("location")).toBe("/console/settings/tags/1");
    const page = text(await acme.get("/console/settings/tags/1"));
    expect(page).toMatch(/Saved replies<\/a><\/li><li><a href="\/console\/settings\/tags" aria-current="page">Tags/);
    const rows = [...page.matchAll(/<tr><td>([^<]*)<\/td><td>(\d+)<\/td>/g)].map((m) => `${m[1]}=${m[2]}`);
    expect(rows).toEqual(["&lt;script&gt;x&lt;/script&gt;=1", "Roof=1", "roofing=2", "Spam=1", "VIP=3"]);
    expect(page).not.toContain("<script>x");
    expect((await agent.get("/console/settings/tags/1")).status).toBe(404);
    expect((await agent.post("/console/settings/tags/1/rename", { tag: "vip", to: "X" })).status).toBe(404);
  });

  test("rename: on every lead carrying it, counted again, audited tag.rename with how many; the same name changes nothing", async () => {
    const r = await acme.post("/console/settings/tags/1/rename", { tag: "vip", to: "  Very   important " });
    expect(r.headers.get("location")).toBe("/console/settings/tags/1?done=renamed");
    expect(await counts(1)).toEqual(["<script>x</script>=1", "Roof=1", "roofing=2", "Spam=1", "Very important=3"]);
    expect((await audits()).at(-1)).toEqual({ action: "tag.rename", target: "tag:vip", org_id: 1, details: { from: "VIP", to: "Very important", leads: 3 } });
    // Another organization's tag of the same name is untouched.
    expect(await counts(2)).toEqual(["VIP=1"]);
    // Only its case: the spelling changes on every lead.
    expect((await acme.post("/console/settings/tags/1/rename", { tag: "very important", to: "VERY IMPORTANT" })).headers.get("location")).toBe("/console/settings/tags/1?done=renamed");
    expect(await counts(1)).toContain("VERY IMPORTANT=3");
    const n = (await audits()).length;
    expect((await acme.post("/console/settings/tags/1/rename", { tag: "very important", to: "VERY IMPORTANT" })).headers.get("location")).toBe("/console/settings/tags/1?done=unchanged");
    expect((await audits()).length).toBe(n);
  });

  test("rename to a tag the organization has: a merge, a lead carrying both keeps one, in the spelling already used; audited tag.merge", async () => {
    const [l0, l1, , l3] = acmeLeads as [number, number, number, number];
    const r = await acme.post("/console/settings/tags/1/rename", { tag: "roof", to: "ROOFING" });
    expect(r.headers.get("location")).toBe("/console/settings/tags/1?done=merged");
    expect(await counts(1)).toEqual(["<script>x</script>=1", "roofing=3", "Spam=1", "VERY IMPORTANT=3"]);
    const leads = await tagsOf(1);
    expect(leads).toContain(`${l0}: roofing, VERY IMPORTANT`);
    expect(leads).toContain(`${l1}: roofing, VERY IMPORTANT`);
    expect(leads).toContain(`${l3}: Roofing, Spam`);
    expect((await audits()).at(-1)).toEqual({ action: "tag.merge", target: "tag:roof", org_id: 1, details: { from: "Roof", to: "roofing", leads: 1 } });
  });

  test("refusals: the list again (422) with the reason in words and the typed name kept; nothing changed", async () => {
    const before = await tagsOf(1);
    const n = (await audits()).length;
    for (const [to, why] of [["", "a tag cannot be empty"], ["   ", "a tag cannot be empty"], ["a,b", "a tag cannot hold a comma"], ["x".repeat(41), "at most 40 characters"], ["bad\u0001", "control character"]] as const) {
      const r = await acme.post("/console/settings/tags/1/rename", { tag: "spam", to });
      expect(r.status).toBe(422);
      expect(text(r)).toContain("Nothing was saved");
      expect(text(r)).toContain(why);
      if (to === "a,b") expect(text(r)).toContain('value="a,b"');
    }
    expect(await tagsOf(1)).toEqual(before);
    expect((await audits()).length).toBe(n);
  });

  test("bad input of every kind: never a 500", async () => {
    for (const form of <Record<string, string>[]>[{}, { tag: "" }, { tag: "nope", to: "x" }, { tag: "\u0000", to: "x" }, { tag: "x".repeat(10_000), to: "y" }]) {
      expect((await acme.post("/console/settings/tags/1/rename", form)).status).toBe(404);
      expect((await acme.post("/console/settings/tags/1/delete", { ...form, confirm: "1" })).status).toBe(404);
    }
    for (const q of ["", "?tag=", "?tag=nope", "?tag=%00", "?tag=%E0%A4%A"]) expect((await acme.get(`/console/settings/tags/1/delete${q}`)).status).toBe(404);
    expect((await acme.get("/console/settings/tags/x")).status).toBe(404);
    expect((await acme.post("/console/settings/tags/1/rename", { tag: "spam", to: "a".repeat(100_000) })).status).toBe(422);
  });

  test("delete: a confirmation page saying how many leads first (a post without it changes nothing), then removed from every lead, audited tag.delete with how many", async () => {
    const confirm = text(await acme.get("/console/settings/tags/1/delete?tag=roofing"));
    expect(confirm).toContain("Yes, remove roofing from 3 leads");
    const unconfirmed = await acme.post("/console/settings/tags/1/delete", { tag: "roofing" });
    expect(unconfirmed.headers.get("location")).toBe("/console/settings/tags/1/delete?tag=roofing");
    expect(await counts(1)).toContain("roofing=3");
    const gone = await acme.post("/console/settings/tags/1/delete", { tag: "roofing", confirm: "1" });
    expect(gone.headers.get("location")).toBe("/console/settings/tags/1?done=deleted");
    expect(await counts(1)).toEqual(["<script>x</script>=1", "Spam=1", "VERY IMPORTANT=3"]);
    expect((await tagsOf(1)).join("\n")).not.toContain("oofing");
    expect((await audits()).at(-1)).toEqual({ action: "tag.delete", target: "tag:roofing", org_id: 1, details: { tag: "roofing", leads: 3 } });
    // The leads stay.
    expect((await db.sql`select 1 from leads where id in ${db.sql(acmeLeads)}`).length).toBe(4);
  });

  test("two renames of one tag at the same moment: one renames it, the other finds it gone; A→B and B→A at once never deadlock", async () => {
    const actor = { type: "user", id: "m", orgId: 1, role: "manager" } as never;
    const both = await Promise.allSettled([renameTag(db.sql, actor, 1, "spam", "Junk"), renameTag(db.sql, actor, 1, "spam", "Trash")]);
    expect(both.map((r) => r.status).sort()).toEqual(["fulfilled", "rejected"]);
    expect(await counts(1)).toEqual(expect.arrayContaining([expect.stringMatching(/^(Junk|Trash)=1$/)]));
    const [a, b] = (await counts(1)).filter((c) => /^(Junk|Trash|VERY)/.test(c)).map((c) => c.split("=")[0]!.toLowerCase());
    const cross = await Promise.allSettled([renameTag(db.sql, actor, 1, a!, "VERY IMPORTANT"), renameTag(db.sql, actor, 1, b!, a!)]);
    for (const r of cross) if (r.status === "rejected") expect(String(r.reason)).not.toMatch(/deadlock/);
    expect(cross.some((r) => r.status === "fulfilled")).toBe(true);
  });

  test("another organization's manager posting this organization's tags: 404, nothing changed; an admin may act on any", async () => {
    const before = await tagsOf(1);
    const n = (await audits()).length;
    expect((await bolt.get("/console/settings/tags/1")).status).toBe(404);
    expect((await bolt.get("/console/settings/tags/1/delete?tag=very%20important")).status).toBe(404);
    expect((await bolt.post("/console/settings/tags/1/rename", { tag: "very important", to: "Hijack" })).status).toBe(404);
    expect((await bolt.post("/console/settings/tags/1/delete", { tag: "very important", confirm: "1" })).status).toBe(404);
    expect(await tagsOf(1)).toEqual(before);
    expect((await audits()).length).toBe(n);
    // Its own organization's path names its own tags only.
    expect((await bolt.post("/console/settings/tags/2/delete", { tag: "very important", confirm: "1" })).status).toBe(404);
    expect(await tagsOf(1)).toEqual(before);
    // The admin: any organization.
    expect((await admin.get("/console/settings/tags?org=2")).headers.get("location")).toBe("/console/settings/tags/2");
    expect((await admin.post("/console/settings/tags/2/rename", { tag: "vip", to: "Gold" })).headers.get("location")).toBe("/console/settings/tags/2?done=renamed");
    expect(await counts(2)).toEqual(["Gold=1"]);
    expect((await admin.post("/console/settings/tags/2/delete", { tag: "gold", confirm: "1" })).status).toBe(303);
    expect(await counts(2)).toEqual([]);
    expect((await audits()).at(-1)).toMatchObject({ action: "tag.delete", org_id: 2, details: { tag: "Gold", leads: 1 } });
    expect(await tagsOf(1)).toEqual(before);
  });
});
