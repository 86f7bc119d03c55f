import { Elysia } from "elysia";
import { authorize, refuseFromMemory, type Need } from "../auth/guard";
import type { Deps } from "../http/deps";
import { AppError } from "../http/errors";
import { bodyFields, readBody } from "../http/body";
import { withDeadline } from "../http/respond";
import { ingestKpi } from "./service";

// 500 points with long keys fit well inside a megabyte.
export const KPI_BODY_LIMIT = 1024 * 1024;

const NEED: Need = { scope: "metrics:write", family: "kpi", scopeError: "wrong_scope" };

export const kpiRoutes = (deps: Deps) =>
  new Elysia({ name: "kpi" }).post(
    "/hooks/kpi_ingest.php",
    async ({ request }) => {
      const refused = refuseFromMemory(deps, request, NEED);
      if (refused) return refused;
      const body = await readBody(request, KPI_BODY_LIMIT, { jsonOnly: true });
      return withDeadline(
        (async () => {
          const { key } = await authorize(deps, request, bodyFields(body), NEED);
          if (body.kind === "too_large") throw new AppError("body_too_large", "body over 1 MiB");
          if (body.kind === "malformed") throw new AppError(body.code);
          if (body.kind === "empty") throw new AppError("malformed_json", "empty body");
          return ingestKpi(deps.sql, key, body.value, deps.now());
        })(),
      );
    },
    { parse: "none" },
  );
