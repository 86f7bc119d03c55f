// /console/settings/automations: the list and add form, one automation's form with a preview for a
// real lead. Managers for their organization, admins for all; another organization's automation
// (or lead, for the preview) is the 404 page (or "no lead").
import { Type as t } from "@sinclair/typebox";
import { defineRoute, type RouteSpec } from "../../http/define";
import type { Deps } from "../../http/deps";
import { idParam, type Route } from "../../http/route";
import { consoleHtml, csrfField, html, notFoundPage, seeOther, type Html } from "../html";
import { idParam as queryId } from "../period";
import { formBody, MANAGERS, pageQuery, pageSpec, type Viewer } from "../route";
import { orgList } from "./org-service";
import { settingsTabs } from "./page";
import { editBody, formOf, listBody } from "./automations-page";
import { addAutomation, automationsOf, preview, saveAutomation, scopedAutomation, type AutomationForm } from "./automations-service";

const STYLES = ["operations.css"];
const DONE: Record<string, string> = { saved: "Automation saved.", added: "Automation added.", unchanged: "Nothing to change." };
const Form = t.Object(
  Object.fromEntries(["trigger", "channel", "subject", "body", "delay_minutes", "offset_minutes", "active", "org"].map((k) => [k, t.Optional(t.String())])),
);

export function automationSettingsRoutes(deps: Deps): Route[] {
  const page = (viewer: Viewer, title: string, body: Html, status = 200) =>
    consoleHtml(deps, viewer, { title, nav: "settings", body: html`${settingsTabs("automations")}${body}`, styles: STYLES, status });
  const spec = <P = undefined, Q = undefined, B = undefined>(id: string, summary: string, path: string, method: "GET" | "POST", more: Pick<RouteSpec<Viewer, P, Q, B>, "params" | "query" | "body"> = {}) =>
    pageSpec<P, Q, B>(deps, { id, summary, method, path, roles: MANAGERS, ...more });
  const list = async (viewer: Viewer, extra: { form: AutomationForm | null; problems: string[] | null; done: string | null }, status = 200) => {
    const orgs = viewer.actor.orgId === null ? await orgList(deps.sql) : null;
    return page(viewer, "Automations", listBody({ automations: await automationsOf(deps.sql, viewer.actor), csrf: csrfField(viewer), orgs, ...extra }), status);
  };

  return [
    defineRoute(
      deps,
      spec("consoleSettingsAutomations", "Automations: the list and the add form", "/console/settings/automations", "GET", { query: pageQuery(t.Object({ done: t.Optional(t.String()) })) }),
      ({ query }, { grant: viewer }) => list(viewer, { form: null, problems: null, done: (query.done && DONE[query.done]) || null }),
    ),
    defineRoute(
      deps,
      spec("consoleSettingsAutomationAdd", "Add an automation (form: trigger, channel, delay_minutes, offset_minutes, subject, body, active, org for admins) through the provisioning service; audited automation.create", "/console/settings/automations", "POST", { body: formBody(Form) }),
      async ({ body }, { grant: viewer }) => {
        let orgId = viewer.actor.orgId;
        if (orgId === null && body.org) {
          orgId = (await orgList(deps.sql)).find((o) => String(o.id) === body.org)?.id ?? null;
          if (orgId === null) return list(viewer, { form: body, problems: ["Choose an organization from the list."], done: null }, 422);
        }
        const r = await addAutomation(deps, viewer.actor, orgId, body);
        return r.ok ? seeOther(`/console/settings/automations/${r.id}?done=added`) : list(viewer, { form: body, problems: r.problems, done: null }, 422);
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsAutomation", "One automation's form, merge-field help and a preview for a lead (`lead`: its id; default the organization's newest)", "/console/settings/automations/{id}", "GET", {
        params: idParam,
        query: pageQuery(t.Object({ lead: t.Optional(t.String()), done: t.Optional(t.String()) })),
      }),
      async ({ params: id, query }, { grant: viewer }) => {
        const a = await scopedAutomation(deps.sql, viewer.actor, id);
        if (!a) return notFoundPage(deps, viewer);
        const leadId = queryId(query.lead);
        const shown = await preview(deps.sql, a, query.lead ? (leadId ?? -1) : null);
        return page(viewer, `Automation ${a.id}`, editBody({ automation: a, form: formOf(a), csrf: csrfField(viewer), problems: null, done: (query.done && DONE[query.done]) || null, preview: shown, leadId: query.lead ?? "" }));
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsAutomationSave", "Save an automation through the provisioning service; audited automation.update with previous and new values", "/console/settings/automations/{id}", "POST", { params: idParam, body: formBody(Form) }),
      async ({ params: id, body }, { grant: viewer }) => {
        const a = await scopedAutomation(deps.sql, viewer.actor, id);
        if (!a) return notFoundPage(deps, viewer);
        const r = await saveAutomation(deps, viewer.actor, a, body);
        if (!r.ok) return page(viewer, `Automation ${a.id}`, editBody({ automation: a, form: body, csrf: csrfField(viewer), problems: r.problems, done: null, preview: null, leadId: "" }), 422);
        return seeOther(`/console/settings/automations/${id}?done=${(r.summary.counts.automations?.updated ?? 0) > 0 ? "saved" : "unchanged"}`);
      },
    ),
  ];
}
