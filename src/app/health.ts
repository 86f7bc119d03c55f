// Operational routes (operations.md §4), declared (src/http/route.ts): the process is up; the
// database answers.
import { Type as t } from "@sinclair/typebox";
import type { Sql } from "../db/client";
import { withDeadline } from "../db/deadline";
import { errorOf, json } from "../http/respond";
import type { Route } from "../http/route";

const Ok = t.Object({ ok: t.Literal(true) }, { additionalProperties: false });

/** Whether the service can serve: one bounded round trip to the database. */
async function ready(sql: Sql): Promise<boolean> {
  try {
    await withDeadline(sql`select 1`, 800);
    return true;
  } catch {
    return false;
  }
}

export const healthRoutes = (sql: Sql): Route[] => [
  {
    id: "healthz",
    tag: "Operations",
    summary: "The process is up",
    method: "GET",
    path: "/healthz",
    access: { kind: "public" },
    answers: { 200: { description: "Always, while the process serves", schema: Ok } },
    errors: [],
    handle: () => json({ ok: true }),
  },
  {
    id: "readyz",
    tag: "Operations",
    summary: "The service can serve",
    method: "GET",
    path: "/readyz",
    access: { kind: "public" },
    answers: { 200: { description: "Ready", schema: Ok } },
    errors: ["unavailable"],
    handle: async () => ((await ready(sql)) ? json({ ok: true }) : errorOf("unavailable", "public")),
  },
];
