// The saved replies screen of the console's settings over HTTP, across two organizations: add, edit
// and delete through the replies service (its audit rows with previous and new values), refusals on
// the form with the values kept, the preview for a lead of the organization, bad input never a 500.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { startApp, type TestApp } from "./harness/app";
import { makeUser, signIn, type ConsoleClient } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeLead, seedWorld } from "./harness/factory";

setDefaultTimeout(60_000);

let db: TestDatabase;
let app: TestApp;
let acme: ConsoleClient;
let bolt: ConsoleClient;
let admin: ConsoleClient;
let agent: ConsoleClient;
let acmeLead: number;
let boltLead: number;

const text = (r: { body: unknown }) => String(r.body);
const replies = (org: number) => db.sql<{ id: number; name: string; body: string; subject: string; channels: string[] }[]>`select id, name, body, subject, channels from saved_replies where org_id = ${org} order by id`;
const audits = (action: string) => db.sql<{ target: string; org_id: number; details: Record<string, unknown> }[]>`select target, org_id, details from audit_log where action = ${action} order by id`;
const idOf = async (org: number, name: string) => (await replies(org)).find((r) => r.name === name)!.id;
const add = (c: ConsoleClient, org: number, form: Record<string, string>) => c.post(`/console/settings/replies/${org}/add`, form);

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
  acmeLead = await makeLead(db.sql, { phone: "5125550111", first: "Ana", last: "<b>Ruiz</b>" });
  boltLead = await makeLead(db.sql, { list: 201, phone: "5125550222", first: "Bo" });
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

describe("saved replies", () => {
  test("a Settings tab beside Lead statuses; the manager's own organization whatever `org` says; agents get the 404 page", async () => {
    const r = await acme.get("/console/settings/replies?org=2");
    expect(r.headers.get("location")).toBe("/console/settings/replies/1");
    const page = text(await acme.get("/console/settings/replies/1"));
    expect(page).toMatch(/Lead statuses<\/a><\/li><li><a href="\/console\/settings\/replies" aria-current="page">Saved replies/);
    expect(page).toContain("No saved reply yet.");
    expect(page).toContain("<code>{first_name}</code>");
    expect(text(await acme.get("/console/settings/statuses/1"))).toContain('href="/console/settings/replies"');
    expect((await agent.get("/console/settings/replies/1")).status).toBe(404);
    expect((await agent.post("/console/settings/replies/1/add", { name: "Agent", body: "x", "channel.sms": "1" })).status).toBe(404);
  });

  test("add: through the replies service, audited saved_reply.create; listed with its channels and a one-line preview", async () => {
    const r = await add(acme, 1, { name: "  Welcome ", body: "Hi {first_name},\nthanks for calling {company}.", "channel.sms": "1", "channel.note": "1" });
    expect(r.status).toBe(303);
    expect(r.headers.get("location")).toBe("/console/settings/replies/1?done=added");
    const [row] = await replies(1);
    expect(row).toMatchObject({ name: "Welcome", channels: ["sms", "note"], subject: "" });
    const [a] = await audits("saved_reply.create");
    expect(a).toMatchObject({ target: `saved_reply:${row!.id}`, org_id: 1, details: { name: "Welcome", channels: ["sms", "note"] } });
    const page = text(await acme.get("/console/settings/replies/1?done=added"));
    expect(page).toContain("Saved reply added.");
    expect(page).toMatch(/>Welcome<\/a><\/td><td>SMS, Note<\/td><td class="muted">Hi \{first_name\}, thanks for calling \{company\}\.<\/td>/);
  });

  test("refusals come back on the form in words, with the values kept, and nothing is written", async () => {
    const before = (await replies(1)).length;
    const cases: [Record<string, string>, string][] = [
      [{ name: "Oops", body: "Hi {frist_name}", "channel.sms": "1" }, "Body: unknown merge field {frist_name}"],
      [{ name: "Oops", subject: "About {nope}", body: "Hi", "channel.email": "1" }, "Email subject: unknown merge field {nope}"],
      [{ name: "welcome", body: "Again", "channel.sms": "1" }, "already called “welcome”"],
      [{ name: "Oops", body: "   ", "channel.sms": "1" }, "Body: required."],
      [{ name: "", body: "Hi", "channel.sms": "1" }, "Name: required."],
      [{ name: "x".repeat(61), body: "Hi", "channel.sms": "1" }, "Name: at most 60 characters."],
      [{ name: "Long", body: "x".repeat(5001), "channel.sms": "1" }, "Body: at most 5000 characters."],
      [{ name: "Long", subject: "s".repeat(201), body: "Hi", "channel.email": "1" }, "Email subject: at most 200 characters."],
      [{ name: "None", body: "Hi" }, "Channels: pick at least one"],
      [{ name: "Bad\u0007name", body: "Hi", "channel.sms": "1" }, "Name: must not hold a control character."],
    ];
    for (const [form, why] of cases) {
      const r = await add(acme, 1, form);
      expect(r.status).toBe(422);
      const page = text(r);
      expect(page).toContain("Nothing was saved");
      expect(page).toContain(why);
      if (form.name === "Oops" && form.body.startsWith("Hi {")) expect(page).toContain(">Hi {frist_name}</textarea>");
    }
    expect((await replies(1)).length).toBe(before);
    expect((await audits("saved_reply.create")).length).toBe(1);
  });

  test("bad input of every kind: never a 500", async () => {
    const weird: Record<string, string>[] = [{}, { name: "\u0000", body: "\u0000" }, { "channel.fax": "1", name: "F", body: "x" }, { name: "a".repeat(100_000), body: "b" }, { name: "Ω ☃ 𝄞", body: "{}{{first_name}}" }];
    for (const form of weird) expect([303, 422]).toContain((await add(acme, 1, form)).status);
    for (const q of ["reply=abc", "reply=-1", "reply=99999999999999999999", "reply=", ""]) expect((await acme.get(`/console/settings/replies/1/edit?${q}`)).status).toBe(404);
    for (const reply of ["abc", "", "1e3", "0"]) {
      expect((await acme.post("/console/settings/replies/1/edit", { reply, name: "x", body: "y", "channel.sms": "1" })).status).toBe(404);
      expect((await acme.post("/console/settings/replies/1/delete", { reply, confirm: "1" })).status).toBe(404);
    }
    expect((await acme.get("/console/settings/replies/abc")).status).toBe(404);
    const raw = await fetch(`${app.base}/console/settings/replies/1/add`, { method: "POST", headers: { cookie: acme.cookie, "x-csrf-token": acme.csrf, origin: app.base, "content-type": "application/json" }, body: "{not json" });
    expect(raw.status).toBeLessThan(500);
  });

  test("edit: saved through the writer, audited saved_reply.update with each changed field's previous and new values; the same values change nothing", async () => {
    const id = await idOf(1, "Welcome");
    const form = { reply: String(id), name: "Welcome back", subject: "Hello {first_name}", body: "Dear {full_name}", "channel.email": "1", "channel.sms": "1" };
    const r = await acme.post("/console/settings/replies/1/edit", form);
    expect(r.headers.get("location")).toBe(`/console/settings/replies/1/edit?reply=${id}&done=saved`);
    const [a] = await audits("saved_reply.update");
    expect(a!.target).toBe(`saved_reply:${id}`);
    expect(a!.details).toEqual({
      changes: {
        name: { from: "Welcome", to: "Welcome back" },
        body: { from: "Hi {first_name},\nthanks for calling {company}.", to: "Dear {full_name}" },
        subject: { from: "", to: "Hello {first_name}" },
        channels: { from: ["sms", "note"], to: ["sms", "email"] },
      },
    });
    const again = await acme.post("/console/settings/replies/1/edit", form);
    expect(again.headers.get("location")).toBe(`/console/settings/replies/1/edit?reply=${id}&done=unchanged`);
    expect((await audits("saved_reply.update")).length).toBe(1);
    // A refused edit: the form again with what was typed, the stored reply untouched.
    await add(acme, 1, { name: "Other", body: "x", "channel.sms": "1" });
    const taken = await acme.post("/console/settings/replies/1/edit", { ...form, name: "OTHER", body: "Typed text" });
    expect(taken.status).toBe(422);
    expect(text(taken)).toContain("already called “OTHER”");
    expect(text(taken)).toContain(">Typed text</textarea>");
    expect((await replies(1)).find((x) => x.id === id)!.name).toBe("Welcome back");
  });

  test("the preview is the send path's merge for a lead of the organization, picked or typed; another organization's lead is refused", async () => {
    const id = await idOf(1, "Welcome back");
    const edit = text(await acme.get(`/console/settings/replies/1/edit?reply=${id}`));
    expect(edit).toContain(`<option value="${acmeLead}">${acmeLead} · Ana &lt;b&gt;Ruiz&lt;/b&gt;</option>`);
    expect(edit).not.toContain(`value="${boltLead}"`);
    const sms = text(await acme.get(`/console/settings/replies/1/edit?reply=${id}&pick=${acmeLead}&channel=sms`));
    expect(sms).toContain('<pre class="message-body">Dear Ana &lt;b&gt;Ruiz&lt;/b&gt;</pre>');
    // An email's body is HTML: the lead's value goes in escaped (so it shows escaped twice here).
    const email = text(await acme.get(`/console/settings/replies/1/edit?reply=${id}&lead=${acmeLead}&channel=email`));
    expect(email).toContain("<strong>Subject:</strong> Hello Ana");
    expect(email).toContain("Dear Ana &amp;lt;b&amp;gt;Ruiz&amp;lt;/b&amp;gt;");
    expect(text(await acme.get(`/console/settings/replies/1/edit?reply=${id}&lead=${acmeLead}&channel=note`))).toContain("This reply is not for note.");
    expect(text(await acme.get(`/console/settings/replies/1/edit?reply=${id}&lead=${boltLead}&channel=sms`))).toContain(`No lead ${boltLead} in this organization.`);
    expect(text(await admin.get(`/console/settings/replies/1/edit?reply=${id}&lead=${boltLead}&channel=sms`))).toContain(`No lead ${boltLead} in this organization.`);
    expect(text(await acme.get(`/console/settings/replies/1/edit?reply=${id}&lead=12x&channel=sms`))).toContain("is not a lead id.");
  });

  test("delete: a confirmation page first (a post without it deletes nothing), then audited saved_reply.delete with what it was", async () => {
    const id = await idOf(1, "Other");
    const confirm = await acme.get(`/console/settings/replies/1/delete?reply=${id}`);
    expect(text(confirm)).toContain("Yes, delete Other");
    const unconfirmed = await acme.post("/console/settings/replies/1/delete", { reply: String(id) });
    expect(unconfirmed.headers.get("location")).toBe(`/console/settings/replies/1/delete?reply=${id}`);
    expect((await replies(1)).some((r) => r.id === id)).toBe(true);
    const gone = await acme.post("/console/settings/replies/1/delete", { reply: String(id), confirm: "1" });
    expect(gone.headers.get("location")).toBe("/console/settings/replies/1?done=deleted");
    expect((await replies(1)).some((r) => r.id === id)).toBe(false);
    const [a] = await audits("saved_reply.delete");
    expect(a).toMatchObject({ target: `saved_reply:${id}`, org_id: 1, details: { name: "Other", body: "x", channels: ["sms"] } });
  });

  test("another organization's manager posting this organization's ids: 404, nothing changed; an admin may act on any", async () => {
    const id = await idOf(1, "Welcome back");
    const before = JSON.stringify(await replies(1));
    const auditCount = (await db.sql`select 1 from audit_log where action like 'saved_reply.%'`).length;
    expect((await bolt.get("/console/settings/replies/1")).status).toBe(404);
    expect((await bolt.get(`/console/settings/replies/1/edit?reply=${id}`)).status).toBe(404);
    expect((await bolt.get(`/console/settings/replies/2/edit?reply=${id}`)).status).toBe(404);
    expect((await bolt.post("/console/settings/replies/1/add", { name: "Hijack", body: "x", "channel.sms": "1" })).status).toBe(404);
    expect((await bolt.post("/console/settings/replies/1/edit", { reply: String(id), name: "Hijack", body: "x", "channel.sms": "1" })).status).toBe(404);
    // Its own organization's path with another organization's reply: the same 404.
    expect((await bolt.post("/console/settings/replies/2/edit", { reply: String(id), name: "Hijack", body: "x", "channel.sms": "1" })).status).toBe(404);
    expect((await bolt.post("/console/settings/replies/2/delete", { reply: String(id), confirm: "1" })).status).toBe(404);
    expect((await bolt.post("/console/settings/replies/1/delete", { reply: String(id), confirm: "1" })).status).toBe(404);
    expect(JSON.stringify(await replies(1))).toBe(before);
    expect((await replies(2)).length).toBe(0);
    expect((await db.sql`select 1 from audit_log where action like 'saved_reply.%'`).length).toBe(auditCount);
    // The admin: any organization, picked with `org`.
    expect((await admin.get("/console/settings/replies?org=2")).headers.get("location")).toBe("/console/settings/replies/2");
    expect((await add(admin, 2, { name: "Bolt hello", body: "Hi {first_name}", "channel.sms": "1" })).headers.get("location")).toBe("/console/settings/replies/2?done=added");
    const boltId = await idOf(2, "Bolt hello");
    expect(text(await admin.get(`/console/settings/replies/2/edit?reply=${boltId}&lead=${boltLead}&channel=sms`))).toContain('<pre class="message-body">Hi Bo</pre>');
    expect((await admin.post("/console/settings/replies/2/edit", { reply: String(boltId), name: "Bolt hi", body: "Hi", "channel.sms": "1" })).status).toBe(303);
    expect((await admin.post("/console/settings/replies/1/edit", { reply: String(boltId), name: "Moved?", body: "Hi", "channel.sms": "1" })).status).toBe(404);
    expect((await admin.post("/console/settings/replies/2/delete", { reply: String(boltId), confirm: "1" })).status).toBe(303);
    expect((await replies(2)).length).toBe(0);
    expect((await audits("saved_reply.delete")).at(-1)!.org_id).toBe(2);
  });
});
