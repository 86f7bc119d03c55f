// Real headless Chromium for the booking page's tests: Debian's /usr/bin/chromium driven by
// playwright-core (never a downloaded browser), and a collector of everything the page reports
// as an error (console errors, uncaught exceptions, failed requests).
import { chromium, type Browser, type Page } from "playwright-core";

export const CHROMIUM_PATH = "/usr/bin/chromium";
export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
}

/** Everything a page reports as going wrong, as text, for a test to expect to be empty. */
export function pageProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on("console", (msg) => {
    if (msg.type() === "error" || msg.type() === "warning") problems.push(`console.${msg.type()}: ${msg.text()}`);
  });
  page.on("pageerror", (err) => problems.push(`pageerror: ${err.message}`));
  page.on("requestfailed", (req) => problems.push(`requestfailed: ${req.url()} ${req.failure()?.errorText ?? ""}`));
  return problems;
}

/** Where screenshots go: LEADLINE_SHOTS or a directory under the system's temp dir. */
export const SHOTS_DIR = process.env.LEADLINE_SHOTS || "/tmp/leadline-booking-shots";
