// Real headless Chromium for browser tests: Debian's /usr/bin/chromium driven by playwright-core
// (never a downloaded browser), and a tiny static site on its own origin to load scripts into.
import { setDefaultTimeout } from "bun:test";
import { chromium, type Browser, type Page } from "playwright-core";
import { CHROMIUM_ARGS, CHROMIUM_PATH, SHARED_BROWSER_VAR } from "./chromium";

// A give-up, not a bound: a test that loads pages, runs axe-core at two widths and takes full-page
// screenshots took 19 s alone and passed 30 s (test/run.ts's default) in a full quiet run beside
// /docs's axe run. Every file that drives Chromium gets two minutes a test unless it names its own.
setDefaultTimeout(120_000);

/**
 * The browser test/run.ts shares (test/harness/chromium.ts) when it runs the file, else one of the
 * file's own. Either way `close()` ends what the file made: a connected browser's contexts close
 * and the connection ends, the shared browser goes on.
 */
export function launchBrowser(): Promise<Browser> {
  const shared = process.env[SHARED_BROWSER_VAR];
  if (shared) return chromium.connect(shared);
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
}

export interface Site {
  /** e.g. http://127.0.0.1:PORT — a different origin from any app under test. */
  base: string;
  /** Sets or replaces a page (path → HTML). */
  put(path: string, html: string): void;
  stop(): void;
}

/** Static HTML pages on a free port of 127.0.0.1; unknown paths are 404. */
export function serveSite(pages: Record<string, string> = {}): Site {
  const map = new Map(Object.entries(pages));
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const html = map.get(new URL(req.url).pathname);
      if (html === undefined) return new Response("not found", { status: 404 });
      return new Response(html, { headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" } });
    },
  });
  return {
    base: `http://127.0.0.1:${server.port}`,
    put: (path, html) => void map.set(path, html),
    stop: () => void server.stop(true),
  };
}

/** Collects uncaught page errors (exceptions and unhandled rejections) for a test to assert on. */
export function pageErrors(page: Page): Error[] {
  const errors: Error[] = [];
  page.on("pageerror", (err) => errors.push(err));
  return errors;
}

/** Everything a page reports as going wrong, as text, for a test to expect to be empty. */
export function pageProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on("console", (msg) => {
    if (msg.type() === "error" || msg.type() === "warning") problems.push(`console.${msg.type()}: ${msg.text()}`);
  });
  page.on("pageerror", (err) => problems.push(`pageerror: ${err.message}`));
  page.on("requestfailed", (req) => {
    // A load cancelled is not a failure: leaving a page aborts its requests in flight (an event
    // stream, a timeline poll, an htmx refresh, the tab's icon), as does a second navigation or an
    // htmx request that replaces the one before it. Chromium reports each as net::ERR_ABORTED.
    if (req.failure()?.errorText === "net::ERR_ABORTED") return;
    problems.push(`requestfailed: ${req.url()} ${req.failure()?.errorText ?? ""}`);
  });
  return problems;
}

/** Where screenshots of pages people see go: LEADLINE_SHOTS or a directory under the temp dir. */
export const SHOTS_DIR = process.env.LEADLINE_SHOTS || "/tmp/leadline-shots";

const AXE = new URL("../../node_modules/axe-core/axe.min.js", import.meta.url).pathname;

/**
 * axe-core's serious and critical findings on the page as it is now (none expected), all rules but `skip`. The page's
 * context needs `bypassCSP: true`: axe is injected as a script tag, which a strict CSP refuses.
 */
export async function axeProblems(page: Page, skip: readonly string[] = []): Promise<string[]> {
  if (!(await page.evaluate("typeof axe === 'object'"))) await page.addScriptTag({ path: AXE });
  // resultTypes: every violation in full, but a single node for each of the other result types:
  // axe otherwise builds a unique selector for every node that passes, which on a page as long as
  // /docs (16,000 elements) took more than half of axe's time. The violations found are the same.
  // `skip`: rules a caller has shown cannot change since an earlier run (see test/docs-page.test.ts).
  const rules = Object.fromEntries(skip.map((id) => [id, { enabled: false }]));
  const result = (await page.evaluate(`axe.run({ resultTypes: ["violations"], rules: ${JSON.stringify(rules)} })`)) as { violations: { id: string; impact: string; nodes: { target: string[] }[] }[] };
  return result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.impact} ${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}
