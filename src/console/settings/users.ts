// /console/settings/users: invite, change role, disable (confirmed on a page of its own), reset
// two-step sign-in, a new sign-in link. Managers for their organization, admins for all. A link is
// only in the answer of the POST that made it (no-store). Another organization's user, or a
// missing one, is the 404 page and nothing is done.
import { Type as t } from "@sinclair/typebox";
import { defineRoute, type RouteSpec } from "../../http/define";
import type { Deps } from "../../http/deps";
import { textParam, type Route } from "../../http/route";
import { consoleHtml, csrfField, notFoundPage, seeOther } from "../html";
import { idParam as queryId } from "../period";
import { formBody, MANAGERS, pageQuery, pageSpec, type Viewer } from "../route";
import { emailInvite, type Mailed } from "./invite-mail";
import { orgList } from "./org-service";
import { disableConfirm, usersBody, type UsersView } from "./users-page";
import { changeRole, disable, grantable, inviteNew, resendInvite, resetTwoStep, scopedUser, usersOf, type UserAnswer } from "./users-service";

const STYLES = ["operations.css"];
const userParam = textParam("user");
const DONE: Record<string, string> = {
  role: "Role saved.",
  disabled: "User disabled: their sessions have ended and the keys bound to them are revoked.",
  "two-step": "Two-step sign-in turned off; their sessions have ended. They set it up again from their account page.",
};

async function usersPage(deps: Deps, viewer: Viewer, org: number | null, extra: Pick<UsersView, "form" | "invited" | "done" | "error"> & { mailed?: Mailed | null }, status = 200): Promise<Response> {
  const admin = viewer.actor.orgId === null;
  const [users, orgs] = await Promise.all([usersOf(deps.sql, viewer.actor, admin ? org : null), admin ? orgList(deps.sql) : []]);
  const body = usersBody({ users, me: viewer.user.id, roles: grantable(viewer), orgs, org: admin ? org : viewer.actor.orgId, csrf: csrfField(viewer), mailed: null, ...extra });
  return consoleHtml(deps, viewer, { title: "Users", nav: "settings", body, styles: STYLES, status, headers: { "cache-control": "no-store" } });
}

const InviteForm = t.Object({
  email: t.Optional(t.String()),
  name: t.Optional(t.String()),
  role: t.Optional(t.String({ description: "agent, manager, or (admins) admin" })),
  org: t.Optional(t.String({ description: "admins: the organization of an agent or manager" })),
  email_link: t.Optional(t.String({ description: "present: also email the link through the organization's email sender" })),
});

export function userSettingsRoutes(deps: Deps): Route[] {
  const spec = <P = undefined, Q = undefined, B = undefined>(
    id: string,
    summary: string,
    path: string,
    method: "GET" | "POST",
    more: Pick<RouteSpec<Viewer, P, Q, B>, "params" | "query" | "body"> = {},
  ) => pageSpec<P, Q, B>(deps, { id, summary, method, path, roles: MANAGERS, ...more });
  /** A refusal of an action on one user: the list with the reason, or the 404 page. */
  const refusedAnswer = (viewer: Viewer, r: Extract<UserAnswer<unknown>, { ok: false }>) =>
    r.reason === "not_found" ? notFoundPage(deps, viewer) : usersPage(deps, viewer, null, { form: null, invited: null, done: null, error: r.message }, 422);

  return [
    defineRoute(
      deps,
      spec("consoleSettingsUsers", "Console users: the list, the invite form (admins: `org` picks an organization)", "/console/settings/users", "GET", {
        query: pageQuery(t.Object({ org: t.Optional(t.String()), done: t.Optional(t.String()) })),
      }),
      ({ query }, { grant: viewer }) => usersPage(deps, viewer, queryId(query.org), { form: null, invited: null, done: (query.done && DONE[query.done]) || null, error: null }),
    ),
    defineRoute(
      deps,
      spec("consoleSettingsUserInvite", "Invite a console user (form: email, name, role, org for admins); the answer shows the one-time link once; audited user.create", "/console/settings/users", "POST", {
        body: formBody(InviteForm),
      }),
      async ({ body }, { grant: viewer }) => {
        const form = { email: body.email ?? "", name: body.name ?? "", role: body.role ?? "", org: body.org ?? "", email_link: body.email_link !== undefined };
        const r = await inviteNew(deps, viewer, form);
        if (r.ok) {
          const mailed = form.email_link ? await emailInvite(deps, viewer.actor, r.value) : null;
          return usersPage(deps, viewer, null, { form: null, invited: r.value, mailed, done: null, error: null });
        }
        return usersPage(deps, viewer, null, { form, invited: null, done: null, error: r.message }, 422);
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsUserLink", "A new one-time sign-in link for a user (older ones stop working); shown once, and emailed through their organization's email sender when `email_link` is given; audited user.invite (and user.invite_email)", "/console/settings/users/{user}/invite", "POST", {
        params: userParam,
        body: formBody(t.Object({ email_link: t.Optional(t.String({ description: "present: also email the new link" })) })),
      }),
      async ({ params: id, body }, { grant: viewer }) => {
        const r = await resendInvite(deps, viewer, id);
        if (!r.ok) return refusedAnswer(viewer, r);
        const mailed = body.email_link !== undefined ? await emailInvite(deps, viewer.actor, r.value) : null;
        return usersPage(deps, viewer, null, { form: null, invited: r.value, mailed, done: null, error: null });
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsUserRole", "Change a user's role between agent and manager (form: role), through the provisioning service; audited user.update", "/console/settings/users/{user}/role", "POST", {
        params: userParam,
        body: formBody(t.Object({ role: t.Optional(t.String({ description: "agent or manager" })) })),
      }),
      async ({ params: id, body }, { grant: viewer }) => {
        const r = await changeRole(deps, viewer, id, body.role ?? "");
        return r.ok ? seeOther("/console/settings/users?done=role") : refusedAnswer(viewer, r);
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsUserDisableConfirm", "The confirmation page of disabling a user", "/console/settings/users/{user}/disable", "GET", { params: userParam }),
      async ({ params: id }, { grant: viewer }) => {
        const u = await scopedUser(deps.sql, viewer.actor, id);
        if (u === null || (viewer.actor.orgId !== null && u.role === "admin")) return notFoundPage(deps, viewer);
        return consoleHtml(deps, viewer, { title: "Disable a user", nav: "settings", body: disableConfirm(u, csrfField(viewer)), styles: STYLES });
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsUserDisable", "Disable a user (form: confirm, checked on the confirmation page): sessions end, bound keys revoked; audited user.disable", "/console/settings/users/{user}/disable", "POST", {
        params: userParam,
        body: formBody(t.Object({ confirm: t.Optional(t.String({ description: "present: the confirmation was checked" })) })),
      }),
      async ({ params: id, body }, { grant: viewer }) => {
        // Without the box checked, back to the confirmation: a stray post disables no one.
        if (body.confirm === undefined) return seeOther(`/console/settings/users/${encodeURIComponent(id)}/disable`);
        const r = await disable(deps, viewer, id);
        return r.ok ? seeOther("/console/settings/users?done=disabled") : refusedAnswer(viewer, r);
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsUserTwoStep", "Turn a user's two-step sign-in off (a lost phone); their sessions end; audited user.two_step_reset", "/console/settings/users/{user}/two-step", "POST", {
        params: userParam,
      }),
      async ({ params: id }, { grant: viewer }) => {
        const r = await resetTwoStep(deps, viewer, id);
        return r.ok ? seeOther("/console/settings/users?done=two-step") : refusedAnswer(viewer, r);
      },
    ),
  ];
}
