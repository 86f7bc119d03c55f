// Debian's Chromium as the browser tests run it, and the one test/run.ts shares with every file of
// a pass (a Playwright browser server): a file connects to it instead of starting a browser of its
// own, which cost 0.8 CPU-s a launch in 23 files. Contexts keep the files apart as separate
// browsers did. No bun:test here: test/run.ts imports it outside the test runner.
import { chromium, type BrowserServer } from "playwright-core";

export const CHROMIUM_PATH = "/usr/bin/chromium";
export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

/** The shared browser's Playwright endpoint, for the test files' launchBrowser (test/harness/browser.ts). */
export const SHARED_BROWSER_VAR = "LEADLINE_TEST_BROWSER";

export function startSharedBrowser(): Promise<BrowserServer> {
  return chromium.launchServer({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
}
