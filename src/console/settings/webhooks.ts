// /console/settings/webhooks: add an endpoint, edit its URL, events and state, rotate its secret
// and disable it (each confirmed on a page of its own, safe without JavaScript), send a test
// event. A secret is only in the answer of the POST that made it (no-store). Another
// organization's endpoint, or a missing one, is the 404 page and nothing is done.
import { Type as t } from "@sinclair/typebox";
import { defineRoute, type RouteSpec } from "../../http/define";
import type { Deps } from "../../http/deps";
import { idParam, type Route } from "../../http/route";
import { consoleHtml, csrfField, html, notFoundPage, seeOther, type Html } from "../html";
import { formBody, MANAGERS, pageQuery, pageSpec, type Viewer } from "../route";
import { orgList } from "./org-service";
import { settingsTabs } from "./page";
import { addBody, confirmBody, editBody, type EditView } from "./webhooks-page";
import { addEndpoint, editEndpoint, eventsOf, rotateSecret, scopedEndpoint, sendTest, SUBSCRIPTIONS, type Endpoint } from "./webhooks-service";

const STYLES = ["operations.css"];
const DONE: Record<string, string> = {
  saved: "Endpoint saved.",
  unchanged: "Nothing to change.",
  disabled: "Endpoint disabled: no new events are delivered to it.",
};

const EventBoxes = Object.fromEntries(SUBSCRIPTIONS.map((e) => [`event.${e}`, t.Optional(t.String({ description: `checked: subscribe to ${e}` }))]));
const AddForm = t.Object({ url: t.Optional(t.String()), org: t.Optional(t.String({ description: "admins: the organization; empty: the house's" })), ...EventBoxes });
const EditForm = t.Object({ url: t.Optional(t.String()), active: t.Optional(t.String({ description: "checked: active" })), ...EventBoxes });
const Confirm = t.Object({ confirm: t.Optional(t.String({ description: "present: the confirmation was checked" })) });

export function webhookSettingsRoutes(deps: Deps): Route[] {
  const page = (viewer: Viewer, title: string, body: Html, status = 200) =>
    consoleHtml(deps, viewer, { title, nav: "settings", body: html`${settingsTabs("webhooks")}${body}`, styles: STYLES, status, headers: { "cache-control": "no-store" } });
  const edit = (viewer: Viewer, e: Endpoint, extra: Partial<EditView> = {}, status = 200) =>
    page(viewer, `Webhook endpoint ${e.id}`, editBody({ endpoint: e, csrf: csrfField(viewer), problems: null, done: null, secret: null, secretVerb: "", tested: null, ...extra }), status);
  const spec = <P = undefined, Q = undefined, B = undefined>(id: string, summary: string, path: string, method: "GET" | "POST", more: Pick<RouteSpec<Viewer, P, Q, B>, "params" | "query" | "body"> = {}) =>
    pageSpec<P, Q, B>(deps, { id, summary, method, path, roles: MANAGERS, ...more });
  /** The endpoint of the path, confined to the viewer; null: answer the 404 page. */
  const found = (viewer: Viewer, id: number) => scopedEndpoint(deps.sql, viewer.actor, id);

  return [
    defineRoute(deps, spec("consoleSettingsWebhookNew", "The form to add a webhook endpoint", "/console/settings/webhooks", "GET"), async (_i, { grant: viewer }) => {
      const orgs = viewer.actor.orgId === null ? await orgList(deps.sql) : null;
      return page(viewer, "Add a webhook endpoint", addBody({ csrf: csrfField(viewer), orgs, form: null, problems: null }));
    }),
    defineRoute(
      deps,
      spec("consoleSettingsWebhookAdd", "Add a webhook endpoint (form: url, event.<type>, org for admins); the answer shows its secret once; audited webhook.create", "/console/settings/webhooks", "POST", { body: formBody(AddForm) }),
      async ({ body }, { grant: viewer }) => {
        const admin = viewer.actor.orgId === null;
        const orgs = admin ? await orgList(deps.sql) : null;
        const events = eventsOf(body);
        const form = { url: body.url ?? "", events, org: body.org ?? "" };
        let orgId = viewer.actor.orgId;
        if (admin && form.org !== "") {
          orgId = orgs!.find((o) => String(o.id) === form.org)?.id ?? null;
          if (orgId === null) return page(viewer, "Add a webhook endpoint", addBody({ csrf: csrfField(viewer), orgs, form, problems: ["Choose an organization from the list."] }), 422);
        }
        const r = await addEndpoint(deps, viewer.actor, orgId, form.url, events);
        if (!r.ok) return page(viewer, "Add a webhook endpoint", addBody({ csrf: csrfField(viewer), orgs, form, problems: r.problems }), 422);
        const e = (await found(viewer, r.value.id))!;
        return edit(viewer, e, { secret: r.value.secret, secretVerb: "added" });
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsWebhook", "One webhook endpoint's form: URL, events, active; test, rotate, disable", "/console/settings/webhooks/{id}", "GET", {
        params: idParam,
        query: pageQuery(t.Object({ done: t.Optional(t.String()) })),
      }),
      async ({ params: id, query }, { grant: viewer }) => {
        const e = await found(viewer, id);
        return e ? edit(viewer, e, { done: (query.done && DONE[query.done]) || null }) : notFoundPage(deps, viewer);
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsWebhookSave", "Save a webhook endpoint's URL, events and active state through the provisioning service; audited webhook.update", "/console/settings/webhooks/{id}", "POST", {
        params: idParam,
        body: formBody(EditForm),
      }),
      async ({ params: id, body }, { grant: viewer }) => {
        const e = await found(viewer, id);
        if (!e) return notFoundPage(deps, viewer);
        const r = await editEndpoint(deps, viewer.actor, e, { url: body.url ?? "", events: eventsOf(body), active: body.active !== undefined });
        if (!r.ok) return edit(viewer, e, { problems: r.problems }, 422);
        return seeOther(`/console/settings/webhooks/${id}?done=${r.value ? "saved" : "unchanged"}`);
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsWebhookTest", "Send a signed `webhook.test` event to the endpoint now; the answer shows its status; audited webhook.test", "/console/settings/webhooks/{id}/test", "POST", { params: idParam }),
      async ({ params: id }, { grant: viewer }) => {
        const e = await found(viewer, id);
        if (!e) return notFoundPage(deps, viewer);
        return edit(viewer, e, { tested: await sendTest(deps, viewer.actor, e) });
      },
    ),
    ...(["rotate", "disable"] as const).flatMap((what) => [
      defineRoute(
        deps,
        spec(what === "rotate" ? "consoleSettingsWebhookRotateConfirm" : "consoleSettingsWebhookDisableConfirm", `The confirmation page: ${what} a webhook endpoint${what === "rotate" ? "'s secret" : ""}`, `/console/settings/webhooks/{id}/${what}`, "GET", { params: idParam }),
        async ({ params: id }, { grant: viewer }) => {
          const e = await found(viewer, id);
          return e ? page(viewer, what === "rotate" ? "Rotate a webhook secret" : "Disable a webhook endpoint", confirmBody(e, csrfField(viewer), what)) : notFoundPage(deps, viewer);
        },
      ),
      defineRoute(
        deps,
        spec(
          what === "rotate" ? "consoleSettingsWebhookRotate" : "consoleSettingsWebhookDisable",
          what === "rotate"
            ? "Rotate a webhook endpoint's secret (form: confirm); the answer shows the new secret once; audited webhook.update (secret: changed)"
            : "Disable a webhook endpoint (form: confirm): active false; audited webhook.update",
          `/console/settings/webhooks/{id}/${what}`,
          "POST",
          { params: idParam, body: formBody(Confirm) },
        ),
        async ({ params: id, body }, { grant: viewer }) => {
          const e = await found(viewer, id);
          if (!e) return notFoundPage(deps, viewer);
          // Without the box checked, back to the confirmation: a stray post changes nothing.
          if (body.confirm === undefined) return seeOther(`/console/settings/webhooks/${id}/${what}`);
          if (what === "disable") {
            const r = await editEndpoint(deps, viewer.actor, e, { active: false });
            return r.ok ? seeOther(`/console/settings/webhooks/${id}?done=disabled`) : edit(viewer, e, { problems: r.problems }, 422);
          }
          const r = await rotateSecret(deps, viewer.actor, e);
          return r.ok ? edit(viewer, e, { secret: r.value, secretVerb: "secret rotated" }) : edit(viewer, e, { problems: r.problems }, 422);
        },
      ),
    ]),
  ];
}
