// GET and POST /unsubscribe/{token}: an email's one-click unsubscribe link (RFC 8058; the rules are
// in unsubscribe.ts). A mail client POSTs `List-Unsubscribe=One-Click` to it; a person who opens
// the link gets a page whose button makes the same POST. A GET changes nothing. Public: the token
// is the capability, checked (an HMAC) before anything is read, and a POST repeated changes nothing,
// so there is nothing to count per address.
import { createHash } from "node:crypto";
import { Type as t } from "@sinclair/typebox";
import { readBody } from "../http/body";
import type { Deps } from "../http/deps";
import { escapeHtml } from "../http/html";
import { errorResponse } from "../http/respond";
import type { Route } from "../http/route";
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

/** A database failure: the JSON error's status (503 while the database is away), as a page. */
function failure(err: unknown): Response {
  const answer = errorResponse(err, "public");
  if (answer.status < 500) log.warn("unsubscribe failed", errorFields(err));
  return page("Try again later", "<p>Your request could not be handled just now. Try the link again in a few minutes.</p>", answer.status);
}

export function unsubscribeRoutes(deps: Deps): Route[] {
  const key = deps.unsubscribeKey;
  const answers404 = { 404: { description: "Not a link of ours (or its message is gone): a page", contentType: "text/html; charset=utf-8" } };
  return [
    {
      id: "unsubscribePage",
      tag: "Email unsubscribe",
      summary: "The page of an email's unsubscribe link",
      description: "Shows who the emails come from and a button that makes the one-click POST. Changes nothing (mail scanners fetch links).",
      method: "GET",
      path: "/unsubscribe/{token}",
      access: { kind: "public" },
      answers: {
        200: { description: "The confirm page", contentType: "text/html; charset=utf-8" },
        ...answers404,
        503: { description: "The database did not answer", contentType: "text/html; charset=utf-8" },
      },
      errors: [],
      handle: async (_request, _server, { params }) => {
        try {
          const target = await unsubscribeTarget(deps.sql, key, params.token);
          return target === null ? notOurs() : confirmPage(target.company);
        } catch (err) {
          return failure(err);
        }
      },
    },
    {
      id: "unsubscribeOneClick",
      tag: "Email unsubscribe",
      summary: "One-click unsubscribe (RFC 8058)",
      description:
        "The address the email went to opts out of its organization's email (every lead of the organization on it: consent `out`, " +
        "source `unsubscribe_link`); later sends to it are refused `opted_out`. Repeating it changes nothing. The body " +
        "(`List-Unsubscribe=One-Click`) is not required: the signed link is what authorizes it.",
      method: "POST",
      path: "/unsubscribe/{token}",
      access: { kind: "public" },
      body: { schema: t.Object({ "List-Unsubscribe": t.Optional(t.Literal("One-Click")) }, { additionalProperties: true }), form: true, limit: BODY_LIMIT },
      answers: {
        200: { description: "Unsubscribed: a page saying so", contentType: "text/html; charset=utf-8" },
        ...answers404,
        408: { description: "The body did not arrive in time", contentType: "text/html; charset=utf-8" },
        413: { description: "A body over 4 KiB", contentType: "text/html; charset=utf-8" },
        503: { description: "The database did not answer", contentType: "text/html; charset=utf-8" },
      },
      errors: [],
      handle: async (request, _server, { params }) => {
        const body = await readBody(request, BODY_LIMIT, { deadlineMs: deps.config.bodyDeadlineMs });
        if (body.kind === "too_large" || body.kind === "timeout") {
          return page("Try again", "<p>That request was not an unsubscribe.</p>", body.kind === "too_large" ? 413 : 408);
        }
        try {
          const target = await unsubscribe(deps.sql, key, params.token, deps.clock.now());
          return target === null ? notOurs() : donePage(target.company);
        } catch (err) {
          return failure(err);
        }
      },
    },
  ];
}
