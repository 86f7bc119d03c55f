// Two-step sign-in from the account page: set up (a new secret shown, with its otpauth URI), then
// turned on, moved to a new device or turned off. A session alone cannot change it: a stolen
// cookie could otherwise swap in the thief's own device, or turn it off by guessing (a code has
// a million values; unlimited tries took 300 guesses in 0.7 s). So every change takes the
// password and, while it is on, a current code of the device it has; the tries are limited per
// user through the one limiter (two_step_code, shared with sign-in's codes); the change ends
// every other session of the user and is audited in its transaction. `leadline users totp-off`
// is the way back for a user who lost the device.
import { Type as t } from "@sinclair/typebox";
import type { Sql, Tx } from "../db/client";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import type { Route } from "../http/route";
import { BUSY_RETRY_S } from "../auth/passwords";
import { openSecret, seal } from "../secrets/seal";
import { attempt, untilNextHour } from "./attempts";
import { audit } from "./audit";
import { consoleHtml, csrfField, html, notice, seeOther, type Html } from "./html";
import { formBody, pageQuery, pageSpec, type Viewer } from "./route";
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

const passwordField = (id: string) =>
  html`<div class="field"><label for="${id}">Your password</label><input id="${id}" name="password" type="password" autocomplete="current-password" required maxlength="256"></div>`;
const codeField = (id: string, name: string, label: string) =>
  html`<div class="field"><label for="${id}">${label}</label><input id="${id}" name="${name}" type="text" inputmode="numeric" autocomplete="one-time-code" required maxlength="7"></div>`;

/** The account page's section: on (the forms that turn it off or move it) or off (the button that sets it up). */
export function twoStepSection(viewer: Viewer, on: boolean, problem: string | null = null): Html {
  return html`<h2 id="two-step">Two-step sign-in</h2>
<div class="card">${problem ? notice(problem, "error") : null}
${on
  ? html`<p><span class="badge badge-ok">On</span> Signing in asks for a code from your authenticator app.</p>
<form method="post" action="/console/account/two-step/off">${csrfField(viewer)}
${passwordField("off-password")}
${codeField("off-code", "code", "A current code from your app")}
<button type="submit" class="btn btn-danger">Turn off</button></form>
<form method="post" action="/console/account/two-step/setup" class="actions">${csrfField(viewer)}<button type="submit" class="btn">Move to a new device</button></form>`
  : html`<p><span class="badge">Off</span> With it on, signing in also asks for a code from an authenticator app on your phone.</p>
<form method="post" action="/console/account/two-step/setup">${csrfField(viewer)}<button type="submit" class="btn">Set up two-step sign-in</button></form>`}
</div>`;
}

/** Ends every session of the user but the one making the change; how many it ended. */
async function endOtherSessions(tx: Sql | Tx, viewer: Viewer, now: number): Promise<number> {
  const rows = await tx`
    update console_sessions set revoked_at = ${new Date(now)}
    where user_id = ${viewer.user.id} and revoked_at is null and token_hash <> decode(${viewer.sessionId}, 'hex')
    returning 1`;
  return rows.length;
}

type Checked = { ok: true; steps: number[]; giveBack(): Promise<void> } | { ok: false; status: number; problem: string; headers?: Record<string, string> };

const HTML = "text/html; charset=utf-8";

const PASSWORD = t.Optional(t.String({ description: "the user's password" }));
const ConfirmForm = t.Object({
  code: t.Optional(t.String({ description: "a code of the new secret" })),
  current_code: t.Optional(t.String({ description: "moving: a current code of the secret in use" })),
  password: PASSWORD,
});
const OffForm = t.Object({ code: t.Optional(t.String({ description: "a current code" })), password: PASSWORD });
/** What a change's proof may answer besides every page's. */
const PROVEN = {
  429: { description: "Too many wrong tries for this user this hour (the form again; `Retry-After`)", contentType: HTML },
  503: { description: "Password checks are full: try again after `Retry-After` seconds", contentType: HTML },
} as const;

export function twoStepRoutes(deps: Deps): Route[] {
  const key = deps.config.secretKey;
  const now = () => deps.clock.now();
  const MISMATCH = "The password or a code does not match. Nothing changed.";

  /**
   * The proof a change needs, within the user's limit of tries: the password, and a code of each
   * secret given (`codes`: the secret and the code typed for it). The answer does not say which
   * was wrong.
   */
  const prove = async (viewer: Viewer, password: string, codes: { secret: string; code: string }[], lastStep: number): Promise<Checked> => {
    const tried = await attempt(deps.limits, [["two_step_code", viewer.user.id]]);
    if (!tried.admitted) {
      if (tried.audit) await audit(deps.sql, viewer.actor, "user.two_step_refused", `user:${viewer.user.id}`, { reason: "throttled" });
      return {
        ok: false,
        status: 429,
        problem: "Too many wrong tries this hour. Nothing changed; try again later.",
        headers: { "retry-after": String(untilNextHour(now())) },
      };
    }
    const [row] = await deps.sql<{ password_hash: string | null }[]>`select password_hash from users where id = ${viewer.user.id}`;
    const passwordOk = await deps.passwords.verify(password, row?.password_hash ?? null);
    if (passwordOk === "busy") {
      await tried.giveBack();
      return {
        ok: false,
        status: 503,
        problem: "The server is busy just now. Nothing changed; try again in a moment.",
        headers: { "retry-after": String(BUSY_RETRY_S) },
      };
    }
    const steps = codes.map((c) => matchingStep(c.secret, c.code, now(), lastStep));
    if (!passwordOk || steps.some((s) => s === null)) {
      await audit(deps.sql, viewer.actor, "user.two_step_refused", `user:${viewer.user.id}`, { reason: "mismatch" });
      return { ok: false, status: 200, problem: MISMATCH };
    }
    return { ok: true, steps: steps as number[], giveBack: tried.giveBack };
  };

  const setupPage = (viewer: Viewer, secret: string, replacing: boolean, problem: string | null, status = 200, headers: Record<string, string> = {}) =>
    consoleHtml(deps, viewer, {
      title: replacing ? "Move two-step sign-in to a new device" : "Set up two-step sign-in",
      nav: null,
      status,
      headers,
      body: html`${problem ? notice(problem, "error") : null}
<ol>
<li>In your authenticator app, add an account with this key (or paste the link below):
<p class="secret">${secret.replace(/(.{4})/g, "$1 ").trim()}</p>
<p><code class="secret">${otpauthUri(secret, viewer.user.email)}</code></p></li>
<li>Enter the 6-digit code it shows, and your password${replacing ? ", and a code from the device you use now" : ""}. Your other sessions end.
<form method="post" action="/console/account/two-step/confirm">${csrfField(viewer)}
${codeField("code", "code", "Code from the new app")}
${replacing ? codeField("current-code", "current_code", "A current code from the device you use now") : null}
${passwordField("password")}
<button type="submit" class="btn btn-primary">${replacing ? "Move" : "Turn on"}</button></form></li>
</ol>
<p><a href="/console/account">Cancel</a></p>`,
    });

  const offPage = (viewer: Viewer, problem: string, status: number, headers: Record<string, string> = {}) =>
    consoleHtml(deps, viewer, {
      title: "Two-step sign-in",
      nav: null,
      status,
      headers,
      body: html`${twoStepSection(viewer, true, problem)}<p><a href="/console/account">Back to your account</a></p>`,
    });

  return [
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleTwoStepSetup",
        summary: "Start setting up two-step sign-in, or moving it (a new secret, pending)",
        method: "POST",
        path: "/console/account/two-step/setup",
        body: formBody(t.Object({})),
      }),
      async (_input, { grant: viewer }) => {
        // Only pending: nothing changes until confirm proves the password (and the current device).
        await deps.sql`update users set totp_pending = ${seal(key, newTotpSecret())} where id = ${viewer.user.id}`;
        return seeOther("/console/account/two-step");
      },
    ),
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleTwoStepPage",
        summary: "The secret being set up, and the form that confirms it",
        method: "GET",
        path: "/console/account/two-step",
      }),
      async (_input, { grant: viewer }) => {
        const state = await totpState(deps.sql, viewer.user.id);
        if (state.pending === null) return seeOther("/console/account");
        return setupPage(viewer, openSecret(key, state.pending, "a TOTP secret"), state.secret !== null, null);
      },
    ),
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleTwoStepConfirm",
        summary: "Turn two-step sign-in on (or move it) with a first code, the password and, when moving, a current code",
        method: "POST",
        path: "/console/account/two-step/confirm",
        answers: PROVEN,
        body: formBody(ConfirmForm),
      }),
      async ({ body: form }, { grant: viewer }) => {
        const state = await totpState(deps.sql, viewer.user.id);
        if (state.pending === null) return seeOther("/console/account");
        const fresh = openSecret(key, state.pending, "a TOTP secret");
        const codes = [{ secret: fresh, code: form.code ?? "" }];
        if (state.secret !== null) codes.push({ secret: openSecret(key, state.secret, "a TOTP secret"), code: form.current_code ?? "" });
        const proof = await prove(viewer, form.password ?? "", codes, state.step);
        if (!proof.ok) return setupPage(viewer, fresh, state.secret !== null, proof.problem, proof.status, proof.headers);
        const action = state.secret === null ? "user.two_step_on" : "user.two_step_change";
        const changed = await deps.sql.begin(async (tx) => {
          // Only the secret this page showed, and only if the one it replaces is still the one proven.
          const rows = await tx`
            update users set totp_secret = totp_pending, totp_pending = null, totp_step = ${Math.max(...proof.steps)}
            where id = ${viewer.user.id} and totp_pending = ${state.pending} and totp_secret is not distinct from ${state.secret}
            returning 1`;
          if (rows.length === 0) return false;
          const ended = await endOtherSessions(tx, viewer, now());
          await audit(tx, viewer.actor, action, `user:${viewer.user.id}`, { sessions_ended: ended });
          return true;
        });
        await proof.giveBack();
        if (!changed) return seeOther("/console/account");
        return seeOther(`/console/account?done=${state.secret === null ? "two-step-on" : "two-step-moved"}`);
      },
    ),
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleTwoStepOff",
        summary: "Turn two-step sign-in off with the password and a current code",
        method: "POST",
        path: "/console/account/two-step/off",
        answers: PROVEN,
        body: formBody(OffForm),
      }),
      async ({ body: form }, { grant: viewer }) => {
        const state = await totpState(deps.sql, viewer.user.id);
        if (state.secret === null) return seeOther("/console/account");
        const proof = await prove(viewer, form.password ?? "", [{ secret: openSecret(key, state.secret, "a TOTP secret"), code: form.code ?? "" }], state.step);
        if (!proof.ok)
          return offPage(
            viewer,
            proof.problem === MISMATCH ? "The password or code does not match: two-step sign-in is still on." : proof.problem,
            proof.status,
            proof.headers,
          );
        await deps.sql.begin(async (tx) => {
          const rows = await tx`
          update users set totp_secret = null, totp_pending = null, totp_step = ${proof.steps[0]!}
          where id = ${viewer.user.id} and totp_secret = ${state.secret} returning 1`;
          if (rows.length === 0) return;
          const ended = await endOtherSessions(tx, viewer, now());
          await audit(tx, viewer.actor, "user.two_step_off", `user:${viewer.user.id}`, { sessions_ended: ended });
        });
        await proof.giveBack();
        return seeOther("/console/account?done=two-step-off");
      },
    ),
  ];
}
