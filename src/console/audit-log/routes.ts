// /console/audit: managers read their organization's audit log, admins every organization's;
// agents get the 404 page.
import { Type as t } from "@sinclair/typebox";
import { defineRoute } from "../../http/define";
import type { Deps } from "../../http/deps";
import type { Route } from "../../http/route";
import { consoleHtml } from "../html";
import { pageQuery, pageSpec } from "../route";
import { viewerZone } from "../viewer-zone";
import { auditBody } from "./page";
import { auditUsers, listAudit } from "./queries";

export const AUDIT_PAGE = 50;
const ACTION = /^[a-z0-9_.]{1,64}$/;

const STYLES = ["operations.css"];

export function auditRoutes(deps: Deps): Route[] {
  return [
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleAudit",
        summary: "The audit log, newest first: who changed what, when, from which hashed address",
        method: "GET",
        path: "/console/audit",
        roles: ["manager", "admin"],
        query: pageQuery(
          t.Object({
            user: t.Optional(t.String({ description: "a user's id; empty: everyone" })),
            action: t.Optional(t.String({ description: "an action (key.create), or a family ending in a dot (key.)" })),
            before: t.Optional(t.String({ description: "the keyset cursor: entries older than this id" })),
          }),
        ),
      }),
      async ({ query: q }, { grant: viewer }) => {
        const orgId = viewer.actor.orgId;
        const form = { user: (q.user ?? "").slice(0, 200), action: (q.action ?? "").trim().toLowerCase() };
        const before = /^[0-9]{1,15}$/.test(q.before ?? "") ? Number(q.before) : null;
        const [rows, users, zone] = await Promise.all([
          listAudit(deps.sql, {
            orgId,
            user: form.user || null,
            action: ACTION.test(form.action) ? form.action : null,
            before,
            limit: AUDIT_PAGE,
          }),
          auditUsers(deps.sql, orgId),
          viewerZone(deps.sql, orgId),
        ]);
        const shown = rows.slice(0, AUDIT_PAGE);
        const older = rows.length > AUDIT_PAGE ? `/console/audit?${new URLSearchParams({ ...form, before: String(shown[shown.length - 1].id) })}` : null;
        const body = auditBody({ rows: shown, users, form, zone, everyOrg: orgId === null, older });
        return consoleHtml(deps, viewer, { title: "Audit log", nav: "audit", body, styles: STYLES });
      },
    ),
  ];
}
