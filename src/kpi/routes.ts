import { Elysia } from "elysia";
import type { Deps } from "../http/deps";
import { AppError } from "../http/errors";
import { runKeyed, type KeyedSpec } from "../http/keyed";
import { ingestKpi } from "./service";

const INGEST: KeyedSpec = {
  need: { scope: "metrics:write", family: "kpi", scopeError: "wrong_scope" },
  // 500 points with long keys fit well inside a megabyte.
  bodyLimit: 1024 * 1024,
  jsonOnly: true,
};

export const kpiRoutes = (deps: Deps) =>
  new Elysia({ name: "kpi" }).post(
    "/hooks/kpi_ingest.php",
    ({ request }) =>
      runKeyed(deps, request, INGEST, ({ key }, body) => {
        if (body.kind === "empty") throw new AppError("malformed_json", "empty body");
        return ingestKpi(deps.sql, key, body.value, deps.now());
      }),
    { parse: "none" },
  );
