// Signing in and out, setting a password through an invite link, the console's entry and its
// files. Sign-in is throttled per account and per client address through the one limiter, and an
// unknown account is answered exactly like a wrong password (the same page, after the same work).
import { Type as t } from "@sinclair/typebox";
import type { Deps } from "../http/deps";
import type { Route } from "../http/route";
import { ASSETS } from "./assets";
import { audit } from "./audit";
import { html, notice, plainPage, seeOther, type Html } from "./html";
import { clientHash, CONSOLE_TAG, formOf, sameOrigin, unavailablePage, viewerOf } from "./route";
import { clearedCookie, cookieToken, createSession, endSession, sessionCookie } from "./sessions";
import { openSecret } from "../secrets/seal";
import { matchingStep } from "./totp";
import { hashPassword, inviteUserOf, PASSWORD_MAX, PASSWORD_MIN, passwordProblem, setPassword, takeTotpStep, userByEmail, type SignInRecord } from "./users";

const HTML = "text/html; charset=utf-8";
const publicSignIn = { kind: "public", limit: "sign-in attempts: 20 per account and 100 per client address per hour" } as const;

/** Where to go after signing in: a console path of ours, never another site (`//evil`, `/\evil`). */
export function safeNext(next: string | undefined): string {
  if (!next || !next.startsWith("/console/") || next.startsWith("//") || /[\\\s]/.test(next) || next.length > 500) return "/console/inbox";
  return next;
}

function signInForm(next: string, email = "", message: Html | null = null): Html {
  return html`${message}
<form method="post" action="/console/login">
<input type="hidden" name="next" value="${next}">
<div class="field"><label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required value="${email}" autofocus></div>
<div class="field"><label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required maxlength="${PASSWORD_MAX}"></div>
<div class="field"><label for="code">Code <span class="muted">(only if you turned on two-step sign-in)</span></label><input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]{6,7}" maxlength="7"></div>
<button type="submit" class="btn btn-primary">Sign in</button>
</form>
<p class="muted">No password yet? Your administrator sends you a link to set one (<code>leadline users invite</code>).</p>`;
}

const DONE: Record<string, string> = {
  out: "You are signed out.",
  password: "Your password is set. Sign in with it.",
};

// One answer for every refusal: which of the three was wrong is not said.
const REFUSED = "That email, password and code (if you use one) do not match an account.";

export function signInRoutes(deps: Deps): Route[] {
  const clock = deps.clock;
  // A real Argon2id hash of a random password, at the cost of real ones: an unknown account is
  // verified against it, so it takes as long as a known one.
  let dummyHash: Promise<string> | null = null;
  const dummy = () => (dummyHash ??= hashPassword(crypto.randomUUID(), deps.passwordCost));
  const codeOk = async (user: SignInRecord, code: string): Promise<boolean> => {
    const step = matchingStep(openSecret(deps.config.secretKey, user.totpSecret!, "a TOTP secret"), code, clock.now(), user.totpStep);
    return step !== null && (await takeTotpStep(deps.sql, user.id, step));
  };
  const secure = deps.config.baseUrl.startsWith("https:");
  const signIn = async (request: Request, server: Parameters<Route["handle"]>[1]): Promise<Response> => {
    if (!sameOrigin(request, deps.config.baseUrl)) return plainPage("Sign in", signInForm("/console/inbox", "", html`${notice("The form came from another site. Sign in here.", "error")}`), 403);
    const form = await formOf(request);
    const email = (form.email ?? "").trim().toLowerCase().slice(0, 320);
    const password = (form.password ?? "").slice(0, PASSWORD_MAX + 1);
    const next = safeNext(form.next);
    const address = clientHash(deps, request, server);
    const [byAccount, byAddress] = await Promise.all([deps.limits.take("login_account", email), deps.limits.take("login_address", address)]);
    if (!byAccount || !byAddress) {
      return plainPage("Sign in", signInForm(next, email, notice("Too many sign-in attempts. Wait a while and try again.", "error")), 429, { "retry-after": "900" });
    }
    const user = email === "" ? null : await userByEmail(deps.sql, email);
    const ok = user?.passwordHash ? await Bun.password.verify(password, user.passwordHash) : (await Bun.password.verify(password, await dummy()), false);
    // With two-step sign-in on, the code of now (or a step either side) that was not used before.
    const second = !ok || !user || user.totpSecret === null ? ok : await codeOk(user, form.code ?? "");
    if (!second || !user) return plainPage("Sign in", signInForm(next, email, notice(REFUSED, "error")), 401);
    const { token } = await createSession(deps.sql, user.id, address, clock.now());
    await audit(deps.sql, { orgId: user.orgId, type: "user", id: user.id, agent: null, keyId: null, address }, "session.sign_in", `user:${user.id}`);
    return seeOther(next, { "set-cookie": sessionCookie(token, secure) });
  };
  const routes: Route[] = [
    {
      id: "consoleHome",
      tag: CONSOLE_TAG,
      summary: "The console: on to the inbox",
      method: "GET",
      path: "/console",
      access: { kind: "public" },
      answers: { 303: { description: "On to /console/inbox (or the sign-in page)" } },
      errors: [],
      handle: () => seeOther("/console/inbox"),
    },
    {
      id: "consoleSignInPage",
      tag: CONSOLE_TAG,
      summary: "The sign-in page",
      method: "GET",
      path: "/console/login",
      access: { kind: "public" },
      query: t.Object({ next: t.Optional(t.String()), done: t.Optional(t.String()) }),
      answers: { 200: { description: "The page", contentType: HTML }, 303: { description: "Already signed in: on to the inbox" } },
      errors: [],
      handle: async (request, server) => {
        try {
          if (await viewerOf(deps, request, server)) return seeOther("/console/inbox");
        } catch {
          return unavailablePage();
        }
        const url = new URL(request.url);
        const done = url.searchParams.get("done") ?? "";
        return plainPage("Sign in", signInForm(safeNext(url.searchParams.get("next") ?? undefined), "", Object.hasOwn(DONE, done) ? notice(DONE[done]!) : null));
      },
    },
    {
      id: "consoleSignIn",
      tag: CONSOLE_TAG,
      summary: "Sign in",
      description:
        "Form fields `email`, `password`, `code` (a user with two-step sign-in on: the 6-digit code of their authenticator app), `next`. Success: 303 to `next` (a console path) with the session cookie (`HttpOnly; SameSite=Lax`, `Secure` when BASE_URL is https). An unknown account and a wrong password get the same 401 page.",
      method: "POST",
      path: "/console/login",
      access: publicSignIn,
      body: { schema: t.Object({ email: t.String(), password: t.String(), code: t.Optional(t.String()), next: t.Optional(t.String()) }), form: true, limit: 16 * 1024 },
      answers: {
        303: { description: "Signed in: on to `next`" },
        401: { description: "Email, password and code (when two-step sign-in is on) do not match an account", contentType: HTML },
        403: { description: "The form came from another site", contentType: HTML },
        429: { description: "Too many attempts for this account or address this hour", contentType: HTML },
      },
      errors: [],
      handle: async (request, server) => {
        try {
          return await signIn(request, server);
        } catch {
          return unavailablePage();
        }
      },
    },
    {
      id: "consoleSignOut",
      tag: CONSOLE_TAG,
      summary: "Sign out",
      description: "Ends the session (server-side) and clears the cookie.",
      method: "POST",
      path: "/console/logout",
      access: { kind: "public" },
      answers: { 303: { description: "Signed out: on to the sign-in page" } },
      errors: [],
      handle: async (request) => {
        const token = cookieToken(request);
        // Only the console's own pages may sign someone out (a cross-site form must not).
        if (token !== null && sameOrigin(request, deps.config.baseUrl)) await endSession(deps.sql, token, clock.now()).catch(() => {});
        return seeOther("/console/login?done=out", { "set-cookie": clearedCookie(secure) });
      },
    },
    {
      id: "consoleInvitePage",
      tag: CONSOLE_TAG,
      summary: "Set a password through a one-time link",
      method: "GET",
      path: "/console/invite/{token}",
      access: { kind: "public" },
      answers: { 200: { description: "The form", contentType: HTML }, 404: { description: "The link is unknown, used or expired", contentType: HTML } },
      errors: [],
      handle: async (_request, _server, selected) => {
        const token = selected.params.token ?? "";
        const user = await inviteUserOf(deps.sql, token, clock.now()).catch(() => undefined);
        if (user === undefined) return unavailablePage();
        if (user === null) return expiredLink();
        return plainPage("Set your password", passwordForm(token, user.email));
      },
    },
    {
      id: "consoleInvite",
      tag: CONSOLE_TAG,
      summary: "Set a password through a one-time link",
      description: `Form fields \`password\` and \`confirm\` (${PASSWORD_MIN} to ${PASSWORD_MAX} characters). Ends every session of the user; the link is used up.`,
      method: "POST",
      path: "/console/invite/{token}",
      access: { kind: "public" },
      body: { schema: t.Object({ password: t.String(), confirm: t.String() }), form: true, limit: 16 * 1024 },
      answers: {
        303: { description: "Set: on to the sign-in page" },
        404: { description: "The link is unknown, used or expired", contentType: HTML },
        422: { description: "The password is refused (the form again, saying why)", contentType: HTML },
      },
      errors: [],
      handle: async (request, _server, selected) => {
        const token = selected.params.token ?? "";
        if (!sameOrigin(request, deps.config.baseUrl)) return expiredLink();
        try {
          const user = await inviteUserOf(deps.sql, token, clock.now());
          if (user === null) return expiredLink();
          const form = await formOf(request);
          const password = form.password ?? "";
          const problem = passwordProblem(password) ?? (password !== form.confirm ? "the two passwords differ" : null);
          if (problem) return plainPage("Set your password", passwordForm(token, user.email, `Not set: ${problem}.`), 422);
          if (!(await setPassword(deps.sql, { token }, password, clock.now(), deps.passwordCost))) return expiredLink();
          return seeOther("/console/login?done=password");
        } catch {
          return unavailablePage();
        }
      },
    },
    {
      id: "consoleAsset",
      tag: CONSOLE_TAG,
      summary: "The console's scripts, style sheets and icon",
      method: "GET",
      path: "/console/assets/{name}",
      access: { kind: "public" },
      answers: {
        200: { description: "The file", contentType: ["text/css; charset=utf-8", "text/javascript; charset=utf-8", "image/svg+xml"] },
        404: { description: "No such file", contentType: "text/plain; charset=utf-8" },
      },
      errors: [],
      handle: (_request, _server, selected) => {
        const name = selected.params.name ?? "";
        const asset = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
        if (!asset) return new Response("not found", { status: 404, headers: { "content-type": "text/plain; charset=utf-8", "x-content-type-options": "nosniff" } });
        return new Response(asset.body, {
          headers: { "content-type": asset.type, "cache-control": "public, max-age=31536000, immutable", "x-content-type-options": "nosniff" },
        });
      },
    },
  ];
  return routes;
}

const expiredLink = () =>
  plainPage("This link does not work", html`<p>The link is unknown, was already used, or has expired. Ask your administrator for a new one.</p>`, 404);

function passwordForm(token: string, email: string, problem?: string): Html {
  return html`${problem ? notice(problem, "error") : null}
<form method="post" action="/console/invite/${encodeURIComponent(token)}">
<p>For <strong>${email}</strong>.</p>
<input type="text" name="username" value="${email}" autocomplete="username" hidden>
<div class="field"><label for="password">New password</label><input id="password" name="password" type="password" autocomplete="new-password" required minlength="${PASSWORD_MIN}" maxlength="${PASSWORD_MAX}" aria-describedby="password-rule"><p id="password-rule" class="muted">At least ${PASSWORD_MIN} characters.</p></div>
<div class="field"><label for="confirm">The same again</label><input id="confirm" name="confirm" type="password" autocomplete="new-password" required minlength="${PASSWORD_MIN}" maxlength="${PASSWORD_MAX}"></div>
<button type="submit" class="btn btn-primary">Set password</button>
</form>`;
}
