import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { capture, spawnCli as spawnAs } from "./harness/capture";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";
import { keysCommand } from "../src/auth/command";
import { putKey } from "../src/auth/admin";
import { hashKey } from "../src/auth/keys";
import { migrations } from "../src/db/migrations";
import { UsageError } from "../src/errors";

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
});
afterAll(() => db?.drop());


const keys = (...args: string[]) => capture(() => keysCommand(db.sql, args));
const lastLine = (s: string) => s.trimEnd().split("\n").at(-1)!;
const row = async (id: number) => (await db.sql`select * from api_keys where id = ${id}`)[0];

/** The real executable, so that exit statuses and the one-line stderr are what an operator sees. */
const spawnCli = (...args: string[]) => spawnAs(db.url, ...args);

describe("keys create", () => {
  test("prints the key alone on stdout's last line and stores only its hash", async () => {
    const r = await keys("create", "--scopes", "leads:write,leads:read", "--name", "web form");
    expect(r.code).toBe(0);
    const key = lastLine(r.out);
    expect(key).toMatch(/^lk_[A-Za-z0-9_-]{43}$/);
    const [stored] = await db.sql`select * from api_keys where key_hash = ${hashKey(key)}`;
    expect(stored).toMatchObject({ name: "web form", org_id: null, agent: null, active: true, provisioned: false });
    expect(stored.scopes).toEqual(["leads:read", "leads:write"]);
    expect(JSON.stringify(stored)).not.toContain(key);
  });

  test("--json prints one object {id, key, name, org_id, scopes, agent}", async () => {
    const r = await keys("create", "--scopes=cti", "--org", "1", "--agent", "agent7", "--name", "dialer", "--json");
    const lines = r.out.trim().split("\n");
    expect(lines).toHaveLength(1);
    const body = JSON.parse(lines[0]);
    expect(Object.keys(body).sort()).toEqual(["agent", "id", "key", "name", "org_id", "scopes"]);
    expect(body).toMatchObject({ name: "dialer", org_id: 1, scopes: ["cti"], agent: "agent7" });
    expect(Buffer.from((await row(body.id)).key_hash).equals(hashKey(body.key))).toBe(true);
  });

  test("a house agent may be bound to an org key", async () => {
    const r = await keys("create", "--scopes", "cti", "--org", "2", "--agent", "house1", "--json");
    expect(JSON.parse(r.out)).toMatchObject({ org_id: 2, agent: "house1" });
  });

  test("rejects unknown orgs, unknown agents and agents of another org", async () => {
    const before = (await db.sql`select count(*)::int as n from api_keys`)[0].n;
    await expect(keys("create", "--scopes", "cti", "--org", "99")).rejects.toThrow("org 99 does not exist");
    await expect(keys("create", "--scopes", "cti", "--agent", "ghost")).rejects.toThrow('user "ghost" does not exist');
    await expect(keys("create", "--scopes", "cti", "--org", "1", "--agent", "agent9")).rejects.toThrow(
      'user "agent9" belongs to org 2, not 1',
    );
    expect((await db.sql`select count(*)::int as n from api_keys`)[0].n).toBe(before);
  });

  test("bad arguments are usage errors", async () => {
    for (const args of [
      ["create"],
      ["create", "--scopes", "leads:read,leads:delete"],
      ["create", "--scopes", ""],
      ["create", "--scopes", "cti", "--org", "one"],
      ["create", "--scopes", "cti", "--colour", "red"],
      ["create", "--scopes", "cti", "extra"],
      ["create", "--scopes"],
      ["create", "--scopes", "cti", "--agent", ""],
      ["create", "--scopes", "cti", "--json", "--json"],
      ["list", "--all"],
      ["revoke"],
      ["revoke", "x"],
      ["rotate", "1", "2"],
      ["frobnicate"],
      [],
    ]) {
      await expect(keys(...args)).rejects.toBeInstanceOf(UsageError);
    }
  });
});

describe("keys list", () => {
  test("shows prefixes and grants, never plaintext or hashes", async () => {
    const created = JSON.parse((await keys("create", "--scopes", "metrics:write", "--org", "1", "--name", "kpi feed", "--json")).out);
    const hashHex = Buffer.from((await row(created.id)).key_hash).toString("hex");

    const text = await keys("list");
    expect(text.out.split("\n")[0]).toMatch(/^ID\s+PREFIX\s+NAME\s+ORG\s+SCOPES\s+AGENT\s+ACTIVE\s+CREATED\s+LAST_USED$/);
    const line = text.out.split("\n").find((l) => l.startsWith(`${created.id} `))!;
    expect(line.split(/\s+/)[1]).toBe(created.key.slice(0, 7)); // lk_ and 4 of its random characters
    expect(line).toContain('"kpi feed"');
    expect(line).toContain("metrics:write");

    const json = await keys("list", "--json");
    const listed = JSON.parse(json.out).find((k: { id: number }) => k.id === created.id);
    expect(listed).toMatchObject({ prefix: created.key.slice(0, 7), name: "kpi feed", org_id: 1, scopes: ["metrics:write"],
      agent: null, active: true, last_used_at: null, revoked_at: null });
    for (const out of [text.out, json.out]) {
      expect(out).not.toContain(created.key);
      expect(out).not.toContain(hashHex);
    }
  });
});

describe("keys at rest", () => {
  test("a chosen key has no prefix: '-' in the table, null in --json", async () => {
    const chosen = "an-operator-chosen-key-of-40-characters!";
    const { id } = (await db.sql.begin((tx) => putKey(tx, { name: "chosen", org_id: null, scopes: ["cti"], agent: null }, chosen)))!;
    expect((await row(id)).key_prefix).toBe("");
    const line = (await keys("list")).out.split("\n").find((l) => l.startsWith(`${id} `))!;
    expect(line.split(/\s+/).slice(0, 3)).toEqual([String(id), "-", "chosen"]);
    const listed = JSON.parse((await keys("list", "--json")).out).find((k: { id: number }) => k.id === id);
    expect(listed.prefix).toBeNull();
  });

  test("the migration cuts a CLI-generated key's stored prefix to 7 characters and clears every provisioned one", async () => {
    const m = migrations.find((x) => x.name.endsWith("_key_prefix"))!;
    const put = async (prefix: string, provisioned: boolean) =>
      (await db.sql<{ id: number }[]>`
        insert into api_keys (key_hash, key_prefix, provisioned)
        values (${hashKey(crypto.randomUUID())}, ${prefix}, ${provisioned}) returning id`)[0].id;
    const cli = await put("lk_AbCdEfG", false);
    const provisionedGenerated = await put("lk_HiJkLmN", true);
    const chosenLk = await put("lk_test_ac", true);
    const chosen = await put("s3cretKey1", true);
    await db.sql.begin((tx) => tx.unsafe(m.sql));
    const after = async (id: number) => (await row(id)).key_prefix;
    expect([await after(cli), await after(provisionedGenerated), await after(chosenLk), await after(chosen)]).toEqual([
      "lk_AbCd", "", "", "",
    ]);
    // Run again (as on a database where new rows were written since): nothing changes.
    await db.sql.begin((tx) => tx.unsafe(m.sql));
    expect(await after(cli)).toBe("lk_AbCd");
  });
});

describe("keys revoke and rotate", () => {
  test("revoke deactivates the key and records when", async () => {
    const { id } = JSON.parse((await keys("create", "--scopes", "cti", "--json")).out);
    const r = await keys("revoke", String(id));
    expect(r.code).toBe(0);
    const revoked = await row(id);
    expect(revoked.active).toBe(false);
    expect(revoked.revoked_at).toBeInstanceOf(Date);
    await expect(keys("revoke", "987654")).rejects.toThrow("no API key with id 987654");
  });

  test("rotate issues a key with the same grants and revokes the old one", async () => {
    const old = JSON.parse((await keys("create", "--scopes", "cti,calls:write", "--org", "1", "--agent", "agent7", "--name", "desk", "--json")).out);
    const r = await keys("rotate", String(old.id), "--json");
    const fresh = JSON.parse(r.out);
    expect(fresh.id).not.toBe(old.id);
    expect(fresh.key).not.toBe(old.key);
    expect(fresh).toMatchObject({ name: "desk", org_id: 1, scopes: old.scopes, agent: "agent7" });
    expect((await row(old.id)).active).toBe(false);
    expect((await row(fresh.id)).active).toBe(true);

    const plain = await keys("rotate", String(fresh.id));
    expect(lastLine(plain.out)).toMatch(/^lk_/);
    await expect(keys("rotate", String(old.id))).rejects.toThrow(`API key ${old.id} is revoked`);
    await expect(keys("rotate", "987654")).rejects.toThrow("no API key with id 987654");
  });

  test("rotate refuses to carry over a binding to another organization's user (one made before the rule)", async () => {
    const old = JSON.parse((await keys("create", "--scopes", "cti", "--org", "1", "--agent", "agent7", "--json")).out);
    await db.sql`update api_keys set agent = 'agent9' where id = ${old.id}`;
    const before = (await db.sql`select count(*)::int as n from api_keys`)[0].n;
    await expect(keys("rotate", String(old.id))).rejects.toThrow('user "agent9" belongs to org 2, not 1');
    expect((await db.sql`select count(*)::int as n from api_keys`)[0].n).toBe(before);
    expect((await row(old.id)).active).toBe(true);
  });

  test("every change notifies running servers on leadline_keys", async () => {
    let heard = 0;
    const listener = await db.sql.listen("leadline_keys", () => void heard++);
    const waitFor = async (n: number) => {
      for (let i = 0; i < 100 && heard < n; i++) await Bun.sleep(20);
      expect(heard).toBeGreaterThanOrEqual(n);
    };
    const { id } = JSON.parse((await keys("create", "--scopes", "cti", "--json")).out);
    await waitFor(1);
    const { id: id2 } = JSON.parse((await keys("rotate", String(id), "--json")).out);
    await waitFor(2);
    await keys("revoke", String(id2));
    await waitFor(3);
    await listener.unlisten();
  });
});

describe("the executable", () => {
  test("a bad scope exits non-zero with one line on stderr and nothing on stdout", async () => {
    const r = await spawnCli("keys", "create", "--scopes", "leads:read,root");
    expect(r.code).not.toBe(0);
    expect(r.out).toBe("");
    expect(r.err.trimEnd().split("\n")).toHaveLength(1);
    expect(r.err).toContain('unknown scope "root"');
  });

  test("revoking an unknown id exits 1 with one line on stderr", async () => {
    const r = await spawnCli("keys", "revoke", "987654");
    expect(r.code).toBe(1);
    expect(r.err.trimEnd().split("\n")).toHaveLength(1);
    expect(r.err).toContain("no API key with id 987654");
  });

  test("a tenant key bound to another organization's user: exit 1, one exact line, nothing written", async () => {
    const before = (await db.sql`select count(*)::int as n from api_keys`)[0].n;
    const r = await spawnCli("keys", "create", "--scopes", "cti", "--org", "1", "--agent", "agent9");
    expect(r.code).toBe(1);
    expect(r.out).toBe("");
    expect(r.err).toBe(
      'leadline: user "agent9" belongs to org 2, not 1 (a key of an organization may be bound only to a user of that organization or to a house user)\n',
    );
    expect((await db.sql`select count(*)::int as n from api_keys`)[0].n).toBe(before);
  });

  test("a tenant key may be bound to a house user, a platform key to any user", async () => {
    for (const args of [["--org", "1", "--agent", "house1"], ["--agent", "agent9"], ["--agent", "house1"]]) {
      const r = await spawnCli("keys", "create", "--scopes", "cti", "--json", ...args);
      expect(r.code).toBe(0);
      const agent = args.at(-1);
      expect(JSON.parse(r.out)).toMatchObject({ org_id: args[0] === "--org" ? 1 : null, agent });
    }
  });

  test("create exits 0 and prints the key on stdout's last line", async () => {
    const r = await spawnCli("keys", "create", "--scopes", "leads:read", "--org", "1");
    expect(r.code).toBe(0);
    const key = lastLine(r.out);
    expect(key).toMatch(/^lk_[A-Za-z0-9_-]{43}$/);
    const [stored] = await db.sql`select org_id, scopes from api_keys where key_hash = ${hashKey(key)}`;
    expect(stored).toEqual({ org_id: 1, scopes: ["leads:read"] });
  });
});
