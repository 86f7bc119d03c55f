// Fuzzing from the document: for every operation the served /openapi.json lists (every member of a
// query-routed path), fast-check derives inputs from the operation's own schemas — valid ones
// (types, patterns, enums, lengths, required fields) and invalid ones (wrong types, missing fields,
// junk, huge strings up to the body limit, nested junk, non-object and broken JSON, form bodies) —
// and sends them over HTTP with a key of every scope, a wrong key or none. Every answer must be
// documented for its status with a matching body (the preload, test/harness/answers.ts, checks
// that on every fetch), never a 5xx but the intake 500 the contract allows, never 503 with the
// database up; afterwards the server is ready and serves a lead. Fixed seed, bounded runs.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { startApp, type TestApp } from "./harness/app";
import { makeUser, signIn, type ConsoleClient } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { ALL_SCOPES, makeKey, makeLead, seedWorld } from "./harness/factory";

type Json = Record<string, any>;

const SEED = 20261125;
const RUNS = 30;
// The contract's one 5xx: lead intake answers 500 on a database or insert failure (api-v1.md).
const INTAKE = "/hooks/lead_intake.php";

let db: TestDatabase;
let app: TestApp;
let doc: Json;
let key = "";
let session: ConsoleClient;
// Asked without the session: they end it, and every console operation after them would be asked signed out.
const SIGNS_OUT = new Set(["consoleSignOut", "consoleSignOutEverywhere"]);

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  key = (await makeKey(db.sql, { scopes: ALL_SCOPES, org: 1, agent: "agent7", name: "fuzz" })).key;
  app = await startApp(db.url);
  doc = (await (await fetch(`${app.base}/openapi.json`)).json()) as Json;
  const manager = await makeUser(db.sql, { role: "manager", orgId: 1 });
  session = await signIn(app.base, manager.email, manager.password);
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

// --- arbitraries from JSON Schema --------------------------------------------------------------

const short = (n: number | undefined, cap: number) => Math.min(n ?? cap, cap);

/** Values a schema accepts (bounded in size). */
function valid(schema: Json | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 4) return fc.constant(null);
  if ("const" in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum);
  const alts = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(alts)) return fc.oneof(...alts.map((s: Json) => valid(s, depth + 1)));
  if (Array.isArray(schema.type)) return fc.oneof(...schema.type.map((type: string) => valid({ ...schema, type }, depth)));
  switch (schema.type) {
    case "string": {
      if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern)).filter((s) => s.length <= (schema.maxLength ?? Infinity));
      if (schema.format === "email") return fc.emailAddress();
      const minLength = schema.minLength ?? 0;
      return fc.string({ minLength, maxLength: Math.max(minLength, short(schema.maxLength, 24)) });
    }
    case "integer":
      return fc.integer({ min: schema.minimum ?? -1000, max: schema.maximum ?? 1_000_000 });
    case "number":
      return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true, noDefaultInfinity: true });
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    case "array":
      return fc.array(valid(schema.items, depth + 1), { minLength: short(schema.minItems, 3), maxLength: Math.max(short(schema.minItems, 3), short(schema.maxItems, 3)) });
    case "object": {
      const props: Record<string, Json> = schema.properties ?? {};
      if (!Object.keys(props).length) return fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 });
      const shape = Object.fromEntries(Object.entries(props).map(([k, s]) => [k, valid(s, depth + 1)]));
      return fc.record(shape, { requiredKeys: (schema.required ?? []).filter((k: string) => k in props) });
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** Anything at all, nested a little. */
const junk: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.constantFrom("", " ", "null", "-1", "1e309", "0x10", "NaN", "\u0000", "../../etc/passwd", "' or 1=1 --", "<script>", "𝔘𝔫𝔦"),
  fc.integer(),
  fc.double(),
);

/** Nested junk: deep arrays and objects. */
const nested = fc.integer({ min: 10, max: 200 }).map((n) => {
  let v: unknown = "x";
  for (let i = 0; i < n; i++) v = i % 2 ? { a: v } : [v];
  return v;
});

/** A valid object with one field given a value of another kind, or a required field removed. */
function broken(schema: Json): fc.Arbitrary<unknown> {
  const props = Object.keys(schema.properties ?? {});
  const required: string[] = schema.required ?? [];
  const base = valid(schema) as fc.Arbitrary<Json>;
  const options: fc.Arbitrary<unknown>[] = [];
  if (props.length) options.push(fc.tuple(base, fc.constantFrom(...props), junk).map(([o, k, j]) => ({ ...o, [k]: j })));
  if (required.length)
    options.push(
      fc.tuple(base, fc.constantFrom(...required)).map(([o, k]) => {
        const { [k]: _, ...rest } = o;
        return rest;
      }),
    );
  return options.length ? fc.oneof(...options) : junk;
}

// --- requests from an operation --------------------------------------------------------------

interface Member {
  path: string;
  method: string;
  op: Json;
  /** The member's id and, on a query-routed path, its selecting parameter and value. */
  id: string;
  select?: { param: string; value: string };
}

interface Sent {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
}

function members(): Member[] {
  const out: Member[] = [];
  for (const [path, item] of Object.entries<Json>(doc.paths)) {
    for (const [method, op] of Object.entries<Json>(item)) {
      if (method.startsWith("x-")) continue;
      const list: Json[] | undefined = op["x-operations"];
      if (!list) {
        out.push({ path, method: method.toUpperCase(), op, id: op.operationId });
        continue;
      }
      for (const m of list) {
        const param = Object.keys(m).find((k) => !["operationId", "summary", "tag", "security"].includes(k))!;
        out.push({ path, method: method.toUpperCase(), op, id: m.operationId, select: { param, value: m[param] } });
      }
    }
  }
  return out;
}

/** The member's own entry of a query-routed body's oneOf (titled with its id), else the schema. */
const own = (schema: Json | undefined, id: string): Json | undefined =>
  schema?.oneOf ? schema.oneOf.find((s: Json) => s.title === id) : schema;

/** The body limit the document states ("At most 64 KiB"), in bytes. */
function limitOf(op: Json): number {
  const m = /At most (\d+) (KiB|MiB)/.exec(op.requestBody?.description ?? "");
  return m ? Number(m[1]) * (m[2] === "MiB" ? 1024 * 1024 : 1024) : 64 * 1024;
}

const formOf = (value: unknown): string => {
  const form = new URLSearchParams();
  if (value && typeof value === "object" && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) form.append(k, typeof v === "string" ? v : JSON.stringify(v));
  } else form.append("value", JSON.stringify(value) ?? "");
  return form.toString();
};

function requests(m: Member): fc.Arbitrary<Sent> {
  const params: Json[] = m.op.parameters ?? [];
  const pathParams = params.filter((p) => p.in === "path");
  const queryParams = params.filter((p) => p.in === "query" && p.name !== m.select?.param);
  const headerParams = params.filter((p) => p.in === "header");

  const segment = fc.oneof(fc.stringMatching(/^[a-z0-9-]{1,20}$/), fc.constantFrom("acme-estimate", "dni.js", "book.js", "book.css", "x"), fc.string({ maxLength: 12 }));
  const pathArb = fc.tuple(...pathParams.map(() => segment)).map((values) => {
    let path = m.path;
    pathParams.forEach((p, i) => (path = path.replace(`{${p.name}}`, encodeURIComponent(values[i]) || "x")));
    return path;
  });
  const selectArb = !m.select
    ? fc.constant<string | null>(null)
    : m.select.value.includes("{id}")
      ? fc.oneof(fc.integer({ min: 1, max: 1_000_000 }).map((id) => m.select!.value.replace("{id}", String(id))), fc.constant(m.select.value.replace("{id}", "x")))
      : fc.oneof({ weight: 9, arbitrary: fc.constant(m.select.value) }, { weight: 1, arbitrary: fc.string({ maxLength: 12 }) });
  const queryArb = fc.tuple(
    ...queryParams.map((p) =>
      fc.option(
        fc.oneof({ weight: 3, arbitrary: valid(p.schema).map((v) => (typeof v === "string" ? v : JSON.stringify(v))) }, { weight: 1, arbitrary: junk.map(String) }),
        { freq: p.required ? 10 : 2 },
      ),
    ),
  );
  const keyArb = fc.oneof(
    { weight: 8, arbitrary: fc.constant<string | null>(key) },
    { weight: 1, arbitrary: fc.constant<string | null>(null) },
    { weight: 1, arbitrary: fc.constantFrom<string | null>("lk_wrong0000000000000000000000000", "", "x") },
  );

  const content: Json = m.op.requestBody?.content ?? {};
  const jsonSchema = own(content["application/json"]?.schema, m.id);
  const formSchema = own(content["application/x-www-form-urlencoded"]?.schema, m.id);
  const limit = limitOf(m.op);
  type Body = { type: string; body: string } | null;
  const json = (v: unknown): Body => ({ type: "application/json", body: JSON.stringify(v) ?? "null" });
  const bodies: fc.Arbitrary<Body>[] = [];
  if (jsonSchema) {
    bodies.push(
      valid(jsonSchema).map(json),
      valid(jsonSchema).map(json),
      broken(jsonSchema).map(json),
      junk.map(json),
      nested.map((v) => json({ a: v })),
      fc.string({ maxLength: 30 }).map((s) => ({ type: "application/json", body: `{${s}` })),
      fc.constantFrom(limit - 64, limit + 1).map((n) => json({ junk: "a".repeat(n) })),
      fc.constant({ type: "text/plain", body: "hello" }),
    );
    if (formSchema) bodies.push(valid(formSchema).map((v) => ({ type: "application/x-www-form-urlencoded", body: formOf(v) })));
    bodies.push(fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 20 })).map((v) => ({ type: "application/x-www-form-urlencoded", body: formOf(v) })));
    if (!m.op.requestBody?.required) bodies.push(fc.constant<Body>(null));
  } else if (m.method === "POST") {
    bodies.push(fc.constant<Body>(null), junk.map(json));
  }
  const bodyArb = bodies.length ? fc.oneof(...bodies) : fc.constant<Body>(null);

  // Console operations: a manager's session (with its CSRF token), none, or a forged one.
  const console = (m.op.security ?? []).some((s: Json) => "consoleSession" in s) && !SIGNS_OUT.has(m.id);
  const sessionArb = !console
    ? fc.constant<Record<string, string>>({})
    : fc.oneof(
        { weight: 8, arbitrary: fc.constant<Record<string, string>>({ cookie: session.cookie, "x-csrf-token": session.csrf }) },
        { weight: 1, arbitrary: fc.constant<Record<string, string>>({}) },
        { weight: 1, arbitrary: fc.constantFrom<Record<string, string>>({ cookie: "leadline_session=forged" }, { cookie: session.cookie, "x-csrf-token": "wrong" }) },
      );

  return fc.record({ path: pathArb, select: selectArb, query: queryArb, key: keyArb, body: bodyArb, junkHeader: fc.boolean(), session: sessionArb }).map((r) => {
    const search = new URLSearchParams();
    if (m.select && r.select !== null) search.set(m.select.param, r.select);
    queryParams.forEach((p, i) => r.query[i] !== null && search.set(p.name, r.query[i]!));
    const headers: Record<string, string> = { ...r.session };
    if (r.key !== null) headers["x-api-key"] = r.key;
    for (const h of headerParams) headers[h.name] = r.junkHeader ? "junk" : "";
    if (r.body) headers["content-type"] = r.body.type;
    const qs = search.toString();
    return { url: `${app.base}${r.path}${qs ? `?${qs}` : ""}`, method: m.method, headers, body: r.body?.body };
  });
}

// --- the run ---------------------------------------------------------------------------------

describe("fuzzing every operation of /openapi.json", () => {
  test("every operation and member: documented answers, no 5xx but the intake's 500", async () => {
    const all = members();
    expect(all.length).toBeGreaterThan(20);
    const seen: string[] = [];
    // Members that answered a success at least once: the valid inputs are valid, not all refused.
    const succeeded = new Set<string>();
    for (const m of all) {
      seen.push(m.id);
      await fc.assert(
        fc.asyncProperty(requests(m), async (r) => {
          // The preload throws on an answer that does not match the document. Redirects are not
          // followed: a 303 is the operation's own answer (the console's, to its sign-in page).
          const res = await fetch(r.url, { method: r.method, headers: r.headers, body: r.body, redirect: "manual" });
          // An event stream (the inbox's) never ends: its answer is its head; the tab closes it.
          if ((res.headers.get("content-type") ?? "").startsWith("text/event-stream")) await res.body?.cancel();
          else await res.arrayBuffer();
          // A console form's success is a 303 on to its page (not to the sign-in page).
          const done = res.status === 303 && !(res.headers.get("location") ?? "").startsWith("/console/login");
          if (res.status < 300 || done) succeeded.add(m.id);
          const allowed = res.status === 500 && m.path === INTAKE;
          if (res.status >= 500 && !allowed) throw new Error(`${m.id}: ${r.method} ${r.url} answered ${res.status}`);
        }),
        { seed: SEED, numRuns: RUNS, endOnFailure: true },
      );
    }
    expect(seen).toContain("getLead");
    // Of the members that take no id (a random id names nothing), most answered a success.
    const idFree = all.filter((m) => !m.path.includes("{") && !m.select?.value.includes("{id}")).map((m) => m.id);
    const ok = idFree.filter((id) => succeeded.has(id));
    expect(ok.length, ok.join(", ")).toBeGreaterThan(idFree.length / 2);
  }, 120_000);

  test("the server is healthy afterwards: /readyz is 200 and a lead is served", async () => {
    const ready = await fetch(`${app.base}/readyz`);
    expect(ready.status).toBe(200);
    const id = await makeLead(db.sql, { phone: "5125550199", first: "Fuzz" });
    const res = await fetch(`${app.base}/hooks/api_v1.php?r=leads/${id}`, { headers: { "x-api-key": key } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Json;
    expect(body.ok).toBe(true);
  });
});
