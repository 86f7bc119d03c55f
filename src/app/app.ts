// The assembly: the HTTP application built from every feature's routes and api_v1 operations,
// with one error renderer for all of them. The one place that knows every feature.
import { Elysia } from "elysia";
import { bookingRoutes } from "../booking/routes";
import { callRoutes } from "../calls/routes";
import { conversationOperations } from "../conversations/routes";
import { ctiOperations, ctiRoutes } from "../cti/routes";
import { dniRoutes } from "../dni/routes";
import { AppError } from "../errors";
import type { Deps } from "../http/deps";
import { nativeRoutes } from "../http/native";
import { errorResponse } from "../http/respond";
import { kpiRoutes } from "../kpi/routes";
import { leadOperations, leadRoutes } from "../leads/routes";
import { messageOperations, messageRoutes } from "../messages/routes";
import { apiV1Routes } from "./api-v1";
import { healthRoutes } from "./health";

export function buildApp(deps: Deps) {
  const operations = [...leadOperations(deps), ...conversationOperations(deps), ...ctiOperations(deps), ...messageOperations(deps)];
  const apiV1 = apiV1Routes(deps, operations);
  const dni = dniRoutes(deps);
  // The hottest paths, served by Bun before Elysia (src/http/native.ts); their other methods fall through.
  const routes = nativeRoutes(apiV1.native, dni.native);
  return new Elysia({ serve: { routes } })
    .onError(({ code, error }) => {
      if (code === "NOT_FOUND") return errorResponse(new AppError("not_found"));
      if (code === "PARSE" || code === "VALIDATION") return errorResponse(new AppError("malformed_body"));
      return errorResponse(error);
    })
    .use(healthRoutes(deps.sql))
    .use(leadRoutes(deps))
    .use(apiV1.rest)
    .use(kpiRoutes(deps))
    .use(callRoutes(deps))
    .use(ctiRoutes(deps))
    .use(bookingRoutes(deps))
    .use(messageRoutes(deps))
    .use(dni.rest);
}
