// The assembly: the HTTP application built from every feature's declared routes and paths
// (src/http/route.ts), with one error renderer for all of them. The one place that knows every
// feature. Nothing is served that is not declared here (test/routes.test.ts).
import { Elysia } from "elysia";
import { bookingApiPath, bookingRoutes } from "../booking/routes";
import { callRoutes } from "../calls/routes";
import { conversationRoutes } from "../conversations/routes";
import { plainNotFound } from "../console/route";
import { consoleRoutes } from "../console/routes";
import { conversionRoutes } from "../conversions/routes";
import { ctiRoutes } from "../cti/routes";
import { demoRoutes } from "../demo/routes";
import { dniPath, dniRoutes } from "../dni/routes";
import { docsRoutes } from "../docs/routes";
import { AppError } from "../errors";
import { eventWebhooks } from "../events/document";
import type { Deps } from "../http/deps";
import { mountRoutes } from "../http/mount";
import { errorResponse } from "../http/respond";
import type { PathRoute, Route } from "../http/route";
import type { PeerSource } from "../http/client";
import { kpiRoutes } from "../kpi/routes";
import { leadRoutes } from "../leads/routes";
import { messageCallbackPaths, messageCallbackRoutes, messageSendRoutes } from "../messages/routes";
import { unsubscribeRoutes } from "../messages/unsubscribe-routes";
import { familyIndex } from "../metrics/counters";
import { familyOf } from "../metrics/family";
import type { RequestObserver } from "../metrics/observe";
import { metricsRoute } from "../metrics/route";
import { apiV1Path } from "./api-v1";
import { healthRoutes } from "./health";

/** Every declared route of the service, /openapi.json and /docs (built from all the others) last. */
export function declaredRoutes(deps: Deps): Route[] {
  const features = [
    ...healthRoutes(deps),
    metricsRoute(deps),
    ...leadRoutes(deps),
    ...conversationRoutes(deps),
    ...messageSendRoutes(deps),
    ...messageCallbackRoutes(deps),
    ...unsubscribeRoutes(deps),
    ...ctiRoutes(deps),
    ...kpiRoutes(deps),
    ...callRoutes(deps),
    ...dniRoutes(deps),
    ...bookingRoutes(deps),
    ...conversionRoutes(deps),
    ...demoRoutes(deps),
    ...consoleRoutes(deps),
  ];
  return [...features, ...docsRoutes(deps, features, eventWebhooks(), declaredPaths(deps))];
}

/** Every declared path: the query-routed ones with their dispatchers, and the other-methods answers. */
export function declaredPaths(deps: Deps): PathRoute[] {
  return [apiV1Path, dniPath(deps), bookingApiPath, ...messageCallbackPaths];
}

const UNKNOWN = familyIndex("unknown");

/**
 * A person's browser opening an address under /console that nothing answers (a mistyped or an old
 * link): it gets the console's Not found page with its way back, not JSON. Only a page load (GET
 * or HEAD asking for HTML); any other request is answered `not_found` as everywhere.
 */
function browsingConsole(request: Request): boolean {
  if (request.method !== "GET" && request.method !== "HEAD") return false;
  if (!request.headers.get("accept")?.includes("text/html")) return false;
  const path = new URL(request.url).pathname;
  return path === "/console" || path.startsWith("/console/");
}

/** `observer` counts and logs every request once, under its declared path's family (src/metrics/). */
export function buildApp(deps: Deps, observer?: RequestObserver) {
  const served = mountRoutes(declaredRoutes(deps), declaredPaths(deps), observer && ((path, handler) => observer.observed(familyOf(path), handler)));
  // The hottest paths are served by Bun before Elysia (src/http/native.ts); their other methods fall through.
  return new Elysia({ serve: { routes: served.native } })
    .onError(({ code, error, request, server }) => {
      if (code === "NOT_FOUND") {
        const answer = browsingConsole(request) ? plainNotFound() : errorResponse(new AppError("not_found"));
        // Answered by the router before any handler: counted with its duration unmeasured (0).
        observer?.record(UNKNOWN, request, server as PeerSource | null, performance.now(), answer.status);
        return answer;
      }
      if (code === "PARSE" || code === "VALIDATION") return errorResponse(new AppError("malformed_body"));
      return errorResponse(error);
    })
    .use(served.rest);
}
