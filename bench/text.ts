// The text suite: every transformation of request-supplied text (merge, HTML to text, phone and
// field normalizers, DNI rules, KPI keys …) on adversarial 64 KiB inputs (test/harness/
// adversarial.ts), in process; no database or server. Prints, per transformation, the slowest
// input and its time (best of 5 runs), and fails when one exceeds the test's bound.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SIZE, worstCases } from "../test/harness/adversarial";

const BOUND_MS = 250;
const RUNS = 5;

worstCases(1); // warm-up: the first calls compile the patterns
const rows = worstCases(RUNS);
const worst = rows.reduce((a, b) => (b.ms > a.ms ? b : a));
const md = [
  "## text: adversarial inputs of 64 KiB, worst case per transformation",
  "",
  `Best of ${RUNS} runs per input; target: each under ${BOUND_MS} ms (a quadratic pattern takes seconds at ${SIZE / 1024} KiB).`,
  "",
  "| transformation | slowest input | ms | target |",
  "|---|---|---|---|",
  ...rows.map((r) => `| ${r.transform} | ${r.input} | ${r.ms.toFixed(2)} | ${r.ms < BOUND_MS ? "met" : "MISSED"} |`),
  "",
  `Worst overall: ${worst.transform} on "${worst.input}", ${worst.ms.toFixed(2)} ms.`,
  "",
].join("\n");
console.log(md);
const results = join(import.meta.dir, "results");
mkdirSync(results, { recursive: true });
writeFileSync(join(results, "text.md"), md);
process.exit(worst.ms < BOUND_MS ? 0 : 1);
