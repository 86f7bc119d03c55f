// The first start (`make bench`, or alone: node_modules/.bin/bun bench/first-start.ts): what
// `leadline serve --demo` costs on the embedded database, from spawn to the first 200 of /healthz,
// and the peak resident memory of the process (VmHWM, /proc/<pid>/status) by then and a second
// later, on a new DATA_DIR (the database made, the demo provisioned) and again on that directory.
// Targets (issue 28): a new DATA_DIR ready in under a second with a peak under 400 MiB, what a
// 1 GB VPS or a small laptop can give.
//
// BENCH_STARTS (3) starts of each, the median reported. BENCH_BEFORE_EXE names a second executable
// (e.g. one built before a change) measured the same way, alternating with the first, so that
// both see the same machine; the table then has a row per executable. Writes the `first-start`
// section of bench/RESULTS.md and bench/results/first-start.md (BENCH_WRITE=0: stdout only).
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { freePort } from "./pg";
import { num, root } from "./lib";
import { writeSection } from "./results-file";

const STARTS = num("BENCH_STARTS", 3);
const READY_MS = 1000;
const PEAK_MIB = 400;
const GIVE_UP_MS = 120_000;

interface Start {
  ready_ms: number;
  /** CPU time (user + system, every thread) the process had used when /healthz first answered: what other work on the machine moves least. */
  cpu_ms: number;
  /** VmHWM a second after /healthz first answered (the demo is in place before listening). */
  peak_kib: number;
}

const TICK_MS = 1000 / (Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim()) || 100);

/** utime + stime of a process, ms (/proc/<pid>/stat). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) * TICK_MS;
}

function statusKib(pid: number, field: "VmHWM" | "VmRSS"): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+)`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** One `serve --demo` on `dataDir`: spawn to the first 200 of /healthz (polled every 5 ms), then the peak RSS; stopped with SIGTERM. */
async function start(exe: string, dataDir: string): Promise<Start> {
  const port = await freePort();
  const t0 = performance.now();
  const child = Bun.spawn([exe, "serve", "--demo"], {
    cwd: dataDir,
    env: { PATH: "/usr/bin:/bin", HOME: dataDir, DATA_DIR: join(dataDir, "data"), HOST: "127.0.0.1", PORT: String(port), LOG_LEVEL: "warn", NPK_IP_SALT: "bench" },
    stdout: "ignore",
    stderr: "pipe",
  });
  try {
    const url = `http://127.0.0.1:${port}/healthz`;
    let ready = NaN;
    let cpu = NaN;
    while (performance.now() - t0 < GIVE_UP_MS) {
      if (child.exitCode !== null) throw new Error(`${exe} exited ${child.exitCode}: ${await new Response(child.stderr).text()}`);
      if (await fetch(url).then((r) => r.ok, () => false)) {
        ready = performance.now() - t0;
        cpu = cpuMs(child.pid);
        break;
      }
      await Bun.sleep(5);
    }
    if (!Number.isFinite(ready)) throw new Error(`${exe}: /healthz not answering after ${GIVE_UP_MS / 1000} s`);
    await Bun.sleep(1000);
    return { ready_ms: ready, cpu_ms: cpu, peak_kib: statusKib(child.pid, "VmHWM") };
  } finally {
    child.kill("SIGTERM");
    await Promise.race([child.exited, Bun.sleep(10_000)]);
    if (child.exitCode === null) child.kill("SIGKILL");
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const mib = (kib: number) => Math.round(kib / 1024);

function exeOf(given: string | undefined, dflt: string | null): string | null {
  const path = given ? resolve(given) : dflt;
  if (path && !existsSync(path)) throw new Error(`${path} does not exist (make build)`);
  return path;
}

const exes: { label: string; path: string }[] = [];
const after = exeOf(process.env.BENCH_EXE, join(root, "dist/leadline"))!;
const before = exeOf(process.env.BENCH_BEFORE_EXE, null);
if (before) exes.push({ label: process.env.BENCH_BEFORE_LABEL ?? "before", path: before });
exes.push({ label: process.env.BENCH_LABEL ?? (before ? "after" : "this build"), path: after });

const work = mkdtempSync(join(tmpdir(), "leadline-first-start-"));
const cleanup = () => rmSync(work, { recursive: true, force: true });
process.on("SIGINT", () => (cleanup(), process.exit(130)));
process.on("SIGTERM", () => (cleanup(), process.exit(143)));

const results = new Map(exes.map((e) => [e.label, { fresh: [] as Start[], again: [] as Start[] }]));
const load = loadavg()[0];
try {
  for (let i = 0; i < STARTS; i++) {
    for (const e of exes) {
      const dir = mkdtempSync(join(work, "run-"));
      const r = results.get(e.label)!;
      r.fresh.push(await start(e.path, dir));
      r.again.push(await start(e.path, dir));
      rmSync(dir, { recursive: true, force: true });
      console.error(`first-start: ${e.label} #${i + 1}: fresh ${r.fresh.at(-1)!.ready_ms.toFixed(0)} ms, again ${r.again.at(-1)!.ready_ms.toFixed(0)} ms`);
    }
  }
} finally {
  cleanup();
}

const rev = Bun.spawnSync(["git", "rev-parse", "--short", "HEAD"], { cwd: root, stdout: "pipe", stderr: "ignore" }).stdout.toString().trim();
const row = (label: string, kind: string, xs: Start[], target: boolean) => {
  const ready = median(xs.map((x) => x.ready_ms));
  const cpu = median(xs.map((x) => x.cpu_ms));
  const peak = median(xs.map((x) => x.peak_kib));
  const verdict = target ? (ready < READY_MS && mib(peak) < PEAK_MIB ? "pass" : "MISSED") : "—";
  return `| ${label} | ${kind} | ${ready.toFixed(0)} | ${cpu.toFixed(0)} | ${mib(peak)} | ${xs.map((x) => x.ready_ms.toFixed(0)).join(" / ")} | ${verdict} |`;
};
const md = [
  "## First start: `serve --demo` on the embedded database",
  "",
  `\`bun bench/first-start.ts\`, ${new Date().toISOString().slice(0, 16)}Z, commit ${rev || "?"}; load average ${load.toFixed(2)} on ${navigator.hardwareConcurrency} CPUs at the start (a shared machine: other work slows every row alike, the rows alternate).`,
  `Ready: spawn to the first 200 of \`/healthz\` (median of ${STARTS}); CPU: the process's user + system time by then, all threads (what other work moves least); peak RSS: its VmHWM a second after ready. Target for a new DATA_DIR: ready under ${READY_MS} ms, peak under ${PEAK_MIB} MiB.`,
  "",
  "| executable | DATA_DIR | ready ms | CPU ms | peak RSS MiB | each start ms | target |",
  "|---|---|---:|---:|---:|---|---|",
  ...exes.flatMap((e) => {
    const r = results.get(e.label)!;
    return [row(e.label, "new", r.fresh, true), row(e.label, "existing", r.again, false)];
  }),
  "",
].join("\n");
console.log(md);
if (process.env.BENCH_WRITE !== "0") {
  const dir = join(import.meta.dir, "results");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "first-start.md"), md);
  writeSection("first-start", md);
}
