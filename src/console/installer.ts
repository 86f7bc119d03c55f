// The first admin (PocketBase's installer link): `serve` on an installation where nobody can sign
// in to the console yet prints (standard error), once, after it listens, a one-time link that creates the first
// admin; `leadline users create --email … --role admin` does the same from the command line.
//
// The token is 32 random bytes; only its SHA-256 is stored (a setting, beside the generated IP
// salt). Each start replaces it; it works for 24 hours, once, and only while no console user
// exists. Opening the link exchanges the token for a cookie scoped to /console/install and
// redirects there, so the token leaves the address bar (and any Referer) at once; the access log
// names routes, never paths. Creating the admin uses the token up and signs the admin in.
import { Type as t } from "@sinclair/typebox";
import { audit } from "./audit";
import type { Sql, Tx } from "../db/client";
import type { Deps } from "../http/deps";
import { defineRoute } from "../http/define";
import { type Input, type Route, textParam } from "../http/route";
import { html, notice, plainPage, type Html } from "./html";
import { clientHash, formBody, publicPageSpec, sameOrigin } from "./route";
import { createSession, sessionCookie } from "./sessions";
import { createUserIn, hashPassword, newToken, PASSWORD_MAX, PASSWORD_MIN, passwordProblem, tokenHash } from "./users";
import { UsageError } from "../errors";

const SETTING = "console_installer";
export const INSTALLER_TTL_MS = 24 * 3_600_000;
const COOKIE = "leadline_install";
const HTML = "text/html; charset=utf-8";
const UNAVAILABLE = { description: "The database cannot be reached just now (the page says to try again)", contentType: HTML };

export const installerUrl = (baseUrl: string, token: string) => `${baseUrl}/console/install/${token}`;

/** Someone who can sign in to the console: an enabled user with a role. */
const consoleUser = (sql: Sql | Tx) => sql`select 1 from users where role is not null and disabled_at is null`;

/**
 * At `serve`'s start: a new installer token when nobody can sign in to the console yet (the
 * plaintext, to print once), replacing any earlier one; null, and no token kept, otherwise.
 */
export async function issueInstallerLink(sql: Sql, now: number): Promise<string | null> {
  return sql.begin(async (tx) => {
    const [someone] = await consoleUser(tx);
    if (someone) {
      await tx`delete from settings where key = ${SETTING}`;
      return null;
    }
    const token = newToken();
    const value = { token_hash: tokenHash(token).toString("hex"), expires_at: new Date(now + INSTALLER_TTL_MS).toISOString() };
    await tx`
      insert into settings (key, value, updated_at) values (${SETTING}, ${tx.json(value)}, ${new Date(now)})
      on conflict (key) do update set value = excluded.value, updated_at = excluded.updated_at`;
    return token;
  });
}

/** The text `serve` prints for a person at a terminal, once, on standard error (never a log line). */
export function installerBanner(url: string): string {
  return (
    [
      "",
      "Nobody can sign in to the console yet. Open this one-time link to create the first admin",
      "(it works once, for 24 hours, until someone can sign in; every start prints a new one):",
      "",
      `  ${url}`,
      "",
      "Or from the command line: leadline users create --email you@example.com --role admin",
      "",
    ].join("\n") + "\n"
  );
}

/** Whether `token` is the live installer token (locking its row inside a transaction that uses it up). */
async function live(sql: Sql | Tx, token: string, now: number, lock = false): Promise<boolean> {
  const [row] = await sql<{ token_hash: string; expires_at: string }[]>`
    select value->>'token_hash' as token_hash, value->>'expires_at' as expires_at from settings
    where key = ${SETTING} and not exists (${consoleUser(sql)}) ${lock ? sql`for update` : sql``}`;
  return row !== undefined && row.token_hash === tokenHash(token).toString("hex") && Date.parse(row.expires_at) > now;
}

export type Made = { ok: true; userId: string } | { ok: false; problem: string } | { ok: false; gone: true };

/** The first admin, with its password, in one transaction that uses the token up. */
export async function createFirstAdmin(deps: Pick<Deps, "sql" | "clock">, token: string, form: Record<string, string>, address: string): Promise<Made> {
  const password = form.password ?? "";
  const problem = passwordProblem(password) ?? (password !== form.confirm ? "the two passwords differ" : null);
  if (problem) return { ok: false, problem };
  const hash = await hashPassword(password);
  const now = deps.clock.now();
  return deps.sql.begin(async (tx) => {
    // Two forms posted at once: the second waits here for the first and then finds the token gone.
    if (!(await live(tx, token, now, true))) return { ok: false, gone: true } as const;
    let userId: string;
    try {
      const user = await createUserIn(tx, { email: form.email ?? "", role: "admin", orgId: null, name: (form.name ?? "").trim().slice(0, 200) });
      userId = user.id;
    } catch (err) {
      if (err instanceof UsageError) return { ok: false, problem: err.message.replace(/^users: /, "") } as const;
      throw err;
    }
    await tx`update users set password_hash = ${hash}, password_changed_at = ${new Date(now)} where id = ${userId}`;
    await tx`delete from settings where key = ${SETTING}`;
    await audit(tx, { orgId: null, type: "user", id: userId, agent: null, keyId: null, address }, "user.create", `user:${userId}`, {
      role: "admin",
      by: "installer",
    });
    return { ok: true, userId } as const;
  });
}

const tokenOf = (request: Request): string | null => {
  for (const part of (request.headers.get("cookie") ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === COOKIE) return part.slice(eq + 1).trim() || null;
  }
  return null;
};

const goneLink = () =>
  plainPage(
    "This link does not work",
    html`<p>The installer link is unknown, was already used, has expired, or someone can already sign in. Restart the service for a new link while nobody can sign in, or run <code>leadline users create --email you@example.com --role admin</code>.</p>`,
    404,
  );

function adminForm(message: Html | null = null, email = "", name = ""): Html {
  return html`${message}
<p>Nobody can sign in yet. The admin you create here acts for every organization, invites the other users and reads the audit log. This link works once.</p>
<form method="post" action="/console/install">
<div class="field"><label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required maxlength="320" value="${email}" autofocus></div>
<div class="field"><label for="name">Name</label><input id="name" name="name" type="text" autocomplete="name" maxlength="200" value="${name}"></div>
<div class="field"><label for="password">Password</label><input id="password" name="password" type="password" autocomplete="new-password" required minlength="${PASSWORD_MIN}" maxlength="${PASSWORD_MAX}" aria-describedby="password-rule"><p id="password-rule" class="muted">At least ${PASSWORD_MIN} characters.</p></div>
<div class="field"><label for="confirm">The same again</label><input id="confirm" name="confirm" type="password" autocomplete="new-password" required minlength="${PASSWORD_MIN}" maxlength="${PASSWORD_MAX}"></div>
<button type="submit" class="btn btn-primary">Create the admin and sign in</button>
</form>`;
}

const AdminForm = t.Object({
  email: t.Optional(t.String()),
  name: t.Optional(t.String()),
  password: t.Optional(t.String()),
  confirm: t.Optional(t.String()),
});

const tokenParam = textParam("token");

export function installerRoutes(deps: Deps): Route[] {
  const secure = deps.config.baseUrl.startsWith("https:");
  const installCookie = (value: string, maxAge: number) =>
    `${COOKIE}=${value}; Path=/console/install; HttpOnly; SameSite=Lax${secure ? "; Secure" : ""}; Max-Age=${maxAge}`;
  return [
    defineRoute(
      deps,
      publicPageSpec(deps, {
        id: "consoleInstallerLink",
        summary: "The installer link: the first admin",
        description: "Exchanges the one-time token for a cookie (path `/console/install`) and redirects to the form, so that the token leaves the address bar.",
        method: "GET",
        path: "/console/install/{token}",
        params: tokenParam,
        answers: {
          303: { description: "On to /console/install" },
          404: { description: "The link is unknown, used, expired, or someone can already sign in", contentType: HTML },
          503: UNAVAILABLE,
        },
      }),
      async ({ params: token }) => {
        if (!(await live(deps.sql, token, deps.clock.now()))) return goneLink();
        return new Response(null, {
          status: 303,
          headers: { location: "/console/install", "cache-control": "no-store", "referrer-policy": "no-referrer", "set-cookie": installCookie(token, 3600) },
        });
      },
    ),
    defineRoute(
      deps,
      publicPageSpec(deps, {
        id: "consoleInstallerPage",
        summary: "The form that creates the first admin",
        method: "GET",
        path: "/console/install",
        answers: {
          200: { description: "The form", contentType: HTML },
          404: { description: "No live installer link was opened in this browser", contentType: HTML },
          503: UNAVAILABLE,
        },
      }),
      async (_input, { request }) => {
        const token = tokenOf(request);
        const ok = token !== null && (await live(deps.sql, token, deps.clock.now()));
        return ok ? plainPage("Create the first admin", adminForm()) : goneLink();
      },
    ),
    defineRoute(
      deps,
      publicPageSpec(deps, {
        id: "consoleInstaller",
        summary: "Create the first admin and sign in",
        description: `Form fields \`email\`, \`name\`, \`password\` and \`confirm\` (${PASSWORD_MIN} to ${PASSWORD_MAX} characters), with the installer cookie. Creates the admin, uses the link up and signs the admin in (303 to the first-steps page with the session cookie).`,
        method: "POST",
        path: "/console/install",
        body: formBody(AdminForm, 16 * 1024),
        answers: {
          303: { description: "Created and signed in: on to the first steps (/console/settings/first-steps)" },
          403: { description: "The form came from another site, or the Host is not BASE_URL's", contentType: HTML },
          404: { description: "No live installer link (used, expired, or someone can already sign in)", contentType: HTML },
          422: { description: "The email or password is refused (the form again, saying why)", contentType: HTML },
          503: UNAVAILABLE,
        },
      }),
      async ({ body: form }, { request, server }) => {
        if (!sameOrigin(request, deps.config.baseUrl)) return plainPage("Create the first admin", notice("The form came from another site.", "error"), 403);
        const token = tokenOf(request);
        if (token === null) return goneLink();
        const address = clientHash(deps, request, server);
        const made = await createFirstAdmin(deps, token, form, address);
        if (!made.ok) {
          if ("gone" in made) return goneLink();
          return plainPage("Create the first admin", adminForm(notice(`Not created: ${made.problem}.`, "error"), form.email ?? "", form.name ?? ""), 422);
        }
        const { token: session } = await createSession(deps.sql, made.userId, address, deps.clock.now());
        const headers = new Headers({ location: "/console/settings/first-steps", "cache-control": "no-store" });
        headers.append("set-cookie", sessionCookie(session, secure));
        headers.append("set-cookie", installCookie("", 0));
        return new Response(null, { status: 303, headers });
      },
    ),
  ];
}
