// README.md and the manuals in docs/ against the code they document: the README is the landing
// page (the two commands first, at most 250 lines, every manual listed); each manual says what it
// is part of; every environment variable src/config.ts reads has a row in docs/operations.md's
// Configuration table; every section and field of the provisioning file is in docs/provisioning.md's
// table, in bold exactly when it is required to create; every reason a gate refuses a send is in
// docs/messaging.md; and every link inside the repository resolves, anchors included (nothing
// points at ../shared or at a file or heading that moved).
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import type { TSchema } from "@sinclair/typebox";
import { REQUIRED, type Fields } from "../src/provision/fields";
import { API_KEY_FIELDS, ProvisioningFile, SETTING_FIELDS, TABLES } from "../src/provision/model";
import { GATE_REASONS } from "../src/messages/gates";

const ROOT = resolve(import.meta.dir, "..");
const read = (file: string) => readFileSync(join(ROOT, file), "utf8");
const README = read("README.md");
const DOCS = readdirSync(join(ROOT, "docs"))
  .filter((f) => f.endsWith(".md"))
  .sort()
  .map((f) => `docs/${f}`);

/** The text outside fenced code blocks (a `# comment` in a shell block is not a heading). */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, "");
}

/** The text of the `## title` section of `markdown` (up to the next `## `). */
function section(markdown: string, title: string, file: string): string {
  const start = markdown.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`${file} has no section "## ${title}"`);
  const end = markdown.indexOf("\n## ", start + 4);
  return markdown.slice(start, end < 0 ? undefined : end);
}

/** The anchors GitHub makes of a file's headings: lower case, punctuation dropped, spaces to `-`, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of prose(markdown).matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = m[1].trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, "").replace(/ /g, "-");
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

describe("README.md, the landing page", () => {
  test("opens with the two commands, then what Leadline is, the tour and the manuals", () => {
    expect(README.split("\n").slice(0, 6).join("\n")).toBe(
      "# Leadline\n\n```sh\nmake run     # builds dist/leadline and serves a demo on http://127.0.0.1:8080 (embedded database)\nmake test    # installs what it needs, starts a throwaway PostgreSQL, runs every test\n```",
    );
    const titles = [...prose(README).matchAll(/^## (.+)$/gm)].map((m) => m[1]);
    expect(titles).toEqual(["What Leadline is", "Five-minute tour (`make run`)", "Manuals"]);
  });

  test("has at most 250 lines", () => {
    const lines = README.endsWith("\n") ? README.split("\n").length - 1 : README.split("\n").length;
    expect(lines).toBeLessThanOrEqual(250);
  });

  test("Manuals links every file of docs/, each with a line of what it is for", () => {
    const manuals = section(README, "Manuals", "README.md");
    const listed = [...manuals.matchAll(/^- \[(docs\/[^\]]+)\]\(([^)]+)\): \S/gm)].map((m) => {
      expect(m[2]).toBe(m[1]);
      return m[1];
    });
    expect([...listed].sort()).toEqual(DOCS);
  });
});

describe("the manuals in docs/", () => {
  test("each starts with its title and a line saying what it is part of, linking back to README.md", () => {
    const wrong = DOCS.filter((file) => {
      const [title, blank, part] = read(file).split("\n");
      return !title.startsWith("# ") || blank !== "" || !part.startsWith("Part of the Leadline documentation ([README.md](../README.md)");
    });
    expect(wrong).toEqual([]);
  });

  test("operations.md's Configuration has a row for every variable src/config.ts reads", () => {
    const config = read("src/config.ts");
    const used = [...new Set([...config.matchAll(/\benv\.([A-Z_][A-Z0-9_]*)/g)].map((m) => m[1]))];
    expect(used.length).toBeGreaterThan(15);
    const table = section(read("docs/operations.md"), "Configuration", "docs/operations.md");
    const rows = new Set([...table.matchAll(/^\| ([^|]+) \|/gm)].flatMap((m) => [...m[1].matchAll(/`([A-Z_][A-Z0-9_]*)`/g)].map((v) => v[1])));
    expect(used.filter((v) => !rows.has(v))).toEqual([]);
  });

  describe("provisioning.md's table of sections and fields", () => {
    const table = section(read("docs/provisioning.md"), "Sections and fields", "docs/provisioning.md");
    /** Each row by its first cell (`orgs[]`, `orgs[].billing`): its fields cell and its whole text. */
    const rows = new Map(
      [...table.matchAll(/^\| `([^`]+)` \| ([^|]*) \|(.*)$/gm)].map((m) => [m[1], { fields: m[2], text: m[0] }] as const),
    );
    const bold = (cell: string, name: string) => cell.includes(`**\`${name}\`**`);
    const named = (cell: string, name: string) => cell.includes(`\`${name}\``);
    type Schema = TSchema & { type?: string; items?: Schema; properties?: Record<string, Schema>; anyOf?: Schema[]; required?: string[] };
    /** The object a field holds, if any: through `S or null` and arrays. */
    const objectOf = (s: Schema): Schema | null => {
      const inner = s.anyOf?.find((x) => x.type === "object" || x.type === "array") ?? s;
      const one = inner.type === "array" ? inner.items! : inner;
      return one.type === "object" && one.properties ? one : null;
    };
    /** What a section's objects may hold, and which fields must be given to create one. */
    const sectionFields = (name: string): { fields: Fields; identifier: string | null } | null => {
      if (name === "settings") return { fields: SETTING_FIELDS, identifier: null };
      if (name === "api_keys") return { fields: API_KEY_FIELDS, identifier: null }; // identified by key, else name and org
      const t = TABLES[name as keyof typeof TABLES];
      return t ? { fields: t.fields, identifier: t.key } : null;
    };

    test("names every section and every field of the schema, in its section's row", () => {
      const missing: string[] = [];
      for (const [name, schema] of Object.entries(ProvisioningFile.properties)) {
        const row = name === "settings" ? "settings" : `${name}[]`;
        const here = rows.get(row);
        if (!here) {
          missing.push(`no row ${row}`);
          continue;
        }
        // A row's own fields are in its fields cell; the fields of an object nested in them
        // (quiet_hours, a calendar's hours and links) anywhere in that row, unless the object has
        // a row of its own (orgs[].billing).
        const walk = (obj: Schema, path: string, text: string, nested: string) => {
          for (const [field, sub] of Object.entries(obj.properties ?? {})) {
            if (!named(text, field)) missing.push(`${path}.${field}`);
            const inner = objectOf(sub);
            const own = rows.get(`${path}.${field}`);
            if (inner) own ? walk(inner, `${path}.${field}`, own.fields, own.text) : walk(inner, `${path}.${field}`, nested, nested);
          }
        };
        walk(objectOf(schema as Schema)!, row, here.fields, here.text);
      }
      expect(missing).toEqual([]);
    });

    test("a field is in bold exactly when it is required to create (or in every object)", () => {
      const wrong: string[] = [];
      for (const name of Object.keys(ProvisioningFile.properties)) {
        const row = name === "settings" ? "settings" : `${name}[]`;
        const cell = rows.get(row)?.fields ?? "";
        const section = sectionFields(name);
        if (section === null) {
          // A section of additions only (do_not_contact[]): bold is what its schema requires.
          const schema = (ProvisioningFile.properties[name as keyof typeof ProvisioningFile.properties] as unknown as Schema).items!;
          const needed = new Set(schema.required ?? []);
          for (const k of Object.keys(schema.properties ?? {})) {
            if (bold(cell, k) !== needed.has(k)) wrong.push(`${row} ${k}: ${needed.has(k) ? "required, not bold" : "bold, not required"}`);
          }
          continue;
        }
        const { fields, identifier } = section;
        const required = new Set(Object.entries(fields).filter(([, f]) => f.initial === REQUIRED).map(([k]) => k));
        if (identifier) required.add(identifier);
        for (const field of [...(identifier ? [identifier] : []), ...Object.keys(fields)]) {
          if (bold(cell, field) !== required.has(field)) wrong.push(`${row} ${field}: ${required.has(field) ? "required, not bold" : "bold, not required"}`);
        }
        // An object stored whole (orgs[].billing, sms, email) has a row: bold is what setting it up needs.
        for (const [field, f] of Object.entries(fields)) {
          if (!f.complete) continue;
          const sub = rows.get(`${row}.${field}`)?.fields ?? "";
          const needed = new Set(f.complete.required ?? []);
          for (const k of Object.keys(f.complete.properties)) {
            if (bold(sub, k) !== needed.has(k)) wrong.push(`${row}.${field} ${k}: ${needed.has(k) ? "required, not bold" : "bold, not required"}`);
          }
        }
      }
      expect(wrong).toEqual([]);
    });

    test("names no field the schema does not have", () => {
      const unknown: string[] = [];
      const all = (s: Schema, into: Set<string>) => {
        for (const [k, sub] of Object.entries(objectOf(s)?.properties ?? {})) {
          into.add(k);
          all(sub, into);
        }
        return into;
      };
      for (const [row, { fields }] of rows) {
        const path = row.replace(/\[\]/g, "").split(".");
        let schema = (ProvisioningFile.properties as Record<string, Schema>)[path[0]];
        for (const p of path.slice(1)) schema = objectOf(schema)!.properties![p];
        if (!schema) {
          unknown.push(`row ${row}`);
          continue;
        }
        const known = all(schema, new Set());
        for (const m of fields.matchAll(/`([a-z_A-Z]+)`/g)) if (!known.has(m[1])) unknown.push(`${row}: ${m[1]}`);
      }
      expect(unknown).toEqual([]);
    });
  });

  test("messaging.md's results list every reason a gate refuses a send", () => {
    const text = read("docs/messaging.md");
    expect(GATE_REASONS.filter((r) => !text.includes(`| \`${r}\` |`))).toEqual([]);
  });
});

describe("links", () => {
  test("every link in README.md and docs/ resolves, anchors included, and none points at ../shared", () => {
    const broken: string[] = [];
    for (const file of ["README.md", ...DOCS]) {
      const text = read(file);
      expect(`${file}: ${text.includes("../shared") || text.includes("/work/shared")}`).toBe(`${file}: false`);
      for (const m of prose(text).matchAll(/\]\(([^)#\s]*)(#[^)\s]*)?\)/g)) {
        const [, path, fragment] = m;
        if (!path && !fragment) continue;
        if (/^[a-z]+:/.test(path)) {
          broken.push(`${file}: ${path} points outside the repository`);
          continue;
        }
        const target = path ? resolve(dirname(join(ROOT, file)), path) : join(ROOT, file);
        if (!target.startsWith(ROOT + "/") || !existsSync(target)) broken.push(`${file}: ${path}`);
        else if (fragment && !anchors(readFileSync(target, "utf8")).has(fragment.slice(1))) {
          broken.push(`${file}: ${path}${fragment} (no such heading in ${relative(ROOT, target)})`);
        }
      }
      // Paths of the repository named in backquotes exist (deploy/nginx.conf did not, once).
      for (const m of text.matchAll(/`((?:deploy|docs|sql|bench|patches|test|src)\/[A-Za-z0-9_./-]+)`/g)) {
        const generated = m[1].startsWith("bench/results/"); // written by `make bench`
        if (!generated && !existsSync(join(ROOT, m[1]))) broken.push(`${file}: \`${m[1]}\``);
      }
    }
    expect(broken).toEqual([]);
  });

  test("anchors are made as GitHub makes them", () => {
    expect([...anchors("# Five-minute tour (`make run`)\n## The client address (`TRUST_PROXY`)\n## `leadline provision --dry-run FILE`\n```sh\n# 0. not a heading\n```\n## Notes\n## Notes\n")]).toEqual([
      "five-minute-tour-make-run",
      "the-client-address-trust_proxy",
      "leadline-provision---dry-run-file",
      "notes",
      "notes-1",
    ]);
  });
});
