// The embedded database's directory holds key hashes, provider tokens, SMTP passwords and webhook
// secrets: only the user that runs leadline may read or write anything in it.
import { chmodSync, lstatSync, readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";

/**
 * Refuses a directory owned by another user: leadline would otherwise keep its secrets where that
 * user can read them, whatever the modes say (the owner can change them back).
 */
export function checkOwner(dir: string, shown: string): void {
  const st = statSync(dir);
  if (!st.isDirectory()) throw new Error(`DATA_DIR ${shown} is not a directory`);
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) {
    throw new Error(`DATA_DIR ${shown} is owned by uid ${st.uid}, not by the user running leadline (uid ${uid}); chown it or set another DATA_DIR`);
  }
}

/**
 * Takes group and other bits off the directory and everything under it. Run before PGlite opens
 * the database, for what is there already (a directory made by hand 0755, files of earlier
 * versions), and again after, for what initdb has just made: PGlite copies initdb's output in
 * through Emscripten's file system, which chmods each file to 0666 and each directory to 0755
 * explicitly, so no umask prevents it (measured: 970 of 972 files of a new database). Files
 * PostgreSQL creates while serving come out 0600 by themselves (its own mask inside Emscripten).
 * Symbolic links are left alone (chmod would follow them out of the tree). A Unix socket left by
 * versions that served the database on one is removed: nothing listens on it any more.
 */
export function restrictTree(dir: string): void {
  chmodSync(dir, 0o700);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isSymbolicLink()) continue;
    if (entry.isSocket()) {
      rmSync(path, { force: true });
    } else if (entry.isDirectory()) {
      restrictTree(path);
    } else {
      const mode = lstatSync(path).mode & 0o7777;
      if (mode & 0o077) chmodSync(path, mode & 0o700);
    }
  }
}
