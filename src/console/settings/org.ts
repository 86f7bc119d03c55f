// /console/settings/org: an organization's settings through the provisioning service (apply.ts).
// Managers edit their own organization; admins pick one and also set its billing status. Another
// organization's id answers the same 404 page as a missing one, and nothing is written. Admins
// also create organizations here (org-new.ts); a manager gets the 404 page for that form.
import { Type as t } from "@sinclair/typebox";
import { defineRoute } from "../../http/define";
import type { Deps } from "../../http/deps";
import { idParam, type Route } from "../../http/route";
import { consoleHtml, csrfField, html, notFoundPage, seeOther } from "../html";
import { idParam as queryId } from "../period";
import { formBody, MANAGERS, pageQuery, pageSpec, type Viewer } from "../route";
import { applySettings } from "./apply";
import { createOrg, NEW_ORG_FIELDS, newOrgBody, nextOrgId, type NewOrgForm } from "./org-new";
import { orgBody } from "./org-page";
import { ORG_FORM_FIELDS, orgFragment, orgList, orgSettings, type OrgForm } from "./org-service";

const STYLES = ["operations.css"];
const DONE: Record<string, string> = {
  created: "Organization created. Set its SMS and email senders below; while its billing is not configured, its sends are refused.",
  saved: "Organization saved.", unchanged: "Nothing to change: the organization already had these settings." };

const OrgFormSchema = t.Object(Object.fromEntries(ORG_FORM_FIELDS.map((k) => [k, t.Optional(t.String())])));
const NewOrgSchema = t.Object(Object.fromEntries(NEW_ORG_FIELDS.map((k) => [k, t.Optional(t.String())])));
const ADMINS = ["admin"] as const;

async function orgPage(deps: Deps, viewer: Viewer, id: number | null, extra: { form: OrgForm | null; done: string | null; problems: string[] | null }, status = 200): Promise<Response> {
  const admin = viewer.actor.orgId === null;
  const orgs = admin ? await orgList(deps.sql) : [];
  const wanted = viewer.actor.orgId ?? id ?? orgs[0]?.id ?? null;
  const org = wanted === null ? null : await orgSettings(deps.sql, viewer.actor, wanted);
  if (org === null) {
    if (admin && orgs.length === 0) {
      return consoleHtml(deps, viewer, { title: "Settings", nav: "settings", body: html`<p class="empty">No organization yet: <a href="/console/settings/orgs/new">create the first one</a> (or with <code>leadline provision</code>).</p>`, styles: STYLES });
    }
    return notFoundPage(deps, viewer);
  }
  const body = orgBody({ org, admin, orgs, csrf: csrfField(viewer), ...extra });
  return consoleHtml(deps, viewer, { title: "Organization settings", nav: "settings", body, styles: STYLES, status });
}

export function orgSettingsRoutes(deps: Deps): Route[] {
  const show = defineRoute(
    deps,
    pageSpec(deps, {
      id: "consoleSettingsOrg",
      summary: "Organization settings: the form (admins: `org` picks the organization)",
      method: "GET",
      path: "/console/settings/org",
      roles: MANAGERS,
      query: pageQuery(t.Object({ org: t.Optional(t.String()), done: t.Optional(t.String()) })),
    }),
    ({ query }, { grant: viewer }) => orgPage(deps, viewer, queryId(query.org), { form: null, done: (query.done && DONE[query.done]) || null, problems: null }),
  );

  const save = defineRoute(
    deps,
    pageSpec(deps, {
      id: "consoleSettingsOrgSave",
      summary: "Save an organization's settings through the provisioning service; audited as org.update with previous and new values",
      description:
        "Empty secret boxes keep the stored secret; `sms_remove` / `email_remove` clear a sender; billing fields are read for admins only. Refused input answers 422 with the form and its problems; nothing is written.",
      method: "POST",
      path: "/console/settings/org/{id}",
      roles: MANAGERS,
      params: idParam,
      body: formBody(OrgFormSchema),
    }),
    async ({ params: id, body: form }, { grant: viewer }) => {
      // Confined before anything is built: applyProvisioning would create an org that does not exist.
      if ((await orgSettings(deps.sql, viewer.actor, id)) === null) return notFoundPage(deps, viewer);
      const admin = viewer.actor.orgId === null;
      const r = await applySettings(deps, viewer.actor, orgFragment(id, form, admin));
      if (!r.ok) {
        const { sms_auth_token: _t, email_smtp_url: _u, ...shown } = form;
        return orgPage(deps, viewer, id, { form: shown, done: null, problems: r.problems }, 422);
      }
      const changed = r.summary.counts.orgs?.updated ?? 0;
      return seeOther(`/console/settings/org?${admin ? `org=${id}&` : ""}done=${changed > 0 ? "saved" : "unchanged"}`);
    },
  );

  const newPage = (viewer: Viewer, form: NewOrgForm, problems: string[] | null, status = 200) =>
    consoleHtml(deps, viewer, { title: "New organization", nav: "settings", body: newOrgBody({ form, csrf: csrfField(viewer), problems }), styles: STYLES, status });

  const blank = defineRoute(
    deps,
    pageSpec(deps, { id: "consoleSettingsOrgNew", summary: "New organization: the form, its id the next free one (admins only)", method: "GET", path: "/console/settings/orgs/new", roles: ADMINS }),
    async (_input, { grant: viewer }) => newPage(viewer, { id: String(await nextOrgId(deps)), timezone: "America/New_York", consent: "implied", billing_subscription: "none" }, null),
  );

  const create = defineRoute(
    deps,
    pageSpec(deps, {
      id: "consoleSettingsOrgCreate",
      summary: "Create an organization through the provisioning service, create-only; audited as org.create (admins only)",
      description: "An id taken meanwhile is refused on the form (422), never overwritten; an empty id takes the next free one. Refused input answers 422 with the form, its values kept, and its problems; nothing is written.",
      method: "POST",
      path: "/console/settings/orgs/new",
      roles: ADMINS,
      body: formBody(NewOrgSchema),
    }),
    async ({ body: form }, { grant: viewer }) => {
      const r = await createOrg(deps, viewer.actor, form);
      return r.ok ? seeOther(`/console/settings/org?org=${r.id}&done=created`) : newPage(viewer, form, r.problems, 422);
    },
  );

  // The settings' own address, which people type: on to the navigation's Settings.
  const home = defineRoute(
    deps,
    pageSpec(deps, {
      id: "consoleSettings",
      summary: "Settings: on to the organization's settings",
      method: "GET",
      path: "/console/settings",
      roles: MANAGERS,
      answers: { 303: { description: "On to /console/settings/org" } },
    }),
    () => seeOther("/console/settings/org"),
  );

  return [home, show, save, blank, create];
}
