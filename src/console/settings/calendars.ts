// /console/settings/calendars: the list and add form, one calendar's form (fields from the
// provisioning field table). Managers for their organization, admins for all; another
// organization's calendar is the 404 page.
import { Type as t } from "@sinclair/typebox";
import { defineRoute, type RouteSpec } from "../../http/define";
import type { Deps } from "../../http/deps";
import { idParam, type Answer, type Route } from "../../http/route";
import { DAYS } from "../../provision/model";
import { consoleHtml, csrfField, html, notFoundPage, seeOther, type Html } from "../html";
import { formBody, MANAGERS, pageQuery, pageSpec, type Viewer } from "../route";
import { orgList } from "./org-service";
import { settingsTabs } from "./page";
import { editBody, formOf, listBody, removeLinkConfirm } from "./calendars-page";
import { addCalendar, addLink, calendarsOf, removeLink, PLAIN_FIELDS, saveCalendar, scopedCalendar, type CalendarForm } from "./calendars-service";

const STYLES = ["operations.css"];
const SCRIPTS = ["copy-tag.js"];
const DONE: Record<string, string> = {
  saved: "Calendar saved.",
  added: "Calendar added.",
  unchanged: "Nothing to change.",
  "link-added": "Booking link added.",
  "link-removed": "Booking link removed: it no longer opens a booking page.",
};
const LinkForm = t.Object({ slug: t.Optional(t.String({ description: "the link's name: a-z, 0-9 and -, up to 64 characters (any case)" })) });
const RemoveForm = t.Object({ slug: t.Optional(t.String()), confirm: t.Optional(t.String({ description: "present: the confirmation was checked" })) });
const Form = t.Object(
  Object.fromEntries([...PLAIN_FIELDS.map((p) => p.name), ...DAYS.map((d) => `hours.${d}`), "org"].map((k) => [k, t.Optional(t.String())])),
);

export function calendarSettingsRoutes(deps: Deps): Route[] {
  const page = (viewer: Viewer, title: string, body: Html, status = 200) =>
    consoleHtml(deps, viewer, { title, nav: "settings", body: html`${settingsTabs("calendars")}${body}`, styles: STYLES, scripts: SCRIPTS, status });
  const base = deps.config.baseUrl;
  const spec = <P = undefined, Q = undefined, B = undefined>(
    id: string,
    summary: string,
    path: string,
    method: "GET" | "POST",
    more: Pick<RouteSpec<Viewer, P, Q, B>, "params" | "query" | "body"> & { answers?: Readonly<Record<number, Answer>> } = {},
  ) =>
    pageSpec<P, Q, B>(deps, { id, summary, method, path, roles: MANAGERS, ...more });
  const list = async (viewer: Viewer, extra: { form: CalendarForm | null; problems: string[] | null; done: string | null }, status = 200) => {
    const orgs = viewer.actor.orgId === null ? await orgList(deps.sql) : null;
    return page(viewer, "Calendars", listBody({ calendars: await calendarsOf(deps.sql, viewer.actor), csrf: csrfField(viewer), orgs, ...extra }), status);
  };

  return [
    defineRoute(
      deps,
      spec("consoleSettingsCalendars", "Calendars: the list and the add form", "/console/settings/calendars", "GET", { query: pageQuery(t.Object({ done: t.Optional(t.String()) })) }),
      ({ query }, { grant: viewer }) => list(viewer, { form: null, problems: null, done: (query.done && DONE[query.done]) || null }),
    ),
    defineRoute(
      deps,
      spec("consoleSettingsCalendarAdd", "Add a calendar (form: the calendar fields of the provisioning file, hours.<day>, org for admins); audited calendar.create", "/console/settings/calendars", "POST", { body: formBody(Form) }),
      async ({ body }, { grant: viewer }) => {
        let orgId = viewer.actor.orgId;
        if (orgId === null && body.org) {
          orgId = (await orgList(deps.sql)).find((o) => String(o.id) === body.org)?.id ?? null;
          if (orgId === null) return list(viewer, { form: body, problems: ["Choose an organization from the list."], done: null }, 422);
        }
        const r = await addCalendar(deps, viewer.actor, orgId, body);
        return r.ok ? seeOther(`/console/settings/calendars/${r.id}?done=added`) : list(viewer, { form: body, problems: r.problems, done: null }, 422);
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsCalendar", "One calendar's form", "/console/settings/calendars/{id}", "GET", { params: idParam, query: pageQuery(t.Object({ done: t.Optional(t.String()) })) }),
      async ({ params: id, query }, { grant: viewer }) => {
        const c = await scopedCalendar(deps.sql, viewer.actor, id);
        if (!c) return notFoundPage(deps, viewer);
        return page(viewer, `Calendar ${c.id}`, editBody({ calendar: c, form: formOf(c), csrf: csrfField(viewer), problems: null, done: (query.done && DONE[query.done]) || null, base }));
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsCalendarSave", "Save a calendar through the provisioning service; audited calendar.update with previous and new values", "/console/settings/calendars/{id}", "POST", { params: idParam, body: formBody(Form) }),
      async ({ params: id, body }, { grant: viewer }) => {
        const c = await scopedCalendar(deps.sql, viewer.actor, id);
        if (!c) return notFoundPage(deps, viewer);
        const r = await saveCalendar(deps, viewer.actor, c, body);
        if (!r.ok) return page(viewer, `Calendar ${c.id}`, editBody({ calendar: c, form: body, csrf: csrfField(viewer), problems: r.problems, done: null, base }), 422);
        return seeOther(`/console/settings/calendars/${id}?done=${(r.summary.counts.calendars?.updated ?? 0) > 0 ? "saved" : "unchanged"}`);
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsLinkAdd", "Add a booking link to a calendar (form: slug) through the provisioning service; a slug another organization holds answers 409 and names no one; audited calendar.update", "/console/settings/calendars/{id}/links", "POST", {
        params: idParam,
        body: formBody(LinkForm),
        answers: { 409: { description: "The slug is another organization's link (whose is not said): the page, saying so", contentType: "text/html; charset=utf-8" } },
      }),
      async ({ params: id, body }, { grant: viewer }) => {
        const c = await scopedCalendar(deps.sql, viewer.actor, id);
        if (!c) return notFoundPage(deps, viewer);
        const r = await addLink(deps, viewer.actor, c, body.slug ?? "");
        if (r.ok) return seeOther(`/console/settings/calendars/${id}?done=${r.changed ? "link-added" : "unchanged"}`);
        const view = editBody({ calendar: c, form: formOf(c), csrf: csrfField(viewer), problems: null, done: null, base, linkProblems: r.problems, slug: body.slug ?? "" });
        return page(viewer, `Calendar ${c.id}`, view, r.taken ? 409 : 422);
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsLinkRemoveConfirm", "The confirmation page of removing a calendar's booking link (query: slug)", "/console/settings/calendars/{id}/links/remove", "GET", {
        params: idParam,
        query: pageQuery(t.Object({ slug: t.Optional(t.String()) })),
      }),
      async ({ params: id, query }, { grant: viewer }) => {
        const c = await scopedCalendar(deps.sql, viewer.actor, id);
        const slug = query.slug ?? "";
        if (!c || !(c.values.links as string[]).includes(slug)) return notFoundPage(deps, viewer);
        return page(viewer, "Remove a booking link", removeLinkConfirm(c, slug, base, csrfField(viewer)));
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsLinkRemove", "Remove a calendar's booking link (form: slug, confirm, checked on the confirmation page); audited calendar.update", "/console/settings/calendars/{id}/links/remove", "POST", {
        params: idParam,
        body: formBody(RemoveForm),
      }),
      async ({ params: id, body }, { grant: viewer }) => {
        const c = await scopedCalendar(deps.sql, viewer.actor, id);
        const slug = body.slug ?? "";
        if (!c || !(c.values.links as string[]).includes(slug)) return notFoundPage(deps, viewer);
        // Without the box checked, back to the confirmation: a stray post removes nothing.
        if (body.confirm === undefined) return seeOther(`/console/settings/calendars/${id}/links/remove?slug=${encodeURIComponent(slug)}`);
        if (!(await removeLink(deps, viewer.actor, c, slug))) return notFoundPage(deps, viewer);
        return seeOther(`/console/settings/calendars/${id}?done=link-removed`);
      },
    ),
  ];
}
