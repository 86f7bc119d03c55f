// Setting a password through a one-time link (`leadline users invite`). The link's token is in a
// path, and paths land in access logs (nginx's `$uri`), so the first GET spends it: it is exchanged
// for a new token in a short-lived HttpOnly cookie (users.ts openInvite) and the browser is sent
// on to /console/invite, an address that holds no token. The form there works for INVITE_OPEN_MS
// in that browser; setting the password uses the invite up. A newer invite revokes older ones.
import { Type as t } from "@sinclair/typebox";
import { BUSY_RETRY_S } from "../auth/passwords";
import type { Deps } from "../http/deps";
import { ownHost } from "../http/host";
import { defineRoute } from "../http/define";
import { type Input, type Route, textParam } from "../http/route";
import { html, notice, plainPage, seeOther, type Html } from "./html";
import { formBody, publicPageSpec, sameOrigin } from "./route";
import { INVITE_OPEN_MS, inviteUserOf, openInvite, PASSWORD_MAX, PASSWORD_MIN, passwordProblem, setPasswordHash } from "./users";

const HTML = "text/html; charset=utf-8";
const COOKIE = "leadline_invite";

const tokenParam = textParam("token");

const inviteCookie = (token: string, secure: boolean) =>
  `${COOKIE}=${token}; Path=/console/invite; HttpOnly; SameSite=Lax${secure ? "; Secure" : ""}; Max-Age=${INVITE_OPEN_MS / 1000}`;
const clearedInviteCookie = (secure: boolean) => `${COOKIE}=; Path=/console/invite; HttpOnly; SameSite=Lax${secure ? "; Secure" : ""}; Max-Age=0`;

function inviteToken(request: Request): string | null {
  for (const part of (request.headers.get("cookie") ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === COOKIE) {
      const token = part.slice(eq + 1).trim();
      return token.length >= 20 && token.length <= 100 ? token : null;
    }
  }
  return null;
}

const expiredLink = () =>
  plainPage(
    "This link does not work",
    html`<p>The link is unknown, was already used or opened, has expired, or a newer one was sent. Ask your administrator for a new one.</p>`,
    404,
  );

function passwordForm(email: string, problem?: string): Html {
  return html`${problem ? notice(problem, "error") : null}
<form method="post" action="/console/invite">
<p>For <strong>${email}</strong>.</p>
<input type="text" name="username" value="${email}" autocomplete="username" hidden>
<div class="field"><label for="password">New password</label><input id="password" name="password" type="password" autocomplete="new-password" required minlength="${PASSWORD_MIN}" maxlength="${PASSWORD_MAX}" aria-describedby="password-rule"><p id="password-rule" class="muted">At least ${PASSWORD_MIN} characters.</p></div>
<div class="field"><label for="confirm">The same again</label><input id="confirm" name="confirm" type="password" autocomplete="new-password" required minlength="${PASSWORD_MIN}" maxlength="${PASSWORD_MAX}"></div>
<button type="submit" class="btn btn-primary">Set password</button>
</form>`;
}

export function inviteRoutes(deps: Deps): Route[] {
  const clock = deps.clock;
  const secure = deps.config.baseUrl.startsWith("https:");
  const hostOk = ownHost(deps.config.baseUrl);
  const notFound = { description: "The link is unknown, used, opened before, revoked or expired", contentType: HTML };
  return [
    defineRoute(
      deps,
      publicPageSpec(deps, {
        id: "consoleInviteLink",
        summary: "Open a one-time link: its token is exchanged for a cookie",
        description: `Spends the link's token: answers 303 to \`/console/invite\` with the cookie \`${COOKIE}\` (\`HttpOnly; SameSite=Lax\`, path \`/console/invite\`, ${INVITE_OPEN_MS / 60_000} minutes). A second opening of the link is a 404.`,
        method: "GET",
        path: "/console/invite/{token}",
        params: tokenParam,
        hostAlways: true,
        answers: {
          303: { description: "On to /console/invite, with the cookie" },
          403: { description: "The Host is not BASE_URL's", contentType: HTML },
          404: notFound,
        },
      }),
      async ({ params: linkToken }) => {
        const token = await openInvite(deps.sql, linkToken, clock.now());
        if (token === null) return expiredLink();
        return seeOther("/console/invite", { "set-cookie": inviteCookie(token, secure), "referrer-policy": "no-referrer" });
      },
    ),
    defineRoute(
      deps,
      publicPageSpec(deps, {
        id: "consoleInvitePage",
        summary: "The form that sets a password, for an opened one-time link",
        method: "GET",
        path: "/console/invite",
        answers: { 200: { description: "The form", contentType: HTML }, 404: notFound },
      }),
      async (_input, { request }) => {
        const token = inviteToken(request);
        if (token === null) return expiredLink();
        const user = await inviteUserOf(deps.sql, token, clock.now());
        if (user === null) return expiredLink();
        return plainPage("Set your password", passwordForm(user.email));
      },
    ),
    defineRoute(
      deps,
      publicPageSpec(deps, {
        id: "consoleInvite",
        summary: "Set a password through an opened one-time link",
        description: `Form fields \`password\` and \`confirm\` (${PASSWORD_MIN} to ${PASSWORD_MAX} characters), with the cookie of the opened link. Ends every session of the user; the invite is used up.`,
        method: "POST",
        path: "/console/invite",
        body: formBody(t.Object({ password: t.Optional(t.String()), confirm: t.Optional(t.String()) }), 16 * 1024),
        answers: {
          303: { description: "Set: on to the sign-in page" },
          403: { description: "The Host is not BASE_URL's", contentType: HTML },
          404: notFound,
          422: { description: "The password is refused (the form again, saying why)", contentType: HTML },
          503: { description: "Password checks are full (or the database is away): try again after `Retry-After` seconds", contentType: HTML },
        },
      }),
      async ({ body: form }, { request }) => {
        const token = inviteToken(request);
        if (token === null || !sameOrigin(request, deps.config.baseUrl)) return expiredLink();
        const user = await inviteUserOf(deps.sql, token, clock.now());
        if (user === null) return expiredLink();
        const password = form.password ?? "";
        const problem = passwordProblem(password) ?? (password !== form.confirm ? "the two passwords differ" : null);
        if (problem) return plainPage("Set your password", passwordForm(user.email, `Not set: ${problem}.`), 422);
        const hash = await deps.passwords.hash(password);
        if (hash === "busy") {
          return plainPage("Set your password", passwordForm(user.email, "Not set: the server is busy just now. Try again in a moment."), 503, {
            "retry-after": String(BUSY_RETRY_S),
          });
        }
        if (!(await setPasswordHash(deps.sql, { token }, hash, clock.now()))) return expiredLink();
        return seeOther("/console/login?done=password", { "set-cookie": clearedInviteCookie(secure) });
      },
    ),
  ];
}
