// The README against the code it documents: its top-level sections in the order operators read
// them, every environment variable src/config.ts reads in the Configuration table, every section
// and field of the provisioning file in the Provisioning table, and every link inside the
// repository resolving (nothing points at ../shared or at a file that moved).
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { ProvisioningFile } from "../src/provision/model";

const ROOT = resolve(import.meta.dir, "..");
const README = readFileSync(join(ROOT, "README.md"), "utf8");

/** The text of the `## title` section (up to the next `## `). */
function section(title: string): string {
  const start = README.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`README.md has no section "## ${title}"`);
  const end = README.indexOf("\n## ", start + 4);
  return README.slice(start, end < 0 ? undefined : end);
}

describe("README.md", () => {
  test("opens with the two commands, then its sections in the operator's order", () => {
    expect(README.split("\n").slice(0, 6).join("\n")).toBe(
      "# Leadline\n\n```sh\nmake run     # builds dist/leadline and serves a demo on http://127.0.0.1:8080 (embedded database)\nmake test    # installs what it needs, starts a throwaway PostgreSQL, runs every test\n```",
    );
    const titles = [...README.matchAll(/^## (.+)$/gm)].map((m) => m[1]);
    expect(titles).toEqual([
      "What Leadline is",
      "Five-minute tour (`make run`)",
      "Configuration",
      "Provisioning",
      "Keys",
      "The console",
      "Deploying",
      "Several instances on one PostgreSQL",
      "Upgrading",
      "Backups and the move off the embedded database",
      "Choices where the contract names no code",
      "Limits",
      "Troubleshooting",
      "Reference",
    ]);
  });

  test("Configuration has a row for every variable src/config.ts reads", () => {
    const config = readFileSync(join(ROOT, "src/config.ts"), "utf8");
    const read = [...new Set([...config.matchAll(/\benv\.([A-Z_][A-Z0-9_]*)/g)].map((m) => m[1]))];
    expect(read.length).toBeGreaterThan(15);
    const table = section("Configuration");
    const rows = new Set([...table.matchAll(/^\| ([^|]+) \|/gm)].flatMap((m) => [...m[1].matchAll(/`([A-Z_][A-Z0-9_]*)`/g)].map((v) => v[1])));
    expect(read.filter((v) => !rows.has(v))).toEqual([]);
  });

  test("Provisioning names every section and every field of the file's schema", () => {
    const text = section("Provisioning");
    const missing: string[] = [];
    for (const [name, schema] of Object.entries(ProvisioningFile.properties)) {
      if (!text.includes(`| \`${name}`)) missing.push(name);
      // A section is an array of objects, or (settings) an object; nested objects are listed too.
      const walk = (s: { type?: string; items?: unknown; properties?: Record<string, unknown>; anyOf?: unknown[] }, path: string) => {
        // A field that `null` clears is `S or null` (src/provision/fields.ts): its object is S.
        const inner = (s.anyOf as (typeof s)[] | undefined)?.find((x) => x.type === "object" || x.type === "array");
        const one = inner ?? s;
        const obj = one.type === "array" ? (one.items as typeof s) : one;
        for (const [field, sub] of Object.entries(obj.properties ?? {})) {
          if (!text.includes(`\`${field}\``)) missing.push(`${path}.${field}`);
          walk(sub as typeof s, `${path}.${field}`);
        }
      };
      walk(schema as never, name);
    }
    expect(missing).toEqual([]);
  });

  test("every link inside the repository resolves, and none points at ../shared", () => {
    const files = ["README.md", ...readdirSync(join(ROOT, "docs")).map((f) => `docs/${f}`)];
    const broken: string[] = [];
    for (const file of files) {
      const text = readFileSync(join(ROOT, file), "utf8");
      expect(`${file}: ${text.includes("../shared") || text.includes("/work/shared")}`).toBe(`${file}: false`);
      for (const m of text.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(m[1])) {
          broken.push(`${file}: ${m[1]} points outside the repository`);
          continue;
        }
        const target = resolve(dirname(join(ROOT, file)), m[1]);
        if (!existsSync(target)) broken.push(`${file}: ${m[1]}`);
        else if (m[2]) {
          const anchor = m[2].slice(1);
          const headings = [...readFileSync(target, "utf8").matchAll(/^#+ (.+)$/gm)].map((h) =>
            h[1].toLowerCase().replace(/[^a-z0-9 -]/g, "").replace(/ /g, "-"),
          );
          if (!headings.includes(anchor)) broken.push(`${file}: ${m[1]}${m[2]}`);
        }
      }
      // Paths of the repository named in backquotes exist (deploy/nginx.conf did not, once).
      for (const m of text.matchAll(/`((?:deploy|docs|sql|bench|patches|test)\/[A-Za-z0-9_./-]+)`/g)) {
        const generated = m[1].startsWith("bench/results/"); // written by `make bench`
        if (!generated && !existsSync(join(ROOT, m[1]))) broken.push(`${file}: \`${m[1]}\``);
      }
    }
    expect(broken).toEqual([]);
  });
});
