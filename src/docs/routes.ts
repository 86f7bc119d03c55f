// GET /openapi.json and GET /docs, declared like every other route (src/http/route.ts) and built
// once, at start, from the declarations of every route (these two included) and of the outbound
// events. Both are public, the same for everyone, and cacheable.
import { Type as t } from "@sinclair/typebox";
import { open } from "../http/access";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import { openApiDocument, type WebhookDoc } from "../http/openapi";
import { jsonAnswer } from "../http/respond";
import type { Declaration, PathDeclaration, Route } from "../http/route";
import { publicSurface } from "../http/surface";
import { VERSION } from "../version";
import { DOCS_CSP, referencePage } from "./page";

const DESCRIPTION =
  "Leadline's HTTP API: lead intake and reads, conversations, message sends, CTI, KPI points, call reports, " +
  "number insertion (DNI), booking, provider callbacks and health. Outbound events are listed under `webhooks`.";

// A client may keep either for five minutes; a new version of the executable changes the ETag.
const CACHE = "public, max-age=300";

/** The two reference routes, documenting `routes` (every other declared route), `paths`' other methods and `webhooks`. */
export function docsRoutes(deps: Deps, routes: readonly Declaration[], webhooks: readonly WebhookDoc[], paths: readonly PathDeclaration[] = []): Route[] {
  // Answered from what is built below, once these two are declared: the document describes them too.
  let answers: { json: Uint8Array; html: string; jsonHeaders: Record<string, string>; htmlHeaders: Record<string, string> };
  const notModified = (request: Request, tag: string) => request.headers.get("if-none-match") === tag;
  const reference = [
    defineRoute(
      deps,
      {
        id: "openApiDocument",
        tag: "Reference",
        summary: "This API's OpenAPI 3.1 document",
        description: "Generated at start from the declarations of every route and outbound event. Cacheable for five minutes.",
        method: "GET",
        path: "/openapi.json",
        access: open({ kind: "public", cors: true }),
        surface: publicSurface,
        answers: {
          200: { description: "The document", schema: t.Object({ openapi: t.Literal("3.1.0") }, { additionalProperties: true }) },
          304: { description: "Not modified (If-None-Match)" },
        },
        deadlineMs: null,
      },
      (_input, { request }) =>
        notModified(request, answers.jsonHeaders.etag)
          ? new Response(null, { status: 304, headers: answers.jsonHeaders })
          : jsonAnswer(request, answers.json, answers.jsonHeaders),
    ),
    defineRoute(
      deps,
      {
        id: "apiReference",
        tag: "Reference",
        summary: "This reference, as a web page",
        description:
          "Rendered at start from the OpenAPI document; no script and nothing loaded from elsewhere " +
          "(`Content-Security-Policy: default-src 'none'`, the inline style allowed by its hash).",
        method: "GET",
        path: "/docs",
        access: open(),
        surface: publicSurface,
        answers: { 200: { description: "The page", contentType: "text/html; charset=utf-8" }, 304: { description: "Not modified (If-None-Match)" } },
        deadlineMs: null,
      },
      (_input, { request }) =>
        notModified(request, answers.htmlHeaders.etag)
          ? new Response(null, { status: 304, headers: answers.htmlHeaders })
          : new Response(answers.html, { headers: answers.htmlHeaders }),
    ),
  ];
  const info = { title: "Leadline", version: VERSION, description: DESCRIPTION };
  const document = openApiDocument([...routes, ...reference], webhooks, info, paths);
  const json = new TextEncoder().encode(JSON.stringify(document));
  const html = referencePage(document);
  const etag = (body: string | Uint8Array) => `"${Bun.hash(body).toString(36)}"`;
  answers = {
    json,
    html,
    jsonHeaders: { "cache-control": CACHE, etag: etag(json), "access-control-allow-origin": "*", "x-content-type-options": "nosniff" },
    htmlHeaders: {
      "content-type": "text/html; charset=utf-8",
      "cache-control": CACHE,
      etag: etag(html),
      "content-security-policy": DOCS_CSP,
      "referrer-policy": "no-referrer",
      "x-content-type-options": "nosniff",
    },
  };
  return reference;
}
