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
import { makeKey, seedWorld } from "./harness/factory";

const ROOT = join(import.meta.dir, "..");
const BIN = join(ROOT, "node_modules/.bin");

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
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          target: "ES2022",
          module: "ESNext",
          moduleResolution: "Bundler",
          lib: ["ES2022", "DOM"],
          types: [],
          skipLibCheck: false,
        },
        files: ["client.ts", "api.d.ts"],
      }),
    );
    const tsc = await run([join(BIN, "tsc"), "-p", "tsconfig.json"]);
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

  // The DNI and booking routes are being declared on another branch; until they are in
  // declaredRoutes the document has no path for them, so a typed client cannot be written yet.
  test.todo("leases a DNI number (POST /hooks/dni.php?action=lease) — undeclared in this branch");
  test.todo("books a slot (POST /book/{slug} action=book) — undeclared in this branch");
});
