// The two passes of `make test` (test/run.ts): test files that run in this process alone (the
// service in-process, its database, fakes on 127.0.0.1) first, then those that start other
// processes: the compiled executable or `bun src/main.ts`, Chromium, nginx, PgBouncer, PostgreSQL
// clusters, pg_dump. The first pass is most of the suite and fails fast; the second is where the
// machine's load is felt most.
//
// Read from the source, so that no list has to be kept: a file starts processes when it calls a
// process API itself (Bun.spawn, node:child_process, playwright's launch), or a harness function
// or class that does, directly or through another harness function (test/harness/*.ts, followed
// to a fixed point). A new spawning helper is found the same way; test/passes.test.ts holds the
// classification of known files.
import { readdirSync, readFileSync } from "node:fs";
import { basename, join, relative, resolve } from "node:path";

/**
 * Calls that start a process (the word `spawn` alone also names cluster.ts's own wrapper), looked
 * for in code with its comments and quoted strings blanked out (`code`), and imports of
 * node:child_process or of Bun's shell (`$`), looked for at the start of a line.
 */
const STARTS_A_PROCESS =
  /\bBun\.spawn(Sync)?\(|\bspawn(Sync)?\(|\bexecFile(Sync)?\(|\bexecSync\(|\bfork\(|\bchromium\.launch\(|\bBun\.\$`/;
const IMPORTS_A_PROCESS_API = /^\s*import\s[^;]*from\s*["'](node:)?child_process["']|^\s*import\s*\{[^}]*\$\s*[,}][^;]*from\s*["']bun["']/m;

/** `source` without its comments and the insides of its quoted strings (template literals kept: they hold code). */
const code = (source: string) =>
  source.replace(/"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|\/\/[^\n]*|\/\*[\s\S]*?\*\//g, (m) => (m[0] === '"' || m[0] === "'" ? m[0] + m[0] : ""));

const startsDirectly = (source: string) => IMPORTS_A_PROCESS_API.test(source) || STARTS_A_PROCESS.test(code(source));

/** A top-level declaration of a module and its text up to the next one. */
interface Declaration {
  name: string;
  exported: boolean;
  text: string;
}

const DECLARATION = /^(export\s+)?(?:default\s+)?(?:async\s+)?(?:function\*?|class|const|let)\s+([A-Za-z_$][\w$]*)/;

function declarations(source: string): Declaration[] {
  const out: Declaration[] = [];
  let current: Declaration | null = null;
  for (const line of source.split("\n")) {
    const m = DECLARATION.exec(line);
    if (m) {
      current = { name: m[2]!, exported: !!m[1], text: "" };
      out.push(current);
    }
    if (current) current.text += line + "\n";
  }
  return out;
}

const calls = (text: string, name: string) => new RegExp(`(?<![\\w$.])${name.replace(/\$/g, "\\$")}\\s*[(<]`).test(text);

/** Names of harness functions and classes that start a process, directly or through each other. */
export function spawningHelpers(harnessDir: string): Set<string> {
  const modules = readdirSync(harnessDir)
    .filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"))
    .map((f) => declarations(readFileSync(join(harnessDir, f), "utf8")));
  // A module's own helpers count within it; across modules, only what it exports.
  const local = modules.map(() => new Set<string>());
  const exported = new Set<string>();
  for (let changed = true; changed; ) {
    changed = false;
    modules.forEach((decls, i) => {
      for (const d of decls) {
        if (local[i]!.has(d.name)) continue;
        const spawns = startsDirectly(d.text) || [...local[i]!, ...exported].some((n) => n !== d.name && calls(code(d.text), n));
        if (!spawns) continue;
        local[i]!.add(d.name);
        if (d.exported) exported.add(d.name);
        changed = true;
      }
    });
  }
  return exported;
}

/** True when the test file's source starts a process itself or through a harness helper. */
export function startsProcesses(source: string, helpers: ReadonlySet<string>): boolean {
  const text = code(source);
  return startsDirectly(source) || [...helpers].some((n) => calls(text, n));
}

/** Every test file of the project (as bun test finds them: *.test.ts outside node_modules), relative to `root`. */
export function allTestFiles(root: string): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === "node_modules" || entry.name.startsWith(".") || entry.name === "dist") continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".test.ts")) found.push(relative(root, path));
    }
  };
  walk(root);
  return found.sort();
}

export interface Passes {
  /** In this process alone: run first. */
  inProcess: string[];
  /** Starting other processes: run second. */
  spawning: string[];
}

/** Splits `files` (paths relative to `root`) into the two passes. */
export function splitPasses(root: string, files: readonly string[]): Passes {
  const helpers = spawningHelpers(join(root, "test", "harness"));
  const passes: Passes = { inProcess: [], spawning: [] };
  for (const file of files) {
    const spawns = startsProcesses(readFileSync(resolve(root, file), "utf8"), helpers);
    (spawns ? passes.spawning : passes.inProcess).push(file);
  }
  return passes;
}

/** `test/x.test.ts` → `x.test.ts`, for messages. */
export const shortName = (file: string) => basename(file);
