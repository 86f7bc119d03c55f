// /console/settings/pools: the list (with the exhaustion warning of the number-insertion page),
// one pool's form (name, fallback, placeholder, hold TTL), adding a number, deactivating one
// (confirmed on a page of its own, safe without JavaScript). Managers for their organization,
// admins for all; another organization's pool, or a missing one, is the 404 page.
import { Type as t } from "@sinclair/typebox";
import { defineRoute, type RouteSpec } from "../../http/define";
import type { Deps } from "../../http/deps";
import { textParam, type Route } from "../../http/route";
import { poolViews } from "../dni";
import { consoleHtml, csrfField, html, notFoundPage, seeOther, type Html } from "../html";
import { zoneOf } from "../period";
import { formBody, MANAGERS, pageQuery, pageSpec, type Viewer } from "../route";
import { orgList } from "./org-service";
import { settingsTabs } from "./page";
import { confirmBody, editBody, formOf, listBody, type AddForm } from "./pools-page";
import { addNumber, addPool, deactivateNumber, numberOf, poolsOf, savePool, scopedPool, type PoolRow } from "./pools-service";

const STYLES = ["operations.css"];
const DONE: Record<string, string> = {
  saved: "Pool saved.",
  unchanged: "Nothing to change.",
  added: "Number added.",
  created: "Pool added: add its numbers below.",
  deactivated: "Number deactivated: visitors are no longer given it.",
};
const Form = t.Object({ name: t.Optional(t.String()), fallback: t.Optional(t.String()), placeholder: t.Optional(t.String()), ttl_seconds: t.Optional(t.String()) });
const NewForm = t.Object({ ...Form.properties, key: t.Optional(t.String()), org: t.Optional(t.String({ description: "admins: the organization; empty: the house's" })) });
const NumberForm = t.Object({ number: t.Optional(t.String({ description: "10 digits" })) });
const Confirm = t.Object({ number: t.Optional(t.String()), confirm: t.Optional(t.String({ description: "present: the confirmation was checked" })) });
const keyParam = textParam("key");
const Done = pageQuery(t.Object({ done: t.Optional(t.String()) }));

export function poolSettingsRoutes(deps: Deps): Route[] {
  const page = (viewer: Viewer, title: string, body: Html, status = 200) =>
    consoleHtml(deps, viewer, { title, nav: "settings", body: html`${settingsTabs("pools")}${body}`, styles: STYLES, status });
  const spec = <P = undefined, Q = undefined, B = undefined>(id: string, summary: string, path: string, method: "GET" | "POST", more: Pick<RouteSpec<Viewer, P, Q, B>, "params" | "query" | "body"> = {}) =>
    pageSpec<P, Q, B>(deps, { id, summary, method, path, roles: MANAGERS, ...more });
  const href = (key: string) => `/console/settings/pools/${encodeURIComponent(key)}`;
  /** The pool's usage for its warning: the number-insertion page's own views, the one pool's. */
  const viewOf = async (p: PoolRow) => (await poolViews(deps, p.org_id, await zoneOf(deps.sql, p.org_id), deps.clock.now())).find((v) => v.pool.key === p.key) ?? null;
  const edit = async (viewer: Viewer, p: PoolRow, extra: Partial<Parameters<typeof editBody>[0]> = {}, status = 200) =>
    page(
      viewer,
      `Pool ${p.key}`,
      editBody({ pool: p, view: await viewOf(p), form: formOf(p), number: "", csrf: csrfField(viewer), problems: null, numberProblems: null, done: null, ...extra }),
      status,
    );

  const list = async (viewer: Viewer, extra: { done: string | null; form: AddForm | null; problems: string[] | null }, status = 200) => {
    const org = viewer.actor.orgId;
    const views = await poolViews(deps, org, await zoneOf(deps.sql, org), deps.clock.now());
    const orgs = org === null ? await orgList(deps.sql) : null;
    const body = listBody({
      pools: await poolsOf(deps.sql, viewer.actor),
      views: new Map(views.map((v) => [v.pool.key, v])),
      admin: org === null,
      done: extra.done,
      add: { csrf: csrfField(viewer), orgs, form: extra.form, problems: extra.problems },
    });
    return page(viewer, "Number pools", body, status);
  };

  return [
    defineRoute(deps, spec("consoleSettingsPools", "DNI pools: the list, with each pool's exhaustion warning, and the add form", "/console/settings/pools", "GET", { query: Done }), async ({ query }, { grant: viewer }) =>
      list(viewer, { done: (query.done && DONE[query.done]) || null, form: null, problems: null }),
    ),
    defineRoute(
      deps,
      spec("consoleSettingsPoolAdd", "Add a DNI pool (form: key, name, fallback, placeholder, ttl_seconds, org for admins), create-only; a key in use anywhere is refused without saying whose; audited pool.create", "/console/settings/pools", "POST", {
        body: formBody(NewForm),
      }),
      async ({ body }, { grant: viewer }) => {
        let orgId = viewer.actor.orgId;
        if (orgId === null && body.org) {
          orgId = (await orgList(deps.sql)).find((o) => String(o.id) === body.org)?.id ?? null;
          if (orgId === null) return list(viewer, { done: null, form: body, problems: ["Choose an organization from the list."] }, 422);
        }
        const r = await addPool(deps, viewer.actor, orgId, body);
        return r.ok ? seeOther(`${href((body.key ?? "").trim())}?done=created`) : list(viewer, { done: null, form: body, problems: r.problems }, 422);
      },
    ),
    defineRoute(deps, spec("consoleSettingsPool", "One DNI pool's form and its numbers", "/console/settings/pools/{key}", "GET", { params: keyParam, query: Done }), async ({ params: key, query }, { grant: viewer }) => {
      const p = await scopedPool(deps.sql, viewer.actor, key);
      return p ? edit(viewer, p, { done: (query.done && DONE[query.done]) || null }) : notFoundPage(deps, viewer);
    }),
    defineRoute(
      deps,
      spec("consoleSettingsPoolSave", "Save a DNI pool's name, fallback, placeholder and ttl_seconds through the provisioning service; audited pool.update", "/console/settings/pools/{key}", "POST", {
        params: keyParam,
        body: formBody(Form),
      }),
      async ({ params: key, body }, { grant: viewer }) => {
        const p = await scopedPool(deps.sql, viewer.actor, key);
        if (!p) return notFoundPage(deps, viewer);
        const r = await savePool(deps, viewer.actor, p, body);
        if (!r.ok) return edit(viewer, p, { form: body, problems: r.problems }, 422);
        return seeOther(`${href(key)}?done=${(r.summary.counts.dni_pools?.updated ?? 0) > 0 ? "saved" : "unchanged"}`);
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsPoolNumberAdd", "Add a number to a DNI pool (form: number); one active in another pool is refused without naming it; audited pool.update", "/console/settings/pools/{key}/numbers", "POST", {
        params: keyParam,
        body: formBody(NumberForm),
      }),
      async ({ params: key, body }, { grant: viewer }) => {
        const p = await scopedPool(deps.sql, viewer.actor, key);
        if (!p) return notFoundPage(deps, viewer);
        const r = await addNumber(deps, viewer.actor, p, numberOf(body.number));
        if (!r.ok) return edit(viewer, p, { number: body.number ?? "", numberProblems: r.problems }, 422);
        return seeOther(`${href(key)}?done=${r.changed ? "added" : "unchanged"}`);
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsPoolDeactivateConfirm", "The confirmation page: deactivate a DNI pool's number", "/console/settings/pools/{key}/deactivate", "GET", {
        params: keyParam,
        query: pageQuery(t.Object({ number: t.Optional(t.String()) })),
      }),
      async ({ params: key, query }, { grant: viewer }) => {
        const p = await scopedPool(deps.sql, viewer.actor, key);
        const number = numberOf(query.number);
        // Only a number active in the pool has a confirmation page.
        if (!p || !p.numbers.includes(number)) return notFoundPage(deps, viewer);
        return page(viewer, "Deactivate a number", confirmBody(p, number, csrfField(viewer)));
      },
    ),
    defineRoute(
      deps,
      spec("consoleSettingsPoolDeactivate", "Deactivate a DNI pool's number (form: number, confirm); its row and history stay; audited pool.update", "/console/settings/pools/{key}/deactivate", "POST", {
        params: keyParam,
        body: formBody(Confirm),
      }),
      async ({ params: key, body }, { grant: viewer }) => {
        const p = await scopedPool(deps.sql, viewer.actor, key);
        if (!p) return notFoundPage(deps, viewer);
        const number = numberOf(body.number);
        // Without the box checked, back to the confirmation: a stray post changes nothing.
        if (body.confirm === undefined) return seeOther(p.numbers.includes(number) ? `${href(key)}/deactivate?number=${number}` : href(key));
        const r = await deactivateNumber(deps, viewer.actor, p, number);
        if (!r.ok) return edit(viewer, p, { numberProblems: r.problems }, 422);
        return seeOther(`${href(key)}?done=${r.changed ? "deactivated" : "unchanged"}`);
      },
    ),
  ];
}
