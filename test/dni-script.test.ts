// The browser script (src/dni/dni.js) in real headless Chromium, against a scripted stand-in for
// the DNI API on another origin, so that every answer (and failure) can be chosen. The same script
// against the real service is in dni-browser.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { dniScript } from "../src/dni/script";
import { launchBrowser, pageErrors, serveSite, type Site } from "./harness/browser";

interface Seen {
  action: string;
  body: any;
  contentType: string | null;
}

/** A stand-in API: serves the real script, records requests, answers what the test says. */
function stubApi() {
  const seen: Seen[] = [];
  let preflights = 0;
  let answer: (action: string, body: any) => Response | Promise<Response> = () => Response.json({ ok: false }, { status: 500 });
  const cors = { "access-control-allow-origin": "*" };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      if (url.pathname === "/dni.js") {
        const s = await dniScript();
        return new Response(s.body, { headers: { "content-type": "text/javascript; charset=utf-8" } });
      }
      if (req.method === "OPTIONS") {
        preflights++;
        return new Response(null, { status: 204, headers: { ...cors, "access-control-allow-methods": "POST", "access-control-allow-headers": "content-type" } });
      }
      const action = url.searchParams.get("action") ?? "";
      const body = JSON.parse(await req.text());
      seen.push({ action, body, contentType: req.headers.get("content-type") });
      const res = await answer(action, body);
      for (const [k, v] of Object.entries(cors)) res.headers.set(k, v);
      return res;
    },
  });
  return {
    base: `http://127.0.0.1:${server.port}`,
    seen,
    preflights: () => preflights,
    answer(fn: typeof answer) {
      answer = fn;
    },
    stop: () => server.stop(true),
  };
}

// Page functions run in the browser; this file is type-checked without the DOM library.
declare const document: any;

const leased = (number: string, extra: Record<string, unknown> = {}) =>
  Response.json({ ok: true, number, formatted: "", ttl: 1800, fallback: false, placeholder: "5125550199", placeholder_formatted: "(512) 555-0199", ...extra });

const FORMATS: [string, string, string][] = [
  ["f1", "Call (512) 555-0199 today", "Call (737) 555-0142 today"],
  ["f2", "512-555-0199", "737-555-0142"],
  ["f3", "512.555.0199", "737.555.0142"],
  ["f4", "512 555 0199", "737 555 0142"],
  ["f5", "5125550199", "7375550142"],
  ["f6", "+1 512-555-0199", "+1 737-555-0142"],
  ["f7", "1-512-555-0199", "1-737-555-0142"],
  ["f8", "(512)555-0199, or 512-555-0199.", "(737)555-0142, or 737-555-0142."],
  // Look-alikes: longer digit runs, and another number.
  ["l1", "Order 95125550199 or 51255501990", "Order 95125550199 or 51255501990"],
  ["l2", "5125550198 and 415-555-0199", "5125550198 and 415-555-0199"],
];
const LINKS: [string, string, string][] = [
  ["t1", "tel:5125550199", "tel:7375550142"],
  ["t2", "tel:+15125550199", "tel:+17375550142"],
  ["t3", "tel:+1-512-555-0199", "tel:+1-737-555-0142"],
  ["t4", "tel:(512) 555-0199", "tel:(737) 555-0142"],
  ["t5", "tel:95125550199", "tel:95125550199"],
  ["t6", "https://example.com/5125550199", "https://example.com/5125550199"],
];

function page(apiBase: string, extraBody = ""): string {
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>Acme Roofing</title>
<style>body { font: 16px sans-serif }</style></head>
<body>
${FORMATS.map(([id, text]) => `<p id="${id}">${text}</p>`).join("\n")}
${LINKS.map(([id, href]) => `<a id="${id}" href="${href}">Call us</a>`).join("\n")}
<script>var inline = "5125550199";</script>
<textarea id="ta">5125550199</textarea>
${extraBody}
<script src="${apiBase}/dni.js" data-pool="acme-site" async></script>
</body></html>`;
}

let browser: Browser;
let api: ReturnType<typeof stubApi>;
let site: Site;
beforeAll(async () => {
  browser = await launchBrowser();
  api = stubApi();
  site = serveSite();
});
afterAll(async () => {
  await browser?.close();
  api?.stop();
  site?.stop();
});

async function open(path: string, html: string, ctx?: BrowserContext): Promise<{ page: Page; errors: Error[]; ctx: BrowserContext }> {
  site.put(path.split("?")[0], html);
  const context = ctx ?? (await browser.newContext());
  const p = await context.newPage();
  const errors = pageErrors(p);
  await p.goto(site.base + path);
  return { page: p, errors, ctx: context };
}

const texts = (p: Page, ids: string[]) => p.evaluate((ids) => ids.map((id) => document.getElementById(id).textContent), ids);
const hrefs = (p: Page, ids: string[]) => p.evaluate((ids) => ids.map((id) => document.getElementById(id).getAttribute("href")), ids);

// Real browser work on a shared 2-core machine: generous per-test time.
const SLOW = 30_000;

describe("dni.js against a stand-in API", () => {
  test("swaps the placeholder in every format and in tel: links, keeping each format; leaves look-alikes alone", async () => {
    api.seen.length = 0;
    api.answer((action) => (action === "lease" ? leased("7375550142") : Response.json({ ok: true })));
    const { page: p, errors, ctx } = await open("/formats?utm_source=google&utm_medium=cpc&utm_campaign=spring&gclid=G-1", page(api.base));
    await p.waitForFunction(() => document.getElementById("f5")!.textContent === "7375550142");
    expect(await texts(p, FORMATS.map((f) => f[0]))).toEqual(FORMATS.map((f) => f[2]));
    expect(await hrefs(p, LINKS.map((l) => l[0]))).toEqual(LINKS.map((l) => l[2]));
    // Script text and form fields are not page text.
    expect(await p.evaluate(() => [document.scripts[0].textContent, document.getElementById("ta").value]))
      .toEqual(['var inline = "5125550199";', "5125550199"]);
    const lease = api.seen.find((s) => s.action === "lease")!;
    expect(lease.body).toEqual({
      pool: "acme-site", visitor: expect.stringMatching(/^[0-9a-f]{24}$/),
      utm: { source: "google", medium: "cpc", campaign: "spring" }, gclid: "G-1", gbraid: "", wbraid: "", fbclid: "", msclkid: "",
      landing: `${site.base}/formats?utm_source=google&utm_medium=cpc&utm_campaign=spring&gclid=G-1`, referrer: "",
    });
    // A simple request: no preflight before the lease.
    expect(lease.contentType).toStartWith("text/plain");
    expect(api.preflights()).toBe(0);
    await p.waitForFunction(() => true);
    const pageview = await waitFor(() => api.seen.find((s) => s.action === "event" && s.body.kind === "pageview"));
    expect(pageview.body).toEqual({ pool: "acme-site", visitor: lease.body.visitor, kind: "pageview", name: "/formats" });
    const cookies = await ctx.cookies(site.base);
    expect(cookies.find((c) => c.name === "_ll_dni")?.value).toBe(lease.body.visitor);
    expect(errors).toEqual([]);
    await ctx.close();
  }, SLOW);

  test("content added later is swapped too (MutationObserver), in text and links", async () => {
    api.answer((action) => (action === "lease" ? leased("7375550142") : Response.json({ ok: true })));
    const { page: p, errors, ctx } = await open("/later", page(api.base));
    await p.waitForFunction(() => document.getElementById("f5")!.textContent === "7375550142");
    await p.evaluate(() => {
      const div = document.createElement("div");
      div.innerHTML = '<span id="n1">Text us at 512.555.0199</span><a id="n2" href="tel:+1 512 555 0199">x</a>';
      document.body.appendChild(div);
      document.getElementById("l2")!.firstChild!.nodeValue = "now (512) 555-0199";
      document.getElementById("t6")!.setAttribute("href", "tel:5125550199");
    });
    await p.waitForFunction(() => document.getElementById("n1")!.textContent === "Text us at 737.555.0142");
    await p.waitForFunction(() => document.getElementById("l2")!.textContent === "now (737) 555-0142");
    expect(await hrefs(p, ["n2", "t6"])).toEqual(["tel:+1 737 555 0142", "tel:7375550142"]);
    expect(errors).toEqual([]);
    await ctx.close();
  }, SLOW);

  test("the visitor id survives a reload, and lives in localStorage when cookies are refused", async () => {
    api.seen.length = 0;
    api.answer((action) => (action === "lease" ? leased("7375550142") : Response.json({ ok: true })));
    const { page: p, ctx } = await open("/reload", page(api.base));
    await p.waitForFunction(() => document.getElementById("f5")!.textContent === "7375550142");
    await p.reload();
    await p.waitForFunction(() => document.getElementById("f5")!.textContent === "7375550142");
    const leases = api.seen.filter((s) => s.action === "lease");
    expect(leases).toHaveLength(2);
    expect(leases[1].body.visitor).toBe(leases[0].body.visitor);
    await ctx.close();

    api.seen.length = 0;
    const noCookies = await browser.newContext();
    await noCookies.addInitScript(() => {
      Object.defineProperty((globalThis as any).Document.prototype, "cookie", { get: () => "", set: () => {}, configurable: true });
    });
    const q = await noCookies.newPage();
    await q.goto(site.base + "/reload");
    await q.waitForFunction(() => document.getElementById("f5")!.textContent === "7375550142");
    await q.reload();
    await q.waitForFunction(() => document.getElementById("f5")!.textContent === "7375550142");
    const again = api.seen.filter((s) => s.action === "lease");
    expect(again).toHaveLength(2);
    expect(again[1].body.visitor).toBe(again[0].body.visitor);
    expect(again[0].body.visitor).not.toBe(leases[0].body.visitor);
    await noCookies.close();
  }, SLOW);

  test("heartbeats while visible; a lost hold is leased again and the new number replaces the old one", async () => {
    api.seen.length = 0;
    let n = 0;
    api.answer((action) => {
      if (action === "lease") return leased(n++ === 0 ? "7375550142" : "7375550177", { ttl: 60 });
      if (action === "heartbeat") return Response.json({ ok: false, error: "not_leased" });
      return Response.json({ ok: true });
    });
    const ctx = await browser.newContext();
    const p = await ctx.newPage();
    const errors = pageErrors(p);
    await p.clock.install();
    site.put("/beat", page(api.base));
    await p.goto(site.base + "/beat");
    await p.waitForFunction(() => document.getElementById("f2")!.textContent === "737-555-0142");
    expect(api.seen.filter((s) => s.action === "heartbeat")).toHaveLength(0);
    // ttl 60 s: a heartbeat every 20 s.
    await p.clock.runFor(20_500);
    await p.waitForFunction(() => document.getElementById("f2")!.textContent === "737-555-0177");
    expect(await texts(p, ["f1", "f6"])).toEqual(["Call (737) 555-0177 today", "+1 737-555-0177"]);
    expect(await hrefs(p, ["t2"])).toEqual(["tel:+17375550177"]);
    expect(api.seen.map((s) => s.action).filter((a) => a !== "event")).toEqual(["lease", "heartbeat", "lease"]);
    // The pageview is recorded once, not again on the second lease.
    expect(api.seen.filter((s) => s.action === "event")).toHaveLength(1);
    expect(errors).toEqual([]);
    await ctx.close();
  }, SLOW);

  test("a form submit is recorded and goes through undelayed", async () => {
    api.seen.length = 0;
    api.answer((action) => (action === "lease" ? leased("7375550142") : Response.json({ ok: true })));
    site.put("/thanks", "<!doctype html><p id=done>thanks</p>");
    const form = `<form id="quote" name="quote" action="/thanks" method="get"><input name="name" value="Ann"><button id="go">Send</button></form>`;
    const { page: p, errors, ctx } = await open("/form", page(api.base, form));
    await p.waitForFunction(() => document.getElementById("f5")!.textContent === "7375550142");
    await Promise.all([p.waitForURL(site.base + "/thanks?name=Ann"), p.click("#go")]);
    const event = await waitFor(() => api.seen.find((s) => s.action === "event" && s.body.kind === "form"));
    expect(event.body).toMatchObject({ kind: "form", name: "quote", meta: { page: "/form" } });
    expect(errors).toEqual([]);
    await ctx.close();
  }, SLOW);

  test("sends every click id from the address; fills each leadline_visitor field, those added later and at submit too", async () => {
    api.seen.length = 0;
    api.answer((action) => (action === "lease" ? leased("7375550142") : Response.json({ ok: true })));
    site.put("/sent", "<!doctype html><p id=done>sent</p>");
    const forms = `<form id="quote" action="/sent" method="get"><input name="name" value="Ann">
        <input type="hidden" name="leadline_visitor" id="h1"><input type="text" name="leadline_visitor" id="h2" value="typed">
        <button id="go">Send</button></form>
      <form id="other"><input type="hidden" name="not_it" id="h3" value="kept"></form>`;
    const query = "gclid=G-2&gbraid=GB-2&wbraid=WB-2&fbclid=FB-2&msclkid=MS-2&utm_source=google";
    const { page: p, errors, ctx } = await open(`/clicks?${query}`, page(api.base, forms));
    await p.waitForFunction(() => document.getElementById("f5")!.textContent === "7375550142");
    const lease = api.seen.find((s) => s.action === "lease")!;
    expect(lease.body).toMatchObject({ gclid: "G-2", gbraid: "GB-2", wbraid: "WB-2", fbclid: "FB-2", msclkid: "MS-2", utm: { source: "google" } });
    const vid = lease.body.visitor;
    const values = (ids: string[]) => p.evaluate((ids) => ids.map((id) => document.getElementById(id).value), ids);
    expect(await values(["h1", "h2", "h3"])).toEqual([vid, vid, "kept"]);
    // A form a widget adds later, and a field on its own.
    await p.evaluate(() => {
      const f = document.createElement("form");
      f.innerHTML = '<input type="hidden" name="leadline_visitor" id="h4">';
      document.body.appendChild(f);
      const i = document.createElement("input");
      i.type = "hidden";
      i.name = "leadline_visitor";
      i.id = "h5";
      document.getElementById("other").appendChild(i);
    });
    await p.waitForFunction(() => document.getElementById("h5").value !== "");
    expect(await values(["h4", "h5"])).toEqual([vid, vid]);
    // The site cleared a field before submitting: the submit fills it again, and the site's handler gets it.
    await p.evaluate(() => (document.getElementById("h1").value = ""));
    await Promise.all([p.waitForURL(/\/sent\?/), p.click("#go")]);
    const sent = new URL(p.url()).searchParams;
    expect(sent.getAll("leadline_visitor")).toEqual([vid, vid]);
    expect(errors).toEqual([]);
    await ctx.close();

    // With the API failing, the fields are left as they were (the page untouched).
    api.answer(() => Response.json({ ok: false, error: "unavailable" }, { status: 503 }));
    const failed = await open("/clicks-down?gclid=G-3", page(api.base, forms));
    await waitFor(() => api.seen.find((s) => s.action === "lease" && s.body.gclid === "G-3"));
    await failed.page.evaluate(() => new Promise((r) => setTimeout(r, 300)));
    expect(await failed.page.evaluate(() => [document.getElementById("h1").value, document.getElementById("h2").value])).toEqual(["", "typed"]);
    await failed.ctx.close();
  }, SLOW);

  test("with the API failing in any way, the page is byte-for-byte untouched and nothing is thrown", async () => {
    const html = page(api.base);
    // The page as the browser builds it with the script never loading at all.
    const ctx0 = await browser.newContext();
    const p0 = await ctx0.newPage();
    await p0.route("**/dni.js", (r) => r.abort());
    site.put("/fail", html);
    await p0.goto(site.base + "/fail");
    const untouched = await p0.content();
    await ctx0.close();

    const failures: [string, (p: Page) => Promise<void>][] = [
      ["HTTP 500 with HTML", async () => api.answer(() => new Response("<h1>oops</h1>", { status: 500 }))],
      ["503 JSON", async () => api.answer(() => Response.json({ ok: false, error: "unavailable" }, { status: 503 }))],
      ["429", async () => api.answer(() => Response.json({ ok: false, error: "rate_limited" }, { status: 429 }))],
      ["not JSON", async () => api.answer(() => new Response("<<<", { status: 200 }))],
      ["JSON without a number", async () => api.answer(() => Response.json({ ok: true }))],
      ["network error", async (p) => void (await p.route("**/hooks/dni.php*", (r) => r.abort("connectionrefused")))],
    ];
    for (const [label, arrange] of failures) {
      const ctx = await browser.newContext();
      const p = await ctx.newPage();
      const errors = pageErrors(p);
      await arrange(p);
      const done = p.waitForEvent("requestfinished", { predicate: (r) => r.url().includes("action=lease") }).catch(() => null);
      const failed = p.waitForEvent("requestfailed", { predicate: (r) => r.url().includes("action=lease") }).catch(() => null);
      await p.goto(site.base + "/fail");
      await Promise.race([done, failed]);
      await p.evaluate(() => new Promise((r) => setTimeout(r, 100)));
      expect({ label, content: await p.content() }).toEqual({ label, content: untouched });
      expect({ label, errors }).toEqual({ label, errors: [] });
      await ctx.close();
    }
  }, SLOW);
});

async function waitFor<T>(find: () => T | undefined, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (Date.now() > end) throw new Error("timed out waiting");
    await Bun.sleep(20);
  }
}
