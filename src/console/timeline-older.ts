// Older timeline entries loaded upward in place (the lead page and the inbox's reading pane): the
// "Load older entries" link above the timeline is a plain link to the older page without
// JavaScript; with htmx (assets/older.js) reaching it or pressing it asks this route for the
// entries before the oldest shown (the keyset cursor of src/conversations/timeline.ts) and
// inserts them above, the reader's scroll position kept. The answer is a fragment: the entries as
// list items and, out of band, the next link (or the start of the conversation), so a page never
// holds an entry twice: each cursor is the oldest entry already shown.
import { Type as t } from "@sinclair/typebox";
import { cursorText, leadTimeline, parseCursor } from "../conversations/timeline";
import { AppError } from "../errors";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import { idParam, type Route } from "../http/route";
import { actorNames } from "./actor-names";
import { html, PAGE_HEADERS } from "./html";
import { TIMELINE_SHOWN, leadOr404 } from "./lead";
import { entriesHtml, olderLink, olderPageHref } from "./lead-view";
import { pageQuery, pageSpec } from "./route";

const OlderQuery = t.Object({
  before: t.Optional(t.String({ description: "the oldest entry shown (the keyset cursor `<µs>.<source>.<id>`): the answer is the entries before it" })),
});

export function olderRoutes(deps: Deps): Route[] {
  return [
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleLeadTimelineOlder",
        summary: "The lead's timeline entries older than a cursor, as an HTML fragment (the older link loads them in place)",
        description:
          `Up to ${TIMELINE_SHOWN} entries before \`before\`, oldest first, as list items, then the next older link (or the start of the ` +
          "conversation) marked `hx-swap-oob`. A missing or malformed cursor is the 404 of a missing page.",
        method: "GET",
        path: "/console/leads/{id}/timeline/older",
        params: idParam,
        query: pageQuery(OlderQuery),
      }),
      async ({ params: id, query: q }, { grant: viewer }) => {
        const before = parseCursor(q.before ?? null);
        if (before === null) throw new AppError("not_found");
        const lead = await leadOr404(deps, viewer, id);
        const timeline = await leadTimeline(deps.sql, viewer.actor.orgId, id, TIMELINE_SHOWN, null, before);
        if (!timeline) throw new AppError("not_found");
        const next = timeline.older === null ? null : cursorText(timeline.older);
        const body = html`${entriesHtml(timeline.entries, lead.timezone, await actorNames(deps.sql, timeline.entries))}${olderLink(id, next, next === null ? null : olderPageHref(id, next), true)}`;
        return new Response(body.html, { headers: PAGE_HEADERS });
      },
    ),
  ];
}
