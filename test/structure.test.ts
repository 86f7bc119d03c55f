// The code's layout rules, checked on the source: no import cycle between parts of src/, imports
// pointing down the layers (STYLE.md), and the compiled-in migration list matching sql/.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { migrations } from "../src/db/migrations";

const root = resolve(import.meta.dir, "..");
const src = join(root, "src");

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : /\.tsx?$/.test(name) ? [path] : [];
  });
}

/** A file's part of src/: its top folder, or the file's own name for top-level files. */
const partOf = (file: string) => {
  const rel = relative(src, file).split("/");
  return rel.length === 1 ? rel[0].replace(/\.tsx?$/, "") : rel[0];
};

/** part → the parts it imports (relative imports of .ts modules; type-only imports count too). */
function importGraph(): Map<string, Map<string, string>> {
  const graph = new Map<string, Map<string, string>>();
  for (const file of files(src)) {
    const from = partOf(file);
    const edges = graph.get(from) ?? new Map<string, string>();
    graph.set(from, edges);
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^;]*?from\s+"(\.[^"]+)"/g)) {
      const target = resolve(dirname(file), m[1]);
      if (!target.startsWith(src + "/")) continue;
      const to = partOf(target.endsWith(".ts") ? target : target + ".ts");
      if (to !== from && !edges.has(to)) edges.set(to, `${relative(root, file)} → ${m[1]}`);
    }
  }
  return graph;
}

function cycles(graph: Map<string, Map<string, string>>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (n: string) => {
    state.set(n, "open");
    stack.push(n);
    for (const m of graph.get(n)?.keys() ?? []) {
      if (state.get(m) === "open") found.push([...stack.slice(stack.indexOf(m)), m]);
      else if (!state.has(m)) visit(m);
    }
    stack.pop();
    state.set(n, "done");
  };
  for (const n of graph.keys()) if (!state.has(n)) visit(n);
  return found;
}

const FEATURES = ["leads", "conversations", "messages", "cti", "calls", "kpi", "dni", "booking", "events", "automations", "provision"];

describe("layout", () => {
  const graph = importGraph();
  const imports = (part: string) => [...(graph.get(part)?.entries() ?? [])];

  test("no import cycle between parts of src/", () => {
    expect(cycles(graph).map((c) => c.join(" → "))).toEqual([]);
  });

  test("errors, clock, zone and config import nothing of the app; db imports only those and log", () => {
    for (const part of ["errors", "clock", "zone", "config"]) expect({ part, imports: imports(part) }).toEqual({ part, imports: [] });
    const db = imports("db").filter(([to]) => !["errors", "clock", "config", "log"].includes(to));
    expect(db).toEqual([]);
  });

  test("http/ imports no feature and no assembly; no feature imports the assembly", () => {
    expect(imports("http").filter(([to]) => FEATURES.includes(to) || to === "app")).toEqual([]);
    for (const f of FEATURES) expect({ f, app: imports(f).filter(([to]) => to === "app" || to === "cli") }).toEqual({ f, app: [] });
  });
});

describe("migrations", () => {
  test("the compiled-in list is exactly the files in sql/, in order", () => {
    const onDisk = readdirSync(join(root, "sql")).filter((f) => f.endsWith(".sql")).sort();
    expect(migrations.map((m) => `${m.name}.sql`)).toEqual(onDisk);
    migrations.forEach((m, i) => {
      expect(m.version).toBe(i + 1);
      expect(m.name.startsWith(String(i + 1).padStart(4, "0") + "_")).toBe(true);
      expect(m.sql).toBe(readFileSync(join(root, "sql", `${m.name}.sql`), "utf8"));
    });
  });
});
