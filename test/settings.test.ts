// Settings read at start (src/app/settings.ts): the provisioned BASE_URL where the environment
// gives none, and the per-installation salt of client-address hashes.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startApp } from "./harness/app";
import { testDatabase, type TestDatabase } from "./harness/db";
import { applyProvisioning } from "../src/provision/service";
import { parseProvisioning } from "../src/provision/validate";

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase();
});
afterAll(() => db?.drop());

test("a provisioned BASE_URL is the public address unless the environment sets one", async () => {
  const plain = await startApp(db.url);
  expect(plain.running.deps.config.baseUrl).toStartWith("http://localhost:");
  await plain.stop();
  await db.sql`insert into settings (key, value) values ('BASE_URL', ${db.sql.json("https://crm.example.com/")})`;
  const provisioned = await startApp(db.url);
  expect(provisioned.running.deps.config.baseUrl).toBe("https://crm.example.com");
  await provisioned.stop();
  const env = await startApp(db.url, { BASE_URL: "https://env.example.com" });
  expect(env.running.deps.config.baseUrl).toBe("https://env.example.com");
  await env.stop();
});

test("a provisioned BASE_URL written null is removed, and the default applies again; left out, it is kept", async () => {
  const file = (settings: Record<string, unknown>) => parseProvisioning(JSON.stringify({ settings }));
  await applyProvisioning(db.sql, file({ BASE_URL: "https://crm.example.com" }));
  await applyProvisioning(db.sql, file({ COMMS_INBOUND_LIST_ID: 900 }));
  const kept = await startApp(db.url);
  expect(kept.running.deps.config.baseUrl).toBe("https://crm.example.com");
  await kept.stop();
  await applyProvisioning(db.sql, file({ BASE_URL: null }));
  const cleared = await startApp(db.url);
  expect(cleared.running.deps.config.baseUrl).toStartWith("http://localhost:");
  await cleared.stop();
  expect([...(await db.sql`select key from settings where key in ('BASE_URL', 'COMMS_INBOUND_LIST_ID')`)]).toEqual([{ key: "COMMS_INBOUND_LIST_ID" }]);
});

test("without NPK_IP_SALT one salt is generated per installation and kept; NPK_IP_SALT wins", async () => {
  const [a, b] = await Promise.all([startApp(db.url), startApp(db.url)]);
  expect(a.running.deps.ipSalt).toMatch(/^[0-9a-f]{64}$/);
  expect(b.running.deps.ipSalt).toBe(a.running.deps.ipSalt);
  await Promise.all([a.stop(), b.stop()]);
  const again = await startApp(db.url);
  expect(again.running.deps.ipSalt).toBe(a.running.deps.ipSalt);
  await again.stop();
  const set = await startApp(db.url, { NPK_IP_SALT: "operator-salt" });
  expect(set.running.deps.ipSalt).toBe("operator-salt");
  await set.stop();
});
