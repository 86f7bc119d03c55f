// A real nginx (Debian's package) in front of test servers, running the shipped site
// (deploy/nginx/leadline.conf) and its log format (deploy/nginx/leadline-log.conf) with only their
// addresses, ports, certificate, webroot and log paths rewritten: what a test sees through it is
// what operators deploy.
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";

const NGINX = "/usr/sbin/nginx";
export const SHIPPED_SITE = resolve(import.meta.dir, "../../deploy/nginx/leadline.conf");
export const SHIPPED_LOG_FORMAT = resolve(import.meta.dir, "../../deploy/nginx/leadline-log.conf");
export const SHIPPED_FIRST_CERT = resolve(import.meta.dir, "../../deploy/nginx/leadline-first-cert.conf");

/**
 * nginx's path, installed with apt-get when missing (as root; apt may be held for a while by
 * another process, so installation is retried), or why it cannot be had here.
 */
export function ensureNginx(): { path: string } | { missing: string } {
  if (existsSync(NGINX)) return { path: NGINX };
  if (process.getuid?.() !== 0 || !existsSync("/usr/bin/apt-get")) {
    return { missing: `${NGINX} is missing and cannot be installed here (apt-get install -y nginx, as root)` };
  }
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const run = (args: string[]): SpawnSyncReturns<Buffer> => spawnSync("apt-get", args, { env, stdio: "pipe", timeout: 300_000 });
  let last = "";
  for (let attempt = 0; attempt < 10 && !existsSync(NGINX); attempt++) {
    const r = run(["install", "-y", "--no-install-recommends", "nginx"]);
    if (r.status === 0) break;
    last = `${r.stderr}`.trim().split("\n").slice(-2).join(" ");
    // A missing package list is fetched once; a held lock is waited out.
    if (/Unable to locate|has no installation candidate/.test(last)) run(["update"]);
    else Bun.sleepSync(5000);
  }
  return existsSync(NGINX) ? { path: NGINX } : { missing: `apt-get install nginx failed: ${last}` };
}

/** A TCP port free on 127.0.0.1 a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolvePort(port));
    });
  });
}

export interface RunningNginx {
  /** https://127.0.0.1:PORT, the shipped TLS server (self-signed certificate). */
  base: string;
  /** http://127.0.0.1:PORT, the shipped port-80 server (ACME challenge, redirect). */
  plain: string;
  /** The directory the port-80 server serves /.well-known/acme-challenge/ from. */
  webroot: string;
  /** Output of `nginx -t` on the configuration. */
  check: { status: number | null; output: string };
  /** The site's access log so far. */
  accessLog(): string;
  stop(): Promise<void>;
}

/** `text` with every match of `from` replaced; throws when the shipped file no longer has it. */
function rewrite(text: string, from: RegExp, to: string): string {
  if (!text.match(from)) throw new Error(`deploy/nginx/leadline.conf no longer has ${from}; update test/harness/nginx.ts`);
  return text.replace(from, to);
}

/** A throwaway self-signed certificate and key in `dir` (cert.pem, key.pem). */
export function throwawayCertificate(dir: string): { cert: string; key: string } {
  const [cert, key] = [join(dir, "cert.pem"), join(dir, "key.pem")];
  const r = spawnSync(
    "openssl",
    ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost", "-keyout", key, "-out", cert],
    { stdio: "pipe" },
  );
  if (r.status !== 0) throw new Error(`openssl req failed: ${r.stderr}`);
  return { cert, key };
}

/** The shipped site with certbot's certificate paths pointed at `cert`/`key`; nothing else changed. */
export function withCertificate(site: string, cert: { cert: string; key: string }): string {
  site = rewrite(site, /ssl_certificate\s+\/etc\/letsencrypt\/live\/[^/]+\/fullchain\.pem;/, `ssl_certificate ${cert.cert};`);
  return rewrite(site, /ssl_certificate_key\s+\/etc\/letsencrypt\/live\/[^/]+\/privkey\.pem;/, `ssl_certificate_key ${cert.key};`);
}

/**
 * The shipped site, rewritten to run in a temp prefix: the upstream's instances are
 * `upstreamPorts` (the first replaces 127.0.0.1:8080, a second the commented 127.0.0.1:8081), the
 * TLS server listens on a free loopback port with a throwaway certificate, the port-80 server on
 * another, IPv6 listens dropped, webroot and logs in the prefix. Every other line is left exactly
 * as shipped.
 */
export function siteFor(shipped: string, dir: string, upstreamPorts: number[], tlsPort: number, plainPort: number): string {
  let site = shipped;
  site = rewrite(site, /server 127\.0\.0\.1:8080;/, `server 127.0.0.1:${upstreamPorts[0]};`);
  if (upstreamPorts.length > 2) throw new Error("the shipped site names two instances");
  if (upstreamPorts[1] !== undefined) site = rewrite(site, /# server 127\.0\.0\.1:8081;/, `server 127.0.0.1:${upstreamPorts[1]};`);
  site = rewrite(site, /listen 443 ssl http2;/, `listen 127.0.0.1:${tlsPort} ssl http2;`);
  site = rewrite(site, /listen 80;/, `listen 127.0.0.1:${plainPort};`);
  site = rewrite(site, /\s*listen \[::\]:(80|443)[^;]*;/g, "");
  site = withCertificate(site, { cert: `${dir}/cert.pem`, key: `${dir}/key.pem` });
  site = rewrite(site, /root \/var\/www\/letsencrypt;/, `root ${dir}/webroot;`);
  return rewrite(site, /access_log \/var\/log\/nginx\/leadline\.log/g, `access_log ${dir}/leadline.log`);
}

/**
 * `nginx -t` on a copy of this machine's Debian /etc/nginx (its nginx.conf, mime types, default
 * site …) with the shipped files placed as docs/deploy.md says: the log format in conf.d, the site in
 * sites-available linked from sites-enabled (or, with `firstCert`, only the first-certificate
 * server in sites-enabled, and no certificate anywhere; with `installed`, the files of that
 * directory instead). Only paths the machine lacks are
 * rewritten: certbot's certificate (a throwaway one), and /etc/nginx, /var/log/nginx and the pid
 * file (into the copy).
 */
export function checkAsDebian(nginx: string, options: { firstCert?: boolean; installed?: string } = {}): { status: number | null; output: string } {
  const dir = mkdtempSync(join(tmpdir(), "leadline-nginx-etc-"));
  try {
    const etc = join(dir, "etc");
    mkdirSync(join(dir, "log"));
    cpSync("/etc/nginx", etc, { recursive: true, dereference: true });
    if (options.installed) {
      // An /etc/nginx a test installed into, as docs/deploy.md's walkthrough does: its files over the
      // machine's; certbot's certificate, which a test cannot have, replaced by a throwaway one.
      cpSync(options.installed, etc, { recursive: true, dereference: true });
      const cert = throwawayCertificate(dir);
      for (const name of readdirSync(join(etc, "sites-enabled"))) {
        const path = join(etc, "sites-enabled", name);
        const text = readFileSync(path, "utf8");
        if (text.includes("/etc/letsencrypt/live/")) writeFileSync(path, withCertificate(text, cert));
      }
    } else if (options.firstCert) {
      writeFileSync(join(etc, "conf.d/leadline-log.conf"), readFileSync(SHIPPED_LOG_FORMAT));
      writeFileSync(join(etc, "sites-enabled/leadline-first-cert"), readFileSync(SHIPPED_FIRST_CERT));
    } else {
      writeFileSync(join(etc, "conf.d/leadline-log.conf"), readFileSync(SHIPPED_LOG_FORMAT));
      writeFileSync(join(etc, "sites-available/leadline"), withCertificate(readFileSync(SHIPPED_SITE, "utf8"), throwawayCertificate(dir)));
      symlinkSync(join(etc, "sites-available/leadline"), join(etc, "sites-enabled/leadline"));
    }
    const relocate = (text: string) =>
      text.replaceAll("/etc/nginx/", `${etc}/`).replaceAll("/var/log/nginx/", `${dir}/log/`).replaceAll("/run/nginx.pid", `${dir}/nginx.pid`);
    const walk = (d: string) => {
      for (const name of readdirSync(d)) {
        const path = join(d, name);
        if (statSync(path).isDirectory()) walk(path);
        else writeFileSync(path, relocate(readFileSync(path, "utf8")));
      }
    };
    walk(etc);
    const t = spawnSync(nginx, ["-t", "-c", join(etc, "nginx.conf")], { stdio: "pipe" });
    return { status: t.status, output: `${t.stdout}${t.stderr}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The shipped site and log format in a temp prefix, in front of the instances on `upstream`. */
export async function startNginx(
  nginx: string,
  upstream: number | number[],
  /** The site and log format to run, when not the shipped files (e.g. as a walkthrough installed them). */
  files: { site?: string; logFormat?: string } = {},
): Promise<RunningNginx> {
  const dir = mkdtempSync(join(tmpdir(), "leadline-nginx-"));
  mkdirSync(join(dir, "logs"));
  mkdirSync(join(dir, "webroot"));
  throwawayCertificate(dir);
  const [tlsPort, plainPort] = [await freePort(), await freePort()];
  writeFileSync(join(dir, "site.conf"), siteFor(files.site ?? readFileSync(SHIPPED_SITE, "utf8"), dir, [upstream].flat(), tlsPort, plainPort));
  // The main configuration of a Debian install, reduced to what a site needs; the log format is
  // included inside http before the site, as conf.d is before sites-enabled.
  const temp = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map((t) => `  ${t}_temp_path ${dir}/${t};`).join("\n");
  writeFileSync(
    join(dir, "nginx.conf"),
    `${process.getuid?.() === 0 ? "user root;\n" : ""}daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 256; }
http {
  access_log off;
  include /etc/nginx/mime.types;
${temp}
  include ${files.logFormat ?? SHIPPED_LOG_FORMAT};
  include ${dir}/site.conf;
}
`,
  );
  const args = ["-p", dir, "-c", join(dir, "nginx.conf")];
  const t = spawnSync(nginx, ["-t", ...args], { stdio: "pipe" });
  const check = { status: t.status, output: `${t.stdout}${t.stderr}` };
  const accessLog = () => (existsSync(`${dir}/leadline.log`) ? readFileSync(`${dir}/leadline.log`, "utf8") : "");
  const [base, plain, webroot] = [`https://127.0.0.1:${tlsPort}`, `http://127.0.0.1:${plainPort}`, `${dir}/webroot`];
  if (t.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    return { base: "", plain: "", webroot, check, accessLog, stop: async () => {} };
  }
  const child: Subprocess = Bun.spawn([nginx, ...args], { stdout: "ignore", stderr: "pipe" });
  for (let i = 0; ; i++) {
    try {
      // The port-80 redirect: answered by nginx itself, so no instance sees the probe.
      await fetch(`${plain}/`, { redirect: "manual" });
      break;
    } catch (err) {
      if (i > 100 || child.exitCode !== null) {
        child.kill();
        throw new Error(`nginx did not start: ${existsSync(`${dir}/error.log`) ? readFileSync(`${dir}/error.log`, "utf8") : err}`);
      }
      await Bun.sleep(50);
    }
  }
  return {
    base,
    plain,
    webroot,
    check,
    accessLog,
    async stop() {
      child.kill("SIGQUIT");
      await child.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
