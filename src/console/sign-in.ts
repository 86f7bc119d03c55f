// Signing in and out, and the console's entry and its files (invite links: invite.ts). Sign-in
// cannot be turned against the people it admits (docs/console-sign-in.md):
// - failures are limited per account and client address, and per client address, never per
//   account alone, so wrong passwords from one address do not lock the user out of another;
// - password checks run a few at a time (src/auth/passwords.ts); past a short line a sign-in is
//   answered 503 with Retry-After at once, instead of every sign-in waiting behind a flood; an
//   address that has failed this hour gets a check only when one is free, never a place in the
//   line, so a flood from a few addresses cannot hold the line against a user who has not failed;
//   and a user signing in from an address they have signed in from before waits in a line of
//   their own, served first, so a flood from many fresh addresses cannot hold it either;
// - an unknown account is answered exactly like a wrong password (the same page, after the same
//   work), and a two-step code over its limit like a wrong code (a 429 there would say the
//   password was right);
// - failed and throttled sign-ins are audited with the hashed address, never what was typed.
import { Type as t } from "@sinclair/typebox";
import { BUSY_RETRY_S } from "../auth/passwords";
import type { Deps } from "../http/deps";
import type { PeerSource } from "../http/client";
import { defineRoute } from "../http/define";
import type { Fields } from "../http/input";
import { type Input, type Route, textParam } from "../http/route";
import { openSecret } from "../secrets/seal";
import { ASSETS } from "./assets";
import { accountAtAddress, anonymous, attempt, untilNextHour } from "./attempts";
import { audit } from "./audit";
import { html, notice, plainPage, seeOther, type Html } from "./html";
import { inviteRoutes } from "./invite";
import { clientHash, formBody, pageQuery, publicPageSpec, sameOrigin, viewerOf } from "./route";
import { clearedCookie, cookieToken, createSession, endSession, sessionCookie, signedInFrom } from "./sessions";
import { matchingStep } from "./totp";
import { PASSWORD_MAX, takeTotpStep, userByEmail, type SignInRecord } from "./users";

const HTML = "text/html; charset=utf-8";
const SIGN_IN_LIMIT = "failed sign-ins: 20 per account and client address and 100 per client address per hour; 10 wrong two-step codes per user per hour";

const SignInForm = t.Object({
  email: t.Optional(t.String()),
  password: t.Optional(t.String()),
  code: t.Optional(t.String({ description: "with two-step sign-in on: the authenticator app's code" })),
  next: t.Optional(t.String({ description: "a console path to go on to" })),
});
type SignInFields = Fields<typeof SignInForm>;

const nameParam = textParam("name");

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
  const secure = deps.config.baseUrl.startsWith("https:");
  const page = (next: string, email: string, text: string, status: number, headers: Record<string, string> = {}) =>
    plainPage("Sign in", signInForm(next, email, notice(text, "error")), status, headers);

  /** A two-step code: now's (or a step either side), not used before, within the user's limit of wrong ones. */
  const codeOk = async (user: SignInRecord, code: string, address: string): Promise<boolean> => {
    const tried = await attempt(deps.limits, [["two_step_code", user.id]]);
    if (!tried.admitted) {
      if (tried.audit) await audit(deps.sql, anonymous(user.orgId, address), "session.sign_in_throttled", `user:${user.id}`, { limit: tried.refusedBy });
      return false;
    }
    const step = matchingStep(openSecret(deps.config.secretKey, user.totpSecret!, "a TOTP secret"), code, clock.now(), user.totpStep);
    const ok = step !== null && (await takeTotpStep(deps.sql, user.id, step));
    if (ok) await tried.giveBack();
    return ok;
  };

  const signIn = async (form: SignInFields, request: Request, server: PeerSource | null): Promise<Response> => {
    if (!sameOrigin(request, deps.config.baseUrl)) return page("/console/inbox", "", "The form came from another site. Sign in here.", 403);
    const email = (form.email ?? "").trim().toLowerCase().slice(0, 320);
    const password = (form.password ?? "").slice(0, PASSWORD_MAX + 1);
    const next = safeNext(form.next);
    const address = clientHash(deps, request, server);
    const tried = await attempt(deps.limits, [
      ["login_pair", accountAtAddress(email, address)],
      ["login_address", address],
    ]);
    if (!tried.admitted) {
      // Audited once per refused bucket and hour (refusal_audit); the refusals are answered from memory.
      if (tried.audit) {
        const user = email === "" ? null : await userByEmail(deps.sql, email);
        await audit(deps.sql, anonymous(user?.orgId ?? null, address), "session.sign_in_throttled", user ? `user:${user.id}` : "", { limit: tried.refusedBy });
      }
      return page(next, email, "Too many failed sign-ins from here. Wait a while and try again.", 429, { "retry-after": String(untilNextHour(clock.now())) });
    }
    const [user, failedHere] = await Promise.all([email === "" ? null : userByEmail(deps.sql, email), deps.limits.count("login_failed", address)]);
    const place = user?.passwordHash && (await signedInFrom(deps.sql, user.id, address)) ? "front" : failedHere === 0 ? "line" : "now";
    const ok = await deps.passwords.verify(password, user?.passwordHash ?? null, place);
    if (ok === "busy") {
      await tried.giveBack();
      return page(next, email, "Many sign-ins are being checked just now. Try again in a moment.", 503, { "retry-after": String(BUSY_RETRY_S) });
    }
    const second = !ok || !user || user.totpSecret === null ? ok : await codeOk(user, form.code ?? "", address);
    if (!second || !user) {
      const reason = !ok ? "password" : "code";
      await deps.limits.take("login_failed", address);
      await audit(deps.sql, anonymous(user?.orgId ?? null, address), "session.sign_in_failed", user ? `user:${user.id}` : "", { reason });
      return page(next, email, REFUSED, 401);
    }
    await tried.giveBack();
    const { token } = await createSession(deps.sql, user.id, address, clock.now());
    await audit(deps.sql, { orgId: user.orgId, type: "user", id: user.id, agent: null, keyId: null, address }, "session.sign_in", `user:${user.id}`);
    return seeOther(next, { "set-cookie": sessionCookie(token, secure) });
  };

  return [
    defineRoute(
      deps,
      publicPageSpec(deps, {
        id: "consoleHome",
        summary: "The console: on to the inbox",
        method: "GET",
        path: "/console",
        answers: { 303: { description: "On to /console/inbox (or the sign-in page)" } },
      }),
      () => seeOther("/console/inbox"),
    ),
    defineRoute(
      deps,
      publicPageSpec(deps, {
        id: "consoleSignInPage",
        summary: "The sign-in page",
        method: "GET",
        path: "/console/login",
        query: pageQuery(t.Object({ next: t.Optional(t.String()), done: t.Optional(t.String()) })),
        answers: { 200: { description: "The page", contentType: HTML }, 303: { description: "Already signed in: on to the inbox" } },
      }),
      async ({ query }, { request, server }) => {
        if (await viewerOf(deps, request, server)) return seeOther("/console/inbox");
        const done = query.done ?? "";
        return plainPage("Sign in", signInForm(safeNext(query.next), "", Object.hasOwn(DONE, done) ? notice(DONE[done]!) : null));
      },
    ),
    defineRoute(
      deps,
      publicPageSpec(deps, {
        id: "consoleSignIn",
        summary: "Sign in",
        description:
          "Form fields `email`, `password`, `code` (a user with two-step sign-in on: the 6-digit code of their authenticator app), `next`. Success: 303 to `next` (a console path) with the session cookie (`HttpOnly; SameSite=Lax`, `Secure` when BASE_URL is https). An unknown account and a wrong password get the same 401 page. Failures are limited per account and client address and per client address, never per account alone; password checks run a few at a time, and a sign-in that finds the line full is answered 503 with `Retry-After` at once.",
        method: "POST",
        path: "/console/login",
        limit: SIGN_IN_LIMIT,
        body: formBody(SignInForm, 16 * 1024),
        answers: {
          303: { description: "Signed in: on to `next`" },
          401: { description: "Email, password and code (when two-step sign-in is on) do not match an account", contentType: HTML },
          403: { description: "The form came from another site, or the Host is not BASE_URL's", contentType: HTML },
          429: { description: "Too many failed sign-ins this hour for this account from this address, or from this address", contentType: HTML },
          503: { description: "Password checks are full (or the database is away): try again after `Retry-After` seconds", contentType: HTML },
        },
      }),
      ({ body }, { request, server }) => signIn(body, request, server),
    ),
    defineRoute(
      deps,
      publicPageSpec(deps, {
        id: "consoleSignOut",
        summary: "Sign out",
        description: "Ends the session (server-side) and clears the cookie.",
        method: "POST",
        path: "/console/logout",
        body: formBody(t.Object({})),
        answers: { 303: { description: "Signed out: on to the sign-in page" }, 403: { description: "The Host is not BASE_URL's", contentType: HTML } },
      }),
      async (_input, { request }) => {
        const token = cookieToken(request);
        // Only the console's own pages may sign someone out (a cross-site form must not).
        if (token !== null && sameOrigin(request, deps.config.baseUrl)) await endSession(deps.sql, token, clock.now()).catch(() => {});
        return seeOther("/console/login?done=out", { "set-cookie": clearedCookie(secure) });
      },
    ),
    ...inviteRoutes(deps),
    defineRoute(
      deps,
      publicPageSpec(deps, {
        id: "consoleAsset",
        summary: "The console's scripts, style sheets and icon",
        method: "GET",
        path: "/console/assets/{name}",
        params: nameParam,
        answers: {
          200: { description: "The file", contentType: ["text/css; charset=utf-8", "text/javascript; charset=utf-8", "image/svg+xml"] },
          404: { description: "No such file", contentType: "text/plain; charset=utf-8" },
        },
      }),
      ({ params: name }) => {
        const asset = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
        if (!asset)
          return new Response("not found", { status: 404, headers: { "content-type": "text/plain; charset=utf-8", "x-content-type-options": "nosniff" } });
        return new Response(asset.body, {
          headers: { "content-type": asset.type, "cache-control": "public, max-age=31536000, immutable", "x-content-type-options": "nosniff" },
        });
      },
    ),
  ];
}
