// Operational routes (operations.md §4), declared (src/http/route.ts): the process is up; the
// database answers with a schema this executable can use.
import { Type as t } from "@sinclair/typebox";
import { BREAKER_MESSAGE, breakerOf } from "../db/breaker";
import type { Sql } from "../db/client";
import { withDeadline } from "../db/deadline";
import { migrations } from "../db/migrations";
import { open, Refused } from "../http/access";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import type { Route } from "../http/route";
import { publicSurface } from "../http/surface";
import { errorFields, log } from "../log";

const Ok = t.Object({ ok: t.Literal(true) }, { additionalProperties: false });

/**
 * Ready means more than a socket that answers: a session whose search_path had been emptied (seen
 * on the embedded database) answered `select 1` while every request failed with `relation ... does
 * not exist`. So the probe names, unqualified as every query here does, the tables that every keyed
 * request (api_keys), the core entity (leads) and every change (outbox_events) need, and asks for
 * the schema version; a database behind this executable's version is missing what it needs. One
 * ahead of it was migrated by a newer instance during a rolling upgrade: migrations only add, so
 * this instance keeps serving until it is replaced (it would refuse to start on it, not to run).
 * `limit 0` has PostgreSQL resolve each table and check its privileges without reading a row.
 */
async function schemaVersion(sql: Sql): Promise<number | null> {
  const [row] = await sql<{ version: number | null }[]>`
    select (select max(version) from schema_migrations) as version,
      (select true from api_keys limit 0) as keys,
      (select true from leads limit 0) as leads,
      (select true from outbox_events limit 0) as events`;
  return row.version;
}

const EXPECTED = migrations.length;

/**
 * Whether the service can serve; logged when that changes, not at every probe (a load balancer asks
 * every few seconds). While the breaker is open (src/db/breaker.ts) it cannot, and is not asked:
 * /readyz says what the requests are answered, and turns 200 when the breaker's probe has found the
 * database back and the schema answers.
 */
function readiness(sql: Sql): () => Promise<boolean> {
  const breaker = breakerOf(sql);
  let failing = false;
  const report = (reason: Record<string, unknown> | null) => {
    if (reason && !failing) log.warn("readyz: not ready", reason);
    if (!reason && failing) log.info("readyz: ready again");
    failing = reason !== null;
    return reason === null;
  };
  return async () => {
    if (breaker?.isOpen()) return report({ error: BREAKER_MESSAGE });
    try {
      const version = await withDeadline(schemaVersion(sql), 800);
      if (version === null || version < EXPECTED) {
        return report({ error: `the database is at schema version ${version}; this executable needs ${EXPECTED}` });
      }
      return report(null);
    } catch (err) {
      return report(errorFields(err));
    }
  };
}

export const healthRoutes = (deps: Deps): Route[] => {
  const ready = readiness(deps.sql);
  return [
    defineRoute(
      deps,
      {
        id: "healthz",
        tag: "Operations",
        summary: "The process is up",
        method: "GET",
        path: "/healthz",
        access: open(),
        surface: publicSurface,
        answers: { 200: { description: "Always, while the process serves", schema: Ok } },
        deadlineMs: null,
      },
      () => OK,
    ),
    defineRoute(
      deps,
      {
        id: "readyz",
        tag: "Operations",
        summary: "The service can serve",
        description:
          "200 when the database answers, within 800 ms, with a usable schema at this executable's version or newer; 503 otherwise, at once while the database is known unreachable (until a probe finds it back).",
        method: "GET",
        path: "/readyz",
        access: open(),
        surface: publicSurface,
        answers: { 200: { description: "Ready", schema: Ok } },
        errors: ["unavailable"],
        // Its own bound: 800 ms.
        deadlineMs: null,
      },
      async () => ((await ready()) ? OK : UNAVAILABLE),
    ),
  ];
};

const OK = { ok: true };
const UNAVAILABLE = Refused.of("unavailable");
