// The signed-in user's own page: who they are, where they are signed in, and a way to end every
// session at once (a lost phone, a shared computer).
import { Type as t } from "@sinclair/typebox";
import { audit } from "./audit";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import type { Route } from "../http/route";
import { consoleHtml, csrfField, flash, html, seeOther, when } from "./html";
import { pageQuery, pageSpec } from "./route";
import { clearedCookie } from "./sessions";
import { totpState, twoStepRoutes, twoStepSection } from "./two-step";

export function accountRoutes(deps: Deps): Route[] {
  const secure = deps.config.baseUrl.startsWith("https:");
  return [
    ...twoStepRoutes(deps),
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleAccount",
        summary: "Your account and sessions",
        method: "GET",
        path: "/console/account",
        query: pageQuery(t.Object({ done: t.Optional(t.String()) })),
      }),
      async ({ query }, { grant: viewer }) => {
        const sessions = await deps.sql<{ created_at: Date; seen_at: Date; current: boolean }[]>`
        select created_at, seen_at, encode(token_hash, 'hex') = ${viewer.sessionId} as current
        from console_sessions where user_id = ${viewer.user.id} and revoked_at is null order by seen_at desc limit 50`;
        const zone = "UTC";
        const u = viewer.user;
        const totp = await totpState(deps.sql, u.id);
        return consoleHtml(deps, viewer, {
          title: "Your account",
          nav: null,
          body: html`${flash(query.done, {
          "two-step-on": "Two-step sign-in is on. Your other sessions have ended.",
          "two-step-moved": "Two-step sign-in has moved to the new device. Your other sessions have ended.",
          "two-step-off": "Two-step sign-in is off. Your other sessions have ended.",
        })}
<div class="card"><dl class="fields">
<dt>Email</dt><dd>${u.email}</dd>
<dt>Name</dt><dd>${u.name || "—"}</dd>
<dt>Role</dt><dd>${u.role}</dd>
<dt>Organization</dt><dd>${u.orgId === null ? "every organization" : String(u.orgId)}</dd>
</dl></div>
<h2>Where you are signed in</h2>
<div class="table-wrap"><table class="data"><thead><tr><th scope="col">Signed in (UTC)</th><th scope="col">Last seen (UTC)</th><th scope="col"></th></tr></thead><tbody>
${sessions.map((s) => html`<tr><td>${when(s.created_at, zone)}</td><td>${when(s.seen_at, zone)}</td><td>${s.current ? "this browser" : ""}</td></tr>`)}
</tbody></table></div>
<form method="post" action="/console/account/sign-out-everywhere" class="actions" data-confirm="Sign out of every browser, this one included?">${csrfField(viewer)}
<button type="submit" class="btn btn-danger">Sign out everywhere</button></form>
${twoStepSection(viewer, totp.secret !== null)}
<p class="muted">To change your password, ask an administrator for a new link (<code>leadline users invite</code>).</p>`,
        });
      },
    ),
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleSignOutEverywhere",
        summary: "End every session of the signed-in user",
        method: "POST",
        path: "/console/account/sign-out-everywhere",
      }),
      async (_input, { grant: viewer }) => {
        await deps.sql.begin(async (tx) => {
          await tx`update console_sessions set revoked_at = ${new Date(deps.clock.now())} where user_id = ${viewer.user.id} and revoked_at is null`;
          await audit(tx, viewer.actor, "session.revoke_all", `user:${viewer.user.id}`);
        });
        return seeOther("/console/login?done=out", { "set-cookie": clearedCookie(secure) });
      },
    ),
  ];
}
