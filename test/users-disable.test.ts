// `leadline users disable` (issue 27.15): besides ending the user's sessions and the right to sign
// in, it revokes the API keys bound to the user, says so, and the served app refuses those keys.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Io } from "../src/args";
import { keysCommand } from "../src/auth/command";
import { usersCommand } from "../src/console/command";
import { call, startApp, type TestApp } from "./harness/app";
import { capture } from "./harness/capture";
import { ManualClock } from "./harness/clock";
import { makeUser, signIn, type MadeUser } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeKey, seedWorld } from "./harness/factory";

setDefaultTimeout(60_000);

const T0 = Date.UTC(2026, 10, 23, 12);
const clock = new ManualClock(T0);
let db: TestDatabase;
let app: TestApp;
let dana: MadeUser;
let mia: MadeUser;
const keys: Record<string, { id: number; key: string }> = {};

function captureIo(): Io & { text: () => string } {
  let out = "";
  return { out: (t: string) => void (out += t), err: () => {}, readInput: async () => "", flush: async () => {}, text: () => out };
}

const disable = async (email: string) => {
  const io = captureIo();
  const code = await usersCommand(db.sql, ["disable", "--email", email], { baseUrl: app.base }, io, clock);
  return { code, out: io.text() };
};

/** The key's answer on the served app, once the instance has heard of a revocation (NOTIFY). */
async function claimStatus(key: string, until: number): Promise<number> {
  let status = 0;
  for (let i = 0; i < 100; i++) {
    status = (await call(app.base, "/hooks/cti_queue.php", { key })).status;
    if (status === until) break;
    await Bun.sleep(20);
  }
  return status;
}

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  app = await startApp(db.url, {}, { clock });
  // agent7 (Dana, org 1) signs in and has dialer keys: its organization's, a platform key, one revoked earlier.
  dana = await makeUser(db.sql, { role: "agent", orgId: 1, id: "agent7" });
  mia = await makeUser(db.sql, { role: "manager", orgId: 1 });
  keys.tenant = await makeKey(db.sql, { scopes: ["cti"], org: 1, agent: "agent7", name: "dana dialer" });
  keys.platform = await makeKey(db.sql, { scopes: ["cti"], org: null, agent: "agent7", name: "platform dialer" });
  keys.old = await makeKey(db.sql, { scopes: ["cti"], org: 1, agent: "agent7", name: "old", revoked: true });
  keys.other = await makeKey(db.sql, { scopes: ["cti"], org: 2, agent: "agent9", name: "eli dialer" });
  keys.unbound = await makeKey(db.sql, { scopes: ["leads:read"], org: 1, name: "site" });
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

describe("users disable", () => {
  test("revokes the keys bound to the user, says which, and the served app refuses them", async () => {
    expect(await claimStatus(keys.tenant.key, 200)).toBe(200);
    expect(await claimStatus(keys.platform.key, 200)).toBe(200);
    const session = await signIn(app.base, dana.email, dana.password);
    const [oldRevokedAt] = await db.sql`select revoked_at from api_keys where id = ${keys.old.id}`;

    clock.advance(60_000);
    const r = await disable(dana.email);
    expect(r.code).toBe(0);
    const ids = [keys.tenant.id, keys.platform.id].sort((a, b) => a - b);
    expect(r.out).toBe(`disabled; the user can no longer sign in\nrevoked 2 API keys bound to user agent7: ${ids.join(", ")} (final; leadline keys create makes new ones)\n`);

    const rows = await db.sql<{ id: number; active: boolean; revoked_at: Date | null }[]>`select id, active, revoked_at from api_keys order by id`;
    const byId = new Map(rows.map((k) => [k.id, k]));
    for (const id of ids) expect(byId.get(id)).toMatchObject({ active: false, revoked_at: new Date(T0 + 60_000) });
    // The key revoked before keeps its time; the other user's and the unbound key are untouched.
    expect(byId.get(keys.old.id)!.revoked_at).toEqual(oldRevokedAt.revoked_at);
    for (const k of [keys.other, keys.unbound]) expect(byId.get(k.id)).toMatchObject({ active: true, revoked_at: null });
    // `keys list` shows them revoked.
    const listed = JSON.parse((await capture(() => keysCommand(db.sql, ["list", "--json"]))).out) as { id: number; revoked_at: string | null }[];
    for (const id of ids) expect(listed.find((k) => k.id === id)!.revoked_at).not.toBeNull();

    expect(await claimStatus(keys.tenant.key, 403)).toBe(403);
    expect(await claimStatus(keys.platform.key, 403)).toBe(403);
    expect(await claimStatus(keys.other.key, 200)).toBe(200);
    // Signed out, and signing in again is refused.
    expect((await session.get("/console/inbox")).status).toBe(303);
    await expect(signIn(app.base, dana.email, dana.password)).rejects.toThrow(/sign-in .* failed/);

    // On record in the organization's audit log, as the operator's.
    const [row] = await db.sql`select org_id, actor_type, actor_id, target, details from audit_log where action = 'user.disable'`;
    expect(row).toEqual({ org_id: 1, actor_type: "operator", actor_id: "cli", target: "user:agent7", details: { revoked_keys: ids } });
  });

  test("a user with no bound key: says so", async () => {
    const r = await disable(mia.email);
    expect(r.out).toBe(`disabled; the user can no longer sign in\nno API key was bound to user ${mia.id}\n`);
    expect((await db.sql`select count(*)::int as n from api_keys where revoked_at is null`)[0].n).toBe(2);
  });
});
