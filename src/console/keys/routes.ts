// /console/keys: managers (their organization's keys) and admins (every key); agents get the 404
// page. A created or rotated key's plaintext is in the answer of that POST (no-store), never again.
import { Type as t } from "@sinclair/typebox";
import { listKeys } from "../../auth/admin";
import { SCOPES } from "../../auth/keys";
import type { Deps } from "../../http/deps";
import type { Route } from "../../http/route";
import type { Viewer } from "../route";
import { consoleHtml, csrfField, notFoundPage, seeOther } from "../html";
import { consolePage, formOf } from "../route";
import type { Role } from "../users";
import { viewerZone } from "../viewer-zone";
import { keysBody, type KeysView } from "./page";
import { agentChoices, createKeyFor, orgChoices, revokeKeyFor, rotateKeyFor, type KeyRequest } from "./service";

const ROLES: Role[] = ["manager", "admin"];
const ID = /^[0-9]{1,15}$/;
const DONE: Record<string, string> = { revoked: "Key revoked: requests with it are refused from now on." };

/** The keys page with what the answer adds (a new plaintext, a refusal); never cached. */
async function keysPage(
  deps: Deps,
  viewer: Viewer,
  extra: Pick<KeysView, "form" | "issued" | "done" | "error">,
): Promise<Response> {
  const orgId = viewer.actor.orgId;
  const [keys, agents, orgs, zone] = await Promise.all([
    listKeys(deps.sql, orgId),
    agentChoices(deps.sql, orgId),
    orgId === null ? orgChoices(deps.sql) : null,
    viewerZone(deps.sql, orgId),
  ]);
  const body = keysBody({ keys, agents, orgs, zone, csrf: csrfField(viewer), ...extra });
  const res = await consoleHtml(deps, viewer, { title: "API keys", nav: "keys", body, styles: STYLES });
  res.headers.set("cache-control", "no-store");
  return res;
}

const requestOf = (form: Record<string, string>): KeyRequest => ({
  name: form.name ?? "",
  scopes: SCOPES.filter((s) => form[`scope.${s}`] !== undefined),
  agent: form.agent ?? "",
  org: form.org ?? "",
});

const STYLES = ["operations.css"];

export function keyRoutes(deps: Deps): Route[] {
  const list = consolePage(
    deps,
    { id: "consoleKeys", summary: "API keys: list and the create form", method: "GET", path: "/console/keys", roles: ROLES, query: t.Object({ done: t.Optional(t.String()) }) },
    (viewer, _request, selected) =>
      keysPage(deps, viewer, { form: null, issued: null, done: (selected.query.done && DONE[selected.query.done]) || null, error: null }),
  );

  const create = consolePage(
    deps,
    {
      id: "consoleKeyCreate",
      summary: "Create an API key (form: name, scope.<scope>, agent, org for admins); the answer shows its plaintext once",
      description: "Audited as key.create. The answer is the keys page (200, Cache-Control: no-store) with the plaintext, or with the reason when refused.",
      method: "POST",
      path: "/console/keys",
      roles: ROLES,
    },
    async (viewer, request) => {
      const form = requestOf(await formOf(request));
      const r = await createKeyFor(deps.sql, viewer.actor, form);
      if (r.ok) return keysPage(deps, viewer, { form: null, issued: { key: r.issued, verb: "created" }, done: null, error: null });
      return keysPage(deps, viewer, { form, issued: null, done: null, error: r.message });
    },
  );

  const rotate = consolePage(
    deps,
    {
      id: "consoleKeyRotate",
      summary: "Rotate an API key: a new key with its grants, the old one revoked; the answer shows the new plaintext once",
      description: "Audited as key.rotate.",
      method: "POST",
      path: "/console/keys/{id}/rotate",
      roles: ROLES,
    },
    async (viewer, _request, selected) => {
      const raw = selected.params.id ?? "";
      if (!ID.test(raw)) return notFoundPage(deps, viewer);
      const r = await rotateKeyFor(deps.sql, deps.clock, viewer.actor, Number(raw));
      if (r.ok) return keysPage(deps, viewer, { form: null, issued: { key: r.issued, verb: `created; key ${raw} revoked` }, done: null, error: null });
      if (r.reason === "not_found") return notFoundPage(deps, viewer);
      return keysPage(deps, viewer, { form: null, issued: null, done: null, error: r.message });
    },
  );

  const revoke = consolePage(
    deps,
    { id: "consoleKeyRevoke", summary: "Revoke an API key (final); audited as key.revoke", method: "POST", path: "/console/keys/{id}/revoke", roles: ROLES },
    async (viewer, _request, selected) => {
      const raw = selected.params.id ?? "";
      if (!ID.test(raw) || !(await revokeKeyFor(deps.sql, deps.clock, viewer.actor, Number(raw)))) return notFoundPage(deps, viewer);
      return seeOther("/console/keys?done=revoked");
    },
  );

  return [list, create, rotate, revoke];
}
