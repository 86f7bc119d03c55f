// One check for every key-authenticated route: no key, unknown key, inactive key, revoked key and
// a key without the route's scope are all refused with 403 and the route's code.
import { expect } from "bun:test";
import type { Sql } from "../../src/db/client";
import { ALL_SCOPES, makeKey } from "./factory";
import { call } from "./app";

export interface KeyRoute {
  name: string;
  method: "GET" | "POST";
  path: string;
  json?: unknown;
  scope: string;
  /** Code for a valid key without the scope. */
  scopeError: "forbidden" | "wrong_scope";
}

export const KEY_ROUTES: KeyRoute[] = [
  { name: "lead intake", method: "POST", path: "/hooks/lead_intake.php", json: { phone: "5125550100" }, scope: "leads:write", scopeError: "forbidden" },
  { name: "get lead", method: "GET", path: "/hooks/api_v1.php?r=leads/1", scope: "leads:read", scopeError: "wrong_scope" },
  { name: "conversation", method: "GET", path: "/hooks/api_v1.php?r=conversations/1", scope: "conversations:read", scopeError: "wrong_scope" },
  { name: "cti lookup", method: "GET", path: "/hooks/api_v1.php?r=cti/lookup&phone=5125550100", scope: "cti", scopeError: "wrong_scope" },
  { name: "cti dial", method: "POST", path: "/hooks/api_v1.php?r=cti/dial", json: { phone: "5125550100" }, scope: "cti", scopeError: "wrong_scope" },
  { name: "message send", method: "POST", path: "/hooks/api_v1.php?r=messages", json: { lead_id: 1, channel: "note", body: "x", operation_id: "a" }, scope: "messages:write", scopeError: "wrong_scope" },
  { name: "kpi ingest", method: "POST", path: "/hooks/kpi_ingest.php", json: { metric_key: "calls", value: 1 }, scope: "metrics:write", scopeError: "wrong_scope" },
  { name: "call report", method: "POST", path: "/hooks/calls.php", json: { phone: "5125550100", status: "ANSWERED", secs: 3 }, scope: "calls:write", scopeError: "wrong_scope" },
  { name: "cti queue", method: "GET", path: "/hooks/cti_queue.php", scope: "cti", scopeError: "wrong_scope" },
];

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
