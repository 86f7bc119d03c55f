// GET and POST /unsubscribe/{token}: an email's one-click unsubscribe link (RFC 8058; the rules are
// in unsubscribe.ts). A mail client POSTs `List-Unsubscribe=One-Click` to it; a person who opens
// the link gets a page whose button makes the same POST. A GET changes nothing. Public: the token
// is the capability, checked (an HMAC) before anything is read, and a POST repeated changes nothing,
// so there is nothing to count per address.
import { createHash } from "node:crypto";
import { Type as t } from "@sinclair/typebox";
import { statusOf } from "../errors";
import { open } from "../http/access";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import { escapeHtml } from "../http/html";
import { errorResponse } from "../http/respond";
import { type Input, type Route, textParam } from "../http/route";
import type { SurfaceRender } from "../http/surface";
import { log, errorFields } from "../log";
import { unsubscribe, unsubscribeTarget } from "./unsubscribe";

const STYLE =
  "body{font:18px/1.5 system-ui,sans-serif;margin:0;padding:2rem 1rem;color:#1d2430;background:#f6f7f9}" +
  "main{max-width:34rem;margin:0 auto;background:#fff;border-radius:12px;padding:1.5rem 2rem;box-shadow:0 1px 4px #0002}" +
  "h1{font-size:1.5rem;margin:0 0 1rem}button{font:inherit;padding:.5rem 1.25rem;border-radius:8px;border:1px solid #0b5cad;" +
  "background:#0b5cad;color:#fff;cursor:pointer}button:focus-visible{outline:3px solid #f59e0b;outline-offset:2px}p.note{color:#4a5565;font-size:1rem}";

// No script at all; the inline style block by its hash. The form posts to this same address. No
// referrer: the address holds the token.
const HEADERS = {
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  "content-security-policy":
    `default-src 'none'; style-src 'sha256-${createHash("sha256").update(STYLE).digest("base64")}'; ` +
    "img-src data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "x-robots-tag": "noindex",
};

/** A POST body is one short form field; anything longer is not a mail client's one-click. */
const BODY_LIMIT = 4 * 1024;

function page(title: string, body: string, status = 200): Response {
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
</head>
<body>
<main>
<h1>${escapeHtml(title)}</h1>
${body}
</main>
</body>
</html>
`;
  return new Response(html, { status, headers: HEADERS });
}

const notOurs = () =>
  page("This link does not work", "<p>This unsubscribe link is not valid. Use the link in the most recent email you received.</p>", 404);

/** The confirm page a GET shows: a form whose button makes the one-click POST. */
export const confirmPage = (company: string) =>
  page(
    "Unsubscribe",
    `<p>Stop emails from ${escapeHtml(company)} to this address?</p>
<form method="post">
<input type="hidden" name="List-Unsubscribe" value="One-Click">
<button type="submit">Unsubscribe</button>
</form>
<p class="note">Nothing changes until you press the button.</p>`,
  );

export const donePage = (company: string) =>
  page("You are unsubscribed", `<p>${escapeHtml(company)} will not email this address again.</p>`);

/**
 * The page's surface: a link that is not ours its 404 page, a body it could not read "try again",
 * a failure (the database away: 503) "try again later", logged when it is not an outage.
 */
const PAGES: SurfaceRender = {
  name: "public",
  pages: true,
  refuse: (code) => {
    if (code === "not_found") return notOurs();
    if (code === "body_too_large" || code === "body_timeout") return page("Try again", "<p>That request was not an unsubscribe.</p>", statusOf(code, "public"));
    return page("Try again later", "<p>Your request could not be handled just now. Try the link again in a few minutes.</p>", statusOf(code, "public"));
  },
  error: (err) => {
    const answer = errorResponse(err, "public");
    if (answer.status < 500) log.warn("unsubscribe failed", errorFields(err));
    return page("Try again later", "<p>Your request could not be handled just now. Try the link again in a few minutes.</p>", answer.status);
  },
  value: () => notOurs(),
};

const TAG = "Email unsubscribe";
const HTML = "text/html; charset=utf-8";
const tokenParam = textParam("token");

export function unsubscribeRoutes(deps: Deps): Route[] {
  const key = deps.unsubscribeKey;
  const answers404 = { 404: { description: "Not a link of ours (or its message is gone): a page", contentType: HTML } };
  return [
    defineRoute(
      deps,
      {
        id: "unsubscribePage",
        tag: TAG,
        summary: "The page of an email's unsubscribe link",
        description: "Shows who the emails come from and a button that makes the one-click POST. Changes nothing (mail scanners fetch links).",
        method: "GET",
        path: "/unsubscribe/{token}",
        params: tokenParam,
        access: open(),
        surface: PAGES,
        answers: {
          200: { description: "The confirm page", contentType: HTML },
          ...answers404,
          503: { description: "The database did not answer", contentType: HTML },
        },
      },
      async ({ params: token }) => {
        const target = await unsubscribeTarget(deps.sql, key, token);
        return target === null ? notOurs() : confirmPage(target.company);
      },
    ),
    defineRoute(
      deps,
      {
        id: "unsubscribeOneClick",
        tag: TAG,
        summary: "One-click unsubscribe (RFC 8058)",
        description:
          "The address the email went to opts out of its organization's email (every lead of the organization on it: consent `out`, " +
          "source `unsubscribe_link`); later sends to it are refused `opted_out`. Repeating it changes nothing. The body " +
          "(`List-Unsubscribe=One-Click`) is not required: the signed link is what authorizes it.",
        method: "POST",
        path: "/unsubscribe/{token}",
        params: tokenParam,
        access: open(),
        surface: PAGES,
        body: {
          input: { schema: t.Object({ "List-Unsubscribe": t.Optional(t.Literal("One-Click")) }, { additionalProperties: true }), read: () => undefined },
          limit: BODY_LIMIT,
          form: true,
          malformed: "absent",
        },
        answers: {
          200: { description: "Unsubscribed: a page saying so", contentType: HTML },
          ...answers404,
          408: { description: "The body did not arrive in time", contentType: HTML },
          413: { description: "A body over 4 KiB", contentType: HTML },
          503: { description: "The database did not answer", contentType: HTML },
        },
      },
      async ({ params: token }) => {
        const target = await unsubscribe(deps.sql, key, token, deps.clock.now());
        return target === null ? notOurs() : donePage(target.company);
      },
    ),
  ];
}
