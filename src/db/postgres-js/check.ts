// Run by `make build` on the compiled executable: fails the build when a fix of src/db/postgres-js/*.patch
// is missing from what was compiled (a version bump, a patch that no longer applies, a stale
// node_modules). The executable embeds the bundled source, reformatted by Bun's printer, so each
// fix is looked for as its code with white space collapsed, near a landmark of its function.
import { readFileSync } from "node:fs";

const FIXES = [
  { name: "postgres#1208: no write on a closed socket", near: "function nextWrite(fn)", code: "function nextWrite(fn) { if (!socket) {" },
  {
    name: "no stale write buffer after a close",
    near: "incomings = null",
    code: "incomings = null; clearImmediate(nextWriteTimer); chunk = nextWriteTimer = null;",
  },
  { name: "pool queue: remove searches from the head", near: "remove: (x) =>", code: "xs.indexOf(x, index)" },
  { name: "the pool's state for /metrics (sql.pool)", near: "const sql = Sql(handler)", code: "Object.defineProperty(sql, \"pool\"" },
  { name: "pool queue: compaction", near: "index === xs.length", code: "} else if (index >= 1024 && index * 2 >= xs.length) {" },
  {
    name: "no server error kept past its connection's close",
    near: "CONNECTION_CLOSED\", options, socket));",
    code: "CONNECTION_CLOSED\", options, socket)); errorResponse = null;",
  },
  { name: "postgres#1192: the array types' fetch handled", near: "initial.reserve && (initial = null)", code: "return fetchArrayTypes().catch(" },
];

const path = process.argv[2] ?? "dist/leadline";
const text = readFileSync(path, "latin1");
const collapse = (s: string) => s.replace(/\s+/g, " ");
const missing = FIXES.filter(({ near, code }) => {
  for (let at = text.indexOf(near); at !== -1; at = text.indexOf(near, at + 1)) {
    if (collapse(text.slice(at, at + 400)).includes(code)) return false;
  }
  return true;
});
if (missing.length) {
  console.error(`src/db/postgres-js/check.ts: ${path} lacks: ${missing.map((m) => m.name).join("; ")} (see src/db/postgres-js/README.md)`);
  process.exit(1);
}
