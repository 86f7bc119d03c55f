// Console pages are server-rendered HTML: an `html` template that escapes every value it is given
// (only `Html` values, built by this template or `raw`, pass as markup), and the one layout every
// page shares. No inline script or style anywhere: the CSP allows the console's own files only.
import { escapeHtml } from "../http/html";
import type { Deps } from "../http/deps";
import { POLL_HEADER } from "../http/route";
import { assetUrl } from "./assets";
import { inboxCount } from "./inbox-count";
import type { Viewer } from "./viewer";
import type { Role } from "./users";

export interface Html {
  readonly html: string;
}

class Markup implements Html {
  constructor(readonly html: string) {}
  toString() {
    return this.html;
  }
}

export const raw = (trusted: string): Html => new Markup(trusted);

function piece(v: unknown): string {
  if (v === null || v === undefined || v === false) return "";
  if (v instanceof Markup) return v.html;
  if (Array.isArray(v)) return v.map(piece).join("");
  return escapeHtml(String(v));
}

/** Markup with every interpolated value escaped, except `Html` values (and arrays of them). */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += piece(values[i]) + strings[i + 1];
  return new Markup(out);
}

/**
 * htmx under the console's CSP: no inline indicator styles, no eval, no scripts from swapped
 * content; requests to this origin only.
 */
export const HTMX_CONFIG = raw(
  `<meta name="htmx-config" content='{"includeIndicatorStyles":false,"allowEval":false,"allowScriptTags":false,"selfRequestsOnly":true,"historyCacheSize":0}'>`,
);

export const csrfField = (viewer: Viewer): Html => html`<input type="hidden" name="_csrf" value="${viewer.csrf}">`;

/** Everything loads from the console itself; nothing inline. */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  "content-type": "text/html; charset=utf-8",
  "content-security-policy": CONSOLE_CSP,
  "cache-control": "no-store",
  "referrer-policy": "same-origin",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
};

export type NavId = "today" | "inbox" | "work" | "leads" | "calls" | "dni" | "appointments" | "webhooks" | "keys" | "kpi" | "billing" | "audit" | "settings";

const ALL: readonly Role[] = ["admin", "manager", "agent"];
const MANAGERS: readonly Role[] = ["admin", "manager"];

/** The navigation, in the order of a working day; each item with the roles that see it. */
export const NAV: readonly { id: NavId; label: string; href: string; roles: readonly Role[] }[] = [
  { id: "today", label: "Today", href: "/console/today", roles: MANAGERS },
  { id: "inbox", label: "Inbox", href: "/console/inbox", roles: ALL },
  { id: "work", label: "My work", href: "/console/my-work", roles: ["manager", "agent"] },
  { id: "leads", label: "Leads", href: "/console/leads", roles: ALL },
  { id: "calls", label: "Calls", href: "/console/calls", roles: ALL },
  { id: "appointments", label: "Appointments", href: "/console/appointments", roles: ALL },
  { id: "dni", label: "Number insertion", href: "/console/dni", roles: MANAGERS },
  { id: "kpi", label: "KPIs", href: "/console/kpi", roles: MANAGERS },
  { id: "billing", label: "Billing", href: "/console/billing", roles: MANAGERS },
  { id: "webhooks", label: "Webhooks", href: "/console/webhooks", roles: MANAGERS },
  { id: "keys", label: "API keys", href: "/console/keys", roles: MANAGERS },
  { id: "audit", label: "Audit log", href: "/console/audit", roles: MANAGERS },
  { id: "settings", label: "Settings", href: "/console/settings/org", roles: MANAGERS },
];

export interface PageOptions {
  title: string;
  /** The page's <h1>, when it differs from its title (the inbox's title names the view and conversation). */
  heading?: string;
  nav: NavId | null;
  body: Html;
  status?: number;
  /** Headers besides the page's own (a 429's or 503's Retry-After). */
  headers?: Readonly<Record<string, string>>;
  /** Files of src/console/assets.ts this page loads besides console.js. */
  scripts?: readonly string[];
  /** Style sheets of src/console/assets.ts this page loads besides console.css. */
  styles?: readonly string[];
  /** What the header's search box holds (the results page's query). */
  search?: string;
  /** More of the head (the inbox's htmx configuration). */
  head?: Html;
}

/** A search longer than this is cut (a person types a few words). */
export const SEARCH_MAX = 200;

/**
 * The header's search box on every signed-in page: a plain GET form (src/console/search.ts answers
 * it). Named "Find" so it shares no words with a page's own "Search" button or "Message" box.
 */
const searchBox = (q: string): Html =>
  html`<form class="top-search" role="search" method="get" action="/console/search">
<label for="top-q" class="visually-hidden">Find anything</label>
<input id="top-q" name="q" type="search" maxlength="${SEARCH_MAX}" placeholder="Name, phone, email, words…" value="${q}" autocomplete="off">
<button type="submit" class="btn btn-quiet">Find</button>
</form>`;

const roleName = (role: Role) => (role === "admin" ? "Admin" : role === "manager" ? "Manager" : "Agent");

function navigation(viewer: Viewer, active: NavId | null, inbox: number | null): Html {
  const items = NAV.filter((n) => n.roles.includes(viewer.user.role)).map((n) => {
    const count = n.id === "inbox" && inbox ? html` <span class="count" aria-label="${inbox} open">${inbox > 999 ? "999+" : inbox}</span>` : "";
    return html`<li><a href="${n.href}" id="nav-${n.id}"${n.id === active ? raw(' aria-current="page"') : ""}>${n.label}${count}</a></li>`;
  });
  return html`<nav class="nav" aria-label="Console"><ul>${items}</ul></nav>`;
}

/** A whole page for a signed-in user: the layout, navigation and the user's menu around `body`. */
export async function consoleHtml(deps: Deps, viewer: Viewer, p: PageOptions): Promise<Response> {
  const inbox = await inboxCount(deps.sql, viewer.actor).catch(() => null);
  const u = viewer.user;
  const who = u.name || u.email;
  const scope = u.orgId === null ? "all organizations" : `org ${u.orgId}`;
  const body = html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="csrf-token" content="${viewer.csrf}">
<title>${p.title} · Leadline</title>
<link rel="icon" href="${assetUrl("icon.svg")}" type="image/svg+xml">
<link rel="stylesheet" href="${assetUrl("console.css")}">
${(p.styles ?? []).map((s) => html`<link rel="stylesheet" href="${assetUrl(s)}">`)}
<script src="${assetUrl("console.js")}" defer></script>
${(p.scripts ?? []).map((s) => html`<script src="${assetUrl(s)}" defer></script>`)}
${p.head ?? null}
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
<a class="brand" href="/console">Leadline</a>
${searchBox(p.search ?? "")}
<div class="who"><a class="who-name" href="/console/account">${who}</a> <span class="muted">${roleName(u.role)}, ${scope}</span></div>
<form method="post" action="/console/logout" class="signout">${csrfField(viewer)}<button type="submit" class="btn btn-quiet">Sign out</button></form>
</header>
<div class="frame">
${navigation(viewer, p.nav, inbox)}
<main id="main" tabindex="-1">
<h1>${p.heading ?? p.title}</h1>
${p.body}
</main>
</div>
</body>
</html>`;
  return new Response(body.html, { status: p.status ?? 200, headers: p.headers ? { ...PAGE_HEADERS, ...p.headers } : PAGE_HEADERS });
}

/** What a missing page, another organization's record and a page the role may not see all answer. */
export const notFoundPage = (deps: Deps, viewer: Viewer): Promise<Response> =>
  consoleHtml(deps, viewer, {
    title: "Not found",
    nav: null,
    status: 404,
    body: html`<p>There is nothing here, or it is not yours to see.</p><p><a href="/console/inbox">Back to the inbox</a></p>`,
  });

/** A page outside the signed-in layout (sign-in, invite): the same head, no navigation. */
export function plainPage(title: string, body: Html, status = 200, extra: Record<string, string> = {}): Response {
  const page = html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Leadline</title>
<link rel="icon" href="${assetUrl("icon.svg")}" type="image/svg+xml">
<link rel="stylesheet" href="${assetUrl("console.css")}">
<script src="${assetUrl("console.js")}" defer></script>
</head>
<body class="plain">
<main id="main" class="narrow">
<p class="brand">Leadline</p>
<h1>${title}</h1>
${body}
</main>
</body>
</html>`;
  return new Response(page.html, { status, headers: { ...PAGE_HEADERS, ...extra } });
}

export const seeOther = (location: string, headers: Record<string, string> = {}): Response =>
  new Response(null, { status: 303, headers: { location, "cache-control": "no-store", ...headers } });

export function notice(text: string, kind: "ok" | "error" = "ok"): Html {
  return html`<p class="notice notice-${kind}" role="${kind === "error" ? "alert" : "status"}">${text}</p>`;
}

/** `?done=…` of a redirect after a form (the page's query), shown once as a notice (only the texts the page offers). */
export function flash(done: string | undefined, texts: Readonly<Record<string, string>>): Html {
  return done !== undefined && Object.hasOwn(texts, done) ? notice(texts[done]!) : raw("");
}

/** On an htmx element that refreshes a page by itself: its requests are polls (src/console/sessions.ts). */
export const POLL_HEADERS = raw(`hx-headers='{"${POLL_HEADER}": "1"}'`);

/** "8:04 AM" in `zone` (newer ICU's narrow space before AM/PM made a plain one). */
export function clockTime(epochMs: number, zone: string): string {
  return new Intl.DateTimeFormat("en-US", { timeZone: zone, hour: "numeric", minute: "2-digit" }).format(epochMs).replace(/\u202f/g, " ");
}

const formats = new Map<string, Intl.DateTimeFormat>();

/** "Nov 25, 2026, 8:04 AM" in `zone` (an IANA name; UTC when the name is not one). */
export function when(at: number | Date, zone: string): string {
  let f = formats.get(zone);
  if (f === undefined) {
    try {
      f = new Intl.DateTimeFormat("en-US", { timeZone: zone, dateStyle: "medium", timeStyle: "short" });
    } catch {
      f = new Intl.DateTimeFormat("en-US", { timeZone: "UTC", dateStyle: "medium", timeStyle: "short" });
    }
    if (formats.size > 500) formats.clear();
    formats.set(zone, f);
  }
  return f.format(typeof at === "number" ? at : at.getTime());
}
