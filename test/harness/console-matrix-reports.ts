// The cross-organization table's entries (test/cross-org.test.ts) for the console's Calls (and its
// CSV), Number insertion, KPI and Billing pages. They are lists that take no record id; what could
// reach another organization's data is the admins' `org` filter, which a manager's session must
// ignore (naming organization 2 answers the very page naming a missing one), and the Calls page's
// cursor, which is a time and an id, never an id whose time is looked up (an id of organization 2's
// call is no cursor: the first page, like a missing id). Agents get the 404 page on the managers'.
import type { Sql } from "../../src/db/client";
import type { ConsoleRoute } from "./auth-matrix";
// console-matrix.ts imports this file: only its hoisted acmeClient is used, and only when asked.
import { acmeClient } from "./console-matrix";
import { makeKey } from "./factory";

type Session = (base: string, sql: Sql) => Promise<Record<string, string>>;

const MISSING_CALL = 999_999_999;
const ids = { call: 0 };
const made = new WeakMap<Sql, Promise<void>>();

/** A call of organization 2 (reported by its key), made once per database. */
function boltCall(sql: Sql): Promise<void> {
  let p = made.get(sql);
  if (!p) {
    p = (async () => {
      const key = await makeKey(sql, { scopes: ["calls:write"], org: 2, name: "bolt dialer" });
      const [c] = await sql<{ id: number }[]>`
        insert into calls (key_id, phone, status, secs, agent, occurred_at) values (${key.id}, '5126660004', 'ANSWERED', 30, 'agent9', now())
        returning id`;
      ids.call = c.id;
    })();
    made.set(sql, p);
  }
  return p;
}

const as = (role: "manager" | "agent"): Session => async (base, sql) => {
  await boltCall(sql);
  return { cookie: (await acmeClient(base, sql, role)).cookie };
};

function list(name: string, path: string, managers: boolean, callCursor = false): ConsoleRoute {
  return {
    name,
    session: as("manager"),
    ...(managers ? { withoutPermission: as("agent") } : {}),
    request: { method: "GET", path },
    refusals: { noSession: { status: 303 }, ...(managers ? { noPermission: { status: 404 } } : {}) },
    crossOrg: {
      cases: (w) => [
        { name: "the admins' organization filter naming another organization", other: { method: "GET", path: `${path}?org=${w.otherOrg}` }, missing: { method: "GET", path: `${path}?org=${w.missingOrg}` } },
        ...(callCursor
          ? [{ name: "another organization's call id as the page cursor", other: { method: "GET" as const, path: `${path}?after=${ids.call}` }, missing: { method: "GET" as const, path: `${path}?after=${MISSING_CALL}` } }]
          : []),
      ],
    },
  };
}

export const REPORT_ROUTES: Record<string, ConsoleRoute> = {
  consoleCalls: list("GET /console/calls", "/console/calls", false, true),
  // Exporting is a manager's right unless the organization grants it to agents (not organization 1 here).
  consoleCallsCsv: list("GET /console/calls.csv", "/console/calls.csv", true, true),
  consoleDni: list("GET /console/dni", "/console/dni", true),
  consoleKpi: list("GET /console/kpi", "/console/kpi", true),
  consoleKpiCsv: list("GET /console/kpi.csv", "/console/kpi.csv", true),
  consoleBilling: list("GET /console/billing", "/console/billing", true),
};
