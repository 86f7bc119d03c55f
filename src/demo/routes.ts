// GET /demo/dni: a page of the demo that shows number insertion working. It carries the demo
// pool's placeholder number, in text and in a tel: link, and loads /dni.js from this server, which
// puts the number leased to the visitor in its place. It answers 404 wherever the demo pool does
// not exist, so an installation provisioned from its own file never serves it.
import { createHash } from "node:crypto";
import { findPool } from "../dni/queries";
import { open, Refused } from "../http/access";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import { escapeHtml } from "../http/html";
import type { Route } from "../http/route";
import { publicSurface } from "../http/surface";
import { DEMO_POOL } from "./provision";

const STYLE =
  "body{font:18px/1.5 system-ui,sans-serif;margin:0;padding:2rem 1rem;color:#1d2430;background:#f6f7f9}" +
  "main{max-width:40rem;margin:0 auto;background:#fff;border-radius:12px;padding:1.5rem 2rem;box-shadow:0 1px 4px #0002}" +
  "h1{font-size:1.6rem;margin:0 0 1rem}.call{font-size:1.4rem}.call a{font-weight:700;color:#0b5cad;white-space:nowrap}#placeholder{white-space:nowrap}" +
  "p.note{color:#4a5565;font-size:1rem}code{background:#eef1f5;padding:0 .25em;border-radius:4px;overflow-wrap:anywhere}";

// No inline script at all; the one inline style block is allowed by its hash, nothing else. The
// empty data: icon keeps browsers from asking for a /favicon.ico that does not exist.
const HEADERS = {
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  "content-security-policy":
    `default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'sha256-${createHash("sha256").update(STYLE).digest("base64")}'; ` +
    "img-src data:; form-action 'none'; base-uri 'none'; frame-ancestors 'none'",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
};

const formatted = (d: string) => `(${d.slice(0, 3)}) ${d.slice(3, 6)}-${d.slice(6)}`;

export function demoPage(placeholder: string): string {
  const shown = escapeHtml(formatted(placeholder));
  // The explanation names the placeholder with non-breaking hyphens (U+2011), which /dni.js does
  // not take for a phone number, so that it is still the placeholder after the swap.
  const shownUnswapped = escapeHtml(`${placeholder.slice(0, 3)}\u2011${placeholder.slice(3, 6)}\u2011${placeholder.slice(6)}`);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Leadline demo: number insertion</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
</head>
<body>
<main>
<h1>Demo Roofing</h1>
<p class="call">Call us: <a id="phone" href="tel:+1${escapeHtml(placeholder)}">${shown}</a></p>
<p class="note">This page's HTML says <span id="placeholder">${shownUnswapped}</span> there: the demo pool's placeholder. The script
<code>/dni.js</code> (loaded with <code>data-pool="${DEMO_POOL}"</code>) leased a number of the pool to
your browser and put it in the text and the <code>tel:</code> link above. Reload: you keep the same
number while your lease lasts; another browser gets another one. <code>leadline dni report</code>
counts the visit.</p>
</main>
<script src="/dni.js" data-pool="${DEMO_POOL}" async></script>
</body>
</html>
`;
}

export function demoRoutes(deps: Deps): Route[] {
  // One lookup, kept: the demo pool is provisioned before the server listens, or never.
  let page: Promise<string | null> | null = null;
  const load = () =>
    (page ??= findPool(deps.sql, DEMO_POOL).then(
      (pool) => (pool === null ? null : demoPage(pool.placeholder)),
      (err) => {
        page = null; // a failed lookup is tried again by the next request
        throw err;
      },
    ));
  return [
    defineRoute(
      deps,
      {
        id: "demoDniPage",
        tag: "Demo",
        summary: "The demo's number-insertion test page",
        description: "Served only where the demo (`serve --demo`) was provisioned; 404 everywhere else.",
        method: "GET",
        path: "/demo/dni",
        access: open(),
        surface: publicSurface,
        answers: { 200: { description: "The page", contentType: "text/html; charset=utf-8" } },
        errors: ["not_found"],
        deadlineMs: null,
      },
      async () => {
        const html = await load();
        return html === null ? NOT_FOUND : new Response(html, { headers: HEADERS });
      },
    ),
  ];
}

const NOT_FOUND = Refused.of("not_found");
