// The demo on the executable (`make run` = `dist/leadline serve --demo`): provisioned on an empty
// data directory only, its banner, every curl line of docs/tour.md run exactly as printed (the one
// substitution being the base URL, as the tour says), its sinks (the automation's SMS sent in the
// timeline, lead.created delivered), the DNI test page in real Chromium, and what happens on a
// second start and without --demo.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Subprocess } from "bun";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import demoFile from "../deploy/demo.json";
import { parseProvisioning, ProvisioningError } from "../src/provision/validate";
import { launchBrowser, pageProblems } from "./harness/browser";
import { freePort } from "./harness/cluster";
import { TEST_DEADLINE_MS } from "./harness/deadline";

// Evaluated in the page, not here.
declare const document: any;
declare const window: any;

const BUILT = resolve(import.meta.dir, "../dist/leadline");
const TOUR = resolve(import.meta.dir, "../docs/tour.md");
const missing = !existsSync(BUILT);
if (missing) console.warn("test/demo.test.ts: SKIPPED: dist/leadline is missing; run `make build` (or `make test`)");

// A give-up, not a bound (as test/harness/exe.ts's START_MS).
const START_MS = 45_000;
const TOUR_BASE = "http://localhost:8080";
const LEADS_KEY = "lk_demo_leads_5tWq8ZpR2mVx7KcN4bYh";
const SECRET_KEY = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

let dir = "";
const children = new Set<Subprocess>();

beforeAll(() => {
  if (missing) return;
  dir = mkdtempSync(join(tmpdir(), "leadline-tour-"));
});

afterAll(() => {
  for (const child of children) child.kill("SIGKILL");
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// The tests' request deadline (harness/deadline.ts): the tour's answers on a busy machine are not about it.
const bareEnv = (env: Record<string, string>) => ({ PATH: "/usr/bin:/bin", HOME: dir, REQUEST_DEADLINE_MS: String(TEST_DEADLINE_MS), ...env });

interface Serving {
  base: string;
  /** Every stdout line so far. */
  lines: string[];
  stop(): Promise<number>;
}

/** `leadline serve [--demo]` on a free port, BASE_URL set to it; resolves once it listens (and, with `until`, once a line matches). */
async function serve(args: string[], dataDir: string, until?: RegExp): Promise<Serving> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const proc = Bun.spawn([BUILT, "serve", ...args], {
    cwd: dir,
    env: bareEnv({ DATA_DIR: dataDir, PORT: String(port), HOST: "127.0.0.1", BASE_URL: base, LEADLINE_SECRET_KEY: SECRET_KEY }),
    stdout: "pipe",
    stderr: "pipe",
  });
  children.add(proc);
  const stderr = new Response(proc.stderr).text();
  const lines: string[] = [];
  const wanted = until ?? /"msg":"listening"/;
  let onReady: () => void = () => {};
  const ready = new Promise<void>((ok) => (onReady = ok));
  void (async () => {
    let buf = "";
    const decoder = new TextDecoder();
    for await (const chunk of proc.stdout) {
      buf += decoder.decode(chunk, { stream: true });
      for (let i = buf.indexOf("\n"); i !== -1; i = buf.indexOf("\n")) {
        lines.push(buf.slice(0, i));
        buf = buf.slice(i + 1);
        if (wanted.test(lines.at(-1)!)) onReady();
      }
    }
  })();
  let timer: Timer | undefined;
  await Promise.race([
    ready,
    proc.exited.then(async (code) => {
      throw new Error(`serve exited with ${code}: ${await stderr}${lines.join("\n")}`);
    }),
    new Promise<never>((_, fail) => {
      timer = setTimeout(() => fail(new Error(`serve did not get ready within ${START_MS} ms: ${lines.join("\n")}`)), START_MS);
    }),
  ]).finally(() => clearTimeout(timer));
  return {
    base,
    lines,
    async stop() {
      proc.kill("SIGTERM");
      const code = await proc.exited;
      children.delete(proc);
      return code;
    },
  };
}

async function cli(args: string[], dataDir: string) {
  const proc = Bun.spawn([BUILT, ...args], { cwd: dir, env: bareEnv({ DATA_DIR: dataDir, LEADLINE_SECRET_KEY: SECRET_KEY }), stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { out, err, code };
}

interface TourStep {
  command: string;
  /** The answer the tour shows under the command, when it is plain JSON (null when abridged with …). */
  shown: unknown;
}

/** Every command of the tour's ```sh blocks, in order, with the JSON answer shown under it. */
function tourSteps(markdown: string): TourStep[] {
  const blocks = [...markdown.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1], body: m[2].trim() }));
  const steps: TourStep[] = [];
  blocks.forEach((b, i) => {
    if (b.lang !== "sh") return;
    expect(b.body.split("\n")).toHaveLength(1); // one command per block, runnable as it is
    const next = blocks[i + 1];
    let shown: unknown = null;
    if (next?.lang === "json") {
      try {
        shown = JSON.parse(next.body);
      } catch {}
    }
    steps.push({ command: b.body, shown });
  });
  return steps;
}

function bash(command: string) {
  const r = Bun.spawnSync(["bash", "-c", command], { cwd: dir, env: bareEnv({}), stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
}

describe.skipIf(missing)("the demo (serve --demo)", () => {
  const data = () => join(dir, "data");

  test("serve without --demo on an empty data directory provisions nothing", async () => {
    const s = await serve([], join(dir, "plain-data"));
    try {
      expect((await fetch(`${s.base}/demo/dni`)).status).toBe(404);
      const r = await fetch(`${s.base}/hooks/lead_intake.php`, { method: "POST", headers: { "x-api-key": LEADS_KEY }, body: new URLSearchParams({ phone: "5125550142" }) });
      expect(r.status).toBe(403);
      expect(await r.json()).toEqual({ ok: false, error: "forbidden" });
      // Log lines, not access lines (whose route family of /demo/dni is "demo").
      expect(s.lines.filter((l) => !l.includes('"family":')).join("\n")).not.toMatch(/demo/i);
    } finally {
      expect(await s.stop()).toBe(0);
    }
  }, 90_000);

  test("a fresh data directory gets the demo, its banner, and the whole tour works as printed", async () => {
    mkdirSync(data(), { mode: 0o700 });
    const s = await serve(["--demo"], data(), /five-minute tour/);
    try {
      const banner = s.lines.filter((l) => !l.startsWith("{")).join("\n");
      for (const k of demoFile.api_keys) expect(banner).toContain(`${k.key}  ${k.scopes.join(" ")}`);
      expect(banner).toContain("(agent demo-agent)");
      expect(banner).toContain(`booking page   ${s.base}/book/demo`);
      expect(banner).toContain(`DNI test page  ${s.base}/demo/dni`);
      expect(banner).toContain(`API docs       ${s.base}/docs`);
      expect(banner).toContain("README.md");
      // Printed once, after the server listens: nothing of it in the JSON log lines.
      expect(s.lines.filter((l) => l.includes(demoFile.api_keys[0].key))).toHaveLength(1);

      const steps = tourSteps(readFileSync(TOUR, "utf8"));
      const curls = steps.filter((st) => st.command.startsWith("curl "));
      expect(curls.length).toBeGreaterThanOrEqual(18);
      for (const op of ["lead_intake.php", "r=leads/7", "r=conversations/7", "r=messages", "r=cti/dial", "r=cti/lookup", "cti_queue.php", "calls.php", "kpi_ingest.php", "action=lease", "action=heartbeat", "action=event", "action=slots", "action=book", "action=reschedule"]) {
        expect(curls.some((st) => st.command.includes(op))).toBe(true);
      }
      for (const step of curls) {
        expect(step.command).toContain(TOUR_BASE);
        let r = bash(step.command.replaceAll(TOUR_BASE, s.base));
        // The automation's SMS goes out from a worker a moment after intake; the tour shows the
        // conversation with it, as a person a few seconds later sees it.
        for (let i = 0; step.command.includes("r=conversations/7") && !r.out.includes("thanks for contacting") && i < 100; i++) {
          await Bun.sleep(100);
          r = bash(step.command.replaceAll(TOUR_BASE, s.base));
        }
        expect({ command: step.command, code: r.code, err: r.err }).toEqual({ command: step.command, code: 0, err: "" });
        const answer = JSON.parse(r.out) as Record<string, unknown>;
        expect({ command: step.command, ok: answer.ok }).toEqual({ command: step.command, ok: true });
        if (step.shown !== null) {
          // The answer shown has the fields the server gives, and its ids are this run's.
          const shown = step.shown as Record<string, unknown>;
          expect(Object.keys(answer).sort()).toEqual(Object.keys(shown).sort());
          // Message ids depend on when the automation's sends ran; the rest is fixed by a fresh demo.
          for (const f of ["lead_id", "deduped", "upserts", "found", "appt_id", "call_id", "id"]) {
            if (f in shown) expect({ command: step.command, [f]: answer[f] }).toEqual({ command: step.command, [f]: shown[f] });
          }
        }
      }

      // The automation's SMS, merged and sent by the sink, in lead 7's timeline; so are the tour's sends.
      const conversation = (await (await fetch(`${s.base}/hooks/api_v1.php?r=conversations/7`, { headers: { "x-api-key": LEADS_KEY } })).json()) as { entries: Record<string, unknown>[] };
      const msgs = conversation.entries.filter((e) => e.kind === "msg");
      expect(msgs.find((m) => m.actor_type === "automation")).toMatchObject({ channel: "sms", body: "Hi Ada, thanks for contacting Demo Roofing!", status: "sent", error: "" });
      expect(msgs.find((m) => m.channel === "sms" && m.actor_type !== "automation")).toMatchObject({ body: "Hi Ada, can we come by tomorrow?", status: "sent" });
      expect(msgs.find((m) => m.channel === "email")).toMatchObject({ subject: "Your estimate", status: "sent", error: "" });
      expect(conversation.entries.some((e) => e.kind === "call")).toBe(true);
      expect(conversation.entries.some((e) => e.kind === "event" && String(e.event).startsWith("appointment."))).toBe(true);

      // The DNI test page in a real browser: the placeholder swapped for a number of the pool.
      const browser = await launchBrowser();
      try {
        for (const width of [1280, 375]) {
          const page = await browser.newPage({ viewport: { width, height: 800 } });
          const problems = pageProblems(page);
          await page.goto(`${s.base}/demo/dni`);
          await page.waitForFunction(() => !document.getElementById("phone").textContent.includes("0199"), null, { timeout: 10_000 });
          const text = await page.locator("#phone").textContent();
          const href = await page.locator("#phone").getAttribute("href");
          const pool = demoFile.dni_pools[0].numbers;
          const digits = text!.replace(/\D/g, "");
          expect(pool).toContain(digits);
          expect(text).toMatch(/^\(\d{3}\) \d{3}-\d{4}$/);
          expect(href).toBe(`tel:+1${digits}`);
          // The explanation still names the placeholder: /dni.js swapped only the number to call.
          expect(await page.locator("#placeholder").textContent()).toBe("512\u2011555\u20110199");
          expect(problems).toEqual([]);
          expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
          await page.screenshot({ path: `/tmp/demo-dni-${width}.png`, fullPage: true });
          await page.close();
        }
      } finally {
        await browser.close();
      }
      const headers = (await fetch(`${s.base}/demo/dni`)).headers;
      expect(headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(headers.get("content-security-policy")).toContain("script-src 'self';");
      expect(headers.get("content-security-policy")).not.toContain("unsafe-inline");
    } finally {
      expect(await s.stop()).toBe(0);
    }

    // The embedded database has one process: with serve stopped, the CLI shows the sunk deliveries.
    const tourCli = tourSteps(readFileSync(TOUR, "utf8")).filter((st) => st.command.startsWith("./dist/leadline "));
    expect(tourCli.map((st) => st.command)).toEqual(["./dist/leadline webhooks deliveries", "./dist/leadline webhooks attempts 1"]);
    const listed = await cli(["webhooks", "deliveries", "--json"], data());
    expect(listed.code).toBe(0);
    const deliveries = JSON.parse(listed.out) as Record<string, unknown>[];
    // The six leads of the living workspace (src/demo/workspace.ts), then the tour's two.
    expect(deliveries.filter((d) => d.type === "lead.created" && d.status === "delivered")).toHaveLength(8);
    const attempts = await cli(["webhooks", "attempts", "1"], data());
    expect(attempts.code).toBe(0);
    expect(attempts.out).toContain("sink:");
    expect(attempts.out).toMatch(/\b200\b/);
  }, 180_000);

  test("a second serve --demo on the same data says it was not applied and keeps the data", async () => {
    const s = await serve(["--demo"], data(), /demo not applied/);
    try {
      expect(s.lines.filter((l) => !l.startsWith("{"))).toEqual(["demo not applied: the database is not empty (serve --demo provisions only an empty one)"]);
      const lead = (await (await fetch(`${s.base}/hooks/api_v1.php?r=leads/8`, { headers: { "x-api-key": LEADS_KEY } })).json()) as { lead: { first_name: string } };
      expect(lead.lead.first_name).toBe("Grace");
      expect((await fetch(`${s.base}/demo/dni`)).status).toBe(200);
    } finally {
      expect(await s.stop()).toBe(0);
    }
  }, 90_000);
});

describe("sink: addresses in a provisioning file", () => {
  const org = (sms: string, smtp: string) => ({
    id: 1,
    name: "X",
    sms: { base_url: sms, account_sid: "AC1", auth_token: "t", from: "5125550100" },
    email: { smtp_url: smtp, from: "x@example.com" },
  });
  const hook = (url: string) => ({ id: 1, org_id: 1, url, secret: "whsec_bGVhZGxpbmUtZGVtby13ZWJob29rLXNlY3JldC0zMmI=", events: ["lead.created"] });

  test("are accepted for sms.base_url, email.smtp_url and webhooks' url", () => {
    expect(() => parseProvisioning(JSON.stringify({ orgs: [org("sink:", "sink:")], webhooks: [hook("sink:")] }))).not.toThrow();
    expect(() => parseProvisioning(JSON.stringify(demoFile))).not.toThrow();
  });

  test("only as exactly `sink:`, and nowhere else", () => {
    let message = "";
    try {
      parseProvisioning(JSON.stringify({ settings: { BASE_URL: "sink:" }, orgs: [org("sink:x", "sink://")], webhooks: [hook("SINK:")] }));
    } catch (err) {
      expect(err).toBeInstanceOf(ProvisioningError);
      message = (err as Error).message;
    }
    expect(message).toContain('orgs[0].sms.base_url: expected an http or https URL or "sink:"');
    expect(message).toContain('orgs[0].email.smtp_url: expected an smtp or smtps URL or "sink:"');
    expect(message).toContain('webhooks[0].url: expected an http or https URL or "sink:"');
    expect(message).toContain("settings.BASE_URL: expected an http or https URL;");
  });
});
