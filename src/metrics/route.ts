// GET /metrics: the Prometheus scrape. Answered to a scraper on this host (a loopback TCP peer that
// forwards no one: TRUST_PROXY does not apply, and a request carrying X-Forwarded-For, X-Real-IP or
// Forwarded came through a proxy, such as nginx on this host, whose own peer is loopback for every
// client) whose Host names this service (BASE_URL's host name or a loopback address: a page on a
// domain re-pointed at 127.0.0.1, DNS rebinding, is a loopback peer too, but sends its own name;
// src/http/host.ts), or to `Authorization: Bearer $METRICS_TOKEN` from anywhere, whatever its Host
// (the token is not something a rebinding page has). Anyone else gets 404 not_found, as for a route
// that does not exist. A request that presents a bearer token is judged by it alone: a wrong one
// is refused even from loopback.
import { timingSafeEqual, createHash } from "node:crypto";
import type { Clock } from "../clock";
import { breakerOf } from "../db/breaker";
import { poolState, type Sql } from "../db/client";
import { isLoopback, parseIp } from "../http/address";
import { Refused, type AccessCheck } from "../http/access";
import type { PeerSource } from "../http/client";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import { ownHost } from "../http/host";
import type { Route } from "../http/route";
import { publicSurface } from "../http/surface";
import { dniFallbacks, messageSends, refusalsByFamily, requestSeries, webhookDeliveries, type LabelledCounter } from "./counters";
import { databaseGauges } from "./gauges";
import { CONTENT_TYPE, Exposition } from "./text";

const digest = (s: string) => createHash("sha256").update(s).digest();

/** Whether the request may read the metrics (see the top of this file). */
export function mayScrape(request: Request, server: PeerSource | null, token: string | null, hostOk: (request: Request) => boolean): boolean {
  const auth = request.headers.get("authorization");
  if (auth !== null) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    // Compared as digests: equal lengths, and no timing that tells how much of the token matched.
    return token !== null && m !== null && timingSafeEqual(digest(m[1]!), digest(token));
  }
  const h = request.headers;
  if (h.has("x-forwarded-for") || h.has("x-real-ip") || h.has("forwarded")) return false;
  const ip = parseIp(server?.requestIP(request)?.address ?? "");
  return ip !== null && isLoopback(ip) && hostOk(request);
}

/** The event loop's lag now: how long a callback queued behind the work waiting takes to run. */
const loopLag = (): Promise<number> => {
  const t0 = performance.now();
  return new Promise((resolve) => setImmediate(() => resolve((performance.now() - t0) / 1000)));
};

const labelled = (c: LabelledCounter) =>
  [...c.values.values()].map(({ labels, value }) => [Object.fromEntries(c.labelNames.map((n, i) => [n, labels[i]!])), value] as const);

export async function scrape(sql: Sql, clock: Clock): Promise<string> {
  // Before the scrape's own queries take connections.
  const pool = poolState(sql);
  const [db, lag] = await Promise.all([databaseGauges(sql, clock.now()), loopLag()]);
  const mem = process.memoryUsage();
  const out = new Exposition()
    .metric("leadline_http_requests_total", "Requests answered, by route family, method and status class.", "counter",
      requestSeries().map((s) => [{ family: s.family, method: s.method, status: s.status }, s.count] as const))
    .histogram("leadline_http_request_duration_seconds", "Time from the handler's call to its answer, by route family, method and status class.",
      requestSeries().map((s) => ({ labels: { family: s.family, method: s.method, status: s.status }, cumulative: s.cumulative, sum: s.sum, count: s.count })))
    .metric("leadline_rate_limited_total", "Requests refused by a rate limit (429), by route family.", "counter",
      refusalsByFamily().map(([family, n]) => [{ family }, n] as const))
    .metric(messageSends.name, messageSends.help, "counter", labelled(messageSends))
    .metric(webhookDeliveries.name, webhookDeliveries.help, "counter", labelled(webhookDeliveries))
    .metric(dniFallbacks.name, dniFallbacks.help, "counter", labelled(dniFallbacks))
    .metric("leadline_database_up", "1 when the database answered this scrape's queries within 500 ms, else 0.", "gauge", [[{}, db ? 1 : 0]]);
  if (db) {
    out
      .metric("leadline_jobs_queued", "Jobs in the queue (due, scheduled or running), by kind.", "gauge", db.jobs.map((j) => [{ kind: j.kind }, j.depth] as const))
      .metric("leadline_jobs_oldest_age_seconds", "Age of the oldest job in the queue, by kind.", "gauge", db.jobs.map((j) => [{ kind: j.kind }, j.oldest_seconds] as const))
      .metric("leadline_webhook_endpoints", "Webhook endpoints, by state (active, disabled by a 410, inactive).", "gauge", db.webhooks.map((w) => [{ state: w.state }, w.endpoints] as const))
      .metric("leadline_dni_numbers_held", "Active DNI numbers held by a visitor now, by pool.", "gauge", db.dni.map((d) => [{ pool: d.pool }, d.held] as const))
      .metric("leadline_dni_numbers_free", "Active DNI numbers free now, by pool.", "gauge", db.dni.map((d) => [{ pool: d.pool }, d.free] as const));
  }
  const breaker = breakerOf(sql);
  if (breaker) {
    out
      .metric("leadline_db_breaker_open", "1 while the database is known unreachable and requests that need it are answered 503 at once, else 0.", "gauge", [[{}, breaker.isOpen() ? 1 : 0]])
      .metric("leadline_db_breaker_opened_total", "Times the database was seen refusing or dropping connections while reachable.", "counter", [[{}, breaker.opened]])
      .metric("leadline_db_connection_attempts_total", "Connections dialled to the database by the pools and LISTEN (not the breaker's probe).", "counter", [[{}, breaker.dials]]);
  }
  if (pool) {
    out
      .metric("leadline_db_pool_max", "Connections the database pool may open.", "gauge", [[{}, pool.max]])
      .metric("leadline_db_pool_in_use", "Pool connections running a query or a transaction.", "gauge", [[{}, pool.inUse]])
      .metric("leadline_db_pool_waiting", "Queries waiting for a pool connection.", "gauge", [[{}, pool.waiting]]);
  }
  out
    .metric("leadline_process_resident_memory_bytes", "Resident set size.", "gauge", [[{}, mem.rss]])
    .metric("leadline_process_heap_used_bytes", "JavaScript heap in use.", "gauge", [[{}, mem.heapUsed]])
    .metric("leadline_process_heap_total_bytes", "JavaScript heap reserved.", "gauge", [[{}, mem.heapTotal]])
    .metric("leadline_event_loop_lag_seconds", "Delay of a callback queued when scraped.", "gauge", [[{}, lag]]);
  return out.text();
}

export function metricsRoute(deps: Deps): Route {
  return defineRoute(
    deps,
    {
      id: "metrics",
      tag: "Operations",
      summary: "Prometheus metrics",
      description:
        "The Prometheus text format. Answered to a loopback peer that forwards no one (no X-Forwarded-For, X-Real-IP or Forwarded) and sends a Host of BASE_URL's host name or a loopback address, or to `Authorization: Bearer` with METRICS_TOKEN; 404 to anyone else.",
      method: "GET",
      path: "/metrics",
      access: scraper(deps.config.metricsToken, ownHost(deps.config.baseUrl)),
      surface: publicSurface,
      answers: { 200: { description: "The metrics", contentType: "text/plain" } },
      errors: ["not_found"],
      // A scrape reads a handful of counts; it is bounded by the statement timeout, not the request deadline.
      deadlineMs: null,
    },
    async () => new Response(await scrape(deps.sql, deps.clock), { headers: { "content-type": CONTENT_TYPE, "cache-control": "no-store" } }),
  );
}

/** Who may scrape: see the route's description; anyone else is told there is nothing here. */
function scraper(token: string | null, hostOk: (request: Request) => boolean): AccessCheck<undefined> {
  const notFound = Refused.of("not_found");
  return { doc: { kind: "public" }, errors: ["not_found"], gate: (request, server) => (mayScrape(request, server, token, hostOk) ? undefined : notFound) };
}
