// The HTTP application: one Elysia instance per feature, one error renderer for all of them.
import { Elysia } from "elysia";
import { callRoutes } from "../calls/routes";
import { kpiRoutes } from "../kpi/routes";
import { leadRoutes } from "../leads/routes";
import { apiV1Routes } from "./api-v1";
import type { Deps } from "./deps";
import { AppError } from "./errors";
import { healthRoutes } from "./health";
import { json, renderError } from "./respond";

export function buildApp(deps: Deps) {
  return new Elysia()
    .onError(({ code, error }) => {
      if (code === "NOT_FOUND") return json(new AppError("not_found").body(), 404);
      if (code === "PARSE" || code === "VALIDATION") return json(new AppError("malformed_body").body(), 422);
      return renderError(error);
    })
    .use(healthRoutes(deps.sql))
    .use(leadRoutes(deps))
    .use(apiV1Routes(deps))
    .use(kpiRoutes(deps))
    .use(callRoutes(deps));
}
