import { Elysia } from "elysia";
import { AppError } from "../errors";
import type { Deps } from "../http/deps";
import { runKeyed, type KeyedSpec } from "../http/keyed";
import { ingestKpi } from "./service";

const INGEST: KeyedSpec = {
  need: { scope: "metrics:write", limit: "kpi", scopeError: "wrong_scope" },
  // 500 points with long keys fit well inside a megabyte.
  bodyLimit: 1024 * 1024,
  jsonOnly: true,
  anyJson: true,
};

/** POST /hooks/kpi_ingest.php */
export const kpiRoutes = (deps: Deps) =>
  new Elysia({ name: "kpi" }).post(
    "/hooks/kpi_ingest.php",
    ({ request }) =>
      runKeyed(deps, request, INGEST, ({ actor }, body) => {
        if (body.kind !== "json") throw new AppError("malformed_json", "empty body");
        return ingestKpi(deps.sql, actor, body.value, new Date(deps.clock.now()));
      }),
    { parse: "none" },
  );
