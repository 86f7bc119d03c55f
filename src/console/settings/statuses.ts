// /console/settings/statuses: an organization's lead statuses (dispositions), with how many leads
// have each; add, rename, remove an unused one (confirmed on a page of its own). {id} is the
// organization: a manager's own, any for an admin; another one is the 404 page and nothing is
// written. Writes go through the provisioning service (statuses-service.ts).
import { Type as t } from "@sinclair/typebox";
import { defineRoute, type RouteSpec } from "../../http/define";
import type { Deps } from "../../http/deps";
import { idParam, type Route } from "../../http/route";
import { consoleHtml, csrfField, html, notFoundPage, seeOther, type Html } from "../html";
import { idParam as queryId } from "../period";
import { formBody, MANAGERS, pageQuery, pageSpec, type Viewer } from "../route";
import { orgList } from "./org-service";
import { removeStatusPage, statusesBody } from "./statuses-page";
import { addStatus, orgStatuses, removalRefusal, removeStatus, renameStatus, type OrgStatuses, type StatusAnswer } from "./statuses-service";

const STYLES = ["operations.css"];
const DONE: Record<string, string> = { added: "Status added.", renamed: "Status renamed.", removed: "Status removed.", unchanged: "Nothing to change." };
const StatusForm = t.Object({ code: t.Optional(t.String()), label: t.Optional(t.String()) });

export function statusSettingsRoutes(deps: Deps): Route[] {
  const spec = <P = undefined, Q = undefined, B = undefined>(id: string, summary: string, path: string, method: "GET" | "POST", more: Pick<RouteSpec<Viewer, P, Q, B>, "params" | "query" | "body"> = {}) =>
    pageSpec<P, Q, B>(deps, { id, summary, method, path, roles: MANAGERS, ...more });
  const page = (viewer: Viewer, body: Html, status = 200) => consoleHtml(deps, viewer, { title: "Lead statuses", nav: "settings", body, styles: STYLES, status });
  const list = async (viewer: Viewer, o: OrgStatuses, extra: { problems: string[] | null; done: string | null; form: { code: string; label: string } | null }, status = 200) =>
    page(viewer, statusesBody({ o, orgs: viewer.actor.orgId === null ? await orgList(deps.sql) : [], csrf: csrfField(viewer), ...extra }), status);
  /** After a write: on to the list saying what was done, or the list with the problems (422). */
  const answer = async (viewer: Viewer, o: OrgStatuses, r: StatusAnswer, done: string, form: { code: string; label: string } | null = null) => {
    if (r.ok) return seeOther(`/console/settings/statuses/${o.orgId}?done=${r.changed ? done : "unchanged"}`);
    return list(viewer, (await orgStatuses(deps.sql, viewer.actor, o.orgId)) ?? o, { problems: r.problems, done: null, form }, 422);
  };

  return [
    defineRoute(
      deps,
      spec("consoleSettingsStatuses", "Lead statuses of the viewer's organization (admins: `org` picks one), with lead counts", "/console/settings/statuses", "GET", {
        query: pageQuery(t.Object({ org: t.Optional(t.String()) })),
      }),
      async ({ query }, { grant: viewer }) => {
        const id = viewer.actor.orgId ?? queryId(query.org) ?? (await orgList(deps.sql))[0]?.id ?? null;
        if (id === null) return page(viewer, html`<p class="empty">No organization yet.</p>`);
        return seeOther(`/console/settings/statuses/${id}`);
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsOrgStatuses", "One organization's lead statuses with lead counts, the rename and add forms", "/console/settings/statuses/{id}", "GET", {
        params: idParam,
        query: pageQuery(t.Object({ done: t.Optional(t.String()) })),
      }),
      async ({ params: id, query }, { grant: viewer }) => {
        const o = await orgStatuses(deps.sql, viewer.actor, id);
        return o ? list(viewer, o, { problems: null, done: (query.done && DONE[query.done]) || null, form: null }) : notFoundPage(deps, viewer);
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsStatusAdd", "Add a lead status (form: code, label) through the provisioning service; audited lead_statuses.update", "/console/settings/statuses/{id}/add", "POST", { params: idParam, body: formBody(StatusForm) }),
      async ({ params: id, body }, { grant: viewer }) => {
        const o = await orgStatuses(deps.sql, viewer.actor, id);
        if (!o) return notFoundPage(deps, viewer);
        const form = { code: body.code ?? "", label: body.label ?? "" };
        return answer(viewer, o, await addStatus(deps, viewer.actor, o, form.code, form.label), "added", form);
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsStatusRename", "A lead status's new label (form: code, label); audited lead_statuses.update", "/console/settings/statuses/{id}/rename", "POST", { params: idParam, body: formBody(StatusForm) }),
      async ({ params: id, body }, { grant: viewer }) => {
        const o = await orgStatuses(deps.sql, viewer.actor, id);
        if (!o) return notFoundPage(deps, viewer);
        return answer(viewer, o, await renameStatus(deps, viewer.actor, o, body.code ?? "", body.label ?? ""), "renamed");
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsStatusRemoveConfirm", "The confirmation of removing a lead status (query: code), or why it cannot be removed (leads have it)", "/console/settings/statuses/{id}/remove", "GET", {
        params: idParam,
        query: pageQuery(t.Object({ code: t.Optional(t.String()) })),
      }),
      async ({ params: id, query }, { grant: viewer }) => {
        const o = await orgStatuses(deps.sql, viewer.actor, id);
        const code = query.code ?? "";
        if (!o || !o.statuses.some((s) => s.code === code)) return notFoundPage(deps, viewer);
        return page(viewer, removeStatusPage(o, code, removalRefusal(o, code), csrfField(viewer)));
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsStatusRemove", "Remove an unused lead status (form: code, confirm); one leads have is refused (422, saying how many); audited lead_statuses.update", "/console/settings/statuses/{id}/remove", "POST", {
        params: idParam,
        body: formBody(t.Object({ code: t.Optional(t.String()), confirm: t.Optional(t.String({ description: "present: the confirmation was checked" })) })),
      }),
      async ({ params: id, body }, { grant: viewer }) => {
        const o = await orgStatuses(deps.sql, viewer.actor, id);
        const code = body.code ?? "";
        if (!o || !o.statuses.some((s) => s.code === code)) return notFoundPage(deps, viewer);
        if (body.confirm === undefined) return seeOther(`/console/settings/statuses/${id}/remove?code=${encodeURIComponent(code)}`);
        return answer(viewer, o, await removeStatus(deps, viewer.actor, o, code), "removed");
      },
    ),
  ];
}
