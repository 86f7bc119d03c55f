// bench/RESULTS.md is written in sections, each owned by one writer and replaced whole by it:
// `bench` (bench/report.ts, from `make bench`) and `soak` (bench/soak.ts, from `make soak`). A
// section sits between `<!-- section:NAME -->` and `<!-- /section:NAME -->`; the rest of the file
// is kept as it is.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const RESULTS_MD = join(import.meta.dir, "RESULTS.md");

const HEADER = [
  "# Leadline benchmark results",
  "",
  "Written by `make bench` (every section but the soak) and `make soak` (the soak); bench/README.md says how each figure is measured.",
  "",
  "<!-- section:bench -->",
  "Not yet measured: run `make bench`.",
  "<!-- /section:bench -->",
  "",
  "<!-- section:soak -->",
  "## Soak",
  "",
  "Not yet measured: run `make soak`.",
  "<!-- /section:soak -->",
  "",
].join("\n");

/** Replaces (or appends) section `name` of bench/RESULTS.md with `body`. */
export function writeSection(name: string, body: string, file = RESULTS_MD): void {
  const text = existsSync(file) ? readFileSync(file, "utf8") : HEADER;
  const open = `<!-- section:${name} -->`;
  const close = `<!-- /section:${name} -->`;
  const block = `${open}\n${body.trim()}\n${close}`;
  const a = text.indexOf(open);
  const b = text.indexOf(close);
  const out = a >= 0 && b > a ? text.slice(0, a) + block + text.slice(b + close.length) : text.trimEnd() + "\n\n" + block + "\n";
  writeFileSync(file, out);
}
