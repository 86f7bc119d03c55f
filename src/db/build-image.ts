// Run by `make build` before the executable is compiled (never part of it): makes the migrated
// database image that src/db/image.ts embeds. A new PGlite database in a temporary directory
// (initdb), every migration applied through the same runner as `serve`, a checkpoint, then
// PGlite's dumpDataDir as a gzipped tarball, written to the path given (default
// dist/embedded-image.tar.gz) through a temporary file, so that a failed build leaves no image to
// be embedded. Only Node/npm's Bun is needed, as for the rest of the build.
//
//   node_modules/.bin/bun src/db/build-image.ts [OUT]
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { connect } from "./client";
import { startEmbedded } from "./embedded";
import { IMAGE_FILE } from "./image";
import { migrate } from "./migrate";

const out = resolve(process.argv[2] ?? join(import.meta.dir, "../..", IMAGE_FILE));
const work = mkdtempSync(join(tmpdir(), "leadline-image-"));
try {
  const server = await startEmbedded(join(work, "data"));
  let tarball: Uint8Array;
  try {
    const sql = connect(server.url, { max: 1, socket: server.connect, statementTimeoutMs: 0, applicationName: "leadline-image" });
    try {
      const applied = await migrate(sql);
      console.log(`build-image: ${applied.length} migrations applied (${applied.at(-1)})`);
    } finally {
      await sql.end({ timeout: 5 });
    }
    tarball = new Uint8Array(await (await server.dump()).arrayBuffer());
  } finally {
    await server.close();
  }
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(`${out}.tmp`, tarball);
  renameSync(`${out}.tmp`, out);
  console.log(`build-image: ${out}, ${(tarball.length / 2 ** 20).toFixed(1)} MiB`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
