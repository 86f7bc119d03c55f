// GET /book/{slug}: the booking page for people, and its script, style sheet and icon. The files
// live in ./page and are embedded in the executable as text. Times, the calendar and its zone come
// from book/api.php; the one thing written in here is the business's name, which that API's
// token-less slots answer must not carry (its field set is fixed): it goes into the page as
// escaped text, never as script, so the page's CSP stays `script-src 'self'`.
import { createHash } from "node:crypto";
import { escapeHtml } from "../http/html";
import pageFile from "./page/book.html" with { type: "text" };
import messageFile from "./page/message.html" with { type: "text" };
import css from "./page/book.css" with { type: "text" };
import script from "./page/book.js" with { type: "text" };
import icon from "./page/icon.svg" with { type: "text" };

// bun-types declares every .html import an HTMLBundle; imported as text, it is the file's text.
const pageHtml = pageFile as unknown as string;
const messageHtml = messageFile as unknown as string;

/** Changes whenever any served file does: asset URLs carry it, so they can be cached for long. */
const VERSION = createHash("sha1").update(pageHtml).update(messageHtml).update(css).update(script).update(icon).digest("hex").slice(0, 12);

const stamp = (html: string) => html.replaceAll("__VERSION__", VERSION);
// Split once at the one place per-link text goes. Joined rather than replaced: a replacement
// string would give `$&`, `$'` and friends in operator data their special meaning.
const [PAGE_HEAD, PAGE_TAIL] = stamp(pageHtml).split("__BUSINESS__");
if (PAGE_TAIL === undefined || PAGE_TAIL.includes("__BUSINESS__")) throw new Error("book.html: expected __BUSINESS__ exactly once");
/** A page with one message (the texts are constants of this file, so nothing needs escaping). */
const messagePage = (mark: string, title: string, text: string) =>
  stamp(messageHtml).replaceAll("__MARK__", mark).replaceAll("__TITLE__", title).replaceAll("__TEXT__", text);

const NOT_FOUND = messagePage(
  "?",
  "We couldn&#39;t find that booking page",
  "The link may be mistyped or no longer in use. Please check the link you were sent, or contact the business that shared it for a new one.",
);
const UNAVAILABLE = messagePage(
  "!",
  "Booking is briefly unavailable",
  "We couldn&#39;t load this page just now. Please try again in a minute.",
);

// The page talks only to its own origin and loads nothing from elsewhere. The reschedule view's
// URL holds a capability token: no referrer leaves the page, and nothing of it is cached. No page
// may frame it (CSP frame-ancestors, and X-Frame-Options for browsers without CSP 2): a framing
// site could dress the booking and reschedule buttons in its own (clickjacking) and would see the
// `?r=` token in the address it framed. Businesses link to it instead of embedding it.
const PAGE_HEADERS = {
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "form-action 'none'; base-uri 'none'; frame-ancestors 'none'",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
};

const ASSETS: Record<string, { body: string; type: string }> = {
  "book.css": { body: css, type: "text/css; charset=utf-8" },
  "book.js": { body: script, type: "text/javascript; charset=utf-8" },
  "icon.svg": { body: icon, type: "image/svg+xml" },
};

/** The page for a link (its business's name, "" for none), or the friendly 404 for null. */
export function pageResponse(link: { business: string } | null): Response {
  if (!link) return new Response(NOT_FOUND, { status: 404, headers: PAGE_HEADERS });
  return new Response(PAGE_HEAD + escapeHtml(link.business) + PAGE_TAIL, { status: 200, headers: PAGE_HEADERS });
}

/** The database did not answer: a page a person can act on, with a status that says try again. */
export function unavailablePage(): Response {
  return new Response(UNAVAILABLE, { status: 503, headers: { ...PAGE_HEADERS, "retry-after": "30" } });
}

/** /book/_/{name}; null for a name that is not one of the page's files. */
export function assetResponse(name: string, version: string | null): Response | null {
  const asset = Object.hasOwn(ASSETS, name) ? ASSETS[name] : null;
  if (!asset) return null;
  return new Response(asset.body, {
    headers: {
      "content-type": asset.type,
      "cache-control": version === VERSION ? "public, max-age=31536000, immutable" : "public, max-age=300",
      "x-content-type-options": "nosniff",
    },
  });
}
