// The whole feature in real headless Chromium: a customer's page, served from another local
// origin, with one script tag pointing at the real service.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { call, startApp, type TestApp } from "./harness/app";
import { launchBrowser, pageErrors, serveSite, type Site } from "./harness/browser";
import { testDatabase, type TestDatabase } from "./harness/db";
import { provisionPools } from "./harness/dni";
import { makeKey } from "./harness/factory";

// Page functions run in the browser; this file is type-checked without the DOM library.
declare const document: any;

const SLOW = 30_000;
export const SCREENSHOT = join(tmpdir(), "leadline-dni-browser.png");

/** Each format of the placeholder, and what it must become for a number `d` (10 digits). */
const a = (d: string) => d.slice(0, 3);
const p = (d: string) => d.slice(3, 6);
const l = (d: string) => d.slice(6);
const FORMATS: [string, (d: string) => string][] = [
  ["f1", (d) => `Call (${a(d)}) ${p(d)}-${l(d)} today`],
  ["f2", (d) => `${a(d)}-${p(d)}-${l(d)}`],
  ["f3", (d) => `${a(d)}.${p(d)}.${l(d)}`],
  ["f4", (d) => `${a(d)} ${p(d)} ${l(d)}`],
  ["f5", (d) => d],
  ["f6", (d) => `+1 ${a(d)}-${p(d)}-${l(d)}`],
  ["f7", (d) => `1-${a(d)}-${p(d)}-${l(d)}`],
];
const LINKS: [string, (d: string) => string][] = [
  ["t1", (d) => `tel:${d}`],
  ["t2", (d) => `tel:+1${d}`],
  ["t3", (d) => `tel:+1-${a(d)}-${p(d)}-${l(d)}`],
];
const PLACEHOLDER = "5125550199";
const LOOKALIKES = "Order 95125550199, ref 51255501990, or 5125550198";

function sitePage(apiBase: string): string {
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>Acme Roofing</title>
<style>body { font: 18px sans-serif; margin: 2em } a { display: block }</style></head>
<body>
<h1>Acme Roofing</h1>
${FORMATS.map(([id, f]) => `<p id="${id}">${f(PLACEHOLDER)}</p>`).join("\n")}
${LINKS.map(([id, f]) => `<a id="${id}" href="${f(PLACEHOLDER)}">${f(PLACEHOLDER)}</a>`).join("\n")}
<p id="look">${LOOKALIKES}</p>
<script src="${apiBase}/dni.js" data-pool="acme-site" async></script>
</body></html>`;
}

let db: TestDatabase;
let app: TestApp;
let browser: Browser;
let site: Site;
beforeAll(async () => {
  db = await testDatabase();
  await provisionPools(db.sql, [{ numbers: ["7375550101", "7375550102"], fallback: "8005550100", placeholder: PLACEHOLDER }]);
  app = await startApp(db.url, { NPK_IP_SALT: "s" });
  browser = await launchBrowser();
  site = serveSite({ "/": sitePage(app.base) });
});
afterAll(async () => {
  await browser?.close();
  site?.stop();
  await app?.stop();
  await db?.drop();
});

const shown = (pg: Page) =>
  pg.evaluate(
    ([f, t]: [string[], string[]]) => ({
      texts: f.map((id) => document.getElementById(id).textContent),
      links: t.map((id) => document.getElementById(id).getAttribute("href")),
      look: document.getElementById("look").textContent,
    }),
    [FORMATS.map((f) => f[0]), LINKS.map((x) => x[0])] as [string[], string[]],
  );

const expected = (d: string) => ({ texts: FORMATS.map(([, f]) => f(d)), links: LINKS.map(([, f]) => f(d)), look: LOOKALIKES });

/** Waits until the page shows some number other than the placeholder; returns its digits. */
async function leasedNumber(pg: Page): Promise<string> {
  await pg.waitForFunction((ph: string) => document.getElementById("f5").textContent !== ph, PLACEHOLDER);
  return (await pg.evaluate(() => document.getElementById("f5").textContent)) as string;
}

describe("dni.js on a customer's page, against the real service", () => {
  test("shows the leased number in every format and tel: link; a reload keeps it; another browser gets another; then the fallback", async () => {
    const one = await browser.newContext();
    const page1 = await one.newPage();
    const errors = pageErrors(page1);
    await page1.goto(site.base + "/?utm_source=google&utm_campaign=spring");
    const first = await leasedNumber(page1);
    expect(["7375550101", "7375550102"]).toContain(first);
    expect(await shown(page1)).toEqual(expected(first));
    await page1.screenshot({ path: SCREENSHOT, fullPage: true });

    await page1.reload();
    expect(await leasedNumber(page1)).toBe(first);
    expect(await shown(page1)).toEqual(expected(first));

    const two = await browser.newContext();
    const page2 = await two.newPage();
    await page2.goto(site.base + "/");
    const second = await leasedNumber(page2);
    expect(second).not.toBe(first);
    expect(["7375550101", "7375550102"]).toContain(second);
    expect(await shown(page2)).toEqual(expected(second));

    // The pool has two numbers: a third visitor sees the fallback.
    const three = await browser.newContext();
    const page3 = await three.newPage();
    await page3.goto(site.base + "/");
    expect(await leasedNumber(page3)).toBe("8005550100");
    expect(await shown(page3)).toEqual(expected("8005550100"));

    expect(errors).toEqual([]);
    const [visitor] = await db.sql`select utm_source, utm_campaign, landing from dni_visitors where utm_source = 'google'`;
    expect(visitor).toEqual({ utm_source: "google", utm_campaign: "spring", landing: site.base + "/?utm_source=google&utm_campaign=spring" });
    await Promise.all([one.close(), two.close(), three.close()]);
  }, SLOW);

  test("a site's form carries the visitor to lead intake: the lead gets the visit's first touch, click ids and all", async () => {
    await db.sql`insert into orgs (id, name) values (1, 'Acme') on conflict do nothing`;
    await db.sql`insert into campaigns (id, org_id, name) values ('ACME', 1, 'Acme') on conflict do nothing`;
    await db.sql`insert into lists (id, campaign_id, name) values (101, 'ACME', 'Web') on conflict do nothing`;
    const key = (await makeKey(db.sql, { scopes: ["leads:write"], org: 1 })).key;
    // The site's own form handler: it passes the hidden field to intake as dni_visitor.
    const handler = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        const form = new URL(req.url).searchParams;
        const r = await call(app.base, "/hooks/lead_intake.php", {
          method: "POST",
          key,
          json: { list_id: 101, phone: form.get("phone"), first_name: form.get("name"), dni_visitor: form.get("leadline_visitor") },
        });
        return new Response(`<!doctype html><title>Thanks</title><p id="lead">${r.body.lead_id}</p>`, { headers: { "content-type": "text/html" } });
      },
    });
    try {
      const form = `<form action="http://127.0.0.1:${handler.port}/quote" method="get">
        <label>Name <input name="name" value="Ann Lee"></label><label>Phone <input name="phone" value="5125550177"></label>
        <input type="hidden" name="leadline_visitor"><button id="send">Get a quote</button></form>`;
      site.put("/quote", sitePage(app.base).replace("</body>", `${form}</body>`));
      const ctx = await browser.newContext();
      const pg = await ctx.newPage();
      const errors = pageErrors(pg);
      await pg.goto(site.base + "/quote?utm_source=google&utm_medium=cpc&gclid=Cj0-browser&gbraid=GB-browser&msclkid=MS-browser");
      await leasedNumber(pg);
      await Promise.all([pg.waitForURL(/\/quote\?/), pg.click("#send")]);
      const leadId = Number(await pg.textContent("#lead"));
      const [lead] = await db.sql`select attribution from leads where id = ${leadId}`;
      expect(lead.attribution).toMatchObject({
        pool: "acme-site", source: "google", medium: "cpc", gclid: "Cj0-browser", gbraid: "GB-browser", wbraid: null, fbclid: null,
        msclkid: "MS-browser", landing: site.base + "/quote?utm_source=google&utm_medium=cpc&gclid=Cj0-browser&gbraid=GB-browser&msclkid=MS-browser",
      });
      const cookie = (await ctx.cookies(site.base)).find((c) => c.name === "_ll_dni")!.value;
      expect(lead.attribution.visitor).toBe(cookie);
      expect(errors).toEqual([]);
      await ctx.close();
    } finally {
      handler.stop(true);
    }
  }, SLOW);

  test("with the API down the page is byte-for-byte unchanged and no page error is raised", async () => {
    // The service up but its database gone: the script loads, every API call fails (503).
    const broken = await startApp(db.url, { NPK_IP_SALT: "s" });
    await broken.running.deps.sql.end({ timeout: 1 });
    site.put("/broken", sitePage(broken.base));
    // And the service not there at all.
    const gone = await startApp(db.url, { NPK_IP_SALT: "s" });
    await gone.stop();
    site.put("/gone", sitePage(gone.base));

    for (const path of ["/broken", "/gone"]) {
      // The same page as the browser builds it when the script never runs at all.
      const ctx0 = await browser.newContext();
      const p0 = await ctx0.newPage();
      await p0.route("**/dni.js", (r) => r.abort());
      await p0.goto(site.base + path);
      const untouched = await p0.content();
      await ctx0.close();

      const ctx = await browser.newContext();
      const pg = await ctx.newPage();
      const errors = pageErrors(pg);
      const leaseAnswered = pg.waitForEvent("requestfinished", { predicate: (r) => r.url().includes("action=lease"), timeout: 10_000 }).catch(() => null);
      await pg.goto(site.base + path);
      if (path === "/broken") expect((await (await leaseAnswered)?.response())?.status()).toBe(503);
      await pg.evaluate(() => new Promise((r) => setTimeout(r, 300)));
      expect({ path, content: await pg.content() }).toEqual({ path, content: untouched });
      expect({ path, errors }).toEqual({ path, errors: [] });
      await ctx.close();
    }
    await broken.stop();
  }, SLOW);
});
