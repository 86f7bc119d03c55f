// The embedded database reached in-process (src/db/pglite-wire.ts): protocol messages framed
// whatever way they arrive, pipelined statements isolated from each other's errors, and PGlite's
// one session handed to each new connection as a fresh backend would be.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type Sql } from "../src/db/client";
import { startEmbedded, type EmbeddedServer } from "../src/db/embedded";
import type { PgliteWire } from "../src/db/pglite-wire";

let dir: string;
let server: EmbeddedServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "leadline-embedded-"));
  server = await startEmbedded(dir, { fromImage: true });
}, 60_000);
afterAll(async () => {
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const client = (): Sql => connect(server.url, { max: 1, socket: server.connect, statementTimeoutMs: 0 });

/** A startup packet (protocol 3.0) and a simple Query message, as any client sends them. */
function startupPacket(): Buffer {
  const params = Buffer.from("user\0postgres\0database\0postgres\0\0");
  const head = Buffer.alloc(8);
  head.writeInt32BE(8 + params.length, 0);
  head.writeInt32BE(196608, 4);
  return Buffer.concat([head, params]);
}
function query(text: string): Buffer {
  const body = Buffer.from(text + "\0");
  const head = Buffer.alloc(5);
  head.write("Q", 0);
  head.writeInt32BE(4 + body.length, 1);
  return Buffer.concat([head, body]);
}

/** The types of the backend messages in `bytes`, and the text of its DataRows' first columns. */
function messages(bytes: Buffer): { types: string; values: string[] } {
  let types = "";
  const values: string[] = [];
  for (let at = 0; at < bytes.length; ) {
    const type = String.fromCharCode(bytes[at]);
    const length = bytes.readInt32BE(at + 1);
    if (type === "D") {
      const size = bytes.readInt32BE(at + 7);
      values.push(bytes.subarray(at + 11, at + 11 + size).toString());
    }
    types += type;
    at += 1 + length;
  }
  return { types, values };
}

/** Writes `chunks` to a new connection one by one, each on its own turn of the event loop. */
async function exchange(chunks: Buffer[], until: (got: Buffer) => boolean): Promise<Buffer> {
  const wire: PgliteWire = server.connect();
  const got: Buffer[] = [];
  wire.on("data", (b: Buffer) => got.push(b));
  for (const chunk of chunks) {
    wire.write(chunk);
    await new Promise((ok) => setImmediate(ok));
  }
  for (let i = 0; i < 100 && !until(Buffer.concat(got)); i++) await new Promise((ok) => setImmediate(ok));
  wire.end();
  return Buffer.concat(got);
}

const bytesOf = (b: Buffer) => Array.from(b, (x) => Buffer.from([x]));

describe("the in-process wire", () => {
  test("messages split at every byte, or several in one write, are each run once", async () => {
    const done = (b: Buffer) => (messages(b).types.match(/Z/g) ?? []).length === 3;
    const packets = [startupPacket(), query("select 'one'"), query("select 'two'")];
    const split = await exchange(bytesOf(Buffer.concat(packets)), done);
    const together = await exchange([Buffer.concat(packets)], done);
    for (const answer of [split, together]) {
      const { types, values } = messages(answer);
      // AuthenticationOk, the key, ReadyForQuery; per query its row description, row, completion
      // and ReadyForQuery (ParameterStatus messages, which may come anywhere, left out).
      expect(types.replace(/S/g, "")).toBe("RKZTDCZTDCZ");
      expect(values).toEqual(["one", "two"]);
    }
  });

  test("an SSL request is declined, so a client goes on in the clear", async () => {
    const ssl = Buffer.alloc(8);
    ssl.writeInt32BE(8, 0);
    ssl.writeInt32BE(80877103, 4);
    const answer = await exchange([ssl], (b) => b.length > 0);
    expect(answer.toString()).toBe("N");
  });

  test("a cancel request is answered by closing, and leaves the connection that has the session alone", async () => {
    const sql = client();
    try {
      expect([...(await sql`select 1::int as one`)]).toEqual([{ one: 1 }]);
      const cancel = Buffer.alloc(16);
      cancel.writeInt32BE(16, 0);
      cancel.writeInt32BE(80877102, 4);
      const wire = server.connect();
      const closed = new Promise((ok) => wire.on("close", ok));
      wire.write(cancel);
      await closed;
      // Still the same connection: a statement it prepared is still there.
      const [row] = await sql`select count(*)::int as n from pg_prepared_statements where statement = 'select 1::int as one'`;
      expect(row.n).toBe(1);
    } finally {
      await sql.end({ timeout: 5 });
    }
  });

  test("pipelined statements: an error fails its own statement only", async () => {
    const sql = client();
    try {
      const settled = await Promise.allSettled([
        sql`select 1::int as a`,
        sql`select * from no_such_table`,
        sql`select ${2}::int as b`,
        sql`select 1 / ${0}::int as c`,
        sql`select ${"three"} as d`,
      ]);
      expect(settled.map((s) => (s.status === "fulfilled" ? s.value[0] : (s.reason as { code: string }).code))).toEqual([
        { a: 1 }, "42P01", { b: 2 }, "22012", { d: "three" },
      ]);
      // A transaction that fails is rolled back whole; a large answer arrives whole.
      await expect(sql.begin(async (tx) => {
        await tx`create table wire_t (x int)`;
        await tx`select 1 / 0`;
      })).rejects.toThrow("division by zero");
      expect((await sql`select to_regclass('wire_t') as t`)[0].t).toBeNull();
      const rows = await sql`select g, repeat('x', 200) as pad from generate_series(1, 50000) g`;
      expect(rows.length).toBe(50000);
      expect(rows[49999].g).toBe(50000);
    } finally {
      await sql.end({ timeout: 5 });
    }
  });

  test("a new connection gets the session fresh: what the previous one left open or set is gone", async () => {
    const a = client();
    await a.unsafe("begin");
    await a.unsafe("create table left_open (x int)");
    await a.unsafe("set search_path = pg_catalog");
    await a.unsafe("create temp table scratch (x int)");
    await a`select pg_advisory_lock(${42})`;
    expect((await a`select count(*)::int as n from pg_prepared_statements where statement = 'select pg_advisory_lock($1)'`)[0].n).toBe(1);

    const b = client();
    try {
      const [state] = await b`
        select current_setting('search_path') as search_path,
          to_regclass('public.left_open') as left_open,
          (select count(*)::int from pg_prepared_statements where statement = 'select pg_advisory_lock($1)') as prepared,
          (select count(*)::int from pg_locks where locktype = 'advisory') as advisory,
          (select count(*)::int from pg_class where relpersistence = 't') as temp`;
      expect(state).toEqual({ search_path: "public", left_open: null, prepared: 0, advisory: 0, temp: 0 });
      // b runs outside any transaction: what it creates stays after a, ended, is gone.
      await b`create table committed_by_b (x int)`;
    } finally {
      await a.end({ timeout: 0 });
    }
    expect((await b`select to_regclass('committed_by_b') is not null as kept`)[0].kept).toBe(true);
    await b.end({ timeout: 5 });
  });
});
