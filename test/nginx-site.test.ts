// The shipped nginx site (deploy/nginx/): `nginx -t` as Debian would load it, then real requests
// through a real nginx to running instances over TLS and plain HTTP: intake, DNI with CORS, bodies
// over the route's limit and over the server's, the booking page, /dni.js caching, HSTS, certbot's
// webroot and the redirect, the access log's contents, the console's Host check, and which
// failures send a request to the next instance.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { connect, createServer, type Server } from "node:net";
import { call, startApp, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { testDatabase, type TestDatabase } from "./harness/db";
import { poolNumbers, provisionPools, T0 } from "./harness/dni";
import { makeUser } from "./harness/console";
import { makeKey, seedWorld } from "./harness/factory";
import { checkAsDebian, ensureNginx, SHIPPED_FIRST_CERT, SHIPPED_SITE, startNginx, type RunningNginx } from "./harness/nginx";

const nginx = ensureNginx();
if ("missing" in nginx) console.warn(`nginx-site.test.ts: skipping: ${nginx.missing}`);
const NGINX = "missing" in nginx ? "" : nginx.path;
const tls = { tls: { rejectUnauthorized: false } } as RequestInit;

let db: TestDatabase;
const apps: TestApp[] = [];
const proxies: RunningNginx[] = [];
let key: string;
const clock = new ManualClock(T0);

const port = (a: TestApp) => Number(new URL(a.base).port);

beforeAll(async () => {
  if (!NGINX) return;
  db = await testDatabase();
  await seedWorld(db.sql);
  await provisionPools(db.sql, [{ key: "site", numbers: poolNumbers(4) }]);
  const hours = { mon: [["09:00", "17:00"]], tue: [["09:00", "17:00"]], wed: [["09:00", "17:00"]], thu: [["09:00", "17:00"]], fri: [["09:00", "17:00"]] };
  await db.sql`insert into calendars (id, org_id, name, timezone, slot_minutes, capacity, min_notice_minutes, horizon_days, hours)
               values (1, 1, 'Free roof estimate', 'America/Chicago', 30, 1, 60, 14, ${db.sql.json(hours)})`;
  await db.sql`insert into calendar_links (slug, calendar_id) values ('acme-estimate', 1)`;
  key = (await makeKey(db.sql, { scopes: ["leads:write", "leads:read"], org: 1 })).key;
});
afterAll(async () => {
  await Promise.all(proxies.map((p) => p.stop()));
  await Promise.all(apps.map((a) => a.stop()));
  await db?.drop();
});

async function launch(): Promise<TestApp> {
  const a = await startApp(db.url, {}, { clock });
  apps.push(a);
  return a;
}

async function proxy(upstream: number | number[]): Promise<RunningNginx> {
  const p = await startNginx(NGINX, upstream);
  proxies.push(p);
  expect(p.check.output).toContain("test is successful");
  return p;
}

const intake = (base: string, phone: string, init: RequestInit = {}) =>
  call(base, "/hooks/lead_intake.php", { method: "POST", key, json: { phone, list_id: 101 }, ...tls, ...init });

const leadsWithPhone = async (phone: string) =>
  (await db.sql`select count(*)::int as n from leads where phone = ${phone}`)[0].n as number;

describe.skipIf(!NGINX)("nginx -t", () => {
  test("the site in sites-enabled and the log format in conf.d pass inside Debian's own nginx.conf, next to its default site", () => {
    const check = checkAsDebian(NGINX);
    expect(check.output).toContain("test is successful");
    expect(check.status).toBe(0);
  });

  test("before the first certificate exists, the first-certificate server passes alone and answers the challenge as the site will", () => {
    const check = checkAsDebian(NGINX, { firstCert: true });
    expect(check.output).toContain("test is successful");
    expect(check.status).toBe(0);
    const challenge = (file: string) => readFileSync(file, "utf8").match(/location \^~ \/\.well-known\/acme-challenge\/ \{[^}]*\}/)?.[0];
    expect(challenge(SHIPPED_FIRST_CERT)).toContain("root /var/www/letsencrypt;");
    expect(challenge(SHIPPED_FIRST_CERT)).toBe(challenge(SHIPPED_SITE));
  });
});

describe.skipIf(!NGINX)("through the shipped site", () => {
  let app: TestApp;
  let site: RunningNginx;
  beforeAll(async () => {
    app = await launch();
    site = await proxy(port(app));
  });

  test("intake with a key: 200 and the lead", async () => {
    const r = await intake(site.base, "5125550301");
    expect(r.status).toBe(200);
    expect(r.body.ok).toBe(true);
    expect(await leadsWithPhone("5125550301")).toBe(1);
  });

  test("HSTS on https (a year, not preload); no nginx version anywhere", async () => {
    const r = await fetch(`${site.base}/book/acme-estimate`, tls);
    await r.text();
    expect(r.headers.get("strict-transport-security")).toBe("max-age=31536000");
    expect(r.headers.get("server")).toBe("nginx");
    const redirect = await fetch(`${site.plain}/book/acme-estimate`, { redirect: "manual" });
    expect(redirect.headers.get("server")).toBe("nginx");
    expect(redirect.headers.get("strict-transport-security")).toBeNull();
  });

  test("TLS 1.2 and 1.3 only, HTTP/2 offered", () => {
    const hello = (...args: string[]) =>
      spawnSync("openssl", ["s_client", "-connect", new URL(site.base).host, "-servername", "leads.example.com", ...args], { input: "", encoding: "utf8", timeout: 10_000 });
    expect(hello("-tls1_2").stdout).toMatch(/New, TLSv1\.2, Cipher is ECDHE-/);
    expect(hello("-tls1_3").stdout).toMatch(/New, TLSv1\.3, Cipher is TLS_/);
    // The client would go down to TLS 1.0 (OpenSSL's own floor lowered): the site refuses.
    for (const version of ["-tls1", "-tls1_1"]) expect(hello(version, "-cipher", "DEFAULT@SECLEVEL=0").stdout).toMatch(/New, \(NONE\), Cipher is \(NONE\)/);
    expect(hello("-alpn", "h2,http/1.1").stdout).toContain("ALPN protocol: h2");
  });

  test("a DNI lease from a page on another site: 200 with the service's CORS header; the preflight 204", async () => {
    const r = await call(site.base, "/hooks/dni.php?action=lease", {
      method: "POST",
      json: { pool: "site", visitor: "nginx-v1" },
      headers: { origin: "https://customer.example" },
      ...tls,
    });
    expect(r.status).toBe(200);
    expect(r.headers.get("access-control-allow-origin")).toBe("*");
    expect(r.body).toMatchObject({ ok: true, fallback: false });
    const pre = await fetch(`${site.base}/hooks/dni.php?action=lease`, {
      method: "OPTIONS",
      headers: { origin: "https://customer.example", "access-control-request-method": "POST", "access-control-request-headers": "content-type" },
      ...tls,
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe("*");
    expect(pre.headers.get("access-control-allow-methods")).toBe("POST");
  });

  test("a body over the route's limit: the service's JSON 413 body_too_large, not nginx's page", async () => {
    const r = await call(site.base, "/hooks/lead_intake.php", {
      method: "POST",
      key,
      json: { phone: "5125550302", list_id: 101, notes: "x".repeat(100 * 1024) },
      ...tls,
    });
    expect(r.status).toBe(413);
    expect(r.body).toEqual({ ok: false, error: "body_too_large", message: "body over 64 KiB" });
    // On DNI too, with its CORS header (a browser can read it).
    const d = await call(site.base, "/hooks/dni.php?action=lease", {
      method: "POST",
      body: JSON.stringify({ pool: "site", visitor: "v", pad: "x".repeat(100 * 1024) }),
      headers: { "content-type": "application/json", origin: "https://customer.example" },
      ...tls,
    });
    expect(d.headers.get("access-control-allow-origin")).toBe("*");
    expect(typeof d.body).toBe("object");
  });

  test("up to the service's 8 MiB ceiling the service answers with its JSON; past it nginx's 413, where the service's own would be bare too", async () => {
    const post = (body: string) =>
      call(site.base, "/hooks/lead_intake.php", { method: "POST", headers: { "content-type": "application/json", "x-api-key": key }, body, ...tls });
    const ceiling = await post("x".repeat(8 * 1024 * 1024));
    expect({ status: ceiling.status, body: ceiling.body }).toEqual({ status: 413, body: { ok: false, error: "body_too_large", message: "body over 64 KiB" } });
    for (const size of [8 * 1024 * 1024 + 1, 9 * 1024 * 1024]) {
      const over = await post("x".repeat(size));
      expect(over.status).toBe(413);
      expect(over.body).toContain("<center>nginx</center>");
    }
    // The instance goes on answering.
    expect((await intake(site.base, "5125550306")).status).toBe(200);
  });

  test("the booking page: 200 HTML with its CSP and no-referrer policy intact", async () => {
    const r = await fetch(`${site.base}/book/acme-estimate`, tls);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(r.headers.get("content-security-policy")).toStartWith("default-src 'none'; script-src 'self';");
    expect(r.headers.get("referrer-policy")).toBe("no-referrer");
    expect(r.headers.get("cache-control")).toBe("no-store");
    expect(await r.text()).toContain("<title>Book a time</title>");
  });

  test("/dni.js: cached by browsers for a day, revalidated with its ETag (304)", async () => {
    const r = await fetch(`${site.base}/dni.js`, tls);
    expect(r.status).toBe(200);
    await r.text();
    expect(r.headers.get("cache-control")).toBe("max-age=86400");
    expect(Date.parse(r.headers.get("expires")!) - Date.parse(r.headers.get("date")!)).toBe(86_400_000);
    expect(r.headers.get("access-control-allow-origin")).toBe("*");
    const etag = r.headers.get("etag")!;
    expect(etag).toMatch(/^"/);
    const again = await fetch(`${site.base}/dni.js`, { headers: { "if-none-match": etag }, ...tls });
    expect(again.status).toBe(304);
    expect(again.headers.get("cache-control")).toBe("max-age=86400");
    expect(again.headers.get("etag")).toBe(etag);
    // The caching rule keeps the site's HSTS (an add_header in a location would drop it).
    expect(again.headers.get("strict-transport-security")).toBe("max-age=31536000");
  });

  test("port 80: certbot's challenge file is served from the webroot; everything else is redirected to https under the site's own name", async () => {
    writeFileSync(`${site.webroot}/.well-known-probe`, "not served");
    mkdirSync(`${site.webroot}/.well-known/acme-challenge`, { recursive: true });
    writeFileSync(`${site.webroot}/.well-known/acme-challenge/tok3n_ABC-123`, "tok3n_ABC-123.thumbprint");
    const acme = await fetch(`${site.plain}/.well-known/acme-challenge/tok3n_ABC-123`, { redirect: "manual" });
    expect(acme.status).toBe(200);
    expect(acme.headers.get("content-type")).toBe("text/plain");
    expect(await acme.text()).toBe("tok3n_ABC-123.thumbprint");
    expect((await fetch(`${site.plain}/.well-known/acme-challenge/missing`, { redirect: "manual" })).status).toBe(404);
    for (const [path, host] of [["/book/acme-estimate?r=abc", "leads.example.com"], ["/.well-known-probe", "evil.example"], ["/", "127.0.0.1"]]) {
      const r = await fetch(`${site.plain}${path}`, { redirect: "manual", headers: { host } });
      expect({ path, status: r.status, location: r.headers.get("location") }).toEqual({ path, status: 301, location: `https://leads.example.com${path}` });
    }
  });

  test("the access log: no client address, no query string (the reschedule token), each request's path and action", async () => {
    const token = "RsChEdUlEtOkEn1234567890abcdef";
    for (const path of [`/book/acme-estimate?r=${token}`, `/book/api.php?action=slots&slug=acme-estimate&r=${token}`]) {
      const r = await fetch(`${site.base}${path}`, tls);
      await r.text();
    }
    await fetch(`${site.plain}/book/acme-estimate?r=${token}`, { redirect: "manual" });
    await intake(site.base, "5125550303", { headers: { "x-forwarded-for": "198.51.100.7" } });
    let log = "";
    // nginx writes the line once the answer is sent; give it a moment.
    for (let i = 0; i < 40 && !log.includes("/book/api.php"); i++) {
      await Bun.sleep(25);
      log = site.accessLog();
    }
    expect(log).toContain(`"GET /book/acme-estimate HTTP/1.1" action=- 200 `);
    expect(log).toContain(`"GET /book/api.php HTTP/1.1" action=slots 200 `);
    expect(log).toContain(`"GET /book/acme-estimate HTTP/1.1" action=- 301 `);
    expect(log).toContain(`"POST /hooks/lead_intake.php HTTP/1.1" action=- 200 `);
    expect(log).toContain(`"POST /hooks/dni.php HTTP/1.1" action=lease 200 `);
    expect(log).toContain(`instance=${port(app)} `);
    expect(log).not.toContain(token);
    expect(log).not.toContain("r=");
    expect(log).not.toContain(key);
    // Neither the client's address (the loopback here) nor one a client wrote.
    expect(log).not.toMatch(/127\.0\.0\.1|\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b|::1/);
    expect(log).not.toContain("198.51.100.7");
  });
});

describe.skipIf(!NGINX)("the console behind the shipped site", () => {
  // The site passes `Host $host` (the name without a port): the console's Host check
  // (src/http/host.ts) takes BASE_URL's name from it, and refuses another name nginx passes on.
  test("a sign-in to BASE_URL's name signs in through nginx; the same form under another name is refused (403)", async () => {
    const a = await startApp(db.url, { BASE_URL: "https://leads.example.com" }, { clock });
    apps.push(a);
    const p = await proxy(port(a));
    const u = await makeUser(db.sql, { role: "agent", orgId: 1 });
    const signIn = (host: string) =>
      fetch(`${p.base}/console/login`, {
        method: "POST",
        redirect: "manual",
        headers: { host, origin: "https://leads.example.com", "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ email: u.email, password: u.password }).toString(),
        ...tls,
      });
    const ok = await signIn(`leads.example.com:${new URL(p.base).port}`);
    expect(ok.status).toBe(303);
    expect(ok.headers.get("set-cookie")).toStartWith("leadline_session=");
    const foreign = await signIn(`evil.example:${new URL(p.base).port}`);
    expect(foreign.status).toBe(403);
    expect(foreign.headers.get("set-cookie")).toBeNull();
  });
});

/**
 * An instance that takes a request and closes the connection without answering (one that died
 * mid-request): counts what it received, by method.
 */
async function dropper(): Promise<{ port: number; received: string[]; server: Server }> {
  const received: string[] = [];
  const server = createServer((socket) => {
    let head = "";
    socket.on("data", (d) => {
      head += d.toString("latin1");
      if (!head.includes("\r\n\r\n")) return;
      received.push(head.slice(0, head.indexOf(" ")));
      socket.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as { port: number }).port, received, server };
}

/**
 * A TCP relay to `target` that counts the connections opened through it and notes which side
 * closed each first.
 */
async function countingRelay(target: number): Promise<{ port: number; connections: () => number; closedBy: string[]; server: Server }> {
  let n = 0;
  const closedBy: string[] = [];
  const server = createServer((socket) => {
    n++;
    const upstream = connect(target, "127.0.0.1");
    let closed = false;
    const first = (side: string) => () => {
      if (!closed) closedBy.push(side);
      closed = true;
    };
    socket.on("end", first("nginx"));
    upstream.on("end", first("instance"));
    socket.pipe(upstream).pipe(socket);
    const end = () => (socket.destroy(), upstream.destroy());
    socket.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as { port: number }).port, connections: () => n, closedBy, server };
}

describe.skipIf(!NGINX)("several instances", () => {
  test("requests are spread over the listed instances, on kept-alive connections that nginx closes first", async () => {
    const [a, b] = [await launch(), await launch()];
    const [ra, rb] = [await countingRelay(port(a)), await countingRelay(port(b))];
    try {
      const site = await proxy([ra.port, rb.port]);
      for (let i = 0; i < 10; i++) {
        const r = await fetch(`${site.base}/dni.js`, tls);
        expect(r.status).toBe(200);
        await r.text();
        const i2 = await intake(site.base, `51255504${String(i).padStart(2, "0")}`);
        expect(i2.status).toBe(200);
      }
      await Bun.sleep(50);
      const log = site.accessLog();
      expect(log).toContain(`instance=${ra.port} `);
      expect(log).toContain(`instance=${rb.port} `);
      // 20 requests, one after another: one connection to each instance, reused.
      expect([ra.connections(), rb.connections()]).toEqual([1, 1]);
      // nginx closes an idle one (after 5 s) before the instance would (10 s): a request is never
      // sent on a connection the instance is closing.
      const started = performance.now();
      while (ra.closedBy.length + rb.closedBy.length < 2 && performance.now() - started < 12_000) await Bun.sleep(100);
      expect([...ra.closedBy, ...rb.closedBy]).toEqual(["nginx", "nginx"]);
    } finally {
      ra.server.close();
      rb.server.close();
    }
  }, 20_000);

  test("an instance that dies mid-request: a GET is answered by the next one, a POST is not sent again (502)", async () => {
    const good = await launch();
    const dead = await dropper();
    try {
      const site = await proxy([dead.port, port(good)]);
      // Round robin starts with the first listed; once that fails, nginx leaves it out for a while.
      const get = await fetch(`${site.base}/book/acme-estimate`, tls);
      expect(get.status).toBe(200);
      await get.text();
      expect(dead.received).toEqual(["GET"]);

      const again = await proxy([dead.port, port(good)]);
      const post = await intake(again.base, "5125550304");
      expect(post.status).toBe(502);
      expect(dead.received).toEqual(["GET", "POST"]);
      expect(await leadsWithPhone("5125550304")).toBe(0);
      // An instance that cannot be reached at all never received the POST: it goes to the next one.
      dead.server.close();
      const third = await proxy([dead.port, port(good)]);
      const sent = await intake(third.base, "5125550305");
      expect(sent.status).toBe(200);
      expect(await leadsWithPhone("5125550305")).toBe(1);
    } finally {
      dead.server.close();
    }
  });
});
