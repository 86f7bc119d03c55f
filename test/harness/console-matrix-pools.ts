// The cross-organization table's entries (test/cross-org.test.ts) for the console's DNI pool
// settings. Organization 2's pool (with an active number) is made once per database, when an
// entry first signs in: `cases` then names it. Each case also proves nothing of it changed, since
// a change would answer differently from the missing pool's 404 page.
import type { Sql } from "../../src/db/client";
import type { ConsoleRoute, CrossOrgCase } from "./auth-matrix";
// console-matrix.ts imports this file: only its hoisted acmeClient is used, and only when asked.
import { acmeClient } from "./console-matrix";

const POOL = "bolt-matrix-pool";
const NUMBER = "5126669901";
const MISSING = "no-such-pool";
const made = new WeakMap<Sql, Promise<void>>();

function boltPool(sql: Sql): Promise<void> {
  let p = made.get(sql);
  if (!p) {
    p = (async () => {
      await sql`insert into dni_pools (key, org_id, name) values (${POOL}, 2, 'Bolt matrix')`;
      await sql`insert into dni_numbers (pool_key, number) values (${POOL}, ${NUMBER})`;
    })();
    made.set(sql, p);
  }
  return p;
}

const FORM = { "content-type": "application/x-www-form-urlencoded" };
type Session = (base: string, sql: Sql) => Promise<Record<string, string>>;

const as = (role: "manager" | "agent", posting: boolean): Session => async (base, sql) => {
  const c = await acmeClient(base, sql, role);
  const headers: Record<string, string> = { cookie: c.cookie };
  if (posting) headers["x-csrf-token"] = c.csrf;
  return headers;
};
const withPool = (session: Session): Session => async (base, sql) => {
  await boltPool(sql);
  return session(base, sql);
};

const get = (path: string) => ({ method: "GET" as const, path });
const post = (path: string, form: Record<string, string> = {}) => ({ method: "POST" as const, path, form, headers: FORM });
const one = (name: string, other: CrossOrgCase["other"], missing: CrossOrgCase["missing"]): CrossOrgCase[] => [{ name, other, missing }];
const at = (key: string, suffix = "") => `/console/settings/pools/${key}${suffix}`;

/** A page or post for managers and admins: agents get the 404 page. */
const managers = (name: string, request: ConsoleRoute["request"], crossOrg: ConsoleRoute["crossOrg"]): ConsoleRoute => ({
  name,
  session: withPool(request.method === "POST" ? as("manager", true) : as("manager", false)),
  withoutPermission: request.method === "POST" ? as("agent", true) : as("agent", false),
  request,
  refusals: { noSession: { status: 303 }, noPermission: { status: 404 } },
  crossOrg,
});

export const POOL_ROUTES: Record<string, ConsoleRoute> = {
  consoleSettingsPools: managers("GET /console/settings/pools", get("/console/settings/pools"), { none: "lists the viewer's organization's pools; takes no key" }),
  consoleSettingsPoolAdd: managers("POST /console/settings/pools", post("/console/settings/pools", { key: "matrix-new" }), {
    none: "creates a pool in the viewer's own organization (a manager's posted org is ignored); a key in use anywhere gets one answer, whoever has it (test/console-settings-pools.test.ts)",
  }),
  consoleSettingsPool: managers("GET /console/settings/pools/{key}", get(at(MISSING)), { cases: () => one("another organization's pool", get(at(POOL)), get(at(MISSING))) }),
  consoleSettingsPoolSave: managers("POST /console/settings/pools/{key}", post(at(MISSING), { name: "x" }), {
    cases: () => one("another organization's pool", post(at(POOL), { name: "Taken", ttl_seconds: "30" }), post(at(MISSING), { name: "Taken", ttl_seconds: "30" })),
  }),
  consoleSettingsPoolNumberAdd: managers("POST /console/settings/pools/{key}/numbers", post(at(MISSING, "/numbers"), { number: "5126669902" }), {
    cases: () => one("another organization's pool", post(at(POOL, "/numbers"), { number: "5126669902" }), post(at(MISSING, "/numbers"), { number: "5126669902" })),
  }),
  consoleSettingsPoolDeactivateConfirm: managers("GET /console/settings/pools/{key}/deactivate", get(at(MISSING, `/deactivate?number=${NUMBER}`)), {
    cases: () => one("another organization's pool and number", get(at(POOL, `/deactivate?number=${NUMBER}`)), get(at(MISSING, `/deactivate?number=${NUMBER}`))),
  }),
  consoleSettingsPoolDeactivate: managers("POST /console/settings/pools/{key}/deactivate", post(at(MISSING, "/deactivate"), { number: NUMBER, confirm: "1" }), {
    cases: () => one("another organization's pool and number", post(at(POOL, "/deactivate"), { number: NUMBER, confirm: "1" }), post(at(MISSING, "/deactivate"), { number: NUMBER, confirm: "1" })),
  }),
};
