// A real nginx (Debian's package) in front of a test server, running the shipped site
// (deploy/nginx.conf) with only its addresses, ports, certificate and log path rewritten: the
// proxy headers a test sees are exactly the ones operators deploy.
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";

const NGINX = "/usr/sbin/nginx";
export const SHIPPED_SITE = resolve(import.meta.dir, "../../deploy/nginx.conf");

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
  /** Output of `nginx -t` on the configuration. */
  check: { status: number | null; output: string };
  stop(): Promise<void>;
}

/**
 * The shipped site, rewritten to run in a temp prefix: the upstream is `upstreamPort`, the TLS
 * server listens on a free loopback port with a throwaway certificate, the redirect server on
 * another, logs in the prefix. Everything inside `location /` is left exactly as shipped.
 */
export function siteFor(shipped: string, dir: string, upstreamPort: number, tlsPort: number, plainPort: number): string {
  const replace = (text: string, from: RegExp, to: string) => {
    if (!from.test(text)) throw new Error(`deploy/nginx.conf no longer has ${from}; update test/harness/nginx.ts`);
    return text.replace(from, to);
  };
  let site = shipped;
  site = replace(site, /server 127\.0\.0\.1:8080;/, `server 127.0.0.1:${upstreamPort};`);
  site = replace(site, /listen 443 ssl( http2)?;/, `listen 127.0.0.1:${tlsPort} ssl;`);
  site = replace(site, /listen 80;/, `listen 127.0.0.1:${plainPort};`);
  site = replace(site, /ssl_certificate\s+\S+;/, `ssl_certificate ${dir}/cert.pem;`);
  site = replace(site, /ssl_certificate_key\s+\S+;/, `ssl_certificate_key ${dir}/key.pem;`);
  site = replace(site, /access_log \/var\/log\/nginx\/leadline\.log/, `access_log ${dir}/leadline.log`);
  return site;
}

export async function startNginx(nginx: string, upstreamPort: number): Promise<RunningNginx> {
  const dir = mkdtempSync(join(tmpdir(), "leadline-nginx-"));
  mkdirSync(join(dir, "logs"));
  const cert = spawnSync(
    "openssl",
    ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost", "-keyout", `${dir}/key.pem`, "-out", `${dir}/cert.pem`],
    { stdio: "pipe" },
  );
  if (cert.status !== 0) throw new Error(`openssl req failed: ${cert.stderr}`);
  const [tlsPort, plainPort] = [await freePort(), await freePort()];
  writeFileSync(join(dir, "site.conf"), siteFor(readFileSync(SHIPPED_SITE, "utf8"), dir, upstreamPort, tlsPort, plainPort));
  // The main configuration of a Debian install, reduced to what a site needs; the site is
  // included inside http, as sites-enabled is.
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
${temp}
  include ${dir}/site.conf;
}
`,
  );
  const args = ["-p", dir, "-c", join(dir, "nginx.conf")];
  const t = spawnSync(nginx, ["-t", ...args], { stdio: "pipe" });
  const check = { status: t.status, output: `${t.stdout}${t.stderr}` };
  if (t.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    return { base: "", check, stop: async () => {} };
  }
  const child: Subprocess = Bun.spawn([nginx, ...args], { stdout: "ignore", stderr: "pipe" });
  const base = `https://127.0.0.1:${tlsPort}`;
  for (let i = 0; ; i++) {
    try {
      await fetch(`${base}/`, { tls: { rejectUnauthorized: false } } as RequestInit);
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
    check,
    async stop() {
      child.kill("SIGQUIT");
      await child.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
