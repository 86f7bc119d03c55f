// Standard input as a socket (issue 27 §14): process managers and Bun.spawn's "pipe" hand the
// executable a socket, and opening `/dev/stdin` on one fails with ENXIO. Every command that reads
// standard input — `provision -`, `users passwd`, `restore -` — is run here by the compiled
// executable with its standard input a pipe of that kind.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "../src/db/client";
import { databaseUrl, testDatabase, type TestDatabase } from "./harness/db";
import { built, Exe, type Run } from "./harness/exe";

if (!built) console.warn("test/cli-stdin.test.ts: SKIPPED: dist/leadline is missing (make build)");

let exe: Exe;
let db: TestDatabase;
const empty: string[] = [];

beforeAll(async () => {
  if (!built) return;
  exe = new Exe();
  db = await testDatabase();
});

afterAll(async () => {
  if (!built) return;
  exe.cleanup();
  await db.drop();
  const admin = connect(process.env.LEADLINE_TEST_ADMIN_URL!, { max: 1, statementTimeoutMs: 0, applicationName: "leadline-test-admin" });
  for (const name of empty) await admin`drop database if exists ${admin(name)} with (force)`;
  await admin.end({ timeout: 5 });
});

/** The executable with `input` written to its standard input, a socket (Bun.spawn's "pipe"). */
async function piped(args: string[], input: string, url = db.url): Promise<Run> {
  const proc = Bun.spawn([exe.bin, ...args], { cwd: exe.dir, env: exe.env({ DATABASE_URL: url }), stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  // Written in pieces, as a process manager's pipe delivers it.
  for (let at = 0; at < input.length; at += 4096) proc.stdin.write(input.slice(at, at + 4096));
  await proc.stdin.end();
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, out, err };
}

describe.skipIf(!built)("standard input that is a socket", () => {
  test("provision - reads the file from it", async () => {
    const file = JSON.stringify({ orgs: [{ id: 7, name: "Piped" }], campaigns: [{ id: "PIPE", org_id: 7, name: "Piped" }] });
    const r = await piped(["provision", "-"], file);
    expect(r).toMatchObject({ code: 0, err: expect.stringContaining("orgs: 1 created") });
    expect((await db.sql<{ name: string }[]>`select name from orgs where id = 7`).map((o) => o.name)).toEqual(["Piped"]);
  });

  test("users passwd reads the password from it", async () => {
    expect((await exe.run(["users", "create", "--email", "pipe@example.com", "--role", "admin"], { DATABASE_URL: db.url })).code).toBe(0);
    const r = await piped(["users", "passwd", "--email", "pipe@example.com"], "a long piped pass phrase\n");
    expect(r).toEqual({ code: 0, out: "", err: "password set for pipe@example.com; every session of the user has ended\n" });
    const [user] = await db.sql<{ hash: string }[]>`select password_hash as hash from users where email = 'pipe@example.com'`;
    expect(await Bun.password.verify("a long piped pass phrase", user.hash)).toBe(true);
  });

  test("restore - reads the dump from it", async () => {
    const dumped = await exe.run(["dump"], { DATABASE_URL: db.url });
    expect(dumped.code).toBe(0);
    const name = `stdin_${Date.now().toString(36)}`;
    const admin = connect(process.env.LEADLINE_TEST_ADMIN_URL!, { max: 1, statementTimeoutMs: 0, applicationName: "leadline-test-admin" });
    await admin`create database ${admin(name)}`;
    await admin.end({ timeout: 5 });
    empty.push(name);
    const url = databaseUrl(process.env.LEADLINE_TEST_ADMIN_URL!, name);
    const r = await piped(["restore", "-"], dumped.out, url);
    expect(r).toMatchObject({ code: 0, err: expect.stringMatching(/^restored \d+ rows from -\n$/) });
    const again = await exe.run(["dump"], { DATABASE_URL: url });
    expect(again.out.split("\n").slice(1)).toEqual(dumped.out.split("\n").slice(1));
  });
});
