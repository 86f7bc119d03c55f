// A signed-in user changes their own password with the current one (POST /console/account/password).
// The current password is checked through the password line (deps.passwords) and the one limiter
// (wrong ones per user per hour: a stolen session must not become a way to guess it); the new one
// follows the invite's rule. Setting it ends every session, this one too (setPasswordHash), so the
// user signs in again with it; audited as user.password_change.
import { Type as t } from "@sinclair/typebox";
import { defineRoute } from "../../http/define";
import type { Deps } from "../../http/deps";
import type { Route } from "../../http/route";
import { attempt } from "../attempts";
import { audit } from "../audit";
import { csrfField, html, notice, seeOther, type Html } from "../html";
import { formBody, pageSpec, type Viewer } from "../route";
import { clearedCookie } from "../sessions";
import { PASSWORD_MAX, PASSWORD_MIN, passwordProblem, setPasswordHash } from "../users";

export const PASSWORD_ERRORS: Record<string, string> = {
  wrong: "That is not your current password. Nothing was changed.",
  mismatch: "The two new passwords differ. Nothing was changed.",
  rule: `The new password needs at least ${PASSWORD_MIN} characters (at most ${PASSWORD_MAX}). Nothing was changed.`,
  throttled: "Too many wrong current passwords this hour. Try again later.",
  busy: "The server is busy checking passwords. Try again in a moment.",
};

/** The account page's form; `error`: a PASSWORD_ERRORS key from the redirect. */
export function passwordSection(viewer: Viewer, error: string | undefined): Html {
  const problem = error !== undefined && Object.hasOwn(PASSWORD_ERRORS, error) ? notice(PASSWORD_ERRORS[error]!, "error") : "";
  return html`<h2 id="password-h">Change your password</h2>${problem}
<form method="post" action="/console/account/password" class="settings-form" aria-labelledby="password-h">${csrfField(viewer)}
<input type="text" name="username" value="${viewer.user.email}" autocomplete="username" hidden>
<div class="field"><label for="pw-current">Current password</label><input id="pw-current" name="current" type="password" autocomplete="current-password" required maxlength="${PASSWORD_MAX}"></div>
<div class="field"><label for="pw-new">New password</label><input id="pw-new" name="password" type="password" autocomplete="new-password" required minlength="${PASSWORD_MIN}" maxlength="${PASSWORD_MAX}" aria-describedby="pw-rule"><p class="muted" id="pw-rule">At least ${PASSWORD_MIN} characters. Every session ends, this one too: you sign in again with the new one.</p></div>
<div class="field"><label for="pw-confirm">The same again</label><input id="pw-confirm" name="confirm" type="password" autocomplete="new-password" required minlength="${PASSWORD_MIN}" maxlength="${PASSWORD_MAX}"></div>
<button class="btn btn-primary" type="submit">Change password</button>
</form>`;
}

export function passwordRoutes(deps: Deps): Route[] {
  const secure = deps.config.baseUrl.startsWith("https:");
  const back = (error: string) => seeOther(`/console/account?pw=${error}#password-h`);
  return [
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleAccountPassword",
        summary: "Change your own password (form: current, password, confirm); every session ends; audited user.password_change",
        description: "A refusal answers 303 to /console/account?pw=wrong|mismatch|rule|throttled|busy. Wrong current passwords are limited per user and hour (limit current_password).",
        method: "POST",
        path: "/console/account/password",
        body: formBody(t.Object({ current: t.Optional(t.String()), password: t.Optional(t.String()), confirm: t.Optional(t.String()) })),
      }),
      async ({ body }, { grant: viewer }) => {
        const password = body.password ?? "";
        if (password !== (body.confirm ?? "")) return back("mismatch");
        if (passwordProblem(password) !== null) return back("rule");
        const [row] = await deps.sql<{ password_hash: string | null }[]>`select password_hash from users where id = ${viewer.user.id}`;
        const tried = await attempt(deps.limits, [["current_password", viewer.user.id]]);
        if (!tried.admitted) {
          if (tried.audit) await audit(deps.sql, viewer.actor, "user.password_change_throttled", `user:${viewer.user.id}`);
          return back("throttled");
        }
        const ok = await deps.passwords.verify((body.current ?? "").slice(0, PASSWORD_MAX), row?.password_hash ?? null);
        if (ok === "busy") {
          await tried.giveBack();
          return back("busy");
        }
        if (!ok) return back("wrong");
        await tried.giveBack();
        const hash = await deps.passwords.hash(password);
        if (hash === "busy") return back("busy");
        await setPasswordHash(deps.sql, { email: viewer.user.email }, hash, deps.clock.now());
        await audit(deps.sql, viewer.actor, "user.password_change", `user:${viewer.user.id}`);
        return seeOther("/console/login?done=password", { "set-cookie": clearedCookie(secure) });
      },
    ),
  ];
}
