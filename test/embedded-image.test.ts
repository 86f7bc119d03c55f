// The migrated database image (src/db/image.ts, made by `make build`): a new DATA_DIR starts from
// it at this code's last migration, holding nothing of any installation, its files the service
// user's alone; a database already there is never replaced; a start cut short while unpacking
// leaves nothing half-made to be opened; an image of other migrations is not opened.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type Sql } from "../src/db/client";
import { startEmbedded, type EmbeddedServer } from "../src/db/embedded";
import { imageMigration, imagePath, unpackImage } from "../src/db/image";
import { migrate } from "../src/db/migrate";
import { migrations } from "../src/db/migrations";

let work: string;
let image: string;

beforeAll(async () => {
  const path = await imagePath();
  if (!path) throw new Error("dist/embedded-image.tar.gz is missing: `make build` first (make test does)");
  image = path;
  work = mkdtempSync(join(tmpdir(), "leadline-image-test-"));
});
afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

/** Opens `dir` from the image when new, runs `fn` on a client of it, and closes both. */
async function withEmbedded<T>(dir: string, fn: (sql: Sql, server: EmbeddedServer) => Promise<T>): Promise<T> {
  const server = await startEmbedded(dir, { fromImage: true });
  const sql = connect(server.url, { max: 1, socket: server.connect, statementTimeoutMs: 0 });
  try {
    return await fn(sql, server);
  } finally {
    await sql.end({ timeout: 5 });
    await server.close();
  }
}

/** Every path under `dir` whose mode gives the group or others anything (symbolic links aside). */
function openToOthers(dir: string): string[] {
  const found: string[] = [];
  const walk = (path: string) => {
    const st = lstatSync(path);
    if (st.isSymbolicLink()) return;
    if (st.mode & 0o077) found.push(`${path.slice(dir.length) || "/"} ${(st.mode & 0o777).toString(8)}`);
    if (st.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
  };
  walk(dir);
  return found;
}

describe("a new DATA_DIR starts from the image", () => {
  test("at this code's last migration, with no row in any table but the migrations' own, and nothing left to migrate", async () => {
    const dir = join(work, "fresh");
    await withEmbedded(dir, async (sql, server) => {
      expect(server.fromImage).toBe(migrations.length);
      expect(await migrate(sql)).toEqual([]);
      // Nothing of an installation is made at build time: the address salt, keys and settings
      // come at the first start, each its own (a row here would be in every installation).
      const tables = await sql<{ name: string }[]>`select tablename as name from pg_tables where schemaname = 'public' order by 1`;
      expect(tables.length).toBeGreaterThan(20);
      const rows: Record<string, number> = {};
      for (const { name } of tables) {
        const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from ${sql(name)}`;
        if (n > 0) rows[name] = n;
      }
      expect(rows).toEqual({ schema_migrations: migrations.length });
    });
    expect(existsSync(join(dir, "pgdata.unpacking"))).toBe(false);
  });

  test("its files are the service user's alone: DATA_DIR 0700, no group or other bits under it, every directory the owner's to enter", async () => {
    const dir = join(work, "modes");
    await withEmbedded(dir, async () => {});
    expect(openToOthers(dir)).toEqual([]);
    expect(lstatSync(dir).mode & 0o777).toBe(0o700);
    // Tests run as root, which enters any directory: the modes themselves must let the service's own user in.
    const closed: string[] = [];
    const walk = (path: string) => {
      const st = lstatSync(path);
      if (!st.isDirectory()) return;
      if ((st.mode & 0o700) !== 0o700) closed.push(`${path.slice(dir.length)} ${(st.mode & 0o777).toString(8)}`);
      for (const name of readdirSync(path)) walk(join(path, name));
    };
    walk(dir);
    expect(closed).toEqual([]);
  });

  test("a database already there is opened as it is, never replaced by the image", async () => {
    const dir = join(work, "kept");
    await withEmbedded(dir, (sql) => sql`insert into settings (key, value) values ('kept', '"yes"')`);
    const kept = await withEmbedded(dir, async (sql, server) => ({
      fromImage: server.fromImage,
      rows: [...(await sql`select key, value from settings`)],
    }));
    expect(kept).toEqual({ fromImage: null, rows: [{ key: "kept", value: "yes" }] });
  });

  test("a start stopped while unpacking leaves nothing to open: the next start unpacks the image again", async () => {
    const dir = join(work, "cut");
    // What a start killed halfway through the unpacking leaves: a partial directory beside pgdata.
    mkdirSync(join(dir, "pgdata.unpacking", "base"), { recursive: true, mode: 0o700 });
    writeFileSync(join(dir, "pgdata.unpacking", "PG_VERSION"), "17\n");
    const fromImage = await withEmbedded(dir, async (sql, server) => {
      await sql`select count(*) from leads`;
      return server.fromImage;
    });
    expect(fromImage).toBe(migrations.length);
    expect(readdirSync(dir).filter((n) => n.startsWith("pgdata")).sort()).toEqual(["pgdata"]);
  });
});

describe("what is unpacked, and only then", () => {
  test("a tarball without a data directory is refused, and leaves neither pgdata nor a partial one", async () => {
    const junk = join(work, "junk.tar.gz");
    await Bun.write(junk, await new Bun.Archive({ "notes.txt": "not a database" }, { compress: "gzip" }).bytes());
    const dir = join(work, "junk");
    await expect(unpackImage(junk, join(dir, "pgdata"))).rejects.toThrow(/holds no PostgreSQL data directory/);
    expect(readdirSync(dir)).toEqual([]);
  });

  test("the image unpacks as a whole data directory", async () => {
    const pgdata = join(work, "whole", "pgdata");
    await unpackImage(image, pgdata);
    for (const part of ["PG_VERSION", "global/pg_control", "base", "pg_wal"]) expect([part, existsSync(join(pgdata, part))]).toEqual([part, true]);
  });

  test("an image's migrations count only when they are this code's first ones, in order", () => {
    const ours = migrations.map(({ version, name }) => ({ version, name }));
    expect(imageMigration(ours)).toBe(migrations.length);
    expect(imageMigration(ours.slice(0, 3))).toBe(3);
    expect(imageMigration([])).toBeNull();
    // Another branch's migration at a number of ours, or one past ours: not this code's database.
    expect(imageMigration([...ours.slice(0, 2), { version: 3, name: "0003_elsewhere" }])).toBeNull();
    expect(imageMigration([...ours, { version: ours.length + 1, name: "9999_later" }])).toBeNull();
    expect(imageMigration(ours.slice(1))).toBeNull();
  });
});
