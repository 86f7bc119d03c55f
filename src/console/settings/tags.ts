// /console/settings/tags: the organization's tags with how many leads carry each; rename (or merge
// into a tag it has), delete from every lead (confirmed on a page of its own). {id} is the
// organization: a manager's own, any for an admin; another one is the 404 page and nothing is
// written. Reads and writes go through the tag service (src/leads/tags.ts), which audits them.
import { Type as t } from "@sinclair/typebox";
import { defineRoute, type RouteSpec } from "../../http/define";
import type { Deps } from "../../http/deps";
import { idParam, type Route } from "../../http/route";
import { deleteTag, orgTags, renameTag } from "../../leads/tags";
import { consoleHtml, csrfField, html, notFoundPage, seeOther, type Html } from "../html";
import { idParam as queryId } from "../period";
import { formBody, MANAGERS, pageQuery, pageSpec, type Viewer } from "../route";
import { orgList, orgSettings } from "./org-service";
import { deleteTagPage, tagsBody, type TagsView } from "./tags-page";

const STYLES = ["operations.css"];
const DONE: Record<string, string> = { renamed: "Tag renamed.", merged: "Tags merged.", deleted: "Tag deleted from its leads.", unchanged: "Nothing to change." };

export function tagSettingsRoutes(deps: Deps): Route[] {
  const spec = <P = undefined, Q = undefined, B = undefined>(id: string, summary: string, path: string, method: "GET" | "POST", more: Pick<RouteSpec<Viewer, P, Q, B>, "params" | "query" | "body"> = {}) =>
    pageSpec<P, Q, B>(deps, { id, summary, method, path, roles: MANAGERS, ...more });
  const page = (viewer: Viewer, body: Html, status = 200) => consoleHtml(deps, viewer, { title: "Tags", nav: "settings", body, styles: STYLES, status });
  /** The organization's tags when it is the viewer's to see (confined in SQL), else null. */
  const view = async (viewer: Viewer, id: number): Promise<TagsView | null> => {
    const org = await orgSettings(deps.sql, viewer.actor, id);
    return org ? { orgId: id, name: org.name, tags: await orgTags(deps.sql, viewer.actor, id) } : null;
  };
  const list = async (viewer: Viewer, o: TagsView, extra: { problems: string[] | null; done: string | null; typed: { key: string; to: string } | null }, status = 200) =>
    page(viewer, tagsBody({ o, orgs: viewer.actor.orgId === null ? await orgList(deps.sql) : [], csrf: csrfField(viewer), ...extra }), status);

  return [
    defineRoute(
      deps,
      spec("consoleSettingsTags", "Tags of the viewer's organization (admins: `org` picks one)", "/console/settings/tags", "GET", {
        query: pageQuery(t.Object({ org: t.Optional(t.String()) })),
      }),
      async ({ query }, { grant: viewer }) => {
        const id = viewer.actor.orgId ?? queryId(query.org) ?? (await orgList(deps.sql))[0]?.id ?? null;
        if (id === null) return page(viewer, html`<p class="empty">No organization yet.</p>`);
        return seeOther(`/console/settings/tags/${id}`);
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsOrgTags", "One organization's tags with how many leads carry each, and their rename forms", "/console/settings/tags/{id}", "GET", {
        params: idParam,
        query: pageQuery(t.Object({ done: t.Optional(t.String()) })),
      }),
      async ({ params: id, query }, { grant: viewer }) => {
        const o = await view(viewer, id);
        return o ? list(viewer, o, { problems: null, done: (query.done && DONE[query.done]) || null, typed: null }) : notFoundPage(deps, viewer);
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsTagRename", "Rename a tag on every lead of the organization, or merge it into a tag it has (form: tag, to); audited tag.rename or tag.merge", "/console/settings/tags/{id}/rename", "POST", {
        params: idParam,
        body: formBody(t.Object({ tag: t.Optional(t.String()), to: t.Optional(t.String()) })),
      }),
      async ({ params: id, body }, { grant: viewer }) => {
        const o = await view(viewer, id);
        const key = body.tag ?? "";
        if (!o || !o.tags.some((x) => x.key === key)) return notFoundPage(deps, viewer);
        const to = body.to ?? "";
        const r = await renameTag(deps.sql, viewer.actor, id, key, to);
        if (!r.ok) return list(viewer, o, { problems: [`The new name: ${r.problem}.`], done: null, typed: { key, to } }, 422);
        return seeOther(`/console/settings/tags/${id}?done=${!r.changed ? "unchanged" : r.merged ? "merged" : "renamed"}`);
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsTagDeleteConfirm", "The confirmation of deleting a tag from every lead carrying it (query: tag), saying how many", "/console/settings/tags/{id}/delete", "GET", {
        params: idParam,
        query: pageQuery(t.Object({ tag: t.Optional(t.String()) })),
      }),
      async ({ params: id, query }, { grant: viewer }) => {
        const o = await view(viewer, id);
        const tag = o?.tags.find((x) => x.key === (query.tag ?? ""));
        if (!o || !tag) return notFoundPage(deps, viewer);
        return page(viewer, deleteTagPage(o, tag, csrfField(viewer)));
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsTagDelete", "Delete a tag from every lead of the organization (form: tag, confirm); without confirm, back to the confirmation; audited tag.delete with how many", "/console/settings/tags/{id}/delete", "POST", {
        params: idParam,
        body: formBody(t.Object({ tag: t.Optional(t.String()), confirm: t.Optional(t.String({ description: "present: the confirmation was checked" })) })),
      }),
      async ({ params: id, body }, { grant: viewer }) => {
        const o = await view(viewer, id);
        const tag = o?.tags.find((x) => x.key === (body.tag ?? ""));
        if (!o || !tag) return notFoundPage(deps, viewer);
        if (body.confirm === undefined) return seeOther(`/console/settings/tags/${id}/delete?tag=${encodeURIComponent(tag.key)}`);
        await deleteTag(deps.sql, viewer.actor, id, tag.key);
        return seeOther(`/console/settings/tags/${id}?done=deleted`);
      },
    ),
  ];
}
