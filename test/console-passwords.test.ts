// Argon2id's cost (src/console/users.ts): serve hashes console passwords at 64 MiB and two passes
// (Bun's defaults, written down), and an instance given another cost (the tests' instances, which
// sign in hundreds of times: test/harness/app.ts) uses that one for the passwords it sets.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { hashPassword, inviteUser, PASSWORD_COST } from "../src/console/users";
import { startApp, TEST_PASSWORD_COST, type TestApp } from "./harness/app";
import { makeUser } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";

let db: TestDatabase;
let servePlain: TestApp;
let cheaper: TestApp;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  // As `serve` starts (no cost given), and with a cost of its own.
  servePlain = await startApp(db.url, {}, { passwordCost: undefined });
  cheaper = await startApp(db.url, {}, { passwordCost: { memoryCost: 512, timeCost: 3 } });
});
afterAll(async () => {
  await servePlain?.stop();
  await cheaper?.stop();
  await db?.drop();
});

/** Argon2id's parameters as a stored hash carries them. */
const paramsOf = (hash: string) => /^\$argon2id\$v=19\$(m=\d+,t=\d+,p=\d+)\$/.exec(hash)?.[1] ?? hash;

/** Sets a new password through an invite link on `app` and answers the hash stored. */
async function setThroughInvite(app: TestApp): Promise<string> {
  const user = await makeUser(db.sql, { role: "agent", orgId: 1 });
  const { token } = await inviteUser(db.sql, user.email, Date.now());
  const res = await fetch(`${app.base}/console/invite/${token}`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: app.base },
    body: new URLSearchParams({ password: "a long enough password", confirm: "a long enough password" }).toString(),
  });
  expect(res.status).toBe(303);
  const [row] = await db.sql<{ password_hash: string }[]>`select password_hash from users where id = ${user.id}`;
  return row.password_hash;
}

describe("Argon2id's cost", () => {
  test("by default 64 MiB and two passes, for a hash made here and for a password set on an instance started as serve starts it", async () => {
    expect(PASSWORD_COST).toEqual({ memoryCost: 65536, timeCost: 2 });
    expect(paramsOf(await hashPassword("correct horse battery staple"))).toBe("m=65536,t=2,p=1");
    expect(paramsOf(await setThroughInvite(servePlain))).toBe("m=65536,t=2,p=1");
  });

  test("an instance given a cost sets passwords at that cost; the tests' own is far lower", async () => {
    expect(paramsOf(await setThroughInvite(cheaper))).toBe("m=512,t=3,p=1");
    expect(paramsOf(await hashPassword("x", TEST_PASSWORD_COST))).toBe(`m=${TEST_PASSWORD_COST.memoryCost},t=${TEST_PASSWORD_COST.timeCost},p=1`);
    expect(TEST_PASSWORD_COST.memoryCost).toBeLessThan(PASSWORD_COST.memoryCost / 100);
  });
});
