// /console/keys: managers (their organization's keys) and admins (every key); agents get the 404
// page. A created or rotated key's plaintext is in the answer of that POST (no-store), never again.
import { Type as t } from "@sinclair/typebox";
import { listKeys } from "../../auth/admin";
import { SCOPES } from "../../auth/keys";
import { defineRoute } from "../../http/define";
import type { Deps } from "../../http/deps";
import { idParam, type Route } from "../../http/route";
import type { Viewer } from "../route";
import { consoleHtml, csrfField, notFoundPage, seeOther } from "../html";
import { formBody, pageQuery, pageSpec } from "../route";
import type { Role } from "../users";
import { viewerZone } from "../viewer-zone";
import { keysBody, type KeysView } from "./page";
import { agentChoices, createKeyFor, orgChoices, revokeKeyFor, rotateKeyFor, type KeyRequest } from "./service";

const ROLES: Role[] = ["manager", "admin"];
const DONE: Record<string, string> = { revoked: "Key revoked: requests with it are refused from now on." };

/** The keys page with what the answer adds (a new plaintext, a refusal); never cached. */
async function keysPage(deps: Deps, viewer: Viewer, extra: Pick<KeysView, "form" | "issued" | "done" | "error">): Promise<Response> {
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

/** The create form: `scope.<scope>` is a checkbox per scope. */
const KeyForm = t.Object({
  name: t.Optional(t.String({ description: "what uses the key" })),
  agent: t.Optional(t.String({ description: "a user of the organization to bind the key to; empty: none" })),
  org: t.Optional(t.String({ description: "admins: the organization's id; empty: a platform key" })),
  ...Object.fromEntries(SCOPES.map((s) => [`scope.${s}`, t.Optional(t.String({ description: `checked: the key has ${s}` }))])),
});

const requestOf = (form: Readonly<Record<string, string | undefined>>): KeyRequest => ({
  name: form.name ?? "",
  scopes: SCOPES.filter((s) => form[`scope.${s}`] !== undefined),
  agent: form.agent ?? "",
  org: form.org ?? "",
});

const STYLES = ["operations.css"];

export function keyRoutes(deps: Deps): Route[] {
  const list = defineRoute(
    deps,
    pageSpec(deps, {
      id: "consoleKeys",
      summary: "API keys: list and the create form",
      method: "GET",
      path: "/console/keys",
      roles: ROLES,
      query: pageQuery(t.Object({ done: t.Optional(t.String()) })),
    }),
    ({ query }, { grant: viewer }) => keysPage(deps, viewer, { form: null, issued: null, done: (query.done && DONE[query.done]) || null, error: null }),
  );

  const create = defineRoute(
    deps,
    pageSpec(deps, {
      id: "consoleKeyCreate",
      summary: "Create an API key (form: name, scope.<scope>, agent, org for admins); the answer shows its plaintext once",
      description: "Audited as key.create. The answer is the keys page (200, Cache-Control: no-store) with the plaintext, or with the reason when refused.",
      method: "POST",
      path: "/console/keys",
      roles: ROLES,
      body: formBody(KeyForm),
    }),
    async ({ body }, { grant: viewer }) => {
      const form = requestOf(body);
      const r = await createKeyFor(deps.sql, viewer.actor, form);
      if (r.ok) return keysPage(deps, viewer, { form: null, issued: { key: r.issued, verb: "created" }, done: null, error: null });
      return keysPage(deps, viewer, { form, issued: null, done: null, error: r.message });
    },
  );

  const rotate = defineRoute(
    deps,
    pageSpec(deps, {
      id: "consoleKeyRotate",
      summary: "Rotate an API key: a new key with its grants, the old one revoked; the answer shows the new plaintext once",
      description: "Audited as key.rotate.",
      method: "POST",
      path: "/console/keys/{id}/rotate",
      roles: ROLES,
      params: idParam,
      body: formBody(t.Object({})),
    }),
    async ({ params: id }, { grant: viewer }) => {
      const r = await rotateKeyFor(deps.sql, deps.clock, viewer.actor, id);
      if (r.ok) return keysPage(deps, viewer, { form: null, issued: { key: r.issued, verb: `created; key ${id} revoked` }, done: null, error: null });
      if (r.reason === "not_found") return notFoundPage(deps, viewer);
      return keysPage(deps, viewer, { form: null, issued: null, done: null, error: r.message });
    },
  );

  const revoke = defineRoute(
    deps,
    pageSpec(deps, {
      id: "consoleKeyRevoke",
      summary: "Revoke an API key (final); audited as key.revoke",
      method: "POST",
      path: "/console/keys/{id}/revoke",
      roles: ROLES,
      params: idParam,
      body: formBody(t.Object({})),
    }),
    async ({ params: id }, { grant: viewer }) => {
      if (!(await revokeKeyFor(deps.sql, deps.clock, viewer.actor, id))) return notFoundPage(deps, viewer);
      return seeOther("/console/keys?done=revoked");
    },
  );

  return [list, create, rotate, revoke];
}
