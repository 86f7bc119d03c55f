// The OpenAPI 3.1 document, built from the route declarations (src/http/route.ts) and the outbound
// events' declarations, once at start: a pure function, so what is documented is what is served.
// TypeBox schemas are JSON Schema already (OpenAPI 3.1's schema dialect is JSON Schema 2020-12);
// only TypeBox's symbol keys are dropped, by a JSON round trip.
//
// A query-routed path (`/hooks/api_v1.php?r=`) serves several operations under one method, which
// OpenAPI cannot tell apart: it becomes ONE operation whose selecting parameter lists its values,
// whose description lists each selected operation, and whose bodies and answers are the `oneOf`
// of the members' (each titled with its operation's id). `x-operations` carries the same list in
// a form a tool can read.
import type { TSchema } from "@sinclair/typebox";
import { statusOf, type ErrorCode, type Surface } from "../errors";
import { LIMITS } from "../limits/limits";
import { POLL_HEADER, type Declaration, type PathDeclaration } from "./route";

type Json = Record<string, unknown>;

/** One outbound event, as the document's `webhooks` section says it: what is POSTed to an endpoint. */
export interface WebhookDoc {
  /** The event type, e.g. `lead.created`: the webhook's name. */
  name: string;
  summary: string;
  description?: string;
  /** The whole body sent (the envelope with this type's data). */
  payload: TSchema;
  headers: readonly { name: string; description: string; schema: TSchema }[];
}

export interface DocumentInfo {
  title: string;
  version: string;
  description: string;
}

/** The schema without TypeBox's symbol keys (and anything else JSON cannot carry). */
const plain = (schema: TSchema): Json => JSON.parse(JSON.stringify(schema)) as Json;

/** The surface a route's errors are answered on: its own, else `key` for key routes, else `public`. */
export const surfaceOf = (d: Declaration): Surface => d.surface ?? (d.access.kind === "key" ? "key" : "public");

const NUMERIC_ID = "[0-9]{1,15}";

/** What `access` means for a caller, in words: the limit and CORS of public routes, the key's counter. */
function accessText(d: Declaration): string {
  const a = d.access;
  if (a.kind === "key") {
    const perHour = LIMITS[a.limit].perHour;
    return (
      `Requires an API key with scope \`${a.scope}\` (header \`X-Api-Key\`${d.body ? ", or `api_key` in the body" : ""})` +
      (a.agent ? " bound to an agent" : "") +
      `; counts against the key's hourly counter, refused with \`rate_limited\` past ${perHour} per hour (\`${a.limit}\`).`
    );
  }
  if (a.kind === "session") {
    return (
      `Console: requires a signed-in session (cookie \`leadline_session\`) of a ${a.roles.join(", ")}` +
      (d.method === "POST" ? "; the session's CSRF token in `X-CSRF-Token` (or the form field `_csrf`) and, when sent, an `Origin` of the console's own." : ".")
    );
  }
  if (a.kind === "basic") {
    return `Requires HTTP Basic credentials: user ${a.user}, password ${a.password}. Missing or wrong credentials are answered 401 \`unauthenticated\` with \`WWW-Authenticate: Basic realm="${a.realm}"\`. No API key.`;
  }
  if (a.kind === "provider") return `Called by the provider; requires a valid \`${a.signature}\` header${a.signedWith ? ` (signed with ${a.signedWith})` : ""}. No API key.`;
  const parts = ["Public: no API key."];
  if (a.cors) parts.push("CORS: answers carry `Access-Control-Allow-Origin: *`.");
  if (a.limit) parts.push(`Rate limit: ${a.limit}.`);
  return parts.join(" ");
}

const security = (d: Declaration): Record<string, string[]>[] =>
  d.access.kind === "key" ? [{ apiKey: [d.access.scope] }] : d.access.kind === "session" ? [{ consoleSession: [] }] : d.access.kind === "basic" ? [{ basicAuth: [] }] : [];

/** `oneOf` of several titled schemas, or the one schema itself. */
function oneOf(items: readonly { title: string; schema: Json }[]): Json {
  if (items.length === 1) return items[0].schema;
  return { oneOf: items.map(({ title, schema }) => ({ title, ...schema })) };
}

/** The error body of one status: the codes that status answers, on the routes given. */
function errorSchema(status: number, codes: readonly ErrorCode[]): Json {
  return {
    title: `Error ${status}`,
    type: "object",
    required: ["ok", "error"],
    properties: {
      ok: { const: false },
      error: { type: "string", enum: [...codes].sort() },
      message: { type: "string" },
      errors: { type: "array", description: "Per-item failures, where an operation reports them", items: {} },
    },
  };
}

function parameters(group: readonly Declaration[]): Json[] {
  const out: Json[] = [];
  const first = group[0];
  for (const name of first.path.match(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g) ?? []) {
    out.push({ name: name.slice(1, -1), in: "path", required: true, schema: { type: "string" } });
  }
  if (first.select) {
    const values = group.map((d) => d.select!.value);
    const exact = values.filter((v) => !v.includes("{id}"));
    const withId = values.filter((v) => v.includes("{id}"));
    const alternatives = [
      ...exact.map((v) => v.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")),
      ...withId.map((v) => v.replace(/[.*+?^$()|[\]\\/]/g, "\\$&").replace("\\{id\\}", NUMERIC_ID).replace("{id}", NUMERIC_ID)),
    ];
    out.push({
      name: first.select.param,
      in: "query",
      required: true,
      description:
        `Selects the operation: ${values.map((v) => `\`${v}\``).join(", ")}.` +
        (withId.length ? ` \`{id}\` stands for a numeric id (1 to 15 digits), e.g. \`${withId[0].replace("{id}", "42")}\`.` : "") +
        " Any other value is `not_found`.",
      schema: withId.length ? { type: "string", pattern: `^(${alternatives.join("|")})$` } : { type: "string", enum: exact },
      examples: Object.fromEntries(values.map((v) => [v.replace(/[^A-Za-z0-9]+/g, "_"), { value: v.replace("{id}", "42") }])),
    });
  }
  const seen = new Set<string>();
  for (const d of group) {
    const props = (d.query?.properties ?? {}) as Record<string, TSchema>;
    const required = new Set<string>((d.query?.required as string[] | undefined) ?? []);
    for (const [name, schema] of Object.entries(props)) {
      if (seen.has(name)) continue;
      seen.add(name);
      const only = first.select ? ` (\`${first.select.param}=${d.select!.value}\`)` : "";
      const s = plain(schema);
      out.push({
        name,
        in: "query",
        required: required.has(name) && !first.select,
        ...(s.description || only ? { description: `${(s.description as string) ?? ""}${only}`.trim() } : {}),
        schema: s,
      });
    }
  }
  if (first.access.kind === "session") {
    out.push({
      name: POLL_HEADER,
      in: "header",
      required: false,
      description: "`1` on a refresh the page makes by itself (the inbox's list, the timeline, Today): the session is read without extending its idle time (docs/console.md).",
      schema: { type: "string", const: "1" },
    });
  }
  if (first.access.kind === "provider") {
    out.push({ name: first.access.signature, in: "header", required: true, description: `The provider's signature of the request${first.access.signedWith ? `, with ${first.access.signedWith}` : ""}`, schema: { type: "string" } });
  }
  return out;
}

function requestBody(group: readonly Declaration[]): Json | undefined {
  const withBody = group.filter((d) => d.body);
  if (!withBody.length) return undefined;
  const json = withBody.map((d) => ({ title: d.id, schema: plain(d.body!.schema) }));
  const form = withBody.filter((d) => d.body!.form).map((d) => ({ title: d.id, schema: plain(d.body!.schema) }));
  const limits = [...new Set(withBody.map((d) => d.body!.limit))];
  return {
    required: withBody.length === group.length,
    description:
      `At most ${limits.map((b) => (b >= 1024 * 1024 ? `${b / (1024 * 1024)} MiB` : `${b / 1024} KiB`)).join(" or ")}` +
      (form.length ? "; JSON, or form data where `application/x-www-form-urlencoded` is listed." : "; JSON only."),
    content: {
      "application/json": { schema: oneOf(json) },
      ...(form.length ? { "application/x-www-form-urlencoded": { schema: oneOf(form) } } : {}),
    },
  };
}

/** `unknown`: the code a query-routed path answers for a selecting value none of its members has. */
function responses(group: readonly Declaration[], unknown?: { code: ErrorCode; surface: Surface }): Json {
  const byStatus = new Map<number, { answers: { title: string; description: string; schema?: Json; contentType?: string | readonly string[] }[]; codes: Set<ErrorCode> }>();
  const at = (status: number) => {
    let entry = byStatus.get(status);
    if (!entry) byStatus.set(status, (entry = { answers: [], codes: new Set() }));
    return entry;
  };
  for (const d of group) {
    for (const [status, answer] of Object.entries(d.answers)) {
      at(Number(status)).answers.push({
        title: d.id,
        description: answer.description,
        schema: answer.schema && plain(answer.schema),
        contentType: answer.contentType,
      });
    }
    for (const code of d.errors) at(statusOf(code, surfaceOf(d))).codes.add(code);
  }
  if (unknown) at(statusOf(unknown.code, unknown.surface)).codes.add(unknown.code);
  const out: Json = {};
  for (const [status, { answers, codes }] of [...byStatus].sort(([a], [b]) => a - b)) {
    const many = group.length > 1;
    const descriptions = answers.map((a) => (many ? `${a.title}: ${a.description}` : a.description));
    if (codes.size) descriptions.push(`Error: ${[...codes].sort().map((c) => `\`${c}\``).join(", ")}`);
    const content: Record<string, Json> = {};
    const jsonItems = answers.filter((a) => a.schema).map((a) => ({ title: a.title, schema: a.schema! }));
    if (codes.size) jsonItems.push({ title: `Error ${status}`, schema: errorSchema(status, [...codes]) });
    if (jsonItems.length) content["application/json"] = { schema: oneOf(jsonItems) };
    for (const a of answers) {
      if (a.schema || !a.contentType) continue;
      for (const type of typeof a.contentType === "string" ? [a.contentType] : a.contentType) content[type.split(";")[0].trim()] = { schema: { type: "string" } };
    }
    out[String(status)] = { description: descriptions.join(". "), ...(Object.keys(content).length ? { content } : {}) };
  }
  return out;
}

const camel = (s: string) => {
  const c = s.replace(/[^A-Za-z0-9]+([A-Za-z0-9])/g, (_, ch: string) => ch.toUpperCase()).replace(/^[^A-Za-z]+/, "");
  return c.charAt(0).toLowerCase() + c.slice(1);
};

function operation(group: readonly Declaration[], declared?: PathDeclaration): Json {
  const first = group[0];
  const select = first.select;
  // `/hooks/api_v1.php` → apiV1, `/book/api.php` → bookApi: unique per path.
  const base = first.path.replace(/^\/hooks\//, "/").replace(/\.[a-z]+$/, "");
  const tags = [...new Set(group.map((d) => d.tag))];
  const op: Json = {
    tags,
    operationId: select ? `${camel(base)}${first.method[0]}${first.method.slice(1).toLowerCase()}` : first.id,
    summary: select ? `${group.map((d) => d.summary).join("; ")} (selected by ${select.param})` : first.summary,
  };
  const access = [...new Set(group.map(accessText))];
  if (select) {
    const members = group.map((d) => `- \`${select.param}=${d.select!.value}\` — **${d.id}**: ${d.summary}. ${d.description ?? ""} ${accessText(d)}`.trim());
    op.description = `Query-routed: \`${select.param}\` selects one of these operations; each answers as listed under its id.\n\n${members.join("\n")}`;
    op["x-operations"] = group.map((d) => ({ operationId: d.id, [select.param]: d.select!.value, summary: d.summary, tag: d.tag, security: security(d) }));
  } else {
    op.description = [first.description, ...access].filter(Boolean).join("\n\n");
  }
  const params = parameters(group);
  if (params.length) op.parameters = params;
  const body = requestBody(group);
  if (body) op.requestBody = body;
  const unknown = select && declared?.select ? { code: declared.select.unknown, surface: declared.surface } : undefined;
  op.responses = responses(group, unknown);
  // Members of one query-routed path may need different scopes: any of them is listed (OR).
  const sec = group.flatMap(security);
  op.security = sec.length ? sec.filter((s, i) => sec.findIndex((o) => JSON.stringify(o) === JSON.stringify(s)) === i) : [];
  return op;
}

function webhook(w: WebhookDoc): Json {
  return {
    post: {
      operationId: `event.${w.name}`,
      tags: ["Events"],
      summary: w.summary,
      ...(w.description ? { description: w.description } : {}),
      parameters: w.headers.map((h) => ({ name: h.name, in: "header", required: true, description: h.description, schema: plain(h.schema) })),
      requestBody: { required: true, content: { "application/json": { schema: plain(w.payload) } } },
      responses: {
        "2XX": { description: "Delivered. Any other answer (or none within 15 s) is a failed attempt, retried; 410 disables the endpoint." },
      },
    },
  };
}

/** One error code's answer, as an extension's `responses` says it. */
function errorAnswer(code: ErrorCode, surface: Surface, description: string): Json {
  const status = statusOf(code, surface);
  return { [String(status)]: { description, content: { "application/json": { schema: errorSchema(status, [code]) } } } };
}

/**
 * What is answered outside the operations, which OpenAPI has no object for: `x-unmatched` (any
 * path not listed, any method a path does not list) and, on a path that answers its other methods
 * otherwise, that path's `x-other-methods`. Documented, so that every answer the server gives is.
 */
function otherAnswers(paths: Record<string, Record<string, Json>>, declared: readonly PathDeclaration[]): Json {
  for (const p of declared) {
    if (!p.otherMethods || !paths[p.path]) continue;
    const allow = p.otherMethods === "method_not_allowed" ? " (with `Allow` listing the methods above)" : "";
    paths[p.path]["x-other-methods"] = {
      description: `Any method not listed here is answered \`${p.otherMethods}\`${allow}.`,
      responses: errorAnswer(p.otherMethods, p.surface, `\`${p.otherMethods}\``),
    };
  }
  const responses = errorAnswer("not_found", "key", "`not_found`") as Record<string, { content: Record<string, Json> }>;
  // src/app/app.ts: a browser's page load under /console that nothing answers gets the console's page.
  responses["404"].content["text/html"] = { schema: { type: "string" } };
  return {
    description:
      "Any path not listed, and any method a path does not list (unless its `x-other-methods` says otherwise), is answered `not_found`;" +
      " a page load under `/console` (GET or HEAD accepting `text/html`) gets the console's Not found page instead.",
    responses,
  };
}

/** The OpenAPI 3.1 document of these routes and outbound events; `declared`: the paths' other-methods answers. */
export function openApiDocument(
  routes: readonly Declaration[],
  webhooks: readonly WebhookDoc[],
  info: DocumentInfo,
  declared: readonly PathDeclaration[] = [],
): Json {
  const groups = new Map<string, Declaration[]>();
  for (const d of routes) {
    const key = `${d.path} ${d.method}`;
    const group = groups.get(key);
    if (group && !(d.select && group[0].select)) throw new Error(`openapi: ${d.method} ${d.path} is declared twice`);
    if (group) group.push(d);
    else groups.set(key, [d]);
  }
  const paths: Record<string, Record<string, Json>> = {};
  const byPath = new Map(declared.map((p) => [p.path, p]));
  for (const group of groups.values()) (paths[group[0].path] ??= {})[group[0].method.toLowerCase()] = operation(group, byPath.get(group[0].path));
  const tags = [...new Set([...routes.map((d) => d.tag), ...(webhooks.length ? ["Events"] : [])])];
  const unmatched = otherAnswers(paths, declared);
  return {
    openapi: "3.1.0",
    info: { title: info.title, version: info.version, description: info.description },
    tags: tags.map((name) => ({ name })),
    paths,
    "x-unmatched": unmatched,
    webhooks: Object.fromEntries(webhooks.map((w) => [w.name, webhook(w)])),
    components: {
      securitySchemes: {
        apiKey: {
          type: "apiKey",
          in: "header",
          name: "X-Api-Key",
          description:
            "An API key (`lk_…`); the scope each operation needs is listed in its `security`. A JSON or form body may carry it as `api_key` instead (on routes that take a body).",
        },
        basicAuth: {
          type: "http",
          scheme: "basic",
          description: "HTTP Basic credentials of what the path names: a conversions feed's id and secret (docs/conversions.md).",
        },
        consoleSession: {
          type: "apiKey",
          in: "cookie",
          name: "leadline_session",
          description: "A console session, set by signing in at `/console/login` (docs/console.md).",
        },
      },
    },
  };
}
