// A client generated from the served /openapi.json works: openapi-typescript turns the document
// into types, a small client written against those types (and nothing else of the code) passes
// the project's tsc, then runs against the server and performs intake, get lead, a send and a KPI
// batch. A document that drifted from the routes fails the typecheck or the run.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { testDatabase, type TestDatabase } from "./harness/db";
import { startApp, type TestApp } from "./harness/app";
import { poolNumbers, provisionPools } from "./harness/dni";
import { makeKey, seedWorld } from "./harness/factory";

const ROOT = join(import.meta.dir, "..");
const BIN = join(ROOT, "node_modules/.bin");
// TypeScript 7 (package.json's typescript-native), the typecheck's; `typescript` 5 stays only as
// openapi-typescript's peer, and both name their command `tsc`.
const TSC = join(ROOT, "node_modules/typescript-native/bin/tsc");

let db: TestDatabase;
let app: TestApp;
let dir: string;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  app = await startApp(db.url);
  dir = mkdtempSync(join(tmpdir(), "leadline-client-"));
});
afterAll(async () => {
  await app?.stop();
  await db?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// Written against the generated `paths` only. Query-routed answers are unions (the document's
// oneOf): the client narrows them as any consumer would.
const CLIENT = `
import type { paths } from "./api";

declare const process: { env: Record<string, string | undefined>; exit(code: number): never };

type Api = "/hooks/api_v1.php";
type JsonBody<T> = T extends { content: { "application/json": infer B } } ? B : never;
type IntakeBody = JsonBody<paths["/hooks/lead_intake.php"]["post"]["requestBody"]>;
type IntakeAnswer = JsonBody<paths["/hooks/lead_intake.php"]["post"]["responses"][200]>;
type GetAnswer = JsonBody<paths[Api]["get"]["responses"][200]>;
type PostBody = JsonBody<NonNullable<paths[Api]["post"]["requestBody"]>>;
type PostAnswer = JsonBody<paths[Api]["post"]["responses"][200]>;
type GetQuery = paths[Api]["get"]["parameters"]["query"];
type KpiBody = JsonBody<paths["/hooks/kpi_ingest.php"]["post"]["requestBody"]>;
type KpiAnswer = JsonBody<paths["/hooks/kpi_ingest.php"]["post"]["responses"][200]>;

const base = process.env.LEADLINE_BASE!;

async function request<T>(path: string, key: string, init: { method: "GET" | "POST"; json?: unknown }): Promise<{ status: number; body: T }> {
  const res = await fetch(base + path, {
    method: init.method,
    headers: { "x-api-key": key, ...(init.json === undefined ? {} : { "content-type": "application/json" }) },
    body: init.json === undefined ? undefined : JSON.stringify(init.json),
  });
  return { status: res.status, body: (await res.json()) as T };
}

const query = (q: GetQuery) => new URLSearchParams(q as Record<string, string>).toString();

async function main() {
  const intake: IntakeBody = { phone: "(555) 010-7788", list_id: 101, first_name: "Ada", source: "client" };
  const created = await request<IntakeAnswer>("/hooks/lead_intake.php", process.env.KEY_INTAKE!, { method: "POST", json: intake });
  const leadId: number = created.body.lead_id;

  const read = await request<GetAnswer>(\`/hooks/api_v1.php?\${query({ r: \`leads/\${leadId}\` })}\`, process.env.KEY_READ!, { method: "GET" });
  const lead = "lead" in read.body ? read.body.lead : null;

  const note: PostBody = { lead_id: leadId, channel: "note", body: "Called, left a voicemail", operation_id: "client-note-1" };
  const sent = await request<PostAnswer>("/hooks/api_v1.php?r=messages", process.env.KEY_SEND!, { method: "POST", json: note });

  const batch: KpiBody = { points: [{ metric_key: "client.calls", value: 3, day: "2026-11-20" }, { metric_key: "client.calls", value: 4, day: "2026-11-21" }] };
  const kpi = await request<KpiAnswer>("/hooks/kpi_ingest.php", process.env.KEY_KPI!, { method: "POST", json: batch });

  console.log(JSON.stringify({ created, lead, sent, kpi }));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
`;

// Asynchronous: the server under test runs in this process and must keep answering meanwhile.
async function run(cmd: string[], env: Record<string, string> = {}) {
  const p = Bun.spawn(cmd, { cwd: dir, env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
}

describe("a client generated from /openapi.json", () => {
  test("typechecks against the generated types and performs intake, get lead, a note send and a KPI batch", async () => {
    const res = await fetch(app.base + "/openapi.json");
    writeFileSync(join(dir, "openapi.json"), await res.text());
    const gen = await run([join(BIN, "openapi-typescript"), "openapi.json", "-o", "api.d.ts"]);
    expect(gen.err + gen.out).not.toContain("✘");
    expect(gen.code).toBe(0);

    writeFileSync(join(dir, "client.ts"), CLIENT);
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({ compilerOptions: TSC_OPTIONS, files: ["client.ts", "api.d.ts"] }),
    );
    const tsc = await run([TSC, "-p", "tsconfig.json"]);
    expect(tsc.out + tsc.err).toBe("");
    expect(tsc.code).toBe(0);

    const keys = {
      KEY_INTAKE: (await makeKey(db.sql, { scopes: ["leads:write"], org: 1 })).key,
      KEY_READ: (await makeKey(db.sql, { scopes: ["leads:read"], org: 1 })).key,
      KEY_SEND: (await makeKey(db.sql, { scopes: ["messages:write"], org: 1 })).key,
      KEY_KPI: (await makeKey(db.sql, { scopes: ["metrics:write"], org: 1 })).key,
    };
    const client = await run([process.execPath, "client.ts"], { LEADLINE_BASE: app.base, ...keys });
    expect(client.err).toBe("");
    expect(client.code).toBe(0);
    const { created, lead, sent, kpi } = JSON.parse(client.out);
    expect(created).toEqual({ status: 200, body: { ok: true, lead_id: expect.any(Number), deduped: false } });
    expect(lead).toMatchObject({ lead_id: created.body.lead_id, phone: "5550107788", first_name: "Ada" });
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({ ok: true, message_id: expect.any(Number) });
    expect(kpi).toEqual({ status: 200, body: { ok: true, upserts: 2 } });
  }, 60_000);

  test("typechecks and performs a DNI lease and a booking (slots, then book the first)", async () => {
    await provisionPools(db.sql, [{ key: "acme-site", numbers: poolNumbers(2) }]);
    const hours = { mon: [["00:00", "23:59"]], tue: [["00:00", "23:59"]], wed: [["00:00", "23:59"]], thu: [["00:00", "23:59"]], fri: [["00:00", "23:59"]], sat: [["00:00", "23:59"]], sun: [["00:00", "23:59"]] };
    await db.sql`insert into calendars (id, org_id, name, timezone, slot_minutes, capacity, min_notice_minutes, horizon_days, hours)
                 values (1, 1, 'Estimate', 'America/Chicago', 30, 1, 60, 14, ${db.sql.json(hours)})`;
    await db.sql`insert into calendar_links (slug, calendar_id) values ('acme-estimate', 1)`;
    const res = await fetch(app.base + "/openapi.json");
    writeFileSync(join(dir, "openapi.json"), await res.text());
    expect((await run([join(BIN, "openapi-typescript"), "openapi.json", "-o", "api.d.ts"])).code).toBe(0);
    writeFileSync(join(dir, "public.ts"), PUBLIC_CLIENT);
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: TSC_OPTIONS, files: ["public.ts", "api.d.ts"] }));
    const tsc = await run([TSC, "-p", "tsconfig.json"]);
    expect(tsc.out + tsc.err).toBe("");
    const client = await run([process.execPath, "public.ts"], { LEADLINE_BASE: app.base });
    expect(client.err).toBe("");
    const { lease, book } = JSON.parse(client.out);
    expect(lease).toEqual({ status: 200, body: expect.objectContaining({ ok: true, fallback: false, ttl: 1800 }) });
    expect(poolNumbers(2)).toContain(lease.body.number);
    expect(book.status).toBe(200);
    expect(book.body).toMatchObject({ ok: true, appt_id: expect.any(Number), token: expect.any(String) });
  }, 60_000);
});

const TSC_OPTIONS = {
  strict: true,
  noEmit: true,
  target: "ES2022",
  module: "ESNext",
  moduleResolution: "Bundler",
  lib: ["ES2022", "DOM"],
  types: [],
};

// The public routes' client: no key; DNI and booking are query-routed by \`action\`.
const PUBLIC_CLIENT = `
import type { paths } from "./api";

declare const process: { env: Record<string, string | undefined>; exit(code: number): never };

type JsonBody<T> = T extends { content: { "application/json": infer B } } ? B : never;
type LeaseBody = JsonBody<NonNullable<paths["/hooks/dni.php"]["post"]["requestBody"]>>;
type DniAnswer = JsonBody<paths["/hooks/dni.php"]["post"]["responses"][200]>;
type SlotsAnswer = JsonBody<paths["/book/api.php"]["get"]["responses"][200]>;
type BookBody = JsonBody<NonNullable<paths["/book/api.php"]["post"]["requestBody"]>>;
type BookAnswer = JsonBody<paths["/book/api.php"]["post"]["responses"][200]>;

const base = process.env.LEADLINE_BASE!;

async function send<T>(path: string, method: "GET" | "POST", json?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(base + path, {
    method,
    headers: json === undefined ? {} : { "content-type": "application/json" },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  return { status: res.status, body: (await res.json()) as T };
}

async function main() {
  const lease: LeaseBody = { pool: "acme-site", visitor: "v_client_1", landing: "https://acme.example/roofs" };
  const leased = await send<DniAnswer>("/hooks/dni.php?action=lease", "POST", lease);

  const slots = await send<SlotsAnswer>("/book/api.php?action=slots&slug=acme-estimate", "GET");
  // \`ok: true\` narrows the answer to the slots result (its refusals carry no slots to book).
  const first = slots.body.ok === true && slots.body.slots.length ? slots.body.slots[0] : null;
  if (!first) throw new Error("no slot offered");
  const booking: BookBody = { slug: "acme-estimate", epoch: first.epoch, name: "Ada Client", phone: "5125550142" };
  const book = await send<BookAnswer>("/book/api.php?action=book", "POST", booking);

  console.log(JSON.stringify({ lease: leased, book }));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
`;
