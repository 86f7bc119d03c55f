// The assembly: the HTTP application built from every feature's declared routes (src/http/route.ts),
// with one error renderer for all of them. The one place that knows every feature.
import { Elysia } from "elysia";
import { bookingRoutes } from "../booking/routes";
import { callRoutes } from "../calls/routes";
import { conversationRoutes } from "../conversations/routes";
import { ctiRoutes } from "../cti/routes";
import { demoRoutes } from "../demo/routes";
import { dniRoutes } from "../dni/routes";
import { docsRoutes } from "../docs/routes";
import { AppError } from "../errors";
import { eventWebhooks } from "../events/document";
import type { Deps } from "../http/deps";
import { API_V1_PATH } from "../http/keyed";
import { mountRoutes } from "../http/mount";
import { nativeRoutes } from "../http/native";
import { errorResponse } from "../http/respond";
import type { Route } from "../http/route";
import { kpiRoutes } from "../kpi/routes";
import { leadRoutes } from "../leads/routes";
import { messageRoutes, messageSendRoutes } from "../messages/routes";
import { apiV1Routes } from "./api-v1";
import { healthRoutes } from "./health";

/** Every declared route of the service, /openapi.json and /docs (built from all the others) last. */
export function declaredRoutes(deps: Deps): Route[] {
  const features = [
    ...leadRoutes(deps),
    ...conversationRoutes(deps),
    ...messageSendRoutes(deps),
    ...ctiRoutes(deps),
    ...kpiRoutes(deps),
    ...callRoutes(deps),
    ...demoRoutes(deps),
  ];
  return [...features, ...docsRoutes(features, eventWebhooks())];
}

export function buildApp(deps: Deps) {
  const routes = declaredRoutes(deps);
  const apiV1 = apiV1Routes(routes.filter((r) => r.path === API_V1_PATH));
  const declared = mountRoutes(routes.filter((r) => r.path !== API_V1_PATH));
  const dni = dniRoutes(deps);
  // The hottest paths, served by Bun before Elysia (src/http/native.ts); their other methods fall through.
  const native = nativeRoutes(apiV1.native, declared.native, dni.native);
  return new Elysia({ serve: { routes: native } })
    .onError(({ code, error }) => {
      if (code === "NOT_FOUND") return errorResponse(new AppError("not_found"));
      if (code === "PARSE" || code === "VALIDATION") return errorResponse(new AppError("malformed_body"));
      return errorResponse(error);
    })
    .use(healthRoutes(deps.sql))
    .use(declared.rest)
    .use(apiV1.rest)
    .use(bookingRoutes(deps))
    .use(messageRoutes(deps))
    .use(dni.rest);
}
