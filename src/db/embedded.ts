// The embedded database: PGlite (PostgreSQL compiled to WebAssembly) stored under DATA_DIR and
// reached in-process (./pglite-wire), so that postgres.js talks to it as to any PostgreSQL while
// nothing outside this process can.
import { PGlite } from "@electric-sql/pglite";
import { dlopen, FFIType } from "bun:ffi";
import { closeSync, constants, existsSync, ftruncateSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { join, resolve } from "node:path";
import { checkOwner, restrictTree } from "./data-dir";
import { imagePath, imageVersion, isEmptyDir, unpackImage } from "./image";
import { PgliteSession, type PgliteWire } from "./pglite-wire";
// Imported as files so that `bun build --compile` embeds them: PGlite otherwise loads them from
// beside its own module, which does not exist inside the executable. The package's exports map
// does not list them, hence the relative paths.
import fsBundlePath from "../../node_modules/@electric-sql/pglite/dist/pglite.data" with { type: "file" };
import pgliteWasmPath from "../../node_modules/@electric-sql/pglite/dist/pglite.wasm" with { type: "file" };
import initdbWasmPath from "../../node_modules/@electric-sql/pglite/dist/initdb.wasm" with { type: "file" };

export interface EmbeddedServer {
  /** A postgres:// URL naming the session's user and database (its host is never contacted). */
  url: string;
  /** A new connection to the database, for postgres.js's `socket` option. */
  connect(): PgliteWire;
  /**
   * The migration the database was at when this start created it from the image (src/db/image.ts);
   * null when the directory held a database already, or initdb made an empty one.
   */
  fromImage: number | null;
  /** Ends the connection, shuts PGlite down cleanly (so the data persists) and releases the lock. */
  close(): Promise<void>;
}

export interface EmbeddedOptions {
  /**
   * A new data directory starts from the migrated image built into the executable, when there is
   * one: for callers that migrate next (serve, migrate, the CLI's commands). Otherwise initdb makes
   * an empty database: `restore` needs one without tables, and the image build starts from one.
   */
  fromImage?: boolean;
}

/**
 * PGlite is one PostgreSQL session. It used to be served on a Unix socket in DATA_DIR, and whatever
 * connected there shared that session with the server: `pg_dump -h DATA_DIR` set an empty
 * search_path and every query of the server failed until it restarted. Now only this process's
 * postgres.js reaches it, through an in-process wire (./pglite-wire.ts), one connection at a time.
 * One process owns the directory: a second one (`leadline keys list` beside `leadline serve`) is
 * refused by the lock in `lockDataDir`.
 */
export async function startEmbedded(dataDir: string, options: EmbeddedOptions = {}): Promise<EmbeddedServer> {
  const dir = resolve(dataDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  checkOwner(dir, dataDir);
  const lock = lockDataDir(dir, dataDir);
  let db: PGlite | undefined;
  try {
    restrictTree(dir);
    const pgdata = join(dir, "pgdata");
    const image = options.fromImage && isEmptyDir(pgdata) ? await imagePath() : null;
    if (image) rmSync(pgdata, { recursive: true, force: true });
    // Both off the main thread: the image unpacks while PGlite's module compiles.
    const [pgliteWasmModule] = await Promise.all([compile(pgliteWasmPath), image ? unpackImage(image, pgdata) : null]);
    db = await open(pgdata, pgliteWasmModule);
    let fromImage = image ? await imageVersion(db) : null;
    if (image && fromImage === null) {
      // An image of other migrations (from source: another checkout's dist/): initdb instead.
      await db.close();
      db = undefined;
      rmSync(pgdata, { recursive: true, force: true });
      db = await open(pgdata, pgliteWasmModule);
    }
    restrictTree(dir);
    const pglite = db;
    const session = new PgliteSession(pglite);
    let closing: Promise<void> | undefined;
    return {
      url: "postgres://postgres@localhost/postgres",
      fromImage,
      connect: () => session.connect(),
      close: () =>
        (closing ??= (async () => {
          try {
            session.close();
            await pglite.close();
          } finally {
            lock.release();
          }
        })()),
    };
  } catch (err) {
    await db?.close().catch(() => {});
    lock.release();
    throw err;
  }
}

/**
 * PGlite on `pgdata`: an existing database is opened; a missing one is made by initdb, whose own
 * WebAssembly module is compiled only then (its instance beside PGlite's is most of a new
 * database's 1 GB peak).
 */
async function open(pgdata: string, pgliteWasmModule: WebAssembly.Module): Promise<PGlite> {
  const fsBundle = Bun.file(fsBundlePath);
  if (existsSync(join(pgdata, "PG_VERSION"))) return PGlite.create(pgdata, { fsBundle, pgliteWasmModule });
  return PGlite.create(pgdata, { fsBundle, pgliteWasmModule, initdbWasmModule: await compile(initdbWasmPath) });
}

async function compile(path: string): Promise<WebAssembly.Module> {
  return WebAssembly.compile(await Bun.file(path).arrayBuffer());
}

const LOCK_EX = 2;
const LOCK_NB = 4;
const LOCK_UN = 8;

/** flock(2) from the C library, or null where it cannot be loaded. */
function loadFlock(): ((fd: number, op: number) => number) | null {
  for (const name of ["libc.so.6", "libc.so", "libSystem.B.dylib"]) {
    try {
      return dlopen(name, { flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 } }).symbols.flock;
    } catch {
      // try the next name
    }
  }
  return null;
}

/**
 * Two processes opening one PGlite directory would corrupt it. An flock(2) on DIR/leadline.lock is
 * held for the life of the process and dropped by the kernel however it ends, so a crash leaves no
 * stale lock and a reused pid is never mistaken for the owner. The file holds the owner's pid for
 * the error message. Without flock (an unusual C library), the pid alone is checked for liveness.
 */
function lockDataDir(dir: string, shown: string): { release(): void } {
  const path = join(dir, "leadline.lock");
  const fd = openSync(path, constants.O_RDWR | constants.O_CREAT, 0o600);
  const flock = loadFlock();
  const refused = flock ? flock(fd, LOCK_EX | LOCK_NB) !== 0 : null;
  const owner = Number.parseInt(readFileSync(path, "utf8"), 10);
  if (refused ?? (owner > 0 && owner !== process.pid && isAlive(owner))) {
    closeSync(fd);
    const who = owner > 0 ? `process ${owner}` : "another process";
    throw new Error(`the embedded database in ${shown} is in use by ${who}; stop it or set DATABASE_URL`);
  }
  ftruncateSync(fd, 0);
  writeSync(fd, `${process.pid}\n`, 0);
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      ftruncateSync(fd, 0);
      flock?.(fd, LOCK_UN);
      closeSync(fd);
    },
  };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as { code?: unknown }).code === "EPERM";
  }
}
