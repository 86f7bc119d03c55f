// Preloaded into every test file (bunfig.toml): every answer a test receives from a Leadline server
// is checked against that server's own /openapi.json — its status must be documented for the
// operation (for a query-routed path, for the member its `r`/`action` selects), a JSON body must
// validate against that status's schema, any other body must have a documented content type. A
// mismatch makes the awaited fetch throw, so the test that received it fails: the document cannot
// drift from the code unnoticed.
//
// An origin is asked for /openapi.json once (with the original fetch); one that does not serve a
// Leadline document (fake Twilio, webhook receivers, plain pages) is never checked. Requests the
// service itself makes while running in the test process (webhook deliveries, provider calls) are
// not answers a test receives: they are neither probed nor checked.
import Ajv2020, { type ValidateFunction } from "ajv/dist/2020";

type Json = Record<string, any>;

const original = globalThis.fetch;
const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);
const SRC = `${import.meta.dir.replace(/\/test\/harness$/, "")}/src/`;

interface Doc {
  doc: Json;
  /** [regex, template] of every path, exact ones first. */
  paths: { re: RegExp; path: string }[];
  ajv: Ajv2020;
  compiled: WeakMap<object, ValidateFunction>;
}

/** Per origin: its document, or null when it serves none (then never checked). */
const origins = new Map<string, Promise<Doc | null>>();
/** Per document text: parsed and compiled once, however many test apps serve it. */
const byText = new Map<string, Doc>();

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

function docOf(text: string): Doc | null {
  const cached = byText.get(text);
  if (cached) return cached;
  let doc: Json;
  try {
    doc = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof doc?.openapi !== "string" || doc.info?.title !== "Leadline" || typeof doc.paths !== "object") return null;
  const paths = Object.keys(doc.paths)
    .sort((a, b) => Number(a.includes("{")) - Number(b.includes("{")))
    // Elysia's router takes a path with a trailing slash as the path (`/book/x/` is bookingPage's 308).
    .map((path) => ({ path, re: new RegExp(`^${path.split(/\{[^}]+\}/).map(escape).join("[^/]+")}/?$`) }));
  // The document's schemas are JSON Schema 2020-12 (OpenAPI 3.1); unknown keywords such as
  // `examples` are annotations, formats are not what this check is about.
  const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: false, addUsedSchema: false });
  const entry = { doc, paths, ajv, compiled: new WeakMap<object, ValidateFunction>() };
  byText.set(text, entry);
  return entry;
}

async function probe(origin: string): Promise<Doc | null> {
  const res = await original(`${origin}/openapi.json`, { headers: { "accept-encoding": "identity" } });
  const text = await res.text();
  return res.status === 200 ? docOf(text) : null;
}

function documentOf(origin: string): Promise<Doc | null> {
  let p = origins.get(origin);
  if (!p) {
    p = probe(origin);
    origins.set(origin, p);
    // A server that did not answer (stopping, gone) is asked again next time, never judged.
    p.catch(() => origins.delete(origin));
  }
  return p;
}

/** The member of a query-routed operation its selecting parameter's value names, if any. */
function memberOf(op: Json, url: URL): Json | undefined {
  const members = op["x-operations"] as Json[] | undefined;
  if (!members?.length) return undefined;
  const param = Object.keys(members[0]).find((k) => !["operationId", "summary", "tag", "security"].includes(k))!;
  const value = url.searchParams.get(param);
  if (value === null) return undefined;
  return members.find((m) => {
    const v = String(m[param]);
    return v.includes("{id}") ? new RegExp(`^${escape(v).replace("\\{id\\}", "[0-9]{1,15}")}$`).test(value) : v === value;
  });
}

/**
 * The schema a member's JSON answer of this status must match: its own entry, or the status's
 * error entry (a member's own answer may list its errors too, so either may match: anyOf).
 */
function memberSchema(schema: Json, member: Json | undefined): Json | null {
  if (!member || !Array.isArray(schema.oneOf)) return schema;
  const own = schema.oneOf.filter((s: Json) => s.title === member.operationId || /^Error \d+$/.test(s.title ?? ""));
  if (!own.length) return null;
  return own.length === 1 ? own[0] : { anyOf: own };
}

/** The body as text, gunzipped when the test asked for it raw (`decompress: false`). */
async function bodyText(res: Response): Promise<string> {
  const bytes = new Uint8Array(await res.clone().arrayBuffer());
  const gzipped = bytes[0] === 0x1f && bytes[1] === 0x8b && /gzip/i.test(res.headers.get("content-encoding") ?? "");
  return new TextDecoder().decode(gzipped ? Bun.gunzipSync(bytes) : bytes);
}

function fail(method: string, url: string, status: number, what: string, body = ""): never {
  const excerpt = body.length > 400 ? `${body.slice(0, 400)}…` : body;
  throw new Error(`answer does not match /openapi.json: ${method} ${url} → ${status}: ${what}${excerpt ? `\n  body: ${excerpt}` : ""}`);
}

const baseType = (contentType: string | null) => (contentType ?? "").split(";")[0].trim().toLowerCase();

async function check(entry: Doc, method: string, url: URL, res: Response): Promise<void> {
  const where = url.pathname + url.search;
  const item = entry.paths.find((p) => p.re.test(url.pathname));
  const op: Json | undefined = item && entry.doc.paths[item.path][method.toLowerCase()];
  const status = res.status;
  let responses: Json;
  let member: Json | undefined;
  let name: string;
  if (op) {
    responses = op.responses;
    member = memberOf(op, url);
    name = member ? `${op.operationId} (${member.operationId})` : op.operationId;
  } else {
    // Neither a documented path nor a documented method on one: what the document says of those.
    const other = (item && entry.doc.paths[item.path]["x-other-methods"]) ?? entry.doc["x-unmatched"];
    if (!other) fail(method, where, status, `no operation documents ${method} ${item?.path ?? url.pathname}`);
    responses = other.responses;
    name = item ? `other methods of ${item.path}` : "unmatched requests";
  }
  const answer: Json | undefined = responses[String(status)];
  if (!answer) fail(method, where, status, `status ${status} is not documented for ${name}`);
  const type = baseType(res.headers.get("content-type"));
  const content: Json = answer.content ?? {};
  // An event stream lasts as long as its reader: its type is checked, its body is the test's to read.
  if (type === "text/event-stream") {
    if (!content[type]) fail(method, where, status, `content type "${type}" where ${name} documents ${Object.keys(content).join(", ") || "no body"}`);
    return;
  }
  const text = method === "HEAD" || status === 204 || status === 304 ? "" : await bodyText(res);
  if (!text) return;
  if (type === "application/json") {
    const doc = content["application/json"];
    if (!doc) fail(method, where, status, `a JSON body where ${name} documents ${Object.keys(content).join(", ") || "none"}`, text);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      fail(method, where, status, "the body is not JSON", text);
    }
    const schema = memberSchema(doc.schema, member);
    if (!schema) fail(method, where, status, `status ${status} is not documented for ${name}`, text);
    let validate = entry.compiled.get(schema);
    if (!validate) entry.compiled.set(schema, (validate = entry.ajv.compile(schema)));
    if (!validate(body)) {
      const errors = (validate.errors ?? []).slice(0, 3).map((e) => `${e.instancePath || "/"} ${e.message} (${e.schemaPath})`);
      fail(method, where, status, `schema mismatch for ${name}: ${errors.join("; ")}`, text);
    }
    return;
  }
  if (!content[type]) fail(method, where, status, `content type "${type}" where ${name} documents ${Object.keys(content).join(", ") || "no body"}`, text);
}

function targetOf(input: string | Request | URL, init?: RequestInit): { method: string; url: URL } | null {
  let url: URL;
  try {
    url = new URL(input instanceof Request ? input.url : String(input));
  } catch {
    return null;
  }
  const method = (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
  return { method, url };
}

/** The service's own outbound requests, made from src/ in the test process, are not a test's. */
function fromService(): boolean {
  const stack = new Error().stack ?? "";
  const caller = stack.split("\n").slice(1).find((line) => !line.includes(import.meta.path)) ?? "";
  return caller.includes(SRC);
}

const checked = async function fetch(input: string | Request | URL, init?: RequestInit): Promise<Response> {
  const target = targetOf(input, init);
  const own = target && (target.url.protocol === "http:" || target.url.protocol === "https:") && LOOPBACK.has(target.url.hostname) && !fromService();
  const res = await original(input as any, init);
  if (!own || !target) return res;
  let entry: Doc | null;
  try {
    entry = await documentOf(target.url.origin);
  } catch {
    return res;
  }
  if (entry) await check(entry, target.method, target.url, res);
  return res;
};

globalThis.fetch = Object.assign(checked, { preconnect: original.preconnect }) as typeof fetch;
