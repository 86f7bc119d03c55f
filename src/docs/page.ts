// The API reference page (GET /docs): server-rendered once, at start, from the same OpenAPI
// document /openapi.json serves, so the page cannot say anything the document does not. No script,
// no external assets; the one style sheet is inline and allowed by its hash in the CSP.
import { createHash } from "node:crypto";
import { escapeHtml as esc } from "../http/html";
import css from "./docs.css" with { type: "text" };

type Json = Record<string, any>;

/** `default-src 'none'`: nothing loads; the inline style is allowed by its digest only. */
export const DOCS_CSP =
  `default-src 'none'; style-src 'sha256-${createHash("sha256").update(css).digest("base64")}'; ` +
  "frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/** The few Markdown forms the declarations use: `code`, **strong**, and "- " list lines. */
const inline = (s: string) =>
  esc(s)
    .replace(/`([^`]+)`/g, "<code>$1</code>")
    .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>");

function prose(text: string | undefined): string {
  if (!text) return "";
  const out: string[] = [];
  for (const block of text.split(/\n{2,}/)) {
    const lines = block.split("\n");
    if (lines.every((l) => l.startsWith("- "))) out.push(`<ul class="desc">${lines.map((l) => `<li>${inline(l.slice(2))}</li>`).join("")}</ul>`);
    else out.push(`<p>${inline(block)}</p>`);
  }
  return out.join("");
}

const anchor = (s: string) => s.replace(/[^A-Za-z0-9_-]+/g, "-");

/** A schema's type in a few words: `integer`, `string | null`, `"a" | "b"`, `object[]`. */
function typeOf(s: Json | undefined): string {
  if (!s) return "any";
  if ("const" in s) return JSON.stringify(s.const);
  if (Array.isArray(s.enum)) return s.enum.map((v: unknown) => JSON.stringify(v)).join(" | ");
  const alts = s.anyOf ?? s.oneOf;
  if (Array.isArray(alts)) return alts.map(typeOf).join(" | ");
  if (s.type === "array") return `${typeOf(s.items)}[]`;
  if (Array.isArray(s.type)) return s.type.join(" | ");
  if (s.type) return s.type + (s.format ? ` (${s.format})` : "");
  if (s.patternProperties || s.additionalProperties) return "object";
  return "any";
}

/** A field's description, with the constraints a type name leaves out. */
function describe(s: Json | undefined, text = true): string {
  if (!s) return "";
  const own: string = text ? (s.description ?? s.title ?? "") : "";
  const notes = [own && !/[.!?)]$/.test(own) && (s.pattern || s.maxLength !== undefined) ? `${own}.` : own];
  if (s.pattern) notes.push(`Pattern: \`${s.pattern}\`.`);
  if (s.maxLength !== undefined) notes.push(`At most ${s.maxLength} characters.`);
  return notes.filter(Boolean).join(" ");
}

/** The first cell of a field's row: its name, whether required, where it goes, its type. */
const nameCell = (name: string, type: string, required: boolean, where?: string) =>
  `<td><code class="name">${esc(name)}</code>${required ? ' <span class="req">required</span>' : ""}` +
  `<br><span class="type">${where ? `${esc(where)} · ` : ""}<code>${esc(type)}</code></span></td>`;

interface Row {
  name: string;
  type: string;
  required: boolean;
  description: string;
}

/** An object schema's fields, nested objects and arrays of objects flattened (`lead.phone`, `points[].day`). */
function fields(s: Json | undefined, prefix = "", depth = 0, out: Row[] = []): Row[] {
  if (!s || depth > 3) return out;
  const alts = s.anyOf ?? s.oneOf;
  if (Array.isArray(alts) && !s.properties) {
    // A union of objects (a single item or a batch): each alternative's fields.
    for (const alt of alts) if (alt.properties || alt.items?.properties) fields(alt, prefix, depth + 1, out);
    return out;
  }
  if (s.type === "array" && s.items?.properties) return fields(s.items, `${prefix}[].`.replace(/^\[\]\./, "[]."), depth + 1, out);
  const required = new Set<string>(s.required ?? []);
  for (const [name, f] of Object.entries<Json>(s.properties ?? {})) {
    out.push({ name: prefix + name, type: typeOf(f), required: required.has(name), description: describe(f) });
    const inner = f.type === "array" ? f.items : f;
    const innerAlts: Json[] = inner?.anyOf ?? inner?.oneOf ?? [inner];
    for (const alt of innerAlts) {
      if (alt?.properties) fields(alt, `${prefix}${name}${f.type === "array" ? "[]" : ""}.`, depth + 1, out);
    }
  }
  return out;
}

function fieldTable(caption: string, s: Json | undefined): string {
  const rows = fields(s);
  if (!rows.length) return `<p class="meta">${esc(caption)}: ${esc(typeOf(s))}</p>`;
  return (
    `<div class="scroll" role="region" tabindex="0" aria-label="${esc(caption)}"><table><caption>${esc(caption)}</caption>` +
    `<thead><tr><th scope="col">Field and type</th><th scope="col">Description</th></tr></thead><tbody>` +
    rows.map((r) => `<tr>${nameCell(r.name, r.type, r.required)}<td>${prose(r.description)}</td></tr>`).join("") +
    `</tbody></table></div>`
  );
}

/** One table per alternative of a `oneOf` (each titled), else one. */
function schemaTables(label: string, s: Json | undefined): string {
  if (s && Array.isArray(s.oneOf)) return s.oneOf.map((alt: Json) => schemaTables(`${label}: ${alt.title ?? "alternative"}`, alt)).join("");
  // A union of shapes (a KPI point, a batch, a bare array): a table per shape, not one mixed table.
  const shapes = s?.anyOf as Json[] | undefined;
  if (shapes?.length && shapes.every((a) => a.properties || a.items?.properties)) {
    return shapes
      .map((alt, i) => fieldTable(`${label}, form ${i + 1} of ${shapes.length}: ${alt.title ?? (alt.type === "array" ? "an array" : "an object")}`, alt))
      .join("");
  }
  return fieldTable(label, s);
}

function parametersTable(params: Json[] | undefined, caption: string): string {
  if (!params?.length) return "";
  return (
    `<div class="scroll" role="region" tabindex="0" aria-label="${esc(caption)}"><table><caption>${esc(caption)}</caption>` +
    `<thead><tr><th scope="col">Name, place and type</th><th scope="col">Description</th></tr></thead><tbody>` +
    params
      .map((p) => `<tr>${nameCell(p.name, typeOf(p.schema), !!p.required, `in ${p.in}`)}<td>${prose([p.description ?? p.schema?.description, describe(p.schema, false)].filter(Boolean).join(" "))}</td></tr>`)
      .join("") +
    `</tbody></table></div>`
  );
}

/** Status, what it means, and the error codes it carries. */
function responsesTable(responses: Json, caption: string): string {
  const rows = Object.entries<Json>(responses).map(([status, r]) => {
    const schema = r.content?.["application/json"]?.schema as Json | undefined;
    const alts: Json[] = schema?.oneOf ?? (schema ? [schema] : []);
    const codes = alts.flatMap((a) => (a.properties?.ok?.const === false ? (a.properties.error.enum as string[]) : []));
    // The document's description ends with "Error: `code`, …"; the codes get a line of their own.
    const meaning = String(r.description).replace(/(^|\. )Error: .*$/, "").trim();
    return (
      `<tr><td><code>${esc(status)}</code></td><td>${prose(meaning)}` +
      (codes.length ? `<p class="codes">Error codes: ${codes.map((c) => `<code>${esc(c)}</code>`).join(", ")}</p>` : "") +
      `</td></tr>`
    );
  });
  return (
    `<div class="scroll" role="region" tabindex="0" aria-label="${esc(caption)}"><table class="statuses"><caption>${esc(caption)}</caption>` +
    `<thead><tr><th scope="col">Status</th><th scope="col">Meaning and error codes</th></tr></thead><tbody>${rows.join("")}</tbody></table></div>`
  );
}

function securityText(op: Json): string {
  const sec = op.security as Json[] | undefined;
  if (!sec?.length) return "None (public)";
  return sec.map((s) => `API key with scope <code>${esc(String(s.apiKey?.[0]))}</code>`).join(", or ");
}

function operationHtml(path: string, method: string, op: Json): string {
  const id = anchor(op.operationId);
  const body = op.requestBody as Json | undefined;
  const bodyHtml = body
    ? `<h4>Request body</h4><p class="meta">${inline(body.description ?? "")} Content types: ${Object.keys(body.content)
        .map((c) => `<code>${esc(c)}</code>`)
        .join(", ")}.</p>` + schemaTables(`Body of ${op.operationId}`, body.content["application/json"]?.schema)
    : "";
  const answers = Object.entries<Json>(op.responses)
    .map(([status, r]) => {
      const schema = r.content?.["application/json"]?.schema as Json | undefined;
      if (!schema) return "";
      const alts: Json[] = (schema.oneOf ?? [schema]).filter((a: Json) => a.properties?.ok?.const !== false);
      return alts.map((a) => fieldTable(`${status} answer${a.title ? `: ${a.title}` : ""}`, a)).join("");
    })
    .join("");
  return (
    `<article class="op" id="${id}" aria-labelledby="${id}-h">` +
    `<h3 id="${id}-h"><span class="method ${method}">${method.toUpperCase()}</span> <code class="path">${esc(path)}</code> <span>${inline(op.summary)}</span></h3>` +
    `<p class="meta">Operation <code>${esc(op.operationId)}</code>. Security: ${securityText(op)}.</p>` +
    prose(op.description) +
    (op.parameters?.length ? `<h4>Parameters</h4>${parametersTable(op.parameters, `Parameters of ${op.operationId}`)}` : "") +
    bodyHtml +
    `<h4>Responses</h4>${responsesTable(op.responses, `Responses of ${op.operationId}`)}` +
    answers +
    `</article>`
  );
}

function webhookHtml(name: string, w: Json): string {
  const op = w.post;
  const id = anchor(`event-${name}`);
  const payload = op.requestBody.content["application/json"].schema as Json;
  return (
    `<article class="op" id="${id}" aria-labelledby="${id}-h">` +
    `<h3 id="${id}-h"><span class="method event">EVENT</span> <code class="path">${esc(name)}</code> <span>${esc(op.summary)}</span></h3>` +
    prose(op.description) +
    `<h4>Headers</h4>${parametersTable(op.parameters, `Headers of ${name}`)}` +
    `<h4>Body</h4>${fieldTable(`Body of ${name}`, payload)}` +
    `</article>`
  );
}

interface Listed {
  tag: string;
  path: string;
  method: string;
  op: Json;
}

/**
 * The operations of a tag, as the contents list them: a query-routed operation's members each
 * under their own tag (`getLead (r=leads/{id})`), linking to the one article that documents them.
 */
function members(ops: readonly Listed[], tag: string): { label: string; target: string; home: boolean }[] {
  return ops.flatMap((o): { label: string; target: string; home: boolean }[] => {
    const selected = o.op["x-operations"] as Json[] | undefined;
    if (!selected) return o.tag === tag ? [{ label: o.op.operationId, target: o.op.operationId, home: true }] : [];
    const param = Object.keys(selected[0]).find((k) => !["operationId", "summary", "tag", "security"].includes(k))!;
    return selected
      .filter((m) => m.tag === tag)
      .map((m) => ({ label: `${m.operationId} (${param}=${m[param]})`, target: o.op.operationId, home: o.tag === tag }));
  });
}

/** In a tag's section, pointers to its operations documented in another tag's query-routed article. */
function elsewhere(ops: readonly Listed[], tag: string): string {
  const away = members(ops, tag).filter((m) => !m.home);
  if (!away.length) return "";
  return `<p>Also in this group, documented with the other operations of their path: ${away
    .map((m) => `<a href="#${anchor(m.target)}"><code>${esc(m.label)}</code></a>`)
    .join(", ")}.</p>`;
}

/** The whole page, from the document. */
export function referencePage(doc: Json): string {
  const ops: Listed[] = [];
  for (const [path, item] of Object.entries<Json>(doc.paths)) {
    // `x-other-methods` is not an operation (src/http/openapi.ts).
    for (const [method, op] of Object.entries<Json>(item)) if (!method.startsWith("x-")) ops.push({ tag: op.tags?.[0] ?? "Other", path, method, op });
  }
  const tags: string[] = (doc.tags as Json[]).map((t) => t.name).filter((t: string) => members(ops, t).length);
  const webhooks = Object.entries<Json>(doc.webhooks ?? {});
  const toc =
    `<nav class="toc" aria-labelledby="toc-h"><h2 id="toc-h">Contents</h2><ul>` +
    `<li><a href="#authentication">Authentication</a></li>` +
    tags
      .map(
        (t) =>
          `<li><a href="#tag-${anchor(t)}">${esc(t)}</a><ul>` +
          members(ops, t)
            .map((m) => `<li><a href="#${anchor(m.target)}">${esc(m.label)}</a></li>`)
            .join("") +
          `</ul></li>`,
      )
      .join("") +
    (webhooks.length ? `<li><a href="#events">Events (webhooks)</a></li>` : "") +
    `</ul></nav>`;
  const scheme = doc.components?.securitySchemes?.apiKey as Json | undefined;
  const sections =
    `<section id="authentication" aria-labelledby="authentication-h"><h2 id="authentication-h">Authentication</h2>` +
    (scheme ? `<p>Header <code>${esc(scheme.name)}</code>. ${inline(scheme.description ?? "")}</p>` : "") +
    `<p>Errors are <code>{"ok": false, "error": "code", "message"?}</code>; each operation lists its codes by status.</p></section>` +
    tags
      .map(
        (t) =>
          `<section id="tag-${anchor(t)}" aria-labelledby="tag-${anchor(t)}-h"><h2 id="tag-${anchor(t)}-h">${esc(t)}</h2>` +
          ops
            .filter((o) => o.tag === t)
            .map((o) => operationHtml(o.path, o.method, o.op))
            .join("") +
          elsewhere(ops, t) +
          `</section>`,
      )
      .join("") +
    (webhooks.length
      ? `<section id="events" aria-labelledby="events-h"><h2 id="events-h">Events (webhooks)</h2>` +
        `<p>Leadline POSTs these to the endpoints an operator registers; the signature headers are Standard Webhooks'.</p>` +
        webhooks.map(([name, w]) => webhookHtml(name, w)).join("") +
        `</section>`
      : "");
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8">` +
    `<meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<title>${esc(doc.info.title)} API reference</title><style>${css}</style></head><body>` +
    `<a class="skip" href="#main">Skip to the reference</a>` +
    `<header class="top"><h1>${esc(doc.info.title)} API reference</h1><p>Version ${esc(doc.info.version)}. ` +
    `The same as the <a href="/openapi.json">OpenAPI 3.1 document</a>.</p></header>` +
    `<div class="layout">${toc}<main id="main">${prose(doc.info.description)}${sections}</main></div>` +
    `</body></html>`
  );
}
