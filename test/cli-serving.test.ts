// The CLI beside a running `serve` on the embedded database: the command is handed to the server
// over its control socket and prints exactly what it prints without a server. Compiled executable,
// bare environment (test/harness/exe.ts); `make build` first, or the file is skipped.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createConnection } from "node:net";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { built, Exe, type Run, type Serving } from "./harness/exe";

if (!built) console.warn("test/cli-serving.test.ts: SKIPPED: dist/leadline is missing; run `make build`");

let exe: Exe;
let serving: Serving;
let direct: Run[];
let relayed: Run[];
const servedDir = () => join(exe.dir, "served");
const env = (dataDir: string) => ({ DATA_DIR: dataDir, WEBHOOK_ALLOW_PRIVATE: "true" });

const FIRST = {
  orgs: [{ id: 1, name: "Acme", timezone: "America/New_York" }],
  campaigns: [{ id: "ACME", org_id: 1, name: "Acme inbound" }],
  lists: [{ id: 101, campaign_id: "ACME", name: "Web leads" }],
  api_keys: [{ name: "site form", org_id: 1, scopes: ["leads:write", "leads:read"] }],
  dni_pools: [{ key: "acme-site", org_id: 1, name: "Acme website", numbers: ["5125550101"], fallback: "5125550100", placeholder: "5125550199" }],
  webhooks: [{ id: 1, org_id: 1, url: "http://127.0.0.1:9/hook", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", events: ["lead.created"] }],
};
const SECOND = { users: [{ id: "agent7", org_id: 1, name: "Dana \u001b[31mDiaz" }], api_keys: [{ name: "desk 7", org_id: 1, scopes: ["cti"], agent: "agent7" }] };

/** The same commands, in order, on a data directory; `run` runs one. */
async function script(run: (args: string[], stdin?: string) => Promise<Run>): Promise<Run[]> {
  writeFileSync(join(exe.dir, "first.json"), JSON.stringify(FIRST));
  return [
    await run(["provision", join(exe.dir, "first.json")]),
    await run(["provision", "-"], JSON.stringify(SECOND)),
    await run(["keys", "create", "--scopes", "leads:read", "--org", "1", "--name", "a \u001b]0;title", "--json"]),
    await run(["keys", "create", "--scopes", "cti"]),
    await run(["keys", "revoke", "1"]),
    await run(["keys", "list"]),
    await run(["keys", "list", "--json"]),
    await run(["webhooks", "list"]),
    await run(["webhooks", "deliveries", "--json"]),
    await run(["dni", "report"]),
    await run(["keys", "revoke", "999"]),
    await run(["keys", "bogus"]),
    await run(["provision", join(exe.dir, "missing.json")]),
    await run(["dni", "report", "--since", "yesterday"]),
    // The dry run reads its file where the operator is, as a run does; nothing is written.
    await run(["provision", "--dry-run", join(exe.dir, "first.json")]),
    await run(["provision", "-", "--dry-run"], JSON.stringify({ orgs: [{ id: 1, consent: "explicit" }] })),
    await run(["dnc", "add", "--org", "1", "--phone", "(512) 555-0177", "--note", "asked on a call"]),
    await run(["dnc", "list", "--org", "1"]),
    await run(["dnc", "add", "--org", "9", "--email", "x@example.com"]),
    await run(["dnc", "remove", "--org", "1"]),
  ];
}

/** Generated keys and times differ between two installations; nothing else may. */
const normalized = (runs: Run[]) =>
  runs.map((r) => {
    const clean = (s: string) => s.replace(/lk_[A-Za-z0-9_-]+/g, "<key>").replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, "<time>");
    return { code: r.code, out: clean(r.out), err: clean(r.err) };
  });

beforeAll(async () => {
  if (!built) return;
  exe = new Exe();
  direct = await script((args, stdin) => exe.run(args, env(join(exe.dir, "direct")), stdin));
  serving = await exe.serve(env(servedDir()));
  relayed = await script((args, stdin) => exe.run(args, env(servedDir()), stdin));
}, 240_000);

afterAll(async () => {
  if (!built) return;
  await serving?.stop();
  exe.cleanup();
});

/** One raw request on the control socket: the frames it answers. */
async function raw(path: string, line: string): Promise<{ o?: string; e?: string; exit?: number }[]> {
  return new Promise((ok, fail) => {
    const conn = createConnection(path);
    let buf = "";
    conn.setEncoding("utf8");
    conn.on("connect", () => conn.write(line));
    conn.on("data", (d: string) => (buf += d));
    conn.on("error", fail);
    conn.on("close", () => ok(buf.trim().split("\n").filter(Boolean).map((l) => JSON.parse(l))));
  });
}

describe.skipIf(!built)("the CLI while serve runs on the embedded database", () => {
  test("every command prints exactly what it prints without a server, with the same exit status", () => {
    expect(normalized(relayed)).toEqual(normalized(direct));
    expect(relayed.map((r) => r.code)).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 1, 2, 0, 0, 0, 0, 1, 2]);
    expect(relayed[16].out).toBe("added phone 5125550177 to organization 1's do-not-contact list\n");
    expect(relayed[17].out).toMatch(/^KIND +ADDRESS +SOURCE +ADDED +NOTE\nphone +5125550177 +cli +\S+Z +"asked on a call"\n$/);
    expect(relayed[18].err).toBe("leadline: organization 9 does not exist\n");
    expect(relayed[10].err).toBe("leadline: no API key with id 999\n");
    expect(relayed[12].err).toBe(`leadline: cannot read ${join(exe.dir, "missing.json")}: ENOENT\n`);
    // Key 1 ("site form") was revoked above: a run would generate its replacement, and says so.
    expect(relayed[14].out.split("\n")[0]).toBe('create key "site form" (org 1) (its key generated and printed by the run)');
    expect(relayed[14].err).toContain("1 key to generate");
    expect(relayed[15].out).toBe('update org 1\n  consent: "implied" → "explicit"\n');
    expect(relayed[15].err).toBe("dry run, nothing written: orgs: 1 to update; 0 keys to generate\n");
    // Output still escaped: the name's ESC never reaches the terminal.
    expect(relayed[6].out).not.toContain("\u001b");
    expect(relayed[6].out).toContain("\\u001b");
    // Each went through serve, which logged it (never its arguments).
    expect(serving.lines.filter((l) => l.includes('"msg":"control command"')).length).toBe(relayed.length);
  });

  test("a key created over the socket works over HTTP at once; revoked, it is refused (403) at once", async () => {
    const created = await exe.run(["keys", "create", "--scopes", "leads:read", "--org", "1", "--json"], env(servedDir()));
    expect(created.code).toBe(0);
    const { id, key } = JSON.parse(created.out);
    const get = () => fetch(`${serving.base}/hooks/api_v1.php?r=leads/424242`, { headers: { "x-api-key": key } });
    const before = await get();
    expect(before.status).toBe(404);
    expect(((await before.json()) as { error: string }).error).toBe("not_found");
    const revoked = await exe.run(["keys", "revoke", String(id)], env(servedDir()));
    expect(revoked).toEqual({ code: 0, out: "", err: `revoked key ${id}\n` });
    // Refused within the key cache's minute only because serve empties it after each command.
    expect((await get()).status).toBe(403);
  });

  test("the socket is 0600 in the 0700 DATA_DIR; serve refuses what is not an operator command", async () => {
    const path = join(servedDir(), "control.sock");
    expect(statSync(path).isSocket()).toBe(true);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(servedDir()).mode & 0o777).toBe(0o700);
    for (const argv of [["serve"], ["migrate"], ["secrets", "rotate"]]) {
      const frames = await raw(path, JSON.stringify({ argv }) + "\n");
      expect(frames).toEqual([
        { e: `leadline: ${JSON.stringify(argv.join(" "))} cannot run while serve runs on the embedded database; stop serve first\n` },
        { exit: 2 },
      ]);
    }
    expect(await raw(path, "not json\n")).toEqual([{ e: "leadline: control socket: the request is not JSON\n" }, { exit: 2 }]);
    expect(await raw(path, JSON.stringify({ argv: [1] }) + "\n")).toEqual([
      { e: "leadline: control socket: argv must be a non-empty array of strings\n" },
      { exit: 2 },
    ]);
    // The CLI itself does not hand `secrets` over: it meets the lock, one line.
    const secrets = await exe.run(["secrets", "rotate"], { ...env(servedDir()), LEADLINE_SECRET_KEY: Buffer.alloc(32, 1).toString("base64") });
    expect(secrets.code).toBe(1);
    expect(secrets.err).toBe(`leadline: the embedded database in ${servedDir()} is in use by process ${serving.pid}; stop it or set DATABASE_URL\n`);
  });

  test("another user cannot connect", () => {
    if (process.getuid?.() !== 0) return console.warn("cli-serving: another-uid check SKIPPED: not running as root");
    const path = join(servedDir(), "control.sock");
    const client = `import socket,sys\ns=socket.socket(socket.AF_UNIX)\ntry:\n  s.connect(${JSON.stringify(path)})\nexcept PermissionError:\n  sys.exit(13)\nsys.exit(0)`;
    const r = spawnSync("/usr/sbin/runuser", ["-u", "nobody", "--", "/usr/bin/python3", "-c", client], { encoding: "utf8" });
    if (r.error || (r.status !== 13 && r.status !== 0)) return console.warn(`cli-serving: another-uid check SKIPPED: ${r.error?.message ?? r.stderr}`);
    expect(r.status).toBe(13);
    // The same client as the owner connects: the refusal is the permission, not the client.
    expect(spawnSync("/usr/bin/python3", ["-c", client]).status).toBe(0);
  });

  test("a DATA_DIR too long for a socket address: the socket goes in a private directory, recorded in DATA_DIR", async () => {
    const runtime = join(exe.dir, "rt");
    mkdirSync(runtime);
    const long = join(exe.dir, "d".repeat(60), "e".repeat(60));
    const e = { ...env(long), XDG_RUNTIME_DIR: runtime };
    const other = await exe.serve(e);
    try {
      const pointer = readFileSync(join(long, "control.path"), "utf8").trim();
      expect(pointer.startsWith(join(runtime, "leadline-"))).toBe(true);
      expect(statSync(pointer).mode & 0o777).toBe(0o600);
      expect(statSync(join(pointer, "..")).mode & 0o777).toBe(0o700);
      expect(existsSync(join(long, "control.sock"))).toBe(false);
      const listed = await exe.run(["keys", "list", "--json"], e);
      expect(listed).toEqual({ code: 0, out: "[]\n", err: "" });
    } finally {
      expect(await other.stop()).toBe(0);
    }
  }, 90_000);
});
