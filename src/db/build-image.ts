// Run by `make build` before the executable is compiled (never part of it): makes the migrated
// database image that src/db/image.ts embeds. A new PGlite database in a temporary directory
// (initdb), every migration applied through the same runner as `serve`, PGlite shut down cleanly,
// then its data directory as a gzipped tarball (Bun.Archive), written to the path given (default
// dist/embedded-image.tar.gz) through a temporary file, so that a failed build leaves no image to
// be embedded. Only Node/npm's Bun is needed, as for the rest of the build.
//
// Copied shut down, as PostgreSQL's own file-level backups are, rather than with PGlite's
// dumpDataDir, which tars a running cluster: every new DATA_DIR then began with crash recovery
// (about a tenth of a second of the first start, measured).
//
//   node_modules/.bin/bun src/db/build-image.ts [OUT]
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { connect } from "./client";
import { startEmbedded } from "./embedded";
import { IMAGE_FILE } from "./image";
import { migrate } from "./migrate";

/** Every file and directory under `root` (a directory as `name/`, so that empty ones are kept). */
function entries(root: string): Record<string, Uint8Array | string> {
  const out: Record<string, Uint8Array | string> = {};
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(dir, entry.name);
      const name = relative(root, path);
      if (entry.isDirectory()) {
        out[`${name}/`] = "";
        walk(path);
      } else if (entry.isFile()) out[name] = readFileSync(path);
    }
  };
  walk(root);
  return out;
}

const out = resolve(process.argv[2] ?? join(import.meta.dir, "../..", IMAGE_FILE));
const work = mkdtempSync(join(tmpdir(), "leadline-image-"));
try {
  const data = join(work, "data");
  const server = await startEmbedded(data);
  try {
    const sql = connect(server.url, { max: 1, socket: server.connect, statementTimeoutMs: 0, applicationName: "leadline-image" });
    try {
      const applied = await migrate(sql);
      console.log(`build-image: ${applied.length} migrations applied (${applied.at(-1)})`);
    } finally {
      await sql.end({ timeout: 5 });
    }
  } finally {
    await server.close();
  }
  const tarball = await new Bun.Archive(entries(join(data, "pgdata")), { compress: "gzip", level: 9 }).bytes();
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(`${out}.tmp`, tarball);
  renameSync(`${out}.tmp`, out);
  console.log(`build-image: ${out}, ${(tarball.length / 2 ** 20).toFixed(1)} MiB`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
