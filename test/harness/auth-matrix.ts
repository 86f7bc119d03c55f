// The tables of every authenticated route, and their checks. One entry per declared route, keyed by
// its id (test/cross-org.test.ts fails for a declared route without one):
// - key routes: no key, unknown key, inactive key, revoked key and a key without the route's scope
//   are all refused with 403 and the route's code (expectKeyRefusals, test/auth.test.ts); another
//   organization's ids are answered exactly like missing ones (crossOrg, test/cross-org.test.ts);
// - console routes (tag `Console`, a session cookie): the same two rules, filled in with the console.
import { expect } from "bun:test";
import type { Sql } from "../../src/db/client";
import { ALL_SCOPES, makeKey } from "./factory";
import { call } from "./app";

export interface Ask {
  method: "GET" | "POST";
  path: string;
  json?: unknown;
  /** A form body (URL-encoded; give the content type in `headers`). */
  form?: Record<string, string>;
  headers?: Record<string, string>;
}

/** An Ask's body: its form, URL-encoded, or none (call() sends `json`). */
export const formBody = (a: Ask): string | undefined => (a.form ? new URLSearchParams(a.form).toString() : undefined);

/**
 * What organization 2 (Bolt) has that organization 1 (Acme) must not reach, and ids that exist
 * nowhere. Built by test/cross-org.test.ts on seedWorld's data.
 */
export interface CrossWorld {
  otherLead: number;
  otherPhone: string;
  /** The phone of another of its leads, for intake alone: an intake with it makes organization 1 a lead with that phone. */
  otherIntakePhone: string;
  otherList: number;
  otherDial: number;
  otherOrg: number;
  missingLead: number;
  missingPhone: string;
  missingList: number;
  missingDial: number;
  missingOrg: number;
  /** An inbound message of another organization's lead. */
  otherInbound: number;
  /** That lead's conversation (the console's inbox: its reading pane and actions). */
  otherConversation: number;
  missingConversation: number;
  /** A lead of organization 1 (the lead whose page books on another organization's calendar). */
  ownLead: number;
  /** A calendar of organization 2, with a booking link. */
  otherCalendar: number;
  missingCalendar: number;
  /** A scheduled callback of organization 2's lead. */
  otherCallback: number;
  missingCallback: number;
}

/**
 * One pair of requests made with organization 1's credentials: with another organization's id and
 * with a missing one. Their answers must be the same status and body; `varies` names top-level
 * fields that may differ in value (ids of what each request created) but not in type.
 */
export interface CrossOrgCase {
  name: string;
  other: Ask;
  missing: Ask;
  varies?: string[];
}

/** The route takes ids of another organization (its cases), or none (why not). */
export type CrossOrg = { cases: (w: CrossWorld) => CrossOrgCase[] } | { none: string };

export interface KeyRoute {
  /** The declared route's id (src/http/route.ts). */
  id: string;
  name: string;
  method: "GET" | "POST";
  path: string;
  json?: unknown;
  scope: string;
  /** Code for a valid key without the scope. */
  scopeError: "forbidden" | "wrong_scope";
  crossOrg: CrossOrg;
}

const op = () => `cross-${Math.random().toString(36).slice(2)}`;

export const KEY_ROUTES: KeyRoute[] = [
  {
    id: "createLead",
    name: "lead intake",
    method: "POST",
    path: "/hooks/lead_intake.php",
    json: { phone: "5125550100" },
    scope: "leads:write",
    scopeError: "forbidden",
    crossOrg: {
      cases: (w) => [
        {
          name: "list_id",
          other: { method: "POST", path: "/hooks/lead_intake.php", json: { phone: "5126660101", list_id: w.otherList } },
          missing: { method: "POST", path: "/hooks/lead_intake.php", json: { phone: "5126660102", list_id: w.missingList } },
          varies: ["lead_id"],
        },
        {
          // Deduplication stays inside the key's organization: another's lead with the phone is not "found".
          name: "phone of another organization's lead",
          other: { method: "POST", path: "/hooks/lead_intake.php", json: { phone: w.otherIntakePhone, list_id: 101 } },
          missing: { method: "POST", path: "/hooks/lead_intake.php", json: { phone: "5126669998", list_id: 101 } },
          varies: ["lead_id"],
        },
      ],
    },
  },
  {
    id: "getLead",
    name: "get lead",
    method: "GET",
    path: "/hooks/api_v1.php?r=leads/1",
    scope: "leads:read",
    scopeError: "wrong_scope",
    crossOrg: {
      cases: (w) => [
        { name: "lead id", other: { method: "GET", path: `/hooks/api_v1.php?r=leads/${w.otherLead}` }, missing: { method: "GET", path: `/hooks/api_v1.php?r=leads/${w.missingLead}` } },
      ],
    },
  },
  {
    id: "getConversation",
    name: "conversation",
    method: "GET",
    path: "/hooks/api_v1.php?r=conversations/1",
    scope: "conversations:read",
    scopeError: "wrong_scope",
    crossOrg: {
      cases: (w) => [
        {
          name: "lead id",
          other: { method: "GET", path: `/hooks/api_v1.php?r=conversations/${w.otherLead}` },
          missing: { method: "GET", path: `/hooks/api_v1.php?r=conversations/${w.missingLead}` },
        },
      ],
    },
  },
  {
    id: "lookupCaller",
    name: "cti lookup",
    method: "GET",
    path: "/hooks/api_v1.php?r=cti/lookup&phone=5125550100",
    scope: "cti",
    scopeError: "wrong_scope",
    crossOrg: {
      cases: (w) => [
        {
          name: "phone",
          other: { method: "GET", path: `/hooks/api_v1.php?r=cti/lookup&phone=${w.otherPhone}` },
          missing: { method: "GET", path: `/hooks/api_v1.php?r=cti/lookup&phone=${w.missingPhone}` },
        },
      ],
    },
  },
  {
    id: "queueDial",
    name: "cti dial",
    method: "POST",
    path: "/hooks/api_v1.php?r=cti/dial",
    json: { phone: "5125550100" },
    scope: "cti",
    scopeError: "wrong_scope",
    crossOrg: {
      cases: (w) => [
        {
          name: "phone",
          other: { method: "POST", path: "/hooks/api_v1.php?r=cti/dial", json: { phone: w.otherPhone } },
          missing: { method: "POST", path: "/hooks/api_v1.php?r=cti/dial", json: { phone: w.missingPhone } },
          varies: ["id"],
        },
      ],
    },
  },
  {
    id: "sendMessage",
    name: "message send",
    method: "POST",
    path: "/hooks/api_v1.php?r=messages",
    json: { lead_id: 1, channel: "note", body: "x", operation_id: "a" },
    scope: "messages:write",
    scopeError: "wrong_scope",
    crossOrg: {
      cases: (w) =>
        ["note", "sms", "email"].map((channel) => ({
          name: `lead_id (${channel})`,
          other: { method: "POST", path: "/hooks/api_v1.php?r=messages", json: { lead_id: w.otherLead, channel, body: "x", subject: "s", operation_id: op() } },
          missing: { method: "POST", path: "/hooks/api_v1.php?r=messages", json: { lead_id: w.missingLead, channel, body: "x", subject: "s", operation_id: op() } },
        })),
    },
  },
  {
    id: "ingestKpi",
    name: "kpi ingest",
    method: "POST",
    path: "/hooks/kpi_ingest.php",
    json: { metric_key: "calls", value: 1 },
    scope: "metrics:write",
    scopeError: "wrong_scope",
    crossOrg: {
      // A tenant key's own organization overrides the input (api-v1.md): another's and a missing
      // one both land in the key's own.
      cases: (w) => [
        {
          name: "org_id",
          other: { method: "POST", path: "/hooks/kpi_ingest.php", json: { metric_key: "cross", value: 1, org_id: w.otherOrg } },
          missing: { method: "POST", path: "/hooks/kpi_ingest.php", json: { metric_key: "cross", value: 1, org_id: w.missingOrg } },
        },
      ],
    },
  },
  {
    id: "reportCall",
    name: "call report",
    method: "POST",
    path: "/hooks/calls.php",
    json: { phone: "5125550100", status: "ANSWERED", secs: 3 },
    scope: "calls:write",
    scopeError: "wrong_scope",
    crossOrg: {
      cases: (w) => {
        const report = (fields: Record<string, unknown>): Ask => ({ method: "POST", path: "/hooks/calls.php", json: { status: "ANSWERED", secs: 3, agent: "agent7", ...fields } });
        return [
          { name: "lead_id", other: report({ lead_id: w.otherLead }), missing: report({ lead_id: w.missingLead }) },
          { name: "dial_id", other: report({ dial_id: w.otherDial }), missing: report({ dial_id: w.missingDial }) },
          { name: "phone", other: report({ phone: w.otherPhone }), missing: report({ phone: w.missingPhone }), varies: ["call_id"] },
        ];
      },
    },
  },
  {
    id: "claimDial",
    name: "cti queue",
    method: "GET",
    path: "/hooks/cti_queue.php",
    scope: "cti",
    scopeError: "wrong_scope",
    crossOrg: { none: "takes no id: it claims the next dial queued for the key's own agent (who reaches a dial: test/dials.test.ts)" },
  },
];

/**
 * The console's routes (issue 21: tag `Console`, a session cookie), keyed by route id; empty until
 * the console lands. test/cross-org.test.ts asks `request` without a session, then with a session
 * lacking the route's permission, expecting `refusals`; then each cross-organization case with a
 * session of organization 1 (Acme) that has the permission.
 */
export interface ConsoleRoute {
  name: string;
  /** Signs in as organization 1 with the route's permission: the headers (the cookie) to send. */
  session(base: string, sql: Sql): Promise<Record<string, string>>;
  /** The same without the route's permission, when it needs one. */
  withoutPermission?(base: string, sql: Sql): Promise<Record<string, string>>;
  request: Ask;
  /** `error`: the JSON answer's code; absent for pages (a 303 to the sign-in page, a 404 page). */
  refusals: { noSession: { status: number; error?: string }; noPermission?: { status: number; error?: string } };
  crossOrg: CrossOrg;
}

export { CONSOLE_ROUTES } from "./console-matrix";

export async function expectKeyRefusals(base: string, sql: Sql, route: KeyRoute): Promise<void> {
  const others = ALL_SCOPES.filter((s) => s !== route.scope);
  const keys = {
    none: undefined,
    unknown: "lk_" + "x".repeat(43),
    inactive: (await makeKey(sql, { scopes: ALL_SCOPES, active: false, agent: "agent7" })).key,
    revoked: (await makeKey(sql, { scopes: ALL_SCOPES, revoked: true, agent: "agent7" })).key,
  };
  for (const [label, key] of Object.entries(keys)) {
    const r = await call(base, route.path, { method: route.method, key, json: route.json });
    expect({ route: route.name, label, status: r.status, body: r.body }).toEqual({
      route: route.name,
      label,
      status: 403,
      body: { ok: false, error: "forbidden" },
    });
  }
  const wrong = (await makeKey(sql, { scopes: others, agent: "agent7" })).key;
  const r = await call(base, route.path, { method: route.method, key: wrong, json: route.json });
  expect({ route: route.name, status: r.status, body: r.body }).toEqual({
    route: route.name,
    status: 403,
    body: { ok: false, error: route.scopeError },
  });
}

/** An answer as compared across organizations: status, content type, and body with `varies` fields reduced to their types. */
export function comparable(r: { status: number; body: unknown; headers: Headers }, varies: readonly string[] = []) {
  let body = r.body;
  if (body !== null && typeof body === "object" && !Array.isArray(body)) {
    body = Object.fromEntries(Object.entries(body).map(([k, v]) => [k, varies.includes(k) ? `<${v === null ? "null" : typeof v}>` : v]));
  }
  return { status: r.status, type: r.headers.get("content-type"), body };
}

/** Asks both requests of a case with `auth` (a key, or a console session's headers) and expects the same answer. */
export async function expectSameAsMissing(base: string, route: string, c: CrossOrgCase, auth: { key?: string; headers?: Record<string, string> }): Promise<void> {
  const ask = (a: Ask) => call(base, a.path, { method: a.method, json: a.json, body: formBody(a), key: auth.key, headers: { ...auth.headers, ...a.headers }, redirect: "manual" });
  const missing = await ask(c.missing);
  const other = await ask(c.other);
  expect({ route, case: c.name, answer: comparable(other, c.varies) }).toEqual({ route, case: c.name, answer: comparable(missing, c.varies) });
}
