// The console's keys and audit-log pages through HTTP: who reaches them, a key's plaintext shown
// only in the answer that made it, the CLI's rules (scopes, agent binding, final revocation) and the
// console's stricter binding rule for a tenant (only the organization's own users), another
// organization's keys answered as missing, each change's audit row, and the audit log per
// organization, filtered and paged.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { keysCommand } from "../src/auth/command";
import { call, startApp, type TestApp } from "./harness/app";
import { capture } from "./harness/capture";
import { makeUser, signIn, type ConsoleClient } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeKey, makeLead, seedWorld } from "./harness/factory";

setDefaultTimeout(60_000);

let db: TestDatabase;
let app: TestApp;
let manager: ConsoleClient;
let agent: ConsoleClient;
let admin: ConsoleClient;
let bolt: ConsoleClient;
const ids: Record<string, string> = {};
const keys: Record<string, number> = {};

const audits = (action: string, target: string) => db.sql`select * from audit_log where action = ${action} and target = ${target}`;
const agentOptions = (body: string) => body.slice(body.indexOf('id="k-agent"'), body.indexOf("</select>", body.indexOf('id="k-agent"')));
const plaintextOf = (body: string) => /<code>(lk_[A-Za-z0-9_-]{43})<\/code>/.exec(body)?.[1];

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  app = await startApp(db.url);
  keys.acme = (await makeKey(db.sql, { scopes: ["leads:read"], org: 1, name: "acme-site" })).id;
  keys.bolt = (await makeKey(db.sql, { scopes: ["leads:read"], org: 2, name: "bolt-site" })).id;
  keys.platform = (await makeKey(db.sql, { scopes: ["leads:read"], org: null, name: "platform-etl" })).id;
  const m = await makeUser(db.sql, { role: "manager", orgId: 1 });
  const a = await makeUser(db.sql, { role: "agent", orgId: 1 });
  const s = await makeUser(db.sql, { role: "admin", orgId: null });
  const b = await makeUser(db.sql, { role: "manager", orgId: 2 });
  Object.assign(ids, { manager: m.id, agent: a.id, admin: s.id, bolt: b.id });
  [manager, agent, admin, bolt] = await Promise.all([
    signIn(app.base, m.email, m.password),
    signIn(app.base, a.email, a.password),
    signIn(app.base, s.email, s.password),
    signIn(app.base, b.email, b.password),
  ]);
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

describe("keys", () => {
  test("agents get the 404 page for every keys route", async () => {
    expect((await agent.get("/console/keys")).status).toBe(404);
    expect((await agent.post("/console/keys", { name: "x", "scope.leads:read": "1" })).status).toBe(404);
    expect((await agent.post(`/console/keys/${keys.acme}/rotate`, {})).status).toBe(404);
    expect((await agent.post(`/console/keys/${keys.acme}/revoke`, {})).status).toBe(404);
    expect(await db.sql`select 1 from api_keys where name = 'x'`).toHaveLength(0);
  });

  test("a manager lists its organization's keys; an admin every key", async () => {
    const mine = await manager.get("/console/keys");
    expect(mine.status).toBe(200);
    expect(mine.body).toContain("<h1>API keys</h1>");
    expect(mine.body).toContain("acme-site");
    expect(mine.body).not.toContain("bolt-site");
    expect(mine.body).not.toContain("platform-etl");
    expect(mine.body).not.toContain('id="k-org"');
    // The agents a key may be bound to: the organization's own, not the house's nor another's, nor managers or admins.
    const agents = agentOptions(mine.body);
    expect(agents).toContain('value="agent7"');
    expect(agents).toContain(`value="${ids.agent}"`);
    for (const other of ["house1", "agent9", ids.manager, ids.admin, ids.bolt]) expect(agents).not.toContain(`value="${other}"`);
    const all = await admin.get("/console/keys");
    for (const name of ["acme-site", "bolt-site", "platform-etl"]) expect(all.body).toContain(name);
    expect(all.body).toContain('id="k-org"');
    // An admin binds for the platform: the house's agents and every organization's are offered.
    for (const a of ["house1", "agent7", "agent9"]) expect(agentOptions(all.body)).toContain(`value="${a}"`);
  });

  test("create: the plaintext in the answer of the POST only (no-store), the key works, bound to the manager's organization, audited", async () => {
    const r = await manager.post("/console/keys", { name: "  Zapier   feed ", "scope.leads:read": "1", "scope.cti": "1", agent: "agent7", org: "2" });
    expect(r.status).toBe(200);
    expect(r.headers.get("cache-control")).toBe("no-store");
    const key = plaintextOf(r.body);
    expect(key).toBeDefined();
    expect(r.body).toContain("shown only this once");
    const [row] = await db.sql`select id, name, org_id, scopes, agent, key_prefix from api_keys where key_prefix = ${key!.slice(0, 7)}`;
    expect(row).toMatchObject({ name: "Zapier feed", org_id: 1, scopes: ["leads:read", "cti"], agent: "agent7" });
    const lead = await makeLead(db.sql, { phone: "5125550111" });
    expect((await call(app.base, `/hooks/api_v1.php?r=leads/${lead}`, { key })).status).toBe(200);
    // Never again: the list shows the prefix, not the key.
    const later = await manager.get("/console/keys");
    expect(later.body).toContain("Zapier feed");
    expect(later.body).not.toContain(key!);
    const [audit] = await audits("key.create", `key:${row.id}`);
    expect(audit).toMatchObject({ org_id: 1, actor_type: "user", actor_id: ids.manager });
    expect(audit.details).toEqual({ name: "Zapier feed", org_id: 1, scopes: ["leads:read", "cti"], agent: "agent7" });
    expect(JSON.stringify(audit)).not.toContain(key!);
  });

  test("create refused by the CLI's rules: the page with the reason, the form kept, nothing written", async () => {
    const before = await db.sql`select count(*)::int as n from api_keys`;
    const cases: [Record<string, string>, string][] = [
      [{ name: "no scopes" }, "Choose at least one scope."],
      [{ name: "", "scope.leads:read": "1" }, "Give the key a name"],
      [{ name: "other agent", "scope.cti": "1", agent: "agent9" }, "bound only to one of its own users"],
      [{ name: "ghost agent", "scope.cti": "1", agent: "nobody" }, "bound only to one of its own users"],
      [{ name: "house agent", "scope.cti": "1", agent: "house1" }, "bound only to one of its own users"],
    ];
    for (const [form, reason] of cases) {
      const r = await manager.post("/console/keys", form);
      expect(r.status).toBe(200);
      expect(r.body).toContain('role="alert"');
      expect(r.body).toContain(reason.replaceAll('"', "&quot;"));
      expect(plaintextOf(r.body)).toBeUndefined();
    }
    expect((await manager.post("/console/keys", { name: "kept name", "scope.cti": "1", agent: "agent9" })).body).toContain('value="kept name"');
    const after = await db.sql`select count(*)::int as n from api_keys`;
    expect(after[0].n).toBe(before[0].n);
  });

  test("a tenant's key is bound only to a user of its own organization: org 2's manager binding a house agent or an org-1 user creates nothing and names nobody", async () => {
    const origin = { origin: app.base };
    const before = await db.sql`select count(*)::int as n from api_keys`;
    for (const [i, agent] of ["house1", "agent7", ids.agent, ids.manager].entries()) {
      const r = await bolt.post("/console/keys", { name: `crossing ${i}`, "scope.cti": "1", "scope.calls:write": "1", agent }, origin);
      expect(r.status).toBe(200);
      expect(plaintextOf(r.body)).toBeUndefined();
      expect(r.body).toContain('role="alert"');
      expect(r.body).toContain("bound only to one of its own users");
      // The answer names no user of another organization (nor the house's), in the refusal or the form.
      for (const foreign of ["house1", "Hal", "agent7", "Dana Diaz", ids.agent, ids.manager]) expect(r.body).not.toContain(foreign);
      // The same words as for a user that does not exist: the refusal tells nothing of who exists elsewhere.
      const ghost = await bolt.post("/console/keys", { name: `crossing ${i}`, "scope.cti": "1", "scope.calls:write": "1", agent: "nobody-at-all" }, origin);
      expect(ghost.body).toBe(r.body);
    }
    expect((await db.sql`select count(*)::int as n from api_keys`)[0].n).toBe(before[0].n);
    // `leadline keys list` shows no such key: none of org 2 bound to the house or to another organization's user.
    const listed = await capture(() => keysCommand(db.sql, ["list", "--json"]));
    expect(listed.code).toBe(0);
    const all = JSON.parse(listed.out) as { name: string; org_id: number | null; agent: string | null }[];
    expect(all.filter((k) => k.name.startsWith("crossing"))).toEqual([]);
    expect(all.filter((k) => k.org_id === 2 && k.agent !== null && k.agent !== "agent9")).toEqual([]);
    expect(await db.sql`select 1 from audit_log where action = 'key.create' and details->>'name' like 'crossing%'`).toHaveLength(0);
    // Its own agent is fine.
    const own = await bolt.post("/console/keys", { name: "bolt dialer", "scope.cti": "1", agent: "agent9" }, origin);
    expect(plaintextOf(own.body)).toBeDefined();
    expect((await db.sql`select org_id, agent from api_keys where name = 'bolt dialer'`).map((k) => [k.org_id, k.agent])).toEqual([[2, "agent9"]]);
  });

  test("binding a house agent stays an operator's decision: an admin in the console may, as the CLI may", async () => {
    const r = await admin.post("/console/keys", { name: "acme house dialer", "scope.cti": "1", org: "1", agent: "house1" }, { origin: app.base });
    expect(plaintextOf(r.body)).toBeDefined();
    const cli = await capture(() => keysCommand(db.sql, ["create", "--scopes", "cti", "--org", "2", "--agent", "house1", "--name", "bolt house dialer (cli)"]));
    expect(cli.code).toBe(0);
    const rows = await db.sql`select name, org_id, agent from api_keys where agent = 'house1' order by id`;
    expect(rows.map((k) => [k.name, k.org_id])).toEqual([["acme house dialer", 1], ["bolt house dialer (cli)", 2]]);
  });

  test("an admin creates a platform key or another organization's", async () => {
    const platform = await admin.post("/console/keys", { name: "admin platform", "scope.metrics:write": "1", org: "" });
    expect(platform.status).toBe(200);
    const forBolt = await admin.post("/console/keys", { name: "admin for bolt", "scope.leads:write": "1", org: "2", agent: "agent9" });
    expect(forBolt.status).toBe(200);
    const rows = await db.sql`select name, org_id from api_keys where name like 'admin %' order by id`;
    expect(rows.map((r) => [r.name, r.org_id])).toEqual([["admin platform", null], ["admin for bolt", 2]]);
    expect((await admin.post("/console/keys", { name: "no org", "scope.cti": "1", org: "77" })).body).toContain("org 77 does not exist");
  });

  test("rotate: a new plaintext shown once, the old key revoked, audited; another organization's key is the 404 page", async () => {
    const { id } = await makeKey(db.sql, { scopes: ["leads:read"], org: 1, name: "to rotate" });
    const r = await manager.post(`/console/keys/${id}/rotate`, {});
    expect(r.status).toBe(200);
    expect(r.headers.get("cache-control")).toBe("no-store");
    const fresh = plaintextOf(r.body);
    expect(fresh).toBeDefined();
    const [old] = await db.sql`select active, revoked_at from api_keys where id = ${id}`;
    expect(old.active).toBe(false);
    expect(old.revoked_at).not.toBeNull();
    const [made] = await db.sql`select id, name, org_id from api_keys where key_prefix = ${fresh!.slice(0, 7)}`;
    expect(made).toMatchObject({ name: "to rotate", org_id: 1 });
    expect((await audits("key.rotate", `key:${id}`))[0].details).toEqual({ new_key: made.id });
    // A revoked key cannot be rotated.
    const again = await manager.post(`/console/keys/${id}/rotate`, {});
    expect(again.status).toBe(200);
    expect(plaintextOf(again.body)).toBeUndefined();
    expect(again.body).toContain("is revoked");
    for (const other of [keys.bolt, keys.platform, 99_999_999]) expect((await manager.post(`/console/keys/${other}/rotate`, {})).status).toBe(404);
    expect((await manager.post("/console/keys/abc/rotate", {})).status).toBe(404);
  });

  test("revoke: final, audited, 303 back with a notice; another organization's key untouched", async () => {
    const { id, key } = await makeKey(db.sql, { scopes: ["leads:read"], org: 1, name: "to revoke" });
    const r = await manager.post(`/console/keys/${id}/revoke`, {});
    expect(r.status).toBe(303);
    expect(r.headers.get("location")).toBe("/console/keys?done=revoked");
    expect((await manager.get("/console/keys?done=revoked")).body).toContain("Key revoked");
    const [row] = await db.sql`select active, revoked_at from api_keys where id = ${id}`;
    expect(row.active).toBe(false);
    expect(await audits("key.revoke", `key:${id}`)).toHaveLength(1);
    const lead = await makeLead(db.sql, { phone: "5125550112" });
    // Other instances drop their key cache on the notification; this one answers 403 once it has.
    let status = 0;
    for (let i = 0; i < 50 && status !== 403; i++) {
      status = (await call(app.base, `/hooks/api_v1.php?r=leads/${lead}`, { key })).status;
      if (status !== 403) await Bun.sleep(20);
    }
    expect(status).toBe(403);
    for (const other of [keys.bolt, keys.platform]) expect((await manager.post(`/console/keys/${other}/revoke`, {})).status).toBe(404);
    const others = await db.sql`select active from api_keys where id in ${db.sql([keys.bolt, keys.platform])}`;
    expect(others.map((o) => o.active)).toEqual([true, true]);
  });
});

describe("audit log", () => {
  beforeAll(async () => {
    // Something audited in org 2.
    await bolt.post("/console/keys", { name: "bolt console key", "scope.leads:read": "1" });
  });

  test("agents get the 404 page; a manager reads its organization's rows, newest first; an admin every one", async () => {
    expect((await agent.get("/console/audit")).status).toBe(404);
    const mine = await manager.get("/console/audit");
    expect(mine.status).toBe(200);
    expect(mine.body).toContain("<h1>Audit log</h1>");
    expect(mine.body).toContain("key.create");
    expect(mine.body).toContain("key.revoke");
    expect(mine.body).not.toContain(ids.bolt);
    const order = ["key.revoke", "key.rotate", "key.create"].map((a) => mine.body.indexOf(`<code>${a}</code>`));
    expect(order).toEqual([...order].sort((x, y) => x - y));
    const all = await admin.get("/console/audit");
    expect(all.body).toContain(ids.bolt);
    expect(all.body).toContain(ids.manager);
  });

  test("filters by user and by action or action family", async () => {
    const byAdmin = await admin.get(`/console/audit?user=${ids.admin}`);
    expect(byAdmin.body).toContain(ids.admin);
    expect(byAdmin.body).not.toContain(`<br><span class="muted">${ids.manager}</span>`);
    const revokes = await manager.get("/console/audit?action=key.revoke");
    expect(revokes.body).toContain("<code>key.revoke</code>");
    expect(revokes.body).not.toContain("<code>key.create</code>");
    const family = await manager.get("/console/audit?action=key.");
    for (const a of ["key.create", "key.rotate", "key.revoke"]) expect(family.body).toContain(`<code>${a}</code>`);
    expect((await manager.get("/console/audit?action=nothing.here")).body).toContain("No audit entries match.");
    expect((await manager.get("/console/audit?action=%25&user=%27")).status).toBe(200);
  });

  test("keyset pages, 50 at a time", async () => {
    for (let i = 0; i < 3; i++) {
      const made = await makeKey(db.sql, { scopes: ["leads:read"], org: 1, name: `bulk ${i}` });
      keys[`bulk${i}`] = made.id;
    }
    // 60 more rows through the real route: revoke is idempotent, each call audited.
    for (let i = 0; i < 60; i++) await manager.post(`/console/keys/${keys[`bulk${i % 3}`]}/revoke`, {});
    const first = await manager.get("/console/audit?action=key.revoke");
    expect(first.body.match(/<code>key\.revoke<\/code>/g)).toHaveLength(50);
    const older = /href="(\/console\/audit\?[^"]*before=\d+[^"]*)"/.exec(first.body)?.[1].replaceAll("&amp;", "&");
    expect(older).toBeDefined();
    const second = await manager.get(older!);
    expect(second.body.match(/<code>key\.revoke<\/code>/g)!.length).toBe(61 - 50);
    expect(second.body).not.toContain("Older entries");
  });
});
