// The embedded database: PGlite (PostgreSQL compiled to WebAssembly) stored under DATA_DIR and
// served on a private Unix socket, so that postgres.js talks to it as to any PostgreSQL.
import { PGlite } from "@electric-sql/pglite";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";
import { dlopen, FFIType } from "bun:ffi";
import { chmodSync, closeSync, constants, ftruncateSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { errorFields, log } from "../log";
// Imported as files so that `bun build --compile` embeds them: PGlite otherwise loads them from
// beside its own module, which does not exist inside the executable. The package's exports map
// does not list them, hence the relative paths.
import fsBundlePath from "../../node_modules/@electric-sql/pglite/dist/pglite.data" with { type: "file" };
import pgliteWasmPath from "../../node_modules/@electric-sql/pglite/dist/pglite.wasm" with { type: "file" };
import initdbWasmPath from "../../node_modules/@electric-sql/pglite/dist/initdb.wasm" with { type: "file" };

export interface EmbeddedServer {
  /** A postgres:// URL of the server, meant for this process alone (see below). */
  url: string;
  /** The Unix socket to connect through. */
  path: string;
  /** Stops serving, shuts PGlite down cleanly (so the data persists) and releases the lock. */
  close(): Promise<void>;
}

/**
 * PGlite is one PostgreSQL session. PGLiteSocketServer can accept several connections, but it
 * multiplexes them onto that session message by message: measured with two postgres.js clients,
 * 50 of 3,000 queries failed with `portal "" does not exist` (one client's Bind landing between
 * the other's Parse and Execute), and settings made by one client apply to all. So one process
 * owns the directory, and a second one (`leadline keys list` beside `leadline serve`) is refused
 * by the lock in `lockDataDir` rather than connected to the first one's socket.
 */
export async function startEmbedded(dataDir: string): Promise<EmbeddedServer> {
  const dir = resolve(dataDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const lock = lockDataDir(dir, dataDir);
  let db: PGlite | undefined;
  let socketDir: (() => void) | null = null;
  try {
    const [pgliteWasmModule, initdbWasmModule] = await Promise.all([compile(pgliteWasmPath), compile(initdbWasmPath)]);
    db = await PGlite.create(join(dir, "pgdata"), { fsBundle: Bun.file(fsBundlePath), pgliteWasmModule, initdbWasmModule });
    // More than one slot, so that postgres.js reconnecting (idle_timeout, max_lifetime) is not
    // refused while the server has yet to notice the old socket closed.
    // Never a TCP port: PGlite has no password, so any local user could connect. The socket lives
    // in the 0700 data directory, or, where that path would exceed the Unix socket path limit
    // (108 bytes), in a fresh 0700 directory of its own under the temp dir.
    const { path, cleanup } = socketPath(dir);
    socketDir = cleanup;
    rmSync(path, { force: true });
    const server = new PGLiteSocketServer({ db, path, maxConnections: 4 });
    const pglite = db;
    server.addEventListener("connection", () => {
      // Prepared statements outlive the connection that made them (the session never ends), and
      // postgres.js names them afresh per connection: without this, every reconnect leaks them.
      if (server.getStats().activeConnections === 1 && !pglite.isInTransaction()) {
        pglite.exec("deallocate all").catch((err) => log.warn("embedded database: deallocate failed", errorFields(err)));
      }
    });
    await server.start();
    let closing: Promise<void> | undefined;
    return {
      url: "postgres://postgres@localhost/postgres",
      path,
      close: () =>
        (closing ??= (async () => {
          try {
            await server.stop();
            await pglite.close();
          } finally {
            socketDir?.();
            lock.release();
          }
        })()),
    };
  } catch (err) {
    await db?.close().catch(() => {});
    socketDir?.();
    lock.release();
    throw err;
  }
}

const SOCKET_NAME = ".s.PGSQL.5432";
const MAX_SOCKET_PATH = 100;

function socketPath(dir: string): { path: string; cleanup: (() => void) | null } {
  const inDataDir = join(dir, SOCKET_NAME);
  if (Buffer.byteLength(inDataDir) < MAX_SOCKET_PATH) return { path: inDataDir, cleanup: null };
  const own = mkdtempSync(join(tmpdir(), "leadline-"));
  chmodSync(own, 0o700);
  const path = join(own, SOCKET_NAME);
  if (Buffer.byteLength(path) >= MAX_SOCKET_PATH) {
    rmSync(own, { recursive: true, force: true });
    throw new Error(`DATA_DIR and the temp directory are too long for a Unix socket path; use a shorter DATA_DIR`);
  }
  log.info("embedded database: DATA_DIR is too long for a Unix socket path; the socket is in a private directory", { socket: path });
  return { path, cleanup: () => rmSync(own, { recursive: true, force: true }) };
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
