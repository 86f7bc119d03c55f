// The soak (`make soak`, bench/README.md): one instance of the compiled executable on a real
// PostgreSQL under a steady mixed load for SOAK_MINUTES (default 10), one wrk run per minute
// (bench/wrk.lua mode `soak`): new DNI visitors (every one distinct), returning visitors and
// heartbeats, intake of new phones (the lead table grows all along), get lead and CTI lookup,
// every request from a random one of 16.7 million client addresses (X-Forwarded-For, trusted from
// wrk on 127.0.0.1 with TRUST_PROXY=loopback). The pool's holds last 2 minutes, so numbers are
// released and allocated again all along instead of the pool running dry.
//
// Per minute: requests/s, p50/p99 (wrk), the instance's resident memory (VmRSS, sampled every
// 5 s), the lead and visitor counts. Writes the table and a chart (bench/soak.svg) into the soak
// section of bench/RESULTS.md, and the usual table to bench/results/soak.md.
//
//   SOAK_MINUTES=1 make soak      (options: SOAK_MINUTES, SOAK_CONNECTIONS (default 16))
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { answerChecks, fmtMs, num, options, rssOf, Suite } from "./lib";
import { writeSection } from "./results-file";

const suite = new Suite("soak", "Soak", ["soak"]);
const MINUTES = Math.max(1, Math.round(num("SOAK_MINUTES", 10)));
const CONNS = num("SOAK_CONNECTIONS", 16);
const LEADS = 10_000;
const NUMBERS = 150_000;
const TTL_SECONDS = 120;
const ADDRESSES = 16_777_216;
const SAMPLE_MS = 5000;
// Each key's hits of the hour count against its intake limit (120), whichever family they are
// in: enough keys that none reaches it (10,000 carry about 1,700 requests/s for 30 minutes), and
// no more than the key cache holds (10,000), or every keyed request would look its key up.
const KEYS = Math.min(10_000, Math.max(2000, MINUTES * 1000));
const SVG = join(import.meta.dir, "soak.svg");

interface Minute {
  minute: number;
  rps: number;
  p50_us: number;
  p99_us: number;
  rss_end: number;
  rss_max: number;
  leads: number;
  visitors: number;
  app_us: number;
  pg_us: number;
  errors: number;
  requests: number;
}

/** A chart of RSS (MiB, every sample) and p99 (ms, per minute) against minutes, two y axes. */
function chart(samples: { t: number; rss: number }[], minutes: Minute[]): string {
  const W = 720;
  const H = 320;
  const L = 60;
  const R = 60;
  const T = 30;
  const B = 40;
  const tMax = Math.max(MINUTES, ...samples.map((s) => s.t));
  const rssMax = Math.max(1, ...samples.map((s) => s.rss)) * 1.15;
  const p99Max = Math.max(1, ...minutes.map((m) => m.p99_us / 1000)) * 1.15;
  const x = (t: number) => L + (t / tMax) * (W - L - R);
  const yl = (v: number) => H - B - (v / rssMax) * (H - T - B);
  const yr = (v: number) => H - B - (v / p99Max) * (H - T - B);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="11">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="16" text-anchor="middle" font-size="13">Soak: resident memory and p99 per minute</text>`,
    `<line x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}" stroke="#333"/>`,
    `<line x1="${L}" y1="${T}" x2="${L}" y2="${H - B}" stroke="#1f77b4"/>`,
    `<line x1="${W - R}" y1="${T}" x2="${W - R}" y2="${H - B}" stroke="#d62728"/>`,
  ];
  for (let i = 0; i <= 4; i++) {
    const f = i / 4;
    out.push(
      `<text x="${L - 4}" y="${yl(rssMax * f) + 4}" text-anchor="end" fill="#1f77b4">${(rssMax * f).toFixed(0)}</text>`,
      `<text x="${W - R + 4}" y="${yr(p99Max * f) + 4}" fill="#d62728">${(p99Max * f).toFixed(0)}</text>`,
      `<line x1="${L}" y1="${yl(rssMax * f)}" x2="${W - R}" y2="${yl(rssMax * f)}" stroke="#eee"/>`,
    );
  }
  const step = Math.max(1, Math.ceil(tMax / 10));
  for (let m = 0; m <= tMax; m += step) out.push(`<text x="${x(m)}" y="${H - B + 14}" text-anchor="middle">${m}</text>`);
  out.push(
    `<text x="${W / 2}" y="${H - 8}" text-anchor="middle">minutes</text>`,
    `<text x="14" y="${T + (H - T - B) / 2}" transform="rotate(-90 14 ${T + (H - T - B) / 2})" text-anchor="middle" fill="#1f77b4">RSS MiB</text>`,
    `<text x="${W - 14}" y="${T + (H - T - B) / 2}" transform="rotate(90 ${W - 14} ${T + (H - T - B) / 2})" text-anchor="middle" fill="#d62728">p99 ms</text>`,
    `<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="${samples.map((s) => `${x(s.t).toFixed(1)},${yl(s.rss).toFixed(1)}`).join(" ")}"/>`,
    `<polyline fill="none" stroke="#d62728" stroke-width="2" points="${minutes.map((m) => `${x(m.minute).toFixed(1)},${yr(m.p99_us / 1000).toFixed(1)}`).join(" ")}"/>`,
    ...minutes.map((m) => `<circle cx="${x(m.minute).toFixed(1)}" cy="${yr(m.p99_us / 1000).toFixed(1)}" r="3" fill="#d62728"/>`),
    "</svg>",
  );
  return out.join("\n") + "\n";
}

await suite.run(async () => {
  const sql = await suite.database();
  await suite.seedAccount();
  await sql`
    insert into leads (list_id, phone, first_name, last_name, email)
    select 101, '555' || lpad(i::text, 7, '0'), 'First' || i, 'Last' || i, 'lead' || i || '@example.com'
    from generate_series(1, ${LEADS}) as i`;
  await sql`insert into dni_pools (key, org_id, name, fallback, placeholder, ttl_seconds)
            values ('soak', 1, 'soak', '5125550100', '5125550199', ${TTL_SECONDS})`;
  await sql`insert into dni_numbers (pool_key, number)
            select 'soak', '2' || lpad(i::text, 9, '0') from generate_series(1, ${NUMBERS}) as i`;
  const keys = await suite.keys("soak", KEYS, ["leads:read", "leads:write", "cti"]);
  await sql`vacuum analyze`;
  const svc = await suite.service({ TRUST_PROXY: "loopback" });
  const pid = svc.child.pid;
  const started = performance.now();
  const samples: { t: number; rss: number }[] = [{ t: 0, rss: rssOf(pid) / 1024 }];
  const idleRss = samples[0].rss;
  suite.say(`${MINUTES} minute(s), -c${CONNS}, ${KEYS} keys; idle RSS ${idleRss.toFixed(0)} MiB`);
  const timer = setInterval(() => samples.push({ t: (performance.now() - started) / 60_000, rss: rssOf(pid) / 1024 }), SAMPLE_MS);
  const minutes: Minute[] = [];
  const leadsBefore = Number((await sql`select count(*)::int as n from leads`)[0].n);
  const args = { mode: "soak", keys: keys.file, leads: LEADS, phones: LEADS, pool: "soak", addresses: ADDRESSES };
  for (let m = 1; m <= MINUTES; m++) {
    const from = samples.length;
    const r = await suite.wrk({ to: svc, args, conns: CONNS }, 60, false);
    const rss = rssOf(pid) / 1024;
    samples.push({ t: (performance.now() - started) / 60_000, rss });
    const [{ leads }] = await sql`select max(id)::int as leads from leads`;
    const [{ visitors }] = await sql`select count(*)::int as visitors from dni_visitors`;
    const minute: Minute = {
      minute: m,
      rps: r.rps,
      p50_us: r.p50_us ?? 0,
      p99_us: r.p99_us ?? 0,
      rss_end: rss,
      rss_max: Math.max(rss, ...samples.slice(from).map((s) => s.rss)),
      leads: Number(leads),
      visitors: Number(visitors),
      app_us: r.cpu.app / Math.max(1, r.requests),
      pg_us: r.cpu.pg / Math.max(1, r.requests),
      errors: r.status_errors + r.socket_errors,
      requests: r.requests,
    };
    minutes.push(minute);
    suite.add({ id: `m${m}`, name: `minute ${m}`, r, checks: [...answerChecks(r), `RSS ${rss.toFixed(0)} MiB`, `${minute.leads} leads, ${minute.visitors} visitors`] });
  }
  clearInterval(timer);
  // What the non-2xx answers were: the instance's own count by route family and status class (/metrics, from loopback).
  const refused = await fetch(`${svc.url}/metrics`)
    .then((r) => r.text())
    .then((text) =>
      [...text.matchAll(/^leadline_http_requests_total\{([^}]*)\} (\d+)/gm)]
        .filter((m) => !/status="2xx"/.test(m[1]) && Number(m[2]) > 0)
        .map((m) => `${m[2]} ${m[1].replace(/"/g, "").replaceAll(",", " ")}`),
    )
    .catch(() => ["(no /metrics answer)"]);
  const [{ addresses }] = await sql`select count(distinct ip_hash)::int as addresses from dni_visitors`;
  const total = minutes.reduce((a, m) => a + m.requests, 0);
  const errors = minutes.reduce((a, m) => a + m.errors, 0);
  const last = minutes[minutes.length - 1];
  const half = minutes.slice(Math.floor(minutes.length / 2));
  const halfGrowth = half.length > 1 ? half[half.length - 1].rss_end - half[0].rss_end : 0;
  const p99s = minutes.map((m) => m.p99_us / 1000);
  writeFileSync(SVG, chart(samples, minutes));
  const rev = Bun.spawnSync(["git", "rev-parse", "--short", "HEAD"], { stdout: "pipe", stderr: "ignore" }).stdout.toString().trim();
  const md = [
    "## Soak",
    "",
    `\`make soak\`, ${new Date().toISOString().slice(0, 16)}Z, commit ${rev || "?"}: ${MINUTES} minute(s) of a steady mixed load on one instance of ` +
      `${suite.exe.length > 1 ? "src/main.ts on bun" : "the compiled executable"} and a real PostgreSQL, wrk -t${Math.min(options.threads, CONNS)} -c${CONNS}: ` +
      "35% new DNI visitors, 15% returning visitors' leases, 12% heartbeats, 15% intake of a new phone, 15% get lead, 8% CTI lookup; " +
      `a ${TTL_SECONDS} s hold time, so that numbers are released and allocated again; every request from a random one of 16.7 million client addresses.`,
    "",
    `In all: ${total.toLocaleString("en-US")} requests, ${errors} non-2xx or socket errors` +
      (refused.length ? ` (the instance's count of its non-2xx answers: ${refused.join("; ")})` : "") +
      `; ${last.visitors.toLocaleString("en-US")} distinct visitors ` +
      `(${Number(addresses).toLocaleString("en-US")} distinct client addresses among their visits' records); the lead table grew from ${leadsBefore.toLocaleString("en-US")} to ` +
      `${last.leads.toLocaleString("en-US")} rows. Resident memory: ${idleRss.toFixed(0)} MiB idle, ${last.rss_end.toFixed(0)} MiB at the end, ` +
      `${Math.max(...minutes.map((m) => m.rss_max)).toFixed(0)} MiB at most` +
      (half.length > 1 ? `; over the second half it moved by ${halfGrowth >= 0 ? "+" : ""}${halfGrowth.toFixed(0)} MiB` : "") +
      `. p99 per minute: ${Math.min(...p99s).toFixed(1)}–${Math.max(...p99s).toFixed(1)} ms. ` +
      "Every in-memory cache and map has a bound (docs/operations.md, \"Memory\"): RSS climbs while they fill (the DNI lease cache alone is full at 100,000 " +
      "visitors, the address counters at 200,000 addresses per limit), then levels off. The machine is shared: the CPU column of bench/results/soak.md " +
      "gives, per minute, the share other work took.",
    "",
    "![Resident memory (every 5 s) and p99 (per minute) of the soak](soak.svg)",
    "",
    "| minute | req/s | p50 ms | p99 ms | RSS MiB (end / max) | leads | visitors | CPU µs/req app / pg | errors |",
    "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...minutes.map(
      (m) =>
        `| ${m.minute} | ${m.rps.toFixed(0)} | ${fmtMs(m.p50_us)} | ${fmtMs(m.p99_us)} | ${m.rss_end.toFixed(0)} / ${m.rss_max.toFixed(0)} | ` +
        `${m.leads} | ${m.visitors} | ${m.app_us.toFixed(0)} / ${m.pg_us.toFixed(0)} | ${m.errors} |`,
    ),
  ].join("\n");
  writeSection("soak", md);
  suite.say(`written to bench/RESULTS.md (soak section) and ${SVG}`);
  return `${MINUTES} minute(s), one wrk run a minute, -c${CONNS}; RSS sampled every ${SAMPLE_MS / 1000} s.`;
});
