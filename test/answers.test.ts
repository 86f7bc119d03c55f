// The preload (test/harness/answers.ts) on servers of known documents: a Leadline document's
// answers are held to it — undocumented status, schema mismatch, undocumented content type,
// undocumented method — and the error names method, URL, status and body; a member of a
// query-routed path is held to its own entry; an origin without a Leadline document is never
// checked; the test's body is left for the test to read.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";

const doc = {
  openapi: "3.1.0",
  info: { title: "Leadline", version: "t", description: "" },
  paths: {
    "/thing/{id}": {
      get: {
        operationId: "thing",
        responses: {
          "200": { description: "ok", content: { "application/json": { schema: { type: "object", required: ["ok", "n"], properties: { ok: { const: true }, n: { type: "integer" } } } } } },
          "404": { description: "page", content: { "text/html": { schema: { type: "string" } } } },
        },
      },
    },
    "/q": {
      get: {
        operationId: "qGet",
        "x-operations": [
          { operationId: "one", r: "one", summary: "", tag: "T", security: [] },
          { operationId: "two", r: "two/{id}", summary: "", tag: "T", security: [] },
        ],
        responses: {
          "200": {
            description: "",
            content: {
              "application/json": {
                schema: {
                  oneOf: [
                    { title: "one", type: "object", required: ["one"], properties: { one: { type: "string" } } },
                    { title: "two", type: "object", required: ["two"], properties: { two: { type: "integer" } } },
                  ],
                },
              },
            },
          },
        },
      },
    },
  },
  "x-unmatched": { responses: { "404": { description: "", content: { "application/json": { schema: { type: "object", properties: { error: { const: "not_found" } } } } } } } },
};

type Answer = { status: number; body: string; type: string };
let answers: Record<string, Answer> = {};
let leadline: ReturnType<typeof Bun.serve>;
let other: ReturnType<typeof Bun.serve>;
let otherHits = 0;

const serveFrom = (table: () => Record<string, Answer>, documented: boolean) => (req: Request) => {
  const url = new URL(req.url);
  if (url.pathname === "/openapi.json") {
    return documented ? Response.json(doc) : new Response("no", { status: 404 });
  }
  const a = table()[`${req.method} ${url.pathname}${url.search}`] ?? { status: 404, body: '{"error":"not_found"}', type: "application/json" };
  return new Response(a.body, { status: a.status, headers: { "content-type": a.type } });
};

beforeAll(() => {
  leadline = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: serveFrom(() => answers, true) });
  other = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: (req) => {
      otherHits++;
      return serveFrom(() => ({ "GET /thing/1": { status: 500, body: "{}", type: "application/json" } }), false)(req);
    },
  });
});
afterAll(() => {
  leadline?.stop(true);
  other?.stop(true);
});

const base = () => `http://127.0.0.1:${leadline.port}`;
const json = (status: number, value: unknown): Answer => ({ status, body: JSON.stringify(value), type: "application/json" });

describe("answers are held to the server's document", () => {
  test("a documented answer passes and its body is the test's to read", async () => {
    answers = { "GET /thing/1": json(200, { ok: true, n: 3 }) };
    const res = await fetch(`${base()}/thing/1`);
    expect(await res.json()).toEqual({ ok: true, n: 3 });
  });

  test("a schema mismatch throws, naming method, URL, status, the schema path and the body", async () => {
    answers = { "GET /thing/1": json(200, { ok: true, n: "three" }) };
    const err = await fetch(`${base()}/thing/1`).then(
      () => null,
      (e: Error) => e.message,
    );
    expect(err).toContain("GET /thing/1 → 200");
    expect(err).toContain("/n must be integer");
    expect(err).toContain("#/properties/n/type");
    expect(err).toContain('"three"');
  });

  test("an undocumented status, an undocumented content type and an undocumented method throw", async () => {
    answers = {
      "GET /thing/2": json(201, { ok: true, n: 1 }),
      "GET /thing/3": { status: 404, body: "{}", type: "application/json" },
      "POST /thing/4": json(405, { error: "method_not_allowed" }),
    };
    await expect(fetch(`${base()}/thing/2`)).rejects.toThrow("status 201 is not documented for thing");
    await expect(fetch(`${base()}/thing/3`)).rejects.toThrow('a JSON body where thing documents text/html');
    await expect(fetch(`${base()}/thing/4`, { method: "POST" })).rejects.toThrow("status 405 is not documented for other methods of /thing/{id}");
    // The document's x-unmatched answer is accepted for a path it does not list.
    answers = {};
    expect((await fetch(`${base()}/nowhere`)).status).toBe(404);
  });

  test("a query-routed member is held to its own entry of the oneOf", async () => {
    answers = { "GET /q?r=two/7": json(200, { one: "x" }), "GET /q?r=one": json(200, { one: "x" }) };
    expect((await fetch(`${base()}/q?r=one`)).status).toBe(200);
    await expect(fetch(`${base()}/q?r=two/7`)).rejects.toThrow("schema mismatch for qGet (two)");
  });

  test("an origin without a Leadline document is asked once and never checked", async () => {
    const url = `http://127.0.0.1:${other.port}/thing/1`;
    expect((await fetch(url)).status).toBe(500);
    expect((await fetch(url)).status).toBe(500);
    expect(otherHits).toBe(3);
  });
});
