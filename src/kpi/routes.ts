// POST /hooks/kpi_ingest.php, declared (src/http/route.ts).
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import { keyAccess } from "../http/keyed";
import type { Route } from "../http/route";
import { keySurface } from "../http/surface";
import { kpiInput, KpiResult } from "./model";
import { ingestKpi } from "./service";

export const kpiRoutes = (deps: Deps): Route[] => [
  defineRoute(
    deps,
    {
      id: "ingestKpi",
      tag: "KPI",
      summary: "Upsert daily KPI metric points",
      description:
        "A single point, a batch `{org_id?, points}` or a bare array of 1 to 500 points. Processing is partial: valid " +
        "points are upserted even when siblings fail, and `errors` lists each failed point by its index " +
        "(`bad_point`, `bad_metric_key`, `bad_value`, `bad_day`, `bad_dim_key`). An unknown `metric_key` is registered " +
        "with sum aggregation. A tenant key's own organization always overrides `org_id`.",
      method: "POST",
      path: "/hooks/kpi_ingest.php",
      access: keyAccess(deps, { scope: "metrics:write", limit: "kpi", scopeError: "wrong_scope" }),
      surface: keySurface,
      // 500 points with long keys fit well inside a megabyte.
      body: { input: kpiInput, limit: 1024 * 1024, form: false, anyJson: true },
      answers: { 200: { description: "Points upserted, with the failed ones' errors", schema: KpiResult } },
      errors: ["no_valid_points", "no_points", "too_many_points"],
    },
    ({ body }, { grant }) => ingestKpi(deps.sql, grant.actor, body, new Date(deps.clock.now())),
  ),
];
