// /console/settings/first-steps: where the installer sends the first admin (and a manager may come
// back to): organization → calendar and its booking link → number pool → webhook → users, each
// ticked when the viewer's scope has one (an admin: any organization; a manager: their own).
// Counted in SQL under the same confinement as the lists they link to.
import type { Actor } from "../../auth/actor";
import type { Sql } from "../../db/client";
import { defineRoute } from "../../http/define";
import type { Deps } from "../../http/deps";
import type { Route } from "../../http/route";
import { consoleHtml, html, type Html } from "../html";
import { MANAGERS, pageSpec } from "../route";
import { settingsTabs } from "./page";

export interface FirstSteps {
  orgs: number;
  calendars: number;
  links: number;
  pools: number;
  webhooks: number;
  /** Console users besides the viewer. */
  users: number;
}

export async function firstSteps(sql: Sql, actor: Actor, me: string): Promise<FirstSteps> {
  const org = actor.orgId;
  const [r] = await sql<FirstSteps[]>`
    select
      (select count(*)::int from orgs o where ${org}::bigint is null or o.id = ${org}::bigint) as orgs,
      (select count(*)::int from calendars c where c.org_id is not null and (${org}::bigint is null or c.org_id = ${org}::bigint)) as calendars,
      (select count(*)::int from calendar_links l join calendars c on c.id = l.calendar_id
        where c.org_id is not null and (${org}::bigint is null or c.org_id = ${org}::bigint)) as links,
      (select count(*)::int from dni_pools p where p.org_id is not null and (${org}::bigint is null or p.org_id = ${org}::bigint)) as pools,
      (select count(*)::int from webhooks w where w.org_id is not null and (${org}::bigint is null or w.org_id = ${org}::bigint)) as webhooks,
      (select count(*)::int from users u where u.role is not null and u.disabled_at is null and u.id <> ${me}
        and (${org}::bigint is null or u.org_id = ${org}::bigint)) as users`;
  return r!;
}

interface Step {
  done: boolean;
  title: string;
  href: string;
  text: string;
}

function steps(s: FirstSteps, admin: boolean): Step[] {
  return [
    {
      done: s.orgs > 0,
      title: "Organization",
      // An admin with no organization yet goes straight to the form that creates one.
      href: admin && s.orgs === 0 ? "/console/settings/orgs/new" : "/console/settings/org",
      text: admin ? "Add the business (name, time zone, quiet hours, SMS and email senders)." : "Check the name, time zone, quiet hours and senders.",
    },
    { done: s.calendars > 0 && s.links > 0, title: "Calendar and booking link", href: "/console/settings/calendars", text: "Hours, slot length, buffers, and the link people book with." },
    { done: s.pools > 0, title: "Number pool", href: "/console/settings/pools", text: "Tracking numbers shown to web visitors, and the fallback number." },
    { done: s.webhooks > 0, title: "Webhook endpoint", href: "/console/webhooks", text: "Where events are delivered; send a test event." },
    { done: s.users > 0, title: "Invite users", href: "/console/settings/users", text: "Managers and agents, with a one-time link (shown, or emailed)." },
  ];
}

export function firstStepsBody(s: FirstSteps, admin: boolean): Html {
  const list = steps(s, admin);
  const left = list.filter((x) => !x.done).length;
  return html`${settingsTabs("first-steps")}
<p>${left === 0 ? "Everything is set up. Each step stays here to come back to." : `${left} of ${list.length} steps left.`}</p>
<ol class="first-steps">${list.map(
    (x) => html`<li class="${x.done ? "done" : "todo"}"><span class="step-mark" aria-hidden="true">${x.done ? "✓" : "○"}</span> <a href="${x.href}">${x.title}</a> <span class="visually-hidden">${x.done ? "(done)" : "(to do)"}</span><br><span class="muted">${x.text}</span></li>`,
  )}</ol>`;
}

export function firstStepsRoutes(deps: Deps): Route[] {
  return [
    defineRoute(
      deps,
      pageSpec(deps, { id: "consoleSettingsFirstSteps", summary: "First steps: organization, calendar, pool, webhook, users, each ticked when done", method: "GET", path: "/console/settings/first-steps", roles: MANAGERS }),
      async (_input, { grant: viewer }) => {
        const s = await firstSteps(deps.sql, viewer.actor, viewer.user.id);
        return consoleHtml(deps, viewer, { title: "First steps", nav: "settings", body: firstStepsBody(s, viewer.actor.orgId === null), styles: ["operations.css"] });
      },
    ),
  ];
}
