// Sign-in beside wrong passwords (issue 27, point 2): what a real user's console sign-in costs
// while others send wrong passwords. Argon2id takes 64 MiB and a core for a few hundred
// milliseconds a check; before the bound on password checks, 60 sign-ins at once put a real one
// about 22 s behind them. One instance of the executable under test on a real PostgreSQL; the
// real users' password hashes are made at the real cost (Bun's defaults, as `users passwd` makes
// them). Each wrong sign-in names an account that does not exist (checked at the same cost, and
// no per-account limit is ever reached) from its own client address (X-Forwarded-For, trusted
// from 127.0.0.1 with TRUST_PROXY=loopback), so no limit stops them within the run: what is
// measured is the stall, not the lockout (test/console-sign-in.test.ts covers that).
//
// Scenarios, each on its own addresses and real user:
//   alone   the real user's sign-in with nothing else running (3 in a row; the median)
//   burst   60 wrong sign-ins sent at once, the real user's right after them
//   flood   60 wrong sign-ins in flight all along for BENCH_SIGNIN_SECONDS (default 45): each
//           attacker sends its next as soon as it has an answer (50 ms after a refusal: the
//           attackers' own CPU is this machine's too), while two real users sign in again and
//           again, a second apart: one returning (it signed in from its address before the
//           flood), one from a new address every time
// The real user acts as a person with a browser: on a 503 it tries again after Retry-After. Its
// time is from the first try to signed in (the 303), Retry-After waits included.
//
// With BENCH_SIGNIN_BEFORE=<a checkout of an earlier commit> the same scenarios run first against
// that checkout's src/main.ts on bun (in the same database and run), for the figure before.
// Writes the "sign-in" section of bench/RESULTS.md and bench/results/sign-in.md.
//
//   node_modules/.bin/bun bench/sign-in.ts       (make build first, or BENCH_EXE=src)
import { cpus, loadavg } from "node:os";
import { join, resolve } from "node:path";
import { BUN, median, num, Suite, type Server } from "./lib";
import { freePort } from "./pg";
import { writeSection } from "./results-file";

const suite = new Suite("sign-in", "Sign-in beside wrong passwords", ["alone", "burst", "flood"]);
const ATTACKERS = 60;
const FLOOD_S = num("BENCH_SIGNIN_SECONDS", 45);
const BEFORE = process.env.BENCH_SIGNIN_BEFORE ? resolve(process.env.BENCH_SIGNIN_BEFORE) : null;
const PASSWORD = "the real user's pass phrase";

interface Answer {
  status: number;
  retryAfter: number;
  ms: number;
}

async function post(url: string, email: string, password: string, address: string): Promise<Answer> {
  const t0 = performance.now();
  const r = await fetch(`${url}/console/login`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": address },
    body: new URLSearchParams({ email, password }).toString(),
  });
  await r.arrayBuffer();
  return { status: r.status, retryAfter: Number(r.headers.get("retry-after") ?? 1), ms: performance.now() - t0 };
}

interface SignedIn {
  /** First try to the 303, Retry-After waits included. */
  ms: number;
  tries: number;
  first: Answer;
}

/** A person signing in: on a 503, again after Retry-After. */
async function realSignIn(url: string, email: string, address: string): Promise<SignedIn> {
  const t0 = performance.now();
  let first: Answer | null = null;
  for (let tries = 1; ; tries++) {
    const a = await post(url, email, PASSWORD, address);
    first ??= a;
    if (a.status === 303) return { ms: performance.now() - t0, tries, first };
    if (a.status !== 503) throw new Error(`the real user's sign-in was answered ${a.status}`);
    if (performance.now() - t0 > 300_000) throw new Error("the real user was not signed in within 5 minutes");
    await Bun.sleep(a.retryAfter * 1000);
  }
}

/** `n` attackers, each from its own address, each with a wrong sign-in in flight until `stop`. */
function attack(url: string, net: string, stop: () => boolean): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  const one = async (i: number) => {
    for (let k = 0; !stop(); k++) {
      const a = await post(url, `nobody-${net}-${i}-${k}@example.test`, "a wrong password", `${net}.${i}`);
      statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
      if (a.status !== 401) await Bun.sleep(50);
    }
  };
  return Promise.all(Array.from({ length: ATTACKERS }, (_, i) => one(i))).then(() => statuses);
}

const fmt = (ms: number) => (ms < 10_000 ? `${(ms / 1000).toFixed(2)} s` : `${(ms / 1000).toFixed(1)} s`);
const answers = (m: Map<number, number>) => [...m.entries()].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${n}× ${s}`).join(", ");

/** A service from an earlier checkout's source, in the suite's database (the schema is the same). */
async function serviceFrom(dir: string): Promise<Server> {
  const port = await freePort();
  const server = suite.spawn("before", [BUN, join(dir, "src/main.ts"), "serve"], {
    DATABASE_URL: suite.databaseUrl(),
    HOST: "127.0.0.1",
    PORT: String(port),
    LOG_LEVEL: "warn",
    DATA_DIR: join(suite.work, "data-before"),
    NPK_IP_SALT: "bench",
    TRUST_PROXY: "loopback",
  });
  server.url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300 && !(await fetch(`${server.url}/readyz`).then((r) => r.ok, () => false)); i++) await Bun.sleep(100);
  return server;
}

interface Row {
  service: string;
  scenario: string;
  signedIn: string;
  tries: string;
  first: string;
  attackers: string;
}

await suite.run(async () => {
  const load0 = loadavg()[0]!;
  const sql = await suite.database();
  await suite.seedAccount();
  // Real users, a fresh one per service and scenario (an earlier version counted every sign-in
  // of an account against its hourly limit of 20); hashed at the real cost.
  const hash = await Bun.password.hash(PASSWORD, { algorithm: "argon2id" });
  const userOf = async (name: string) => {
    const email = `${name}@example.test`;
    await sql`insert into users (id, org_id, name, email, role, password_hash) values (${name}, 1, ${name}, ${email}, 'agent', ${hash})`;
    return email;
  };
  const targets: { name: string; server: Server; net: number }[] = [];
  if (BEFORE) targets.push({ name: `before: ${BEFORE.split("/").pop()} (src/main.ts on bun)`, server: await serviceFrom(BEFORE), net: 1 });
  const rev = Bun.spawnSync(["git", "rev-parse", "--short", "HEAD"], { stdout: "pipe", stderr: "ignore" }).stdout.toString().trim();
  targets.push({ name: `after: ${rev || "this commit"} (${suite.exe.length > 1 ? "src/main.ts on bun" : "dist/leadline"})`, server: await suite.service({ TRUST_PROXY: "loopback" }), net: 2 });
  const rows: Row[] = [];
  for (const t of targets) {
    const url = t.server.url;
    const tag = `t${t.net}`;
    // An unknown account is checked against a hash of a random password, made at the first such
    // sign-in: made here, so that no scenario waits for it.
    await post(url, "nobody-warm-up@example.test", "a wrong password", `203.0.113.${t.net}9`);
    if (suite.wanted("alone")) {
      const email = await userOf(`${tag}-alone`);
      const runs: SignedIn[] = [];
      for (let i = 0; i < 3; i++) runs.push(await realSignIn(url, email, `203.0.113.${t.net}0`));
      const ms = median(runs.map((r) => r.ms));
      suite.say(`${t.name}: alone: ${fmt(ms)}`);
      rows.push({ service: t.name, scenario: "alone", signedIn: fmt(ms), tries: "1", first: "303", attackers: "—" });
    }
    if (suite.wanted("burst")) {
      const email = await userOf(`${tag}-burst`);
      const burst = Array.from({ length: ATTACKERS }, (_, i) => post(url, `nobody-burst-${i}@example.test`, "a wrong password", `198.18.${t.net}.${i}`));
      const real = await realSignIn(url, email, `203.0.113.${t.net}1`);
      const statuses = new Map<number, number>();
      for (const a of await Promise.all(burst)) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
      suite.say(`${t.name}: burst: signed in after ${fmt(real.ms)} (${real.tries} tries); the 60: ${answers(statuses)}`);
      rows.push({ service: t.name, scenario: "burst of 60", signedIn: fmt(real.ms), tries: String(real.tries), first: `${real.first.status} after ${fmt(real.first.ms)}`, attackers: answers(statuses) });
    }
    if (suite.wanted("flood")) {
      // Two real users at once: one returning (signed in from its address before the flood, as
      // yesterday), one from a new address every time (never signed in from there, never failed).
      const returning = await userOf(`${tag}-returning`);
      const newcomer = await userOf(`${tag}-newcomer`);
      await realSignIn(url, returning, `203.0.113.${t.net}2`);
      let stopped = false;
      const end = performance.now() + FLOOD_S * 1000;
      const flood = attack(url, `198.19.${t.net}`, () => stopped);
      const signInsUntilEnd = async (email: string, address: (i: number) => string) => {
        const runs: SignedIn[] = [];
        await Bun.sleep(1000);
        for (let i = 0; performance.now() < end; i++) {
          runs.push(await realSignIn(url, email, address(i)));
          await Bun.sleep(1000);
        }
        return runs;
      };
      const [back, fresh] = await Promise.all([
        signInsUntilEnd(returning, () => `203.0.113.${t.net}2`),
        signInsUntilEnd(newcomer, (i) => `203.0.${t.net * 10 + 1}.${i}`),
      ]);
      stopped = true;
      const statuses = await flood;
      const checked = statuses.get(401) ?? 0;
      for (const [who, runs] of [["returning user", back], ["a new address each time", fresh]] as const) {
        const times = runs.map((r) => r.ms);
        const firsts = new Map<number, number>();
        for (const r of runs) firsts.set(r.first.status, (firsts.get(r.first.status) ?? 0) + 1);
        suite.say(`${t.name}: flood, ${who}: ${runs.length} sign-ins, median ${fmt(median(times))}, max ${fmt(Math.max(...times))}`);
        rows.push({
          service: t.name,
          scenario: `60 in flight for ${FLOOD_S} s: ${who}`,
          signedIn: `median ${fmt(median(times))}, max ${fmt(Math.max(...times))}: ${times.map((ms) => (ms / 1000).toFixed(1)).join(", ")} s in turn`,
          tries: `max ${Math.max(...runs.map((r) => r.tries))}`,
          first: answers(firsts),
          attackers: `${answers(statuses)}; ${(checked / FLOOD_S).toFixed(1)} checks/s`,
        });
      }
      suite.say(`${t.name}: flood: attackers ${answers(statuses)}`);
    }
  }
  const md = [
    "## Sign-in beside wrong passwords",
    "",
    `\`bench/sign-in.ts\`, ${new Date().toISOString().slice(0, 16)}Z. A real user's console sign-in (Argon2id at the real cost, 64 MiB, t=2) ` +
      `beside ${ATTACKERS} wrong sign-ins, each from its own client address and for an account that does not exist (so no limit stops them: ` +
      "this measures the stall, not the lockout). \"Signed in after\" runs from the first try to the 303, waits included: on a 503 the real " +
      "user tries again after `Retry-After`, as a person would. Measured on a shared, busy machine " +
      `(${cpus().length} CPUs shared with other work: load average ${load0.toFixed(1)} at the start, ${loadavg()[0]!.toFixed(1)} at the end): ` +
      "the figures move from run to run, the shape does not.",
    "",
    "| service | scenario | real user signed in after | tries | real user's first answer | the wrong sign-ins' answers |",
    "|---|---|---|---|---|---|",
    ...rows.map((r) => `| ${r.service} | ${r.scenario} | ${r.signedIn} | ${r.tries} | ${r.first} | ${r.attackers} |`),
    "",
    "Before, every sign-in started its Argon2id check at once, all of them sharing the cores: the real user's check finished with " +
      "everyone else's. Now as many run at once as there are cores, four per core wait in line, the rest are answered 503 at once, and " +
      "an address that has failed this hour never takes a place in the line, while a user signing in from an address they have " +
      "signed in from before waits in a line of their own, served first (docs/console-sign-in.md). What is left: a user at a new " +
      "address has the ordinary line, where each of a flood's fresh addresses may wait once, so a flood from many fresh addresses " +
      "holds it until each has had its one check; and a burst's first try is a 503 at once, signed in on the next.",
  ].join("\n");
  suite.notes.push(md.split("\n").slice(2).join("\n"));
  writeSection("sign-in", md);
  suite.say("written to bench/RESULTS.md (sign-in section)");
  return `${ATTACKERS} wrong sign-ins; flood ${FLOOD_S} s.`;
});
