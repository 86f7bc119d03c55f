// docs/deploy.md's "Deploying on a VPS" walkthrough, run as printed, line by line, in a throwaway
// root prefix standing in for a bare server: the system user made by systemd-sysusers, the
// PostgreSQL role and database, the executable installed, the environment file with its mode and
// owner, `leadline serve` started with exactly that file's variables as the unit would, nginx
// checked and run on the installed site, the documented provisioning form, and /readyz through
// nginx over TLS.
//
// Substitution rules (docs/deploy.md states them too); every other line runs as printed, in bash:
// - an absolute path /etc/…, /usr/… or /var/… becomes $ROOT/… (the prefix); the directories the
//   packages would have made (/usr/local/bin, /usr/lib/sysusers.d, /etc/systemd/system, nginx's
//   conf.d, sites-available, sites-enabled) are made first;
// - `apt-get` is not run (the test needs nginx, openssl, psql, curl and systemd-sysusers present);
// - `sudo -u postgres createuser/psql/createdb` run the same SQL through the test server's admin
//   URL, with a unique role and database name in place of `leadline`; the copy of deploy/ the
//   walkthrough installs from has that name and the test server's host and port in env.example's
//   DATABASE_URL, and a free PORT;
// - `systemd-sysusers` gets `--root $ROOT`; `-g leadline` becomes the group's number from the
//   prefix's /etc/group (the machine's own has no such group);
// - `runuser -u leadline -- leadline` becomes setpriv to that user's uid and gid, running the
//   installed executable;
// - `systemctl enable --now leadline` starts what the unit's ExecStart= names, as its User=, with
//   its Environment= and the environment file's variables only; `127.0.0.1:8080` is the free port;
// - `nginx -t` checks a copy of the machine's /etc/nginx with the prefix's nginx files over it (a
//   throwaway certificate in place of certbot's); the final `curl https://$SITE/…` goes to nginx
//   running the installed site on free loopback ports, `--resolve`d and with `-k`;
// - skipped with the reason printed: `systemctl daemon-reload` and `systemctl reload nginx` (no
//   systemd in a container) and certbot (it needs a public name that Let's Encrypt can reach);
// - the walkthrough's ending (step 9, the first admin: its own block after ENDING_MARKER) runs last:
//   `journalctl -u leadline -o cat` reads the standard output and error kept of the serve started in
//   place of systemd (the same grep after it), and the browser's steps (open the installer link, fill the
//   form, land on the console signed in) are the same requests made with curl through nginx over
//   TLS, keeping cookies as a browser does and sending the Origin a browser sends.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { appendFileSync, chmodSync, chownSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";
import { BUILT, built } from "./harness/exe";
import { checkAsDebian, ensureNginx, freePort, startNginx, type RunningNginx } from "./harness/nginx";

const DEPLOY_DOC = resolve(import.meta.dir, "../docs/deploy.md");
const DEPLOY = resolve(import.meta.dir, "../deploy");
const MARKER = "<!-- vps-walkthrough -->";
const ENDING_MARKER = "<!-- vps-walkthrough-first-admin -->";

/** The commands of the fenced block after the marker: every line that is not a comment. */
export function walkthrough(markdown: string, marker = MARKER): string[] {
  const at = markdown.indexOf(marker);
  if (at < 0) throw new Error(`no ${marker}`);
  const rest = markdown.slice(at + marker.length).replace(/^\s*\n/, "");
  if (!rest.startsWith("```sh\n")) throw new Error(`the marker ${marker} must be followed by a \`\`\`sh block`);
  const block = rest.slice("```sh\n".length, rest.indexOf("\n```", 5));
  return block.split("\n").filter((l) => l.trim() !== "" && !l.trimStart().startsWith("#"));
}

function missing(): string | null {
  if (process.getuid?.() !== 0) return "the walkthrough runs as root (install -o root, setpriv)";
  if (!built) return "dist/leadline is missing: make build";
  for (const tool of ["/usr/bin/systemd-sysusers", "/usr/bin/setpriv", "/usr/bin/psql", "/usr/bin/curl", "/usr/bin/openssl"]) {
    if (!existsSync(tool)) return `${tool} is missing`;
  }
  if (!process.env.LEADLINE_TEST_ADMIN_URL) return "LEADLINE_TEST_ADMIN_URL is not set: run through test/run.ts";
  return null;
}

const why = missing();
const nginx = why ? null : ensureNginx();
const skip = why ?? (nginx && "missing" in nginx ? nginx.missing : null);
if (skip) console.warn(`deploy-walkthrough.test.ts: skipping: ${skip}`);
const NGINX = nginx && "path" in nginx ? nginx.path : "";

const ROLE = `ll_walk_${randomBytes(4).toString("hex")}`;
let root = "";
let work = "";
let port = 0;
let server: Subprocess | null = null;
let proxy: RunningNginx | null = null;
const vars: Record<string, string> = {};
const skipped: string[] = [];
let account: { uid: number; gid: number } | null = null;
/** What the service printed on standard output and error: the journal's part a container has. */
let journal = "";
let journaling: Promise<void> | null = null;

const admin = () => process.env.LEADLINE_TEST_ADMIN_URL!;

function adminSql(statement: string): void {
  const r = spawnSync("psql", [admin(), "-v", "ON_ERROR_STOP=1", "-qAtc", statement], { stdio: "pipe" });
  if (r.status !== 0) throw new Error(`${statement}: ${r.stderr}`);
}

beforeAll(async () => {
  if (skip) return;
  root = mkdtempSync(join(tmpdir(), "leadline-vps-"));
  journal = join(root, "journal.txt");
  chmodSync(root, 0o755); // the service's user must reach the installed executable
  for (const d of ["usr/local/bin", "usr/lib/sysusers.d", "etc/systemd/system", "etc/nginx/conf.d", "etc/nginx/sites-available", "etc/nginx/sites-enabled"]) {
    mkdirSync(join(root, d), { recursive: true });
  }
  // The operator's copy: `scp -r dist deploy root@SERVER:leadline/`.
  work = join(root, "root/leadline");
  mkdirSync(join(work, "dist"), { recursive: true });
  copyFileSync(BUILT, join(work, "dist/leadline"));
  chmodSync(join(work, "dist/leadline"), 0o755);
  cpSync(DEPLOY, join(work, "deploy"), { recursive: true });
  port = await freePort();
  const pg = new URL(admin());
  const envExample = readFileSync(join(DEPLOY, "env.example"), "utf8");
  const url = "DATABASE_URL=postgres://leadline:CHANGE_ME@127.0.0.1:5432/leadline\n";
  expect(envExample).toContain(url);
  expect(envExample).toContain("\nPORT=8080\n");
  writeFileSync(
    join(work, "deploy/env.example"),
    envExample
      .replace(url, `DATABASE_URL=postgres://${ROLE}:CHANGE_ME@${pg.hostname}:${pg.port || 5432}/${ROLE}\n`)
      .replace("\nPORT=8080\n", `\nPORT=${port}\n`),
  );
});

afterAll(async () => {
  await proxy?.stop();
  if (server) {
    server.kill("SIGTERM");
    await server.exited;
    await journaling;
  }
  if (!skip) {
    try {
      adminSql(`drop database if exists ${ROLE} with (force)`);
      adminSql(`drop role if exists ${ROLE}`);
    } catch (err) {
      console.warn(`deploy-walkthrough.test.ts: cleanup: ${err}`);
    }
  }
  if (root) rmSync(root, { recursive: true, force: true });
});

/** The prefix's user `leadline`, once systemd-sysusers has made it. */
function leadlineAccount(): { uid: number; gid: number } {
  const passwd = readFileSync(join(root, "etc/passwd"), "utf8").match(/^leadline:[^:]*:(\d+):(\d+):/m);
  if (!passwd) throw new Error("systemd-sysusers made no user leadline in the prefix");
  return { uid: Number(passwd[1]), gid: Number(passwd[2]) };
}

/** A line with the prefix's absolute paths and the test's names, ready for bash. */
function adapt(line: string): string {
  let l = line.replace(/(^|[\s'"<>=])\/(etc|usr|var)\//g, `$1${root}/$2/`);
  l = l.replaceAll("127.0.0.1:8080", `127.0.0.1:${port}`);
  if (account) {
    l = l.replaceAll("-g leadline ", `-g ${account.gid} `);
    l = l.replace("runuser -u leadline -- leadline ", `setpriv --reuid=${account.uid} --regid=${account.gid} --clear-groups -- ${root}/usr/local/bin/leadline `);
  }
  return l;
}

function bash(line: string): { status: number | null; out: string; err: string } {
  const r = spawnSync("bash", ["-eo", "pipefail", "-c", line], {
    cwd: work,
    env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", HOME: join(root, "root"), ...vars },
    stdio: ["ignore", "pipe", "pipe"],
    timeout: 60_000,
  });
  return { status: r.status, out: `${r.stdout}`, err: `${r.stderr}` };
}

function run(line: string): string {
  const r = bash(line);
  if (r.status !== 0) throw new Error(`\`${line}\` exited ${r.status}: ${r.err}${r.out}`);
  return r.out;
}

/** KEY=VALUE lines of an environment file, as systemd's EnvironmentFile= reads these simple ones. */
function envFile(path: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of readFileSync(path, "utf8").split("\n")) {
    const m = line.match(/^([A-Z_][A-Z0-9_]*)=(.*)$/);
    if (m) out[m[1]] = m[2];
  }
  return out;
}

/** `systemctl enable --now leadline`, minus systemd: the unit's ExecStart= as its User=, with its environment. */
async function startUnit(): Promise<void> {
  const unit = readFileSync(join(root, "etc/systemd/system/leadline.service"), "utf8");
  const exec = unit.match(/^ExecStart=(.+)$/m)![1].trim().split(/\s+/);
  expect(unit).toMatch(/^User=leadline$/m);
  expect(unit).toMatch(/^EnvironmentFile=\/etc\/leadline\/env$/m);
  const env: Record<string, string> = { PATH: "/usr/bin:/bin" };
  for (const m of unit.matchAll(/^Environment=([A-Z_]+)=(.*)$/gm)) env[m[1]] = m[2].replace(/^\/var\//, `${root}/var/`);
  Object.assign(env, envFile(join(root, "etc/leadline/env")));
  // StateDirectory=leadline, StateDirectoryMode=0700: what systemd makes before the start.
  const state = join(root, "var/lib/leadline");
  mkdirSync(state, { recursive: true, mode: 0o700 });
  chownSync(state, account!.uid, account!.gid);
  const bin = exec[0].replace(/^\/usr\//, `${root}/usr/`);
  const child = Bun.spawn(["setpriv", `--reuid=${account!.uid}`, `--regid=${account!.gid}`, "--clear-groups", "--", bin, ...exec.slice(1)], {
    cwd: state,
    env,
    stdout: "pipe",
    stderr: "pipe",
  });
  server = child;
  // Both streams read as they come (a pipe nobody reads would block the service once full) and
  // kept in one file, as journald keeps a unit's standard output and error.
  writeFileSync(journal, "");
  const keep = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) appendFileSync(journal, chunk);
  };
  journaling = Promise.all([keep(child.stdout), keep(child.stderr)]).then(() => {});
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) return;
    } catch {}
    if (child.exitCode !== null || i > 450) {
      child.kill();
      await journaling;
      throw new Error(`leadline serve did not start: ${readFileSync(journal, "utf8")}`);
    }
    await Bun.sleep(100);
  }
}

/**
 * The browser's part of step 9 (docs/deploy.md), through nginx over TLS: open the installer link
 * (303 to the form, with the installer cookie), the form, the form sent (303 to the inbox, signed
 * in), then the console as the new admin.
 */
function firstAdmin(link: string, email: string): void {
  const tls = new URL(proxy!.base).port;
  const site = vars.SITE!;
  const jar = join(root, "root/cookies.txt");
  const on = (url: string) => url.replace(`https://${site}/`, `https://${site}:${tls}/`);
  const curl = (args: string) =>
    run(`curl -sSk --resolve "$SITE:${tls}:127.0.0.1" -b ${jar} -c ${jar} -o /dev/null -w '%{http_code} %{redirect_url}' ${args}`);
  expect(curl(`"${on(link)}"`)).toBe(`303 https://${site}:${tls}/console/install`);
  expect(curl(`"https://$SITE:${tls}/console/install"`)).toBe("200 ");
  const password = randomBytes(12).toString("hex");
  const fields = { email, name: "First Admin", password, confirm: password };
  const form = Object.entries(fields).map(([k, v]) => `--data-urlencode "${k}=${v}"`).join(" ");
  expect(curl(`-H "Origin: https://$SITE" ${form} "https://$SITE:${tls}/console/install"`)).toBe(`303 https://${site}:${tls}/console/settings/first-steps`);
  const account = run(`curl -fsSk --resolve "$SITE:${tls}:127.0.0.1" -b ${jar} "https://$SITE:${tls}/console/account"`);
  expect(account).toContain(email);
  expect(curl(`"https://$SITE:${tls}/console/inbox"`)).toBe("200 ");
  // Used up: the link answers the page that says so.
  expect(curl(`"${on(link)}"`)).toBe("404 ");
}

describe.skipIf(!!skip)("docs/deploy.md's VPS walkthrough", () => {
  test("runs as printed in a throwaway prefix, up to /readyz through nginx over TLS and the first admin signed in", async () => {
    const doc = readFileSync(DEPLOY_DOC, "utf8");
    const lines = [...walkthrough(doc), ...walkthrough(doc, ENDING_MARKER)];
    const seen = new Set<string>();
    let nginxChecks = 0;
    let provisioned = "";
    for (const line of lines) {
      let m: RegExpMatchArray | null;
      if ((m = line.match(/^([A-Z_]+)=(.*)$/))) {
        // A shell variable for the following lines, evaluated as bash would.
        vars[m[1]] = run(`${line}; printf %s "$${m[1]}"`);
        seen.add("variable");
      } else if (/^apt-get /.test(line)) {
        skipped.push(`${line}: the packages are taken as installed (nginx, openssl, psql, curl present)`);
      } else if ((m = line.match(/^sudo -u postgres createuser (\w+)$/))) {
        expect(m[1]).toBe("leadline");
        adminSql(`create role ${ROLE} login`);
        seen.add("role");
      } else if ((m = line.match(/^sudo -u postgres psql (.+)$/))) {
        run(`psql "${admin()}" ${m[1].replace(/\bleadline\b/g, ROLE)}`);
        seen.add("password");
      } else if ((m = line.match(/^sudo -u postgres createdb -O (\w+) (\w+)$/))) {
        expect([m[1], m[2]]).toEqual(["leadline", "leadline"]);
        adminSql(`create database ${ROLE} owner ${ROLE}`);
        seen.add("database");
      } else if (line === "systemd-sysusers") {
        run(`systemd-sysusers --root ${root}`);
        account = leadlineAccount();
        seen.add("sysusers");
      } else if (line === "systemctl daemon-reload") {
        skipped.push(`${line}: no systemd in a container`);
      } else if (line === "systemctl enable --now leadline") {
        await startUnit();
        seen.add("serve");
      } else if (line === "nginx -t && systemctl reload nginx") {
        const check = checkAsDebian(NGINX, { installed: join(root, "etc/nginx") });
        if (check.status !== 0) throw new Error(`nginx -t on the installed files (check ${nginxChecks + 1}): ${check.output}`);
        nginxChecks++;
        skipped.push("systemctl reload nginx: no systemd in a container (nginx -t ran on the installed files)");
      } else if (/^certbot /.test(line)) {
        skipped.push(`${line}: certbot needs a public name that Let's Encrypt reaches on port 80; a throwaway certificate stands in`);
      } else if (line.startsWith("sh -c 'set -a; . /etc/leadline/env; exec runuser -u leadline -- leadline provision -' < ")) {
        provisioned = run(adapt(line));
        seen.add("provision");
      } else if (line.startsWith("journalctl -u leadline -o cat | ")) {
        const link = run(line.replace("journalctl -u leadline -o cat", `cat ${journal}`)).trim();
        expect(link).toMatch(new RegExp(`^https://${vars.SITE!.replaceAll(".", "\\.")}/console/install/[A-Za-z0-9_-]{43}$`));
        firstAdmin(link, vars.EMAIL!);
        seen.add("first admin");
      } else if (line === 'curl -fsS "https://$SITE/readyz"') {
        const installed = readFileSync(join(root, "etc/nginx/sites-enabled/leadline"), "utf8");
        proxy = await startNginx(NGINX, port, { site: installed, logFormat: join(root, "etc/nginx/conf.d/leadline-log.conf") });
        expect(proxy.check.status).toBe(0);
        const tls = new URL(proxy.base).port;
        const out = run(`curl -fsSk --resolve "$SITE:${tls}:127.0.0.1" "https://$SITE:${tls}/readyz"`);
        expect(JSON.parse(out)).toEqual({ ok: true });
        seen.add("https readyz");
      } else {
        const out = run(adapt(line));
        if (line.startsWith("stat ")) {
          expect(out).toMatch(/^640 root:/);
          seen.add("stat");
        }
        if (line.startsWith("curl -fsS http://127.0.0.1:8080/readyz")) {
          expect(JSON.parse(out)).toEqual({ ok: true });
          seen.add("local readyz");
        }
      }
    }
    console.log(`deploy-walkthrough.test.ts: not run here:\n  ${skipped.join("\n  ")}`);

    // Every part a container allows was reached, in the walkthrough's own words.
    expect([...seen].sort()).toEqual(
      ["database", "first admin", "https readyz", "local readyz", "password", "provision", "role", "serve", "stat", "sysusers", "variable"].sort(),
    );
    expect(nginxChecks).toBe(2);
    expect(skipped.filter((s) => s.startsWith("certbot"))).toHaveLength(1);

    // The environment file: 0640 root:leadline, every placeholder replaced, the key well-formed.
    const env = statSync(join(root, "etc/leadline/env"));
    expect(env.mode & 0o777).toBe(0o640);
    expect([env.uid, env.gid]).toEqual([0, account!.gid]);
    const values = envFile(join(root, "etc/leadline/env"));
    expect(readFileSync(join(root, "etc/leadline/env"), "utf8")).not.toContain("CHANGE_ME");
    expect(values.BASE_URL).toBe(`https://${vars.SITE}`);
    expect(values.HOST).toBe("127.0.0.1");
    expect(Buffer.from(values.LEADLINE_SECRET_KEY, "base64")).toHaveLength(32);
    expect(values.NPK_IP_SALT).toMatch(/^[0-9a-f]{64}$/);
    expect(statSync(join(root, "etc/leadline")).mode & 0o777).toBe(0o750);
    expect(statSync(join(root, "usr/local/bin/leadline")).mode & 0o777).toBe(0o755);

    // The example file's two keys were generated and printed once, by the service's own user.
    expect(provisioned.split("\n").filter((l) => /^key \d+ .+ lk_[A-Za-z0-9_-]{43}$/.test(l))).toHaveLength(2);
    const listed = run(adapt("sh -c 'set -a; . /etc/leadline/env; exec runuser -u leadline -- leadline keys list'"));
    expect(listed).toContain("site form");
    expect(listed).toContain("dana softphone");
  }, 240_000);
});
