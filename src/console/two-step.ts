// Two-step sign-in from the account page: set up (a new secret shown once, with its otpauth URI,
// confirmed by a first code), and turned off with a current code. `leadline users totp-off` is the
// way back for a user who lost the device. Every change is audited.
import type { Sql } from "../db/client";
import type { Deps } from "../http/deps";
import type { Route } from "../http/route";
import { openSecret, seal } from "../secrets/seal";
import { audit } from "./audit";
import { consoleHtml, csrfField, html, notice, seeOther, type Html } from "./html";
import { consolePage, formOf, type Viewer } from "./route";
import { matchingStep, newTotpSecret, otpauthUri } from "./totp";

interface TotpState {
  secret: string | null;
  pending: string | null;
  step: number;
}

export async function totpState(sql: Sql, userId: string): Promise<TotpState> {
  const [r] = await sql<{ totp_secret: string | null; totp_pending: string | null; totp_step: number }[]>`
    select totp_secret, totp_pending, totp_step::float8 as totp_step from users where id = ${userId}`;
  return { secret: r?.totp_secret ?? null, pending: r?.totp_pending ?? null, step: Number(r?.totp_step ?? 0) };
}

/** The account page's section: on (with the form that turns it off) or off (with the button that sets it up). */
export function twoStepSection(viewer: Viewer, on: boolean, problem: string | null = null): Html {
  return html`<h2>Two-step sign-in</h2>
<div class="card">${problem ? notice(problem, "error") : null}
${on
  ? html`<p><span class="badge badge-ok">On</span> Signing in asks for a code from your authenticator app.</p>
<form method="post" action="/console/account/two-step/off">${csrfField(viewer)}
<div class="field"><label for="off-code">A current code, to turn it off</label><input id="off-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" required maxlength="7"></div>
<button type="submit" class="btn btn-danger">Turn off</button></form>`
  : html`<p><span class="badge">Off</span> With it on, signing in also asks for a code from an authenticator app on your phone.</p>
<form method="post" action="/console/account/two-step/setup">${csrfField(viewer)}<button type="submit" class="btn">Set up two-step sign-in</button></form>`}
</div>`;
}

export function twoStepRoutes(deps: Deps): Route[] {
  const key = deps.config.secretKey;
  const setupPage = (viewer: Viewer, secret: string, problem: string | null) =>
    consoleHtml(deps, viewer, {
      title: "Set up two-step sign-in",
      nav: null,
      body: html`${problem ? notice(problem, "error") : null}
<ol>
<li>In your authenticator app, add an account with this key (or paste the link below):
<p class="secret">${secret.replace(/(.{4})/g, "$1 ").trim()}</p>
<p><code class="secret">${otpauthUri(secret, viewer.user.email)}</code></p></li>
<li>Enter the 6-digit code it shows:
<form method="post" action="/console/account/two-step/confirm">${csrfField(viewer)}
<div class="field"><label for="code">Code</label><input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" required maxlength="7"></div>
<button type="submit" class="btn btn-primary">Turn on</button></form></li>
</ol>
<p><a href="/console/account">Cancel</a></p>`,
    });
  return [
    consolePage(deps, { id: "consoleTwoStepSetup", summary: "Start setting up two-step sign-in (a new secret)", method: "POST", path: "/console/account/two-step/setup" }, async (viewer) => {
      await deps.sql`update users set totp_pending = ${seal(key, newTotpSecret())} where id = ${viewer.user.id}`;
      return seeOther("/console/account/two-step");
    }),
    consolePage(deps, { id: "consoleTwoStepPage", summary: "The secret being set up, and the form that confirms it", method: "GET", path: "/console/account/two-step" }, async (viewer) => {
      const state = await totpState(deps.sql, viewer.user.id);
      if (state.pending === null) return seeOther("/console/account");
      return setupPage(viewer, openSecret(key, state.pending, "a TOTP secret"), null);
    }),
    consolePage(deps, { id: "consoleTwoStepConfirm", summary: "Turn two-step sign-in on with a first code", method: "POST", path: "/console/account/two-step/confirm" }, async (viewer, request) => {
      const state = await totpState(deps.sql, viewer.user.id);
      if (state.pending === null) return seeOther("/console/account");
      const secret = openSecret(key, state.pending, "a TOTP secret");
      const step = matchingStep(secret, (await formOf(request)).code ?? "", deps.clock.now(), state.step);
      if (step === null) return setupPage(viewer, secret, "That code does not match. Check the phone's clock and try the next code.");
      await deps.sql.begin(async (tx) => {
        await tx`update users set totp_secret = totp_pending, totp_pending = null, totp_step = ${step} where id = ${viewer.user.id} and totp_pending = ${state.pending}`;
        await audit(tx, viewer.actor, "user.two_step_on", `user:${viewer.user.id}`);
      });
      return seeOther("/console/account?done=two-step-on");
    }),
    consolePage(deps, { id: "consoleTwoStepOff", summary: "Turn two-step sign-in off with a current code", method: "POST", path: "/console/account/two-step/off" }, async (viewer, request) => {
      const state = await totpState(deps.sql, viewer.user.id);
      if (state.secret === null) return seeOther("/console/account");
      const step = matchingStep(openSecret(key, state.secret, "a TOTP secret"), (await formOf(request)).code ?? "", deps.clock.now(), state.step);
      if (step === null) return seeOther("/console/account?done=two-step-wrong");
      await deps.sql.begin(async (tx) => {
        await tx`update users set totp_secret = null, totp_step = ${step} where id = ${viewer.user.id}`;
        await audit(tx, viewer.actor, "user.two_step_off", `user:${viewer.user.id}`);
      });
      return seeOther("/console/account?done=two-step-off");
    }),
  ];
}
