// /console/settings/replies: an organization's saved replies; add, edit (with a preview for one of
// its leads), delete (confirmed on a page of its own). {id} is the organization: a manager's own,
// any for an admin; another one is the 404 page and nothing is written, and a reply is looked up
// among that organization's only. Writes go through src/replies/service.ts (replies-service.ts).
import { Type as t } from "@sinclair/typebox";
import { defineRoute, type RouteSpec } from "../../http/define";
import type { Deps } from "../../http/deps";
import { idParam, type Route } from "../../http/route";
import { REPLY_CHANNELS, type ReplyChannel } from "../../replies/service";
import { consoleHtml, csrfField, html, notFoundPage, seeOther, type Html } from "../html";
import { idParam as queryId } from "../period";
import { formBody, MANAGERS, pageQuery, pageSpec, type Viewer } from "../route";
import { orgList } from "./org-service";
import { deleteReplyPage, editReplyBody, formOf, repliesBody, type PreviewView } from "./replies-page";
import { channelsOf, orgReplies, previewFor, removeReply, saveReply, type OrgReplies, type ReplyForm } from "./replies-service";

const STYLES = ["operations.css"];
const DONE: Record<string, string> = { added: "Saved reply added.", saved: "Saved reply saved.", deleted: "Saved reply deleted.", unchanged: "Nothing to change." };
const CHANNEL_BOXES = Object.fromEntries(REPLY_CHANNELS.map((c) => [`channel.${c}`, t.Optional(t.String())]));
const ReplyFormBody = t.Object({ reply: t.Optional(t.String()), name: t.Optional(t.String()), subject: t.Optional(t.String()), body: t.Optional(t.String()), ...CHANNEL_BOXES });

const formFrom = (b: Readonly<Record<string, string | undefined>>): ReplyForm => ({ name: b.name ?? "", subject: b.subject ?? "", body: b.body ?? "", channels: channelsOf(b) });
const replyIn = (o: OrgReplies, raw: string | undefined) => {
  const id = queryId(raw);
  return id === null ? undefined : o.replies.find((r) => Number(r.id) === id);
};

export function replySettingsRoutes(deps: Deps): Route[] {
  const spec = <P = undefined, Q = undefined, B = undefined>(id: string, summary: string, path: string, method: "GET" | "POST", more: Pick<RouteSpec<Viewer, P, Q, B>, "params" | "query" | "body"> = {}) =>
    pageSpec<P, Q, B>(deps, { id, summary, method, path, roles: MANAGERS, ...more });
  const page = (viewer: Viewer, body: Html, status = 200) => consoleHtml(deps, viewer, { title: "Saved replies", nav: "settings", body, styles: STYLES, status });
  const list = async (viewer: Viewer, o: OrgReplies, extra: { problems: string[] | null; done: string | null; form: ReplyForm | null }, status = 200) =>
    page(viewer, repliesBody({ o, orgs: viewer.actor.orgId === null ? await orgList(deps.sql) : [], csrf: csrfField(viewer), ...extra }), status);
  const noPreview = (): PreviewView => ({ leadId: "", channel: "sms", result: null });

  return [
    defineRoute(
      deps,
      spec("consoleSettingsReplies", "Saved replies of the viewer's organization (admins: `org` picks one)", "/console/settings/replies", "GET", {
        query: pageQuery(t.Object({ org: t.Optional(t.String()) })),
      }),
      async ({ query }, { grant: viewer }) => {
        const id = viewer.actor.orgId ?? queryId(query.org) ?? (await orgList(deps.sql))[0]?.id ?? null;
        if (id === null) return page(viewer, html`<p class="empty">No organization yet.</p>`);
        return seeOther(`/console/settings/replies/${id}`);
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsOrgReplies", "One organization's saved replies (name, channels, a line of the body) and the add form", "/console/settings/replies/{id}", "GET", {
        params: idParam,
        query: pageQuery(t.Object({ done: t.Optional(t.String()) })),
      }),
      async ({ params: id, query }, { grant: viewer }) => {
        const o = await orgReplies(deps.sql, viewer.actor, id);
        return o ? list(viewer, o, { problems: null, done: (query.done && DONE[query.done]) || null, form: null }) : notFoundPage(deps, viewer);
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsReplyAdd", "Add a saved reply (form: name, channel.sms/email/note, subject, body) through the replies service; audited saved_reply.create", "/console/settings/replies/{id}/add", "POST", {
        params: idParam,
        body: formBody(ReplyFormBody),
      }),
      async ({ params: id, body }, { grant: viewer }) => {
        const o = await orgReplies(deps.sql, viewer.actor, id);
        if (!o) return notFoundPage(deps, viewer);
        const form = formFrom(body);
        const r = await saveReply(deps, viewer.actor, o, null, form);
        if (r.ok) return seeOther(`/console/settings/replies/${id}?done=added`);
        return list(viewer, o, { problems: r.problems, done: null, form }, 422);
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsReplyEdit", "A saved reply's form (query: reply), with the merge fields and a preview for a lead (query: pick or lead, channel)", "/console/settings/replies/{id}/edit", "GET", {
        params: idParam,
        query: pageQuery(t.Object({ reply: t.Optional(t.String()), done: t.Optional(t.String()), pick: t.Optional(t.String()), lead: t.Optional(t.String()), channel: t.Optional(t.String()) })),
      }),
      async ({ params: id, query }, { grant: viewer }) => {
        const o = await orgReplies(deps.sql, viewer.actor, id);
        const reply = o && replyIn(o, query.reply);
        if (!o || !reply) return notFoundPage(deps, viewer);
        const typed = (query.lead ?? "").trim() || (query.pick ?? "").trim();
        const channel: ReplyChannel = REPLY_CHANNELS.find((c) => c === query.channel) ?? reply.channels[0] ?? "sms";
        const preview: PreviewView = { leadId: typed, channel, result: null };
        if (typed !== "") {
          const leadId = queryId(typed);
          preview.result = leadId === null ? { ok: false, why: `“${typed}” is not a lead id.` } : await previewFor(deps.sql, viewer.actor, reply, leadId, channel).then((p) => (p.ok ? { ok: true as const, subject: p.preview.subject, body: p.preview.body } : p));
        }
        return page(viewer, editReplyBody({ o, reply, csrf: csrfField(viewer), problems: null, done: (query.done && DONE[query.done]) || null, form: formOf(reply), preview }));
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsReplySave", "Save a saved reply's fields (form: reply, name, channel.sms/email/note, subject, body); audited saved_reply.update with previous and new values", "/console/settings/replies/{id}/edit", "POST", {
        params: idParam,
        body: formBody(ReplyFormBody),
      }),
      async ({ params: id, body }, { grant: viewer }) => {
        const o = await orgReplies(deps.sql, viewer.actor, id);
        const reply = o && replyIn(o, body.reply);
        if (!o || !reply) return notFoundPage(deps, viewer);
        const form = formFrom(body);
        const r = await saveReply(deps, viewer.actor, o, Number(reply.id), form);
        if (r.ok) return seeOther(`/console/settings/replies/${id}/edit?reply=${reply.id}&done=${r.changed ? "saved" : "unchanged"}`);
        return page(viewer, editReplyBody({ o, reply, csrf: csrfField(viewer), problems: r.problems, done: null, form, preview: noPreview() }), 422);
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsReplyDeleteConfirm", "The confirmation of deleting a saved reply (query: reply)", "/console/settings/replies/{id}/delete", "GET", {
        params: idParam,
        query: pageQuery(t.Object({ reply: t.Optional(t.String()) })),
      }),
      async ({ params: id, query }, { grant: viewer }) => {
        const o = await orgReplies(deps.sql, viewer.actor, id);
        const reply = o && replyIn(o, query.reply);
        if (!o || !reply) return notFoundPage(deps, viewer);
        return page(viewer, deleteReplyPage(o, reply, csrfField(viewer)));
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsReplyDelete", "Delete a saved reply (form: reply, confirm); without confirm, back to the confirmation; audited saved_reply.delete with what it was", "/console/settings/replies/{id}/delete", "POST", {
        params: idParam,
        body: formBody(t.Object({ reply: t.Optional(t.String()), confirm: t.Optional(t.String({ description: "present: the confirmation was checked" })) })),
      }),
      async ({ params: id, body }, { grant: viewer }) => {
        const o = await orgReplies(deps.sql, viewer.actor, id);
        const reply = o && replyIn(o, body.reply);
        if (!o || !reply) return notFoundPage(deps, viewer);
        if (body.confirm === undefined) return seeOther(`/console/settings/replies/${id}/delete?reply=${reply.id}`);
        await removeReply(deps, viewer.actor, Number(reply.id));
        return seeOther(`/console/settings/replies/${id}?done=deleted`);
      },
    ),
  ];
}
