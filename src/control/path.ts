// Where the embedded server's control socket lives. In DATA_DIR (0700, checked to be ours) when
// the path fits a Unix socket address (108 bytes on Linux, 104 on macOS); otherwise in a private
// 0700 directory under XDG_RUNTIME_DIR or /tmp, whose location is written in DATA_DIR for the CLI.
import { createHash } from "node:crypto";
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Config } from "../config";

const SOCKET = "control.sock";
const POINTER = "control.path";
/** Bytes, with a margin under macOS's 104 (the NUL and the kernel's own rounding). */
const MAX_SOCKET_PATH = 100;

/** The socket path `serve` listens on, making the private directory when DATA_DIR's is too long. */
export function prepareSocketPath(config: Config): string {
  const dataDir = resolve(config.dataDir);
  const inDataDir = join(dataDir, SOCKET);
  const pointer = join(dataDir, POINTER);
  rmSync(inDataDir, { force: true });
  if (Buffer.byteLength(inDataDir) <= MAX_SOCKET_PATH) {
    rmSync(pointer, { force: true });
    return inDataDir;
  }
  const uid = process.getuid?.() ?? 0;
  const dir = join(resolve(config.runtimeDir), `leadline-${uid}-${createHash("sha256").update(dataDir).digest("hex").slice(0, 12)}`);
  mkdirSync(dir, { mode: 0o700, recursive: true });
  // /tmp is shared: another user could have made this name first, or a link to elsewhere.
  const st = lstatSync(dir);
  if (!st.isDirectory() || st.uid !== uid) throw new Error(`${dir} is not a directory owned by uid ${uid}; remove it`);
  chmodSync(dir, 0o700);
  const path = join(dir, SOCKET);
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH) throw new Error(`no short path for the control socket: set XDG_RUNTIME_DIR to a short directory`);
  rmSync(path, { force: true });
  writeFileSync(pointer, path + "\n", { mode: 0o600 });
  return path;
}

/** Where a CLI finds a running server's socket, or null when there is none to try. */
export function findSocketPath(config: Config): string | null {
  const dataDir = resolve(config.dataDir);
  const inDataDir = join(dataDir, SOCKET);
  if (existsSync(inDataDir)) return inDataDir;
  try {
    return readFileSync(join(dataDir, POINTER), "utf8").trim() || null;
  } catch {
    return null;
  }
}
