// The migrated database image: PGlite's data directory right after initdb and every migration,
// made at build time (src/db/build-image.ts, `make build`) and embedded into the executable, so that
// a new DATA_DIR starts from it instead of running initdb and the migrations inside PGlite. On a
// quiet 2-core machine that first start took 5.7 s to /healthz with a peak of 1.07 GB (initdb runs
// a second PostgreSQL instance in WebAssembly beside the first); from the image it is about what
// opening an existing directory costs (bench/RESULTS.md, "First start").
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import type { PGlite } from "@electric-sql/pglite";
import { migrations } from "./migrations";

/** Where `make build` writes the image, relative to the project (dist/ is build output). */
export const IMAGE_FILE = "dist/embedded-image.tar.gz";

/**
 * The image's path: inside the executable a /$bunfs/ path, from source the file `make build` made,
 * or null when there is none (a checkout never built: the database is then created by initdb).
 * A dynamic import, so that running from source without the file is not an error, while
 * `bun build --compile` embeds the file (and fails when it is missing: the Makefile makes it first).
 */
export async function imagePath(): Promise<string | null> {
  try {
    return (await import("../../dist/embedded-image.tar.gz", { with: { type: "file" } })).default;
  } catch {
    return null;
  }
}

/**
 * Unpacks the image as the data directory `pgdata`, which must not exist yet. Extracted natively
 * (Bun.Archive) rather than through PGlite's own `loadDataDir`, which untars in JavaScript and
 * writes each file through Emscripten's file system: measured on the same machine, 0.35 s of CPU
 * and 41 MB against 0.9 s and 170 MB more at the peak, which alone broke the 400 MB budget.
 * Extracted beside it and renamed into place, so that a start killed halfway leaves no partial
 * database behind to be opened next time.
 */
export async function unpackImage(path: string, pgdata: string): Promise<void> {
  const partial = `${pgdata}.unpacking`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(dirname(pgdata), { recursive: true });
  await new Bun.Archive(await Bun.file(path).bytes()).extract(partial);
  if (!existsSync(join(partial, "PG_VERSION"))) {
    rmSync(partial, { recursive: true, force: true });
    throw new Error(`the embedded database image ${path} holds no PostgreSQL data directory`);
  }
  renameSync(partial, pgdata);
}

/** True when `pgdata` is absent or an empty directory: nothing there to keep. */
export function isEmptyDir(pgdata: string): boolean {
  return !existsSync(pgdata) || readdirSync(pgdata).length === 0;
}

/**
 * The last migration of an image just opened, given its schema_migrations rows in order, when they
 * are the first of this executable's migrations; null otherwise. Inside the executable the image
 * is built from the same list, so this only fails from source, with a dist/ image left by another
 * checkout or branch: that one is put aside for initdb rather than opened at a migration this
 * code does not know.
 */
export function imageMigration(rows: ReadonlyArray<{ version: number; name: string }>): number | null {
  const known = rows.every((r, i) => migrations[i]?.version === r.version && migrations[i]?.name === r.name);
  return known && rows.length > 0 ? rows.length : null;
}

export async function imageVersion(db: PGlite): Promise<number | null> {
  const { rows } = await db.query<{ version: number; name: string }>("select version, name from schema_migrations order by version");
  return imageMigration(rows);
}
