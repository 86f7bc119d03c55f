// Settings read at start (src/app/settings.ts): the provisioned BASE_URL where the environment
// gives none, and the per-installation salt of client-address hashes.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startApp } from "./harness/app";
import { testDatabase, type TestDatabase } from "./harness/db";

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
