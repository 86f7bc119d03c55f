// `make test`'s two passes (test/harness/passes.ts, test/run.ts): files that start processes are
// found from their source and run after the in-process ones, so a new one cannot land in the fast
// pass unnoticed, however it starts them.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { allTestFiles, spawningHelpers, splitPasses, startsProcesses } from "./harness/passes";

const root = resolve(import.meta.dir, "..");
const scratch = mkdtempSync(join(tmpdir(), "leadline-passes-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("the project's test files", () => {
  const files = allTestFiles(root);
  const passes = splitPasses(root, files);

  test("each is in exactly one pass, and both passes have files", () => {
    expect([...passes.inProcess, ...passes.spawning].sort()).toEqual(files);
    expect(passes.inProcess.length).toBeGreaterThan(20);
    expect(passes.spawning.length).toBeGreaterThan(5);
    expect(files).toContain("test/harness/db.test.ts");
  });

  test("those that start the executable, src/main.ts, Chromium, nginx, PgBouncer or a cluster run second", () => {
    const second = [
      "executable.test.ts", // new Exe() (test/harness/exe.ts)
      "demo.test.ts", // Bun.spawn of dist/leadline
      "faults.test.ts", // startRig: a cluster and three executables (test/harness/faults.ts)
      "booking-page.test.ts", // launchBrowser
      "console-door.test.ts", // launchBrowser
      "several-instances.test.ts", // startPgBouncer
      "nginx-site.test.ts", // startNginx, checkAsDebian
      "provision.test.ts", // spawnCli (bun src/main.ts)
      "messages.test.ts", // Bun.spawn of src/main.ts serve
    ];
    for (const f of second) expect([f, passes.spawning.includes(`test/${f}`)]).toEqual([f, true]);
  });

  test("those that only import from a harness module that starts processes elsewhere run first", () => {
    const first = [
      "leads.test.ts",
      "background-pool.test.ts", // waitFor from test/harness/faults.ts, not startRig
      "console-auth.test.ts", // test/harness/console.ts, which takes SHOTS_DIR from browser.ts
      "pooler-config.test.ts", // freePort from test/harness/cluster.ts
      "embedded.test.ts", // PGlite in this process
      "passes.test.ts",
    ];
    for (const f of first) expect([f, passes.inProcess.includes(`test/${f}`)]).toEqual([f, true]);
  });
});

describe("how a file is found to start processes", () => {
  test("through harness helpers, followed through each other, exported or not", () => {
    const harness = join(scratch, "harness");
    mkdirSync(harness);
    writeFileSync(join(harness, "tool.ts"), [
      'import { spawnSync } from "node:child_process";',
      "const run = (args: string[]) => spawnSync(args[0]!, args.slice(1));",
      "export function startTool(): number { return run(['true']).status ?? 1; }",
      "export const TOOL_NAME = 'tool';",
    ].join("\n"));
    writeFileSync(join(harness, "rig.ts"), [
      'import { startTool, TOOL_NAME } from "./tool";',
      "export class Rig { start() { return startTool(); } }",
      "export async function rigFor(name: string) { return new Rig(); }",
      "export function label() { return TOOL_NAME; }",
    ].join("\n"));
    expect([...spawningHelpers(harness)].sort()).toEqual(["Rig", "rigFor", "startTool"]);
    const helpers = spawningHelpers(harness);
    expect(startsProcesses('const r = await rigFor("x");', helpers)).toBe(true);
    expect(startsProcesses("const r = new Rig();", helpers)).toBe(true);
    expect(startsProcesses("expect(label()).toBe('tool');", helpers)).toBe(false);
    // A method or property of the same name on something else is not the helper.
    expect(startsProcesses("await app.startTool();", helpers)).toBe(false);
  });

  test("by the process APIs a test file calls itself", () => {
    const none = new Set<string>();
    for (const source of [
      'const p = Bun.spawn(["leadline", "serve"]);',
      'Bun.spawnSync(["pg_dump"]);',
      "const b = await chromium.launch({ executablePath });",
      "await Bun.$`ls`;",
    ]) {
      expect([source, startsProcesses(source, none)]).toEqual([source, true]);
    }
    // Imports count at the start of a line; the same words in a string or a comment do not.
    for (const source of ['import { spawn } from "node:child_process";', 'import { $ } from "bun";']) {
      expect([source, startsProcesses(source, none)]).toEqual([source, true]);
    }
    for (const source of [
      "const m = /x/.exec(s);",
      "await db.exec('select 1');",
      "respawn();",
      'const text = "Bun.spawn(x)";',
      "// new Exe() starts the executable",
      'const src = \'import { spawn } from "node:child_process";\';',
    ]) {
      expect([source, startsProcesses(source, none)]).toEqual([source, false]);
    }
  });
});
