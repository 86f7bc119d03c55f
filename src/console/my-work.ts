// "My work" (/console/my-work, issue 29): the signed-in agent's or manager's own queue in one page —
// their dials pending or claimed, their callbacks come due and those still to come today, and the
// open conversations of their Mine view — each linking to its lead or conversation, with counts. A
// callback is marked done from here (POST /console/callbacks/{id}/done, lead-actions.ts). Read by
// myWork (src/workspace/my-work.ts), confined to the viewer's organization in SQL.
import { Type as t } from "@sinclair/typebox";
import { formatNumber } from "../dni/rules";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import type { Route } from "../http/route";
import type { Callback } from "../workspace/callbacks";
import { myWork, type MyWork } from "../workspace/my-work";
import { instantOf, wallOf } from "../zone";
import { consoleHtml, csrfField, flash, html, when, type Html } from "./html";
import { LEAD_ACTION_NOTICES } from "./lead-actions-data";
import { pageQuery, pageSpec } from "./route";
import { viewerZone } from "./viewer-zone";

const WorkQuery = t.Object({ done: t.Optional(t.String({ description: "the result of the page's last form" })) });

const DAY = 86_400_000;

/** The end of `now`'s local day in `zone` (the next local midnight). */
export function endOfDay(now: number, zone: string): number {
  const wall = wallOf(now, zone);
  return instantOf(Math.floor(wall / DAY) * DAY + DAY, zone);
}

const count = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

function callbackItem(cb: Callback & { lead: string }, zone: string, csrf: Html): Html {
  return html`<li><a href="/console/leads/${cb.lead_id}">${cb.lead}</a> <strong>${when(cb.due_at, zone)}</strong>${cb.dial ? html` <span class="badge">with a dial</span>` : null}
    ${cb.note ? html`<span class="muted">${cb.note}</span>` : null}
    <form method="post" action="/console/callbacks/${cb.id}/done" class="inline-form">${csrf}<input type="hidden" name="from" value="work">
      <button type="submit" class="btn btn-small" aria-label="Mark the callback of ${cb.lead} done">Done</button></form></li>`;
}

interface WorkPage extends Omit<MyWork, "dueCallbacks" | "nextCallbacks"> {
  due: (Callback & { lead: string })[];
  today: (Callback & { lead: string })[];
  later: number;
}

function workBody(w: WorkPage, zone: string, csrf: Html, shown: Html): Html {
  const section = (id: string, title: string, n: number, body: Html) =>
    html`<section class="card" aria-labelledby="h-${id}"><h2 id="h-${id}">${title} <span class="count">${n}</span></h2>${body}</section>`;
  const empty = (text: string) => html`<p class="empty">${text}</p>`;
  return html`${shown}
  <p id="work-counts">${count(w.due.length, "callback due", "callbacks due")} · ${count(w.today.length, "more today", "more today")} · ${count(w.dials.length, "dial", "dials")} · ${count(w.openCount, "open conversation", "open conversations")} <span class="muted">(times in ${zone})</span></p>
  ${section("due", "Callbacks due", w.due.length, w.due.length === 0 ? empty("No callback is due.") : html`<ul class="work-list" id="work-due">${w.due.map((cb) => callbackItem(cb, zone, csrf))}</ul>`)}
  ${section(
    "today",
    "Later today",
    w.today.length,
    html`${w.today.length === 0 ? empty("No other callback today.") : html`<ul class="work-list" id="work-today">${w.today.map((cb) => callbackItem(cb, zone, csrf))}</ul>`}${
      w.later > 0 ? html`<p class="muted">${count(w.later, "callback", "callbacks")} scheduled after today.</p>` : null
    }`,
  )}
  ${section(
    "dials",
    "Dials",
    w.dials.length,
    w.dials.length === 0
      ? empty("No dial waiting.")
      : html`<ul class="work-list" id="work-dials">${w.dials.map(
          (d) => html`<li>${d.lead_id === null ? formatNumber(d.phone) : html`<a href="/console/leads/${d.lead_id}">${d.name || formatNumber(d.phone)}</a>`}
            <span class="badge ${d.status === "dialing" ? "badge-warn" : ""}">${d.status === "dialing" ? "Claimed by your dialer" : "Pending"}</span>
            <span class="muted">queued ${when(d.created_at, zone)}</span></li>`,
        )}</ul>`,
  )}
  ${section(
    "convs",
    "My open conversations",
    w.openCount,
    w.conversations.length === 0
      ? empty("No open conversation is yours.")
      : html`<ul class="work-list" id="work-convs">${w.conversations.map(
          (c) => html`<li><a href="/console/inbox?open=${c.id}">${c.name || formatNumber(c.phone)}</a>
            <span class="muted">${c.snippet}</span>${c.callback_due ? html` <span class="badge badge-warn">Callback due</span>` : null}
            <a href="/console/leads/${c.lead_id}" aria-label="The lead page of ${c.name || formatNumber(c.phone)}">Lead</a></li>`,
        )}</ul>`,
  )}`;
}

export function myWorkRoutes(deps: Deps): Route[] {
  return [
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleMyWork",
        summary: "My work: the viewer's dials, callbacks due and later today, and open conversations, with counts",
        method: "GET",
        path: "/console/my-work",
        roles: ["manager", "agent"],
        query: pageQuery(WorkQuery),
      }),
      async ({ query: q }, { grant: viewer }) => {
        const now = deps.clock.now();
        const [work, zone] = await Promise.all([myWork(deps.sql, viewer.actor, now), viewerZone(deps.sql, viewer.actor.orgId)]);
        const callbacks = [...work.dueCallbacks, ...work.nextCallbacks];
        const names = new Map<number, string>();
        if (callbacks.length > 0) {
          const ids = [...new Set(callbacks.map((c) => c.lead_id))];
          const rows = await deps.sql<{ id: number; first_name: string; last_name: string; phone: string }[]>`
            select id, first_name, last_name, phone from leads where id = any(${ids}::bigint[])
              and ${viewer.actor.orgId === null ? deps.sql`true` : deps.sql`org_id = ${viewer.actor.orgId}`}`;
          for (const r of rows) names.set(Number(r.id), `${r.first_name} ${r.last_name}`.trim() || formatNumber(r.phone));
        }
        const named = (c: Callback) => ({ ...c, lead: names.get(Number(c.lead_id)) ?? `Lead ${c.lead_id}` });
        const end = endOfDay(now, zone);
        const today = work.nextCallbacks.filter((c) => c.due_at.getTime() < end);
        const page: WorkPage = {
          dials: work.dials,
          conversations: work.conversations,
          openCount: work.openCount,
          due: work.dueCallbacks.map(named),
          today: today.map(named),
          later: work.nextCallbacks.length - today.length,
        };
        const notices = Object.fromEntries(Object.entries(LEAD_ACTION_NOTICES).map(([k, v]) => [k, v.text]));
        return consoleHtml(deps, viewer, {
          title: "My work",
          nav: "work",
          styles: ["lead.css"],
          body: workBody(page, zone, csrfField(viewer), flash(q.done, notices)),
        });
      },
    ),
  ];
}
