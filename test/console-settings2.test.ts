// The console's remaining settings over HTTP, across two organizations: the first-steps checklist,
// booking links added and removed from a calendar's page (a slug held by another organization never
// moves, here or from a provisioning file), invitations emailed through the organization's SMTP.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { startApp, type TestApp } from "./harness/app";
import { makeUser, signIn, type ConsoleClient } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeLead, seedWorld } from "./harness/factory";
import { startFakeSmtp, type FakeSmtp } from "./harness/fake-smtp";
import type { Actor } from "../src/auth/actor";
import { applyProvisioning, PROVISIONING_OPERATOR } from "../src/provision/service";
import type { ProvisioningFile } from "../src/provision/model";

setDefaultTimeout(60_000);

let db: TestDatabase;
let app: TestApp;
let acme: ConsoleClient;
let bolt: ConsoleClient;
let admin: ConsoleClient;
let smtp: FakeSmtp;

const text = (r: { body: unknown }) => String(r.body);
const ticks = (page: string) => [...page.matchAll(/<li class="(done|todo)">.*?<a href="[^"]+">([^<]+)<\/a>/g)].map((m) => `${m[2]}: ${m[1]}`);

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  smtp = await startFakeSmtp();
  await db.sql`update orgs set email = ${db.sql.json({ smtp_url: smtp.url("acme", "acme-smtp-pass-1"), from: "Acme <team@acme.example>" })} where id = 1`;
  app = await startApp(db.url);
  const [m, b, s] = await Promise.all([makeUser(db.sql, { role: "manager", orgId: 1 }), makeUser(db.sql, { role: "manager", orgId: 2 }), makeUser(db.sql, { role: "admin", orgId: null })]);
  [acme, bolt, admin] = await Promise.all([signIn(app.base, m.email, m.password), signIn(app.base, b.email, b.password), signIn(app.base, s.email, s.password)]);
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await smtp?.stop();
  await db?.drop();
});

describe("first steps", () => {
  test("each step ticked when the viewer's organization has one; another organization's do not count", async () => {
    const first = await acme.get("/console/settings/first-steps");
    expect(first.status).toBe(200);
    expect(ticks(text(first))).toEqual(["Organization: done", "Calendar and booking link: todo", "Number pool: todo", "Webhook endpoint: todo", "Invite users: todo"]);
    // Organization 2's calendar, link, pool, webhook and user tick nothing for organization 1.
    await db.sql`insert into calendars (id, org_id, name, timezone, hours) values (8801, 2, 'Bolt', 'America/Chicago', '{}')`;
    await db.sql`insert into calendar_links (slug, calendar_id) values ('bolt-first', 8801)`;
    await db.sql`insert into dni_pools (key, org_id) values ('bolt-first', 2)`;
    await db.sql`insert into webhooks (id, org_id, url, secret, events) values (8801, 2, 'https://hooks.bolt.example/x', 'whsec_x', '{*}')`;
    await makeUser(db.sql, { role: "agent", orgId: 2 });
    expect(ticks(text(await acme.get("/console/settings/first-steps")))).toEqual(["Organization: done", "Calendar and booking link: todo", "Number pool: todo", "Webhook endpoint: todo", "Invite users: todo"]);
    expect(ticks(text(await bolt.get("/console/settings/first-steps")))).toEqual(["Organization: done", "Calendar and booking link: done", "Number pool: done", "Webhook endpoint: done", "Invite users: done"]);
    // The admin's scope is every organization.
    expect(text(await admin.get("/console/settings/first-steps"))).toContain("Everything is set up");
  });
});

describe("booking links", () => {
  const ACME_CAL = 8701;
  const linksOf = async (id: number) => (await db.sql<{ slug: string }[]>`select slug from calendar_links where calendar_id = ${id} order by slug`).map((r) => r.slug);
  const audits = () => db.sql<{ actor_id: string; details: { changes: { links: { from: unknown; to: unknown } } } }[]>`
    select actor_id, details from audit_log where target = ${`calendar:${ACME_CAL}`} and action = 'calendar.update' order by id`;
  beforeAll(async () => {
    await db.sql`insert into calendars (id, org_id, name, timezone, hours) values (${ACME_CAL}, 1, 'Acme estimates', 'America/Chicago', '{"mon": [["09:00", "17:00"]]}'), (8702, 1, 'Acme crew', 'America/Chicago', '{}')`;
    await db.sql`insert into calendar_links (slug, calendar_id) values ('acme-crew', 8702), ('bolt-held', 8801)`;
  });

  test("added in any case through the provisioning service (lowercased, audited), shown in full with a copy button; the booking page opens", async () => {
    const r = await acme.post(`/console/settings/calendars/${ACME_CAL}/links`, { slug: "  Acme-Estimate " });
    expect(r.status).toBe(303);
    expect(r.headers.get("location")).toBe(`/console/settings/calendars/${ACME_CAL}?done=link-added`);
    expect(await linksOf(ACME_CAL)).toEqual(["acme-estimate"]);
    expect((await audits()).map((a) => a.details.changes.links)).toEqual([{ from: [], to: [{ slug: "acme-estimate" }] }]);
    const page = text(await acme.get(`/console/settings/calendars/${ACME_CAL}?done=link-added`));
    expect(page).toMatch(/<code id="link-0">https?:\/\/[^<]+\/book\/acme-estimate<\/code>/);
    expect(page).toContain('data-copy="link-0"');
    expect(page).toContain("copy-tag.js");
    expect((await fetch(`${app.base}/book/acme-estimate`)).status).toBe(200);
    // The same link again changes nothing; the other calendar of the same organization can take it.
    expect((await acme.post(`/console/settings/calendars/${ACME_CAL}/links`, { slug: "acme-estimate" })).headers.get("location")).toContain("done=unchanged");
  });

  test("bad slugs are the form again with the reason (422), never a 500; nothing written", async () => {
    for (const slug of ["", "a b", "acme_estimate", "é", "x".repeat(65), "a\u0000b"]) {
      const r = await acme.post(`/console/settings/calendars/${ACME_CAL}/links`, { slug });
      expect(r.status).toBe(422);
    }
    expect(await linksOf(ACME_CAL)).toEqual(["acme-estimate"]);
  });

  test("a slug another organization's calendar holds never moves here: 409 from the console, naming no one", async () => {
    const r = await acme.post(`/console/settings/calendars/${ACME_CAL}/links`, { slug: "BOLT-Held" });
    expect(r.status).toBe(409);
    expect(text(r)).toContain("The link /book/bolt-held is taken");
    expect(text(r)).not.toContain("Bolt");
    expect(text(r)).not.toContain("8801");
    expect(await linksOf(8801)).toEqual(["bolt-first", "bolt-held"]);
    expect(await linksOf(ACME_CAL)).toEqual(["acme-estimate"]);
  });

  test("nor from a tenant's provisioning fragment; the operator's file upserts by slug; within one organization a slug moves", async () => {
    const manager: Actor = { orgId: 1, type: "user", id: "acme-manager", agent: null, keyId: null };
    const file = (slug: string) => ({ calendars: [{ id: ACME_CAL, org_id: 1, links: [{ slug }] }] }) as unknown as ProvisioningFile;
    const err = await applyProvisioning(db.sql, file("bolt-held"), { actor: manager }).catch((e: Error & { problems?: string[] }) => e);
    expect((err as { problems?: string[] }).problems).toEqual(['calendars[0].links: slug "bolt-held" is taken by another organization\'s calendar']);
    // The platform's file is not refused (operations.md §3: links are upserted by slug): its dry run
    // plans the move, writing nothing.
    const dry = await applyProvisioning(db.sql, file("bolt-held"), { actor: PROVISIONING_OPERATOR, dryRun: true });
    expect(dry.plan.find((o) => o.section === "calendars")!.changes.map((c) => c.field)).toEqual(["links"]);
    expect(await linksOf(8801)).toEqual(["bolt-first", "bolt-held"]);
    await applyProvisioning(db.sql, file("acme-crew"), { actor: manager });
    expect(await linksOf(ACME_CAL)).toEqual(["acme-crew", "acme-estimate"]);
    expect(await linksOf(8702)).toEqual([]);
  });

  test("removed only after the confirmation, audited; the booking page is gone", async () => {
    const path = `/console/settings/calendars/${ACME_CAL}/links/remove`;
    const confirm = await acme.get(`${path}?slug=acme-crew`);
    expect(confirm.status).toBe(200);
    expect(text(confirm)).toContain("Yes, remove this link");
    const stray = await acme.post(path, { slug: "acme-crew" });
    expect(stray.status).toBe(303);
    expect(stray.headers.get("location")).toBe(`${path}?slug=acme-crew`);
    expect(await linksOf(ACME_CAL)).toEqual(["acme-crew", "acme-estimate"]);
    const done = await acme.post(path, { slug: "acme-crew", confirm: "1" });
    expect(done.headers.get("location")).toBe(`/console/settings/calendars/${ACME_CAL}?done=link-removed`);
    expect(await linksOf(ACME_CAL)).toEqual(["acme-estimate"]);
    expect((await audits()).at(-1)!.details.changes.links).toEqual({ from: [{ slug: "acme-crew" }, { slug: "acme-estimate" }], to: [{ slug: "acme-estimate" }] });
    expect((await audits()).at(-1)!.actor_id).not.toBe("operator");
    expect((await fetch(`${app.base}/book/acme-crew`)).status).toBe(404);
    // A slug not on this calendar (or nowhere) is the 404 page.
    expect((await acme.get(`${path}?slug=acme-crew`)).status).toBe(404);
    expect((await acme.post(path, { slug: "bolt-held", confirm: "1" })).status).toBe(404);
  });

  test("another organization's manager posting this organization's ids: 404, nothing changed", async () => {
    expect((await bolt.get(`/console/settings/calendars/${ACME_CAL}/links/remove?slug=acme-estimate`)).status).toBe(404);
    expect((await bolt.post(`/console/settings/calendars/${ACME_CAL}/links/remove`, { slug: "acme-estimate", confirm: "1" })).status).toBe(404);
    expect((await bolt.post(`/console/settings/calendars/${ACME_CAL}/links`, { slug: "bolt-new" })).status).toBe(404);
    // Nor can they take this organization's link onto their own calendar.
    expect((await bolt.post(`/console/settings/calendars/8801/links`, { slug: "acme-estimate" })).status).toBe(409);
    expect(await linksOf(ACME_CAL)).toEqual(["acme-estimate"]);
    expect(await linksOf(8801)).toEqual(["bolt-first", "bolt-held"]);
  });
});

describe("invitations by email", () => {
  /** The link in a mail, opened as a browser does: the 303 with the invite cookie, then the form. */
  const linkIn = (i: number) => /https?:\/\/\S+\/console\/invite\/[A-Za-z0-9_-]{43}/.exec(smtp.mails[i]!.parsed.text ?? "")![0];
  const open = async (url: string) => {
    const r = await fetch(url.replace(/^https?:\/\/[^/]+/, app.base), { redirect: "manual" });
    const cookie = (r.headers.get("set-cookie") ?? "").split(";")[0]!;
    return { status: r.status, cookie };
  };
  const counts = async () => (await db.sql<{ n: number }[]>`select (select count(*) from messages)::int + (select count(*) from credit_ledger)::int as n`)[0]!.n;

  test("the invite form's \"also email it\": the mail arrives through the organization's SMTP with the link, which works once; no lead message, nothing billed", async () => {
    smtp.reset();
    const before = await counts();
    const r = await acme.post("/console/settings/users", { email: "Mia.Manager@acme.example", name: "Mia", role: "manager", email_link: "1" });
    expect(r.status).toBe(200);
    expect(text(r)).toContain("Emailed to mia.manager@acme.example.");
    await smtp.waitFor(1);
    const mail = smtp.mails[0]!;
    expect(mail.envelope.to).toEqual(["mia.manager@acme.example"]);
    expect(mail.user).toBe("acme");
    expect(mail.parsed.subject).toBe("You are invited to Acme on Leadline");
    const link = linkIn(0);
    // The page shows the same link once.
    expect(text(r)).toContain(link.slice(link.lastIndexOf("/")));
    const opened = await open(link);
    expect(opened.status).toBe(303);
    expect((await fetch(`${app.base}/console/invite`, { headers: { cookie: opened.cookie } })).status).toBe(200);
    expect((await open(link)).status).toBe(404);
    expect(await counts()).toBe(before);
    const [a] = await db.sql<{ details: Record<string, unknown> }[]>`select details from audit_log where action = 'user.invite_email' order by id desc limit 1`;
    expect(a!.details).toEqual({ to: "mia.manager@acme.example", sent: true });
    expect(JSON.stringify(a)).not.toContain("/console/invite/");
  });

  test("resend by email: a new link arrives, the older one stops working", async () => {
    smtp.reset();
    await acme.post("/console/settings/users", { email: "ari.agent@acme.example", role: "agent", email_link: "1" });
    await smtp.waitFor(1);
    const first = linkIn(0);
    const [u] = await db.sql<{ id: string }[]>`select id from users where email = 'ari.agent@acme.example'`;
    const again = await acme.post(`/console/settings/users/${u!.id}/invite`, { email_link: "1" });
    expect(again.status).toBe(200);
    expect(text(again)).toContain("Emailed to ari.agent@acme.example.");
    await smtp.waitFor(2);
    const second = linkIn(1);
    expect(second).not.toBe(first);
    expect((await open(first)).status).toBe(404);
    expect((await open(second)).status).toBe(303);
  });

  test("without an email sender, or for an administrator, the link is shown and the page says it was not emailed", async () => {
    smtp.reset();
    const r = await bolt.post("/console/settings/users", { email: "bo@bolt.example", role: "agent", email_link: "1" });
    expect(r.status).toBe(200);
    expect(text(r)).toContain("The organization has no email sender set up");
    expect(text(r)).toMatch(/\/console\/invite\/[A-Za-z0-9_-]{43}/);
    const a = await admin.post("/console/settings/users", { email: "second.admin@example.test", role: "admin", email_link: "1" });
    expect(text(a)).toContain("An administrator belongs to no organization");
    expect(smtp.mails.length).toBe(0);
  });

  test("another organization's manager resending this organization's user's link: 404, nothing sent, the link still works", async () => {
    smtp.reset();
    await acme.post("/console/settings/users", { email: "kit@acme.example", role: "agent", email_link: "1" });
    await smtp.waitFor(1);
    const link = linkIn(0);
    const [u] = await db.sql<{ id: string }[]>`select id from users where email = 'kit@acme.example'`;
    expect((await bolt.post(`/console/settings/users/${u!.id}/invite`, { email_link: "1" })).status).toBe(404);
    expect(smtp.mails.length).toBe(1);
    expect((await open(link)).status).toBe(303);
  });
});

describe("lead statuses", () => {
  const stored = async (id: number) => (await db.sql<{ lead_statuses: { code: string; label: string }[] | null }[]>`select lead_statuses from orgs where id = ${id}`)[0]!.lead_statuses;
  const statusAudits = () => db.sql<{ details: { from: unknown[]; to: { code: string; label: string }[] } }[]>`select details from audit_log where action = 'lead_statuses.update' and org_id = 1 order by id`;
  beforeAll(async () => {
    for (const [phone, status] of [["5125550101", "CONTACTED"], ["5125550102", "CONTACTED"], ["5125550103", "WON"]] as const) {
      const id = await makeLead(db.sql, { phone });
      await db.sql`update leads set status = ${status} where id = ${id}`;
    }
  });

  test("the list with how many leads have each; the manager's own organization whatever `org` says", async () => {
    const r = await acme.get("/console/settings/statuses?org=2");
    expect(r.headers.get("location")).toBe("/console/settings/statuses/1");
    const page = text(await acme.get("/console/settings/statuses/1"));
    expect(page).toMatch(/<code>CONTACTED<\/code><\/td>[\s\S]*?<td>2<\/td>/);
    expect(page).toMatch(/<code>WON<\/code><\/td>[\s\S]*?<td>1<\/td>/);
    expect(page).toContain("the default list");
  });

  test("add (code in any case) and rename through the provisioning service, audited with the previous and new lists; bad input is the form again", async () => {
    const added = await acme.post("/console/settings/statuses/1/add", { code: "callback_later", label: "Call back later" });
    expect(added.headers.get("location")).toBe("/console/settings/statuses/1?done=added");
    expect((await stored(1))!.at(-1)).toEqual({ code: "CALLBACK_LATER", label: "Call back later" });
    const renamed = await acme.post("/console/settings/statuses/1/rename", { code: "WON", label: "Sold" });
    expect(renamed.headers.get("location")).toBe("/console/settings/statuses/1?done=renamed");
    expect((await stored(1))!.find((s) => s.code === "WON")).toEqual({ code: "WON", label: "Sold" });
    const audits = await statusAudits();
    expect(audits.length).toBe(2);
    expect(audits[1]!.details.to.find((s) => s.code === "WON")!.label).toBe("Sold");
    for (const form of [{ code: "9BAD", label: "x" }, { code: "LOST", label: "Again" }, { code: "OTHER", label: "sold" }, { code: "OK", label: "" }, { code: "A\u0000", label: "x" }]) {
      expect((await acme.post("/console/settings/statuses/1/add", form)).status).toBe(422);
    }
    expect((await acme.post("/console/settings/statuses/1/rename", { code: "NOPE", label: "x" })).status).toBe(422);
    expect((await statusAudits()).length).toBe(2);
  });

  test("a status leads have is never removed: the page says how many; an unused one is removed after the confirmation", async () => {
    const inUse = await acme.get("/console/settings/statuses/1/remove?code=CONTACTED");
    expect(inUse.status).toBe(200);
    expect(text(inUse)).toContain("2 leads have this status");
    expect(text(inUse)).not.toContain("Yes, remove");
    expect((await acme.post("/console/settings/statuses/1/remove", { code: "CONTACTED", confirm: "1" })).status).toBe(422);
    expect(text(await acme.get("/console/settings/statuses/1/remove?code=NEW"))).toContain("rename it instead");
    expect((await stored(1))!.some((s) => s.code === "CONTACTED")).toBe(true);
    const stray = await acme.post("/console/settings/statuses/1/remove", { code: "LOST" });
    expect(stray.headers.get("location")).toBe("/console/settings/statuses/1/remove?code=LOST");
    expect((await stored(1))!.some((s) => s.code === "LOST")).toBe(true);
    const gone = await acme.post("/console/settings/statuses/1/remove", { code: "LOST", confirm: "1" });
    expect(gone.headers.get("location")).toBe("/console/settings/statuses/1?done=removed");
    expect((await stored(1))!.some((s) => s.code === "LOST")).toBe(false);
  });

  test("another organization's manager posting this organization's id: 404, nothing changed", async () => {
    const before = JSON.stringify(await stored(1));
    expect((await bolt.get("/console/settings/statuses/1")).status).toBe(404);
    expect((await bolt.post("/console/settings/statuses/1/add", { code: "HIJACK", label: "Hijack" })).status).toBe(404);
    expect((await bolt.post("/console/settings/statuses/1/rename", { code: "WON", label: "Hijack" })).status).toBe(404);
    expect((await bolt.post("/console/settings/statuses/1/remove", { code: "CALLBACK_LATER", confirm: "1" })).status).toBe(404);
    expect(JSON.stringify(await stored(1))).toBe(before);
    expect(await stored(2)).toBeNull();
  });
});
