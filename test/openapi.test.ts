// GET /openapi.json: the served document is valid OpenAPI 3.1 (an independent, maintained
// validator), documents every declared route with its scope and errors, the query-routed api_v1
// path as one operation per method with r's values, and every outbound event as a webhook.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import { testDatabase, type TestDatabase } from "./harness/db";
import { call, startApp, type TestApp } from "./harness/app";
import { declaredRoutes } from "../src/app/app";
import { statusOf } from "../src/errors";
import { EVENT_DATA } from "../src/events/model";
import { EVENT_TYPES } from "../src/events/types";
import { openApiDocument, surfaceOf } from "../src/http/openapi";
import { Type as t } from "@sinclair/typebox";

let db: TestDatabase;
let app: TestApp;
let doc: any;

beforeAll(async () => {
  db = await testDatabase();
  app = await startApp(db.url);
  const r = await call(app.base, "/openapi.json");
  expect(r.status).toBe(200);
  doc = r.body;
});
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

const routes = () => declaredRoutes(app.running.deps);

describe("the served document", () => {
  test("is valid OpenAPI 3.1", async () => {
    const validator = new Validator();
    const res = await validator.validate(structuredClone(doc));
    expect(res.errors ?? []).toEqual([]);
    expect(res.valid).toBe(true);
    expect(validator.version).toBe("3.1");
  });

  test("is public, CORS-open and cacheable, compressed for clients that take gzip", async () => {
    const r = await fetch(app.base + "/openapi.json", { headers: { "accept-encoding": "gzip" } });
    expect(r.headers.get("content-type")).toStartWith("application/json");
    expect(r.headers.get("access-control-allow-origin")).toBe("*");
    expect(r.headers.get("cache-control")).toBe("public, max-age=300");
    expect(r.headers.get("content-encoding")).toBe("gzip");
    const etag = r.headers.get("etag")!;
    expect(etag).toBeTruthy();
    await r.arrayBuffer();
    const again = await fetch(app.base + "/openapi.json", { headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
  });

  test("documents every declared route: its path and method, its scope, every error code at its status", () => {
    for (const route of routes()) {
      const op = doc.paths[route.path]?.[route.method.toLowerCase()];
      expect(op, `${route.method} ${route.path}`).toBeDefined();
      const ids = op["x-operations"] ? op["x-operations"].map((o: any) => o.operationId) : [op.operationId];
      expect(ids).toContain(route.id);
      if (route.access.kind === "key") expect(op.security).toContainEqual({ apiKey: [route.access.scope] });
      else if (route.access.kind === "session") expect(op.security).toEqual([{ consoleSession: [] }]);
      else if (route.access.kind === "basic") expect(op.security).toEqual([{ basicAuth: [] }]);
      else expect(op.security).toEqual([]);
      // The console's own refreshes say so (src/console/sessions.ts): a header of every console operation, of no other.
      const poll = (op.parameters ?? []).find((p: any) => p.name === "x-leadline-poll");
      if (route.access.kind === "session") expect(poll, route.id).toMatchObject({ in: "header", required: false, schema: { const: "1" } });
      else expect(poll, route.id).toBeUndefined();
      for (const code of route.errors) {
        const status = String(statusOf(code, surfaceOf(route)));
        const alts = op.responses[status]?.content["application/json"].schema;
        const errorSchema = (alts.oneOf ?? [alts]).find((s: any) => s.properties?.ok?.const === false);
        expect(errorSchema?.properties.error.enum, `${route.id} ${code} at ${status}`).toContain(code);
      }
      for (const status of Object.keys(route.answers)) expect(op.responses[status]).toBeDefined();
    }
  });

  test("key routes name the X-Api-Key scheme; public routes need nothing and say so", () => {
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: "apiKey", in: "header", name: "X-Api-Key" });
    expect(doc.paths["/hooks/lead_intake.php"].post.security).toEqual([{ apiKey: ["leads:write"] }]);
    expect(doc.paths["/hooks/kpi_ingest.php"].post.security).toEqual([{ apiKey: ["metrics:write"] }]);
    expect(doc.paths["/hooks/calls.php"].post.security).toEqual([{ apiKey: ["calls:write"] }]);
    expect(doc.paths["/openapi.json"].get.security).toEqual([]);
    expect(doc.paths["/openapi.json"].get.description).toContain("CORS");
    expect(doc.paths["/hooks/lead_intake.php"].post.description).toContain("120 per hour");
  });

  test("the api_v1 GET is one operation: r's values (the {id} form explained), each member's answer titled, scopes OR-ed", () => {
    const op = doc.paths["/hooks/api_v1.php"].get;
    const r = op.parameters.find((p: any) => p.name === "r");
    expect(r).toMatchObject({ in: "query", required: true });
    const pattern = new RegExp(r.schema.pattern);
    for (const ok of ["leads/42", "conversations/7", "cti/lookup"]) expect(pattern.test(ok), ok).toBe(true);
    for (const bad of ["leads/", "leads/x", "cti/dial", "messages", "leads/1234567890123456"]) expect(pattern.test(bad), bad).toBe(false);
    expect(r.description).toContain("`leads/{id}`");
    expect(r.description).toContain("numeric id");
    expect(op["x-operations"].map((o: any) => o.r).sort()).toEqual(["conversations/{id}", "cti/lookup", "leads/{id}"]);
    for (const id of ["getLead", "lookupCaller"]) expect(op.description).toContain(id);
    const titles = op.responses["200"].content["application/json"].schema.oneOf.map((s: any) => s.title);
    expect(titles).toEqual(expect.arrayContaining(["getLead", "lookupCaller"]));
    expect(op.security).toEqual(expect.arrayContaining([{ apiKey: ["leads:read"] }, { apiKey: ["cti"] }]));
    expect(op.responses["404"].content["application/json"].schema.properties.error.enum).toContain("not_found");
    const phone = op.parameters.find((p: any) => p.name === "phone");
    expect(phone).toMatchObject({ in: "query", required: false });
    expect(phone.description).toContain("r=cti/lookup");

    const post = doc.paths["/hooks/api_v1.php"].post;
    expect(post.parameters.find((p: any) => p.name === "r").schema.enum.sort()).toEqual(["cti/dial", "messages"]);
    const body = post.requestBody.content;
    expect(body["application/json"].schema.oneOf.map((s: any) => s.title).sort()).toEqual(["queueDial", "sendMessage"].sort());
    expect(body["application/x-www-form-urlencoded"]).toBeDefined();
    expect(post.responses["402"]).toBeDefined();
  });

  test("what is answered outside the operations is documented: x-unmatched, each path's x-other-methods, unknown selector values, 304", () => {
    expect(doc["x-unmatched"].responses["404"].content["application/json"].schema.properties.error.enum).toEqual(["not_found"]);
    for (const path of ["/hooks/dni.php", "/book/api.php", "/hooks/sms_status.php", "/hooks/sms_inbound.php"]) {
      const other = doc.paths[path]["x-other-methods"];
      expect(other.responses["405"].content["application/json"].schema.properties.error.enum, path).toEqual(["method_not_allowed"]);
    }
    expect(doc.paths["/hooks/api_v1.php"]["x-other-methods"].responses["404"]).toBeDefined();
    expect(doc.paths["/hooks/lead_intake.php"]["x-other-methods"]).toBeUndefined();
    const dni = doc.paths["/hooks/dni.php"].post.responses["400"].content["application/json"].schema;
    expect((dni.oneOf ?? [dni]).find((s: any) => s.title === "Error 400").properties.error.enum).toContain("unknown_action");
    expect(doc.paths["/openapi.json"].get.responses["304"]).toBeDefined();
    expect(doc.paths["/docs"].get.responses["304"]).toBeDefined();
    expect(Object.keys(doc.paths["/book/_/{name}"].get.responses["200"].content).sort()).toEqual(["image/svg+xml", "text/css", "text/javascript"]);
    const signature = doc.paths["/hooks/sms_status.php"].post.parameters.find((p: any) => p.in === "header");
    expect(signature.name).toBe("X-Twilio-Signature");
  });

  test("the webhooks section has every event type, its envelope from EVENT_DATA, and the signature headers", () => {
    expect(Object.keys(doc.webhooks).sort()).toEqual([...EVENT_TYPES].sort());
    for (const type of EVENT_TYPES) {
      const post = doc.webhooks[type].post;
      const schema = post.requestBody.content["application/json"].schema;
      expect(schema.properties.type).toEqual({ const: type, type: "string" });
      expect(schema.required.sort()).toEqual(["data", "timestamp", "type"]);
      expect(schema.properties.data).toEqual(JSON.parse(JSON.stringify(EVENT_DATA[type])));
      expect(post.parameters.map((p: any) => [p.name, p.in, p.required])).toEqual([
        ["webhook-id", "header", true],
        ["webhook-timestamp", "header", true],
        ["webhook-signature", "header", true],
      ]);
    }
  });
});

describe("openApiDocument", () => {
  const base = { tag: "T", summary: "s", answers: { 200: { description: "ok", schema: t.Object({ ok: t.Literal(true) }) } }, errors: [] as const };
  const info = { title: "x", version: "1", description: "d" };

  test("a method and path declared twice, not query-routed, is refused", () => {
    const a = { ...base, id: "a", method: "GET" as const, path: "/x", access: { kind: "public" as const } };
    expect(() => openApiDocument([a, { ...a, id: "b" }], [], info)).toThrow("declared twice");
  });

  test("errors land at their surface's status: booking answers validation with 200, beside the answer", () => {
    const d = {
      ...base,
      id: "book",
      method: "POST" as const,
      path: "/b",
      surface: "booking" as const,
      access: { kind: "public" as const, cors: true, limit: "10 per hour per client address" },
      errors: ["slot_unavailable", "unknown_action"] as const,
    };
    const op = (openApiDocument([d], [], info) as any).paths["/b"].post;
    const ok = op.responses["200"].content["application/json"].schema.oneOf;
    expect(ok.map((s: any) => s.title)).toEqual(["book", "Error 200"]);
    expect(ok[1].properties.error.enum).toEqual(["slot_unavailable"]);
    expect(op.responses["400"].content["application/json"].schema.properties.error.enum).toEqual(["unknown_action"]);
    expect(op.description).toContain("Rate limit: 10 per hour per client address.");
    expect(op.description).toContain("Access-Control-Allow-Origin: *");
    expect(op.security).toEqual([]);
    // TypeBox's symbol keys do not reach the document.
    expect(Object.getOwnPropertySymbols(ok[0])).toEqual([]);
  });

  test("a provider's callback: its signature header required, no API key; a query-routed path by `action`", () => {
    const cb = { ...base, id: "smsStatus", method: "POST" as const, path: "/hooks/twilio/status", access: { kind: "provider" as const, signature: "X-Twilio-Signature" } };
    const lease = { ...base, id: "lease", method: "POST" as const, path: "/hooks/dni.php", select: { param: "action", value: "lease" }, access: { kind: "public" as const, cors: true } };
    const beat = { ...lease, id: "heartbeat", select: { param: "action", value: "heartbeat" } };
    const doc = openApiDocument([cb, lease, beat], [], info) as any;
    const op = doc.paths["/hooks/twilio/status"].post;
    expect(op.parameters).toEqual([{ name: "X-Twilio-Signature", in: "header", required: true, description: expect.any(String), schema: { type: "string" } }]);
    expect(op.security).toEqual([]);
    const dni = doc.paths["/hooks/dni.php"].post;
    expect(dni.operationId).toBe("dniPost");
    expect(dni.parameters[0]).toMatchObject({ name: "action", in: "query", required: true, schema: { type: "string", enum: ["lease", "heartbeat"] } });
    expect(dni["x-operations"].map((o: any) => o.operationId)).toEqual(["lease", "heartbeat"]);
  });

  test("a path parameter is documented as one", () => {
    const d = { ...base, id: "page", method: "GET" as const, path: "/book/{slug}", access: { kind: "public" as const } };
    const op = (openApiDocument([d], [], info) as any).paths["/book/{slug}"].get;
    expect(op.parameters).toEqual([{ name: "slug", in: "path", required: true, schema: { type: "string" } }]);
  });
});
