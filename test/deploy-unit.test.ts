// The shipped systemd unit passes systemd's own tools: `systemd-analyze verify` and an offline
// security rating of 2.0 or lower; the sysusers file creates the service's user. Debian's systemd
// package is installed by test/run.ts when missing; without it these tests say why and skip.
import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dir, "..");
const executable = join(root, "dist/leadline");
const analyze = "/usr/bin/systemd-analyze";
const present = existsSync(analyze);
if (!present) console.warn(`deploy-unit.test.ts: ${analyze} is missing (apt-get install -y systemd); skipping the unit checks`);

/** The unit as shipped, but starting the executable just built (verify needs ExecStart to exist). */
function unitCopy(): string {
  const dir = mkdtempSync(join(tmpdir(), "leadline-unit-"));
  const unit = readFileSync(join(root, "deploy/leadline.service"), "utf8");
  expect(unit).toContain("ExecStart=/usr/local/bin/leadline serve");
  const path = join(dir, "leadline.service");
  writeFileSync(path, unit.replace("ExecStart=/usr/local/bin/leadline", `ExecStart=${executable}`));
  return path;
}

describe.skipIf(!present)("deploy/leadline.service", () => {
  test("systemd-analyze verify finds nothing to say", () => {
    const run = spawnSync(analyze, ["verify", unitCopy()], { encoding: "utf8" });
    expect(run.stderr.trim()).toBe("");
    expect(run.status).toBe(0);
  });

  test("the offline security rating is 2.0 or lower", () => {
    const run = spawnSync(analyze, ["security", "--offline=true", "--no-pager", unitCopy()], { encoding: "utf8" });
    const rating = /Overall exposure level for \S+: ([0-9.]+)/.exec(run.stdout);
    expect(rating).not.toBeNull();
    expect(Number(rating![1])).toBeLessThanOrEqual(2.0);
  });

  test("it asks systemd for its state directory, mode 0700, a private umask, and a stop timeout longer than the drain", () => {
    const unit = readFileSync(join(root, "deploy/leadline.service"), "utf8");
    for (const line of ["StateDirectory=leadline", "StateDirectoryMode=0700", "UMask=0077", "Restart=on-failure", "User=leadline"]) {
      expect(unit.split("\n")).toContain(line);
    }
    expect(Number(/^TimeoutStopSec=(\d+)$/m.exec(unit)?.[1])).toBeGreaterThan(10);
  });

  test("the sysusers file creates the leadline user and group", () => {
    const dir = mkdtempSync(join(tmpdir(), "leadline-sysusers-"));
    mkdirSync(join(dir, "etc"));
    const run = spawnSync("systemd-sysusers", [`--root=${dir}`, join(root, "deploy/leadline.sysusers")], { encoding: "utf8" });
    expect(run.status).toBe(0);
    expect(readFileSync(join(dir, "etc/passwd"), "utf8")).toMatch(/^leadline:x:\d+:\d+:[^:]*:\/var\/lib\/leadline:\/usr\/sbin\/nologin$/m);
    expect(readFileSync(join(dir, "etc/group"), "utf8")).toMatch(/^leadline:x:\d+:/m);
  });
});
