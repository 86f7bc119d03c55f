// The console's search page (/console/search, the header's box): leads by name without accents,
// phone and email; messages and notes by their words with the match highlighted and a link to the
// message in its lead's conversation; confined to the viewer's organization (org 2 never sees org
// 1's leads or text, and the other way round); bad input is a page, never a 500.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { startApp, type TestApp } from "./harness/app";
import { makeUser, signIn, type ConsoleClient } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";
import { seedSearchWorld, type SearchWorld } from "./harness/search-world";

setDefaultTimeout(60_000);

let db: TestDatabase;
let app: TestApp;
let w: SearchWorld;
let acme: ConsoleClient;
let bolt: ConsoleClient;
let boltSecret: number;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  w = await seedSearchWorld(db.sql);
  [{ id: boltSecret }] = await db.sql<{ id: number }[]>`
    insert into messages (lead_id, org_id, channel, direction, body, status) values (${w.boltJose}, 2, 'note', 'out', 'Bolt only: the roof leak at the warehouse is ours.', 'stored') returning id`;
  app = await startApp(db.url);
  const a = await makeUser(db.sql, { role: "agent", orgId: 1 });
  const b = await makeUser(db.sql, { role: "agent", orgId: 2 });
  acme = await signIn(app.base, a.email, a.password);
  bolt = await signIn(app.base, b.email, b.password);
});

afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

const search = async (c: ConsoleClient, q: string) => {
  const r = await c.get(`/console/search?q=${encodeURIComponent(q)}`);
  expect(r.status).toBe(200);
  return r.body as string;
};
const section = (body: string, id: string) => new RegExp(`<ul class="plain search-hits" id="${id}">([\\s\\S]*?)</ul>`).exec(body)?.[1] ?? "";

describe("console search", () => {
  test("every page has the header's search box, a plain GET form", async () => {
    const body = (await acme.get("/console/inbox")).body as string;
    expect(body).toContain('<form class="top-search" role="search" method="get" action="/console/search">');
    expect(await search(acme, "")).toContain("Type a name, a phone number");
  });

  test('"jose" finds José and JOSE by name, accents aside; the query stays in the box', async () => {
    const body = await search(acme, "jose");
    const leads = section(body, "found-leads");
    expect(leads).toContain(`/console/leads/${w.joseNunez}"`);
    expect(leads).toContain("José Núñez");
    expect(leads).toContain(`/console/leads/${w.josePerez}"`);
    expect(body).toContain('value="jose"');
    expect(body).not.toContain(`/console/leads/${w.boltJose}"`);
  });

  test("message text: the snippet highlights the words (folded), links to the message in the lead's conversation, which shows it", async () => {
    const body = await search(acme, "roof");
    const messages = section(body, "found-messages");
    expect(messages).toContain("<mark>roof</mark> leak");
    expect(messages).toContain("<mark>ROOF</mark> is leaking");
    expect(messages).not.toContain("warehouse");
    const href = new RegExp(`href="(/console/leads/${w.zoe}\\?before=[^"]+)"`).exec(messages)?.[1]?.replaceAll("&amp;", "&");
    expect(href).toBeDefined();
    expect(href).toContain(`#msg-${w.zoeLeakNote}`);
    const lead = (await acme.get(href!.split("#")[0]!)).body as string;
    expect(lead).toContain(`id="msg-${w.zoeLeakNote}"`);
    expect(lead).toContain("the ROOF is leaking over the kitchen");
  });

  test("org 2 never sees org 1's leads or text, and org 1 never org 2's", async () => {
    const roof = await search(bolt, "roof");
    expect(section(roof, "found-messages")).toContain("warehouse");
    expect(roof).not.toContain("kitchen");
    expect(roof).not.toContain("Perez");
    expect(await search(bolt, "kitchen")).toContain("Nothing found for “kitchen”.");
    expect(await search(bolt, "nunez")).toContain("Nothing found");
    expect(await search(bolt, "0123")).toContain("Nothing found");
    expect(await search(acme, "warehouse")).toContain("Nothing found");
    expect(await search(acme, "warehouse")).not.toContain(`msg-${boltSecret}`);
    // A found message's link to another organization's lead is the missing page's 404.
    expect((await bolt.get(`/console/leads/${w.zoe}?before=1793491200000000.1.0`)).status).toBe(404);
  });

  test("phones by their last digits and emails without the domain", async () => {
    expect(section(await search(acme, "0199"), "found-leads")).toContain(`/console/leads/${w.joseNunez}"`);
    expect(section(await search(acme, "(512) 555-0123"), "found-leads")).toContain(`/console/leads/${w.josePerez}"`);
    expect(section(await search(acme, "ana.rivera"), "found-leads")).toContain(`/console/leads/${w.zoe}"`);
    expect(await search(acme, "199")).toContain("Type at least 4 digits");
  });

  test("odd input is a page, never a 500", async () => {
    for (const q of ["\u0000", "%", "'; drop table leads; --", "a".repeat(5000), "\u0301", "<script>", "@", "((((", "q[]=x"]) {
      const r = await acme.get(`/console/search?q=${encodeURIComponent(q)}`);
      expect([200, 422]).toContain(r.status);
      expect(r.body as string).not.toContain("<script>");
    }
    expect((await acme.get("/console/search?q=a&q=b")).status).toBe(200);
  });
});
