// Find anything from the console (/console/search): the header's search box is a plain GET form,
// so it works without JavaScript. The answer is the workspace search (src/search/workspace.ts):
// names without their accents, phones in full or by their last 4 to 9 digits, emails with or
// without the domain, and the words of messages and notes — the leads matched by their own fields,
// then the messages matched, each with its text around the match (the searched words highlighted)
// linking to that message in the lead's conversation. Confined to the viewer's organization in SQL
// by the service (an admin's search: every organization).
import { Type as t } from "@sinclair/typebox";
import { formatNumber } from "../dni/rules";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import type { Route } from "../http/route";
import { highlightParts } from "../search/snippet";
import { searchWorkspace, workspaceQuery, type WorkspaceHit } from "../search/workspace";
import { consoleHtml, html, SEARCH_MAX, when, type Html } from "./html";
import { pageQuery, pageSpec } from "./route";
import { viewerZone } from "./viewer-zone";

/** Leads a results page lists at most. */
export const SEARCH_SHOWN = 50;

const SearchQuery = t.Object({
  q: t.Optional(t.String({ description: "a name (accents optional), a phone (in full, or its last 4–9 digits), an email (with or without the domain), or words of a message or note" })),
});

const MATCHED = { name: "name", phone: "phone", email: "email", message: "message" } as const;

const nameOf = (h: WorkspaceHit) => h.name.trim() || formatNumber(h.phone);

/**
 * Where a found message is in its lead's conversation: the lead page's older entries whose
 * newest is that message (a cursor just after its time: the timestamp read here is whole
 * milliseconds, the stored one microseconds), at the message's own entry.
 */
export const messageHref = (leadId: number, messageId: number, at: Date) =>
  `/console/leads/${leadId}?before=${(at.getTime() + 1) * 1000}.1.0#msg-${messageId}`;

function marked(text: string, tokens: string[]): Html {
  return html`${highlightParts(text, tokens).map((p) => (p.hit ? html`<mark>${p.text}</mark>` : p.text))}`;
}

function resultsHtml(text: string, hits: WorkspaceHit[], tokens: string[], zone: string, kind: string): Html {
  if (kind === "none") return html`<p class="muted">Type a name, a phone number (or its last 4 digits), an email, or words of a message.</p>`;
  if (kind === "too_short") return html`<p class="notice notice-error" role="alert">Type at least 4 digits of a phone number.</p>`;
  const leads = hits.filter((h) => h.matched !== "message");
  const messages = hits.filter((h) => h.snippet !== null);
  return html`<p role="status" id="search-count">${hits.length === 0 ? `Nothing found for “${text}”.` : `${hits.length}${hits.length >= SEARCH_SHOWN ? "+" : ""} lead${hits.length === 1 ? "" : "s"} found for “${text}”.`}</p>
    ${leads.length === 0
      ? null
      : html`<section class="card" aria-labelledby="h-found-leads"><h2 id="h-found-leads">Leads</h2><ul class="plain search-hits" id="found-leads">${leads.map(
          (h) => html`<li><a href="/console/leads/${h.lead_id}">${nameOf(h)}</a>
            <span class="muted">${formatNumber(h.phone)}${h.email ? html` · ${h.email}` : null} · ${h.status || "new"} · matched by ${MATCHED[h.matched]}</span></li>`,
        )}</ul></section>`}
    ${messages.length === 0
      ? null
      : html`<section class="card" aria-labelledby="h-found-messages"><h2 id="h-found-messages">Messages and notes</h2><ul class="plain search-hits" id="found-messages">${messages.map((h) => {
          const s = h.snippet!;
          const what = s.channel === "note" ? "Note" : `${s.channel.toUpperCase()} ${s.direction === "in" ? "from" : "to"}`;
          return html`<li><a href="${messageHref(h.lead_id, s.message_id, s.at)}">${what} ${nameOf(h)}</a> <span class="muted">${when(s.at, zone)}</span>
            <div class="search-snippet">${marked(s.text, tokens)}</div></li>`;
        })}</ul></section>`}`;
}

export function searchRoutes(deps: Deps): Route[] {
  return [
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleSearch",
        summary: "Search the organization's leads and the text of its messages and notes",
        description:
          "`q`: a name (\"jose\" finds José), a phone in full or its last 4 to 9 digits, an email with or without its domain, or words of " +
          `messages and notes (each as a word's start). Up to ${SEARCH_SHOWN} leads: those matched by their own fields, then those matched by a message, each with the message's text around the match.`,
        method: "GET",
        path: "/console/search",
        query: pageQuery(SearchQuery),
      }),
      async ({ query }, { grant: viewer }) => {
        const text = (query.q ?? "").slice(0, SEARCH_MAX);
        const q = workspaceQuery(text);
        const [found, zone] = await Promise.all([
          searchWorkspace(deps.sql, viewer.actor, text, { limit: SEARCH_SHOWN }),
          viewerZone(deps.sql, viewer.actor.orgId),
        ]);
        const tokens = q.kind === "words" ? q.tokens : [];
        return consoleHtml(deps, viewer, {
          title: q.kind === "none" ? "Search" : `Search: ${text.trim()}`,
          heading: "Search",
          nav: null,
          styles: ["lead.css"],
          search: text,
          body: resultsHtml(text.trim(), found.hits, tokens, zone, found.query),
        });
      },
    ),
  ];
}
