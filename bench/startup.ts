// The startup suite (bench/README.md): the executable's size, its cold start (spawn → /readyz
// answering 200) and its idle resident memory, on the embedded database (a fresh data directory,
// which starts from the migrated image built into the executable, then the same directory again) and on a real
// PostgreSQL (migrated beforehand). Each start is measured BENCH_STARTS times (default 3) and the
// median reported; idle RSS is read from /proc 3 s after ready, with no request but the probes.
//
//   node_modules/.bin/bun bench/startup.ts      (or `make bench`)
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "./pg";
import { median, num, rssOf, Suite } from "./lib";

const suite = new Suite("startup", "Executable, cold start and idle memory", ["startup"]);
const STARTS = num("BENCH_STARTS", 3);
const IDLE_MS = 3000;

interface Start {
  ready_ms: number;
  idle_rss_kib: number;
}

/** One `serve`: ms from spawn to the first 200 of /readyz (polled every 5 ms), then the idle RSS; stopped with SIGTERM. */
async function start(name: string, env: Record<string, string>): Promise<Start> {
  const port = await freePort();
  const t0 = performance.now();
  const server = suite.spawn(name, [...suite.exe, "serve"], { HOST: "127.0.0.1", PORT: String(port), LOG_LEVEL: "warn", NPK_IP_SALT: "bench", ...env });
  const url = `http://127.0.0.1:${port}/readyz`;
  let ready = NaN;
  while (performance.now() - t0 < 120_000) {
    if (server.child.exitCode !== null) throw new Error(`${name} exited ${server.child.exitCode}`);
    if (await fetch(url).then((r) => r.ok, () => false)) {
      ready = performance.now() - t0;
      break;
    }
    await Bun.sleep(5);
  }
  if (!Number.isFinite(ready)) throw new Error(`${name}: not ready after 120 s`);
  await Bun.sleep(IDLE_MS);
  const rss = rssOf(server.pid);
  server.child.kill("SIGTERM");
  await Promise.race([server.child.exited, Bun.sleep(10_000)]);
  if (server.child.exitCode === null) server.child.kill("SIGKILL");
  return { ready_ms: ready, idle_rss_kib: rss };
}

const summary = (xs: Start[]) => ({ ready_ms: median(xs.map((x) => x.ready_ms)), idle_rss_kib: median(xs.map((x) => x.idle_rss_kib)), all: xs });

await suite.run(async () => {
  const size = statSync(suite.exe[0]).size;
  const fresh: Start[] = [];
  const again: Start[] = [];
  for (let i = 0; i < STARTS; i++) {
    // Embedded: DATABASE_URL emptied, a data directory of its own.
    const dir = mkdtempSync(join(suite.work, "data-"));
    fresh.push(await start(`embedded-fresh-${i}`, { DATABASE_URL: "", DATA_DIR: dir }));
    again.push(await start(`embedded-again-${i}`, { DATABASE_URL: "", DATA_DIR: dir }));
    rmSync(dir, { recursive: true, force: true });
  }
  await suite.database();
  await suite.sql!.end({ timeout: 2 });
  const real: Start[] = [];
  for (let i = 0; i < STARTS; i++) real.push(await start(`postgres-${i}`, { DATABASE_URL: suite.databaseUrl(), DATA_DIR: join(suite.work, "data") }));
  const figures = { exe_bytes: size, embedded_fresh: summary(fresh), embedded_again: summary(again), postgres: summary(real) };
  suite.extra.startup = figures;
  const mib = (kib: number) => (kib / 1024).toFixed(0);
  const row = (label: string, s: ReturnType<typeof summary>) =>
    `| ${label} | ${s.ready_ms.toFixed(0)} | ${mib(s.idle_rss_kib)} | ${s.all.map((x) => x.ready_ms.toFixed(0)).join(" / ")} |`;
  suite.notes.push(
    `Executable: ${(size / 1048576).toFixed(1)} MiB (${suite.exe[0].replace(/^.*\//, "")}).`,
    "",
    "| database | cold start ms (median) | idle RSS MiB | each start ms |",
    "|---|---:|---:|---|",
    row("embedded, fresh data directory (from the image)", figures.embedded_fresh),
    row("embedded, existing data directory", figures.embedded_again),
    row("PostgreSQL (migrated)", figures.postgres),
  );
  return `${STARTS} starts each; cold start is spawn to the first 200 of /readyz; idle RSS ${IDLE_MS / 1000} s after ready.`;
});
