// Caches keyed by text from data stay bounded however many distinct keys arrive (docs/operations.md,
// "Memory"): the zone formatters, keyed by a calendar's or a quiet-hours zone name, which Intl
// accepts in any letter case, so one zone has thousands of spellings.
import { expect, test } from "bun:test";
import { keptAbbrFormatters, zoneAbbr } from "../src/booking/zone";
import { isZone, keptFormatters } from "../src/zone";

/** The i-th spelling of America/Chicago: its letters upper or lower case by the bits of i. */
function spelling(i: number): string {
  let bit = 0;
  return [..."America/Chicago"].map((c) => (/[a-z]/i.test(c) ? ((i >> bit++) & 1 ? c.toUpperCase() : c.toLowerCase()) : c)).join("");
}

test("zone formatters: at most 1000 kept, however many spellings of a zone come", () => {
  for (let i = 0; i < 2500; i++) expect(isZone(spelling(i))).toBe(true);
  expect(keptFormatters()).toBeGreaterThan(0);
  expect(keptFormatters()).toBeLessThanOrEqual(1000);
});

test("zone abbreviation formatters: at most 1000 kept", () => {
  for (let i = 0; i < 2500; i++) expect(zoneAbbr(Date.UTC(2026, 0, 15), spelling(i))).toBe("CST");
  expect(keptAbbrFormatters()).toBeGreaterThan(0);
  expect(keptAbbrFormatters()).toBeLessThanOrEqual(1000);
});
