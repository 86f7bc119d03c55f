// GET /conversions/{feed_id}.csv (operations.md §4, §8), declared through the one pipeline
// (src/http/define.ts): a feed of Google Ads offline click conversions, fetched on a schedule by
// Google Ads over HTTPS with the feed's id and secret as HTTP Basic credentials.
import { Refused, type AccessCheck } from "../http/access";
import { clientAddress, hashBucket } from "../http/client";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import { errorOf } from "../http/respond";
import { textParam, type Route } from "../http/route";
import { publicSurface, type SurfaceRender } from "../http/surface";
import { FEED_DAYS, type Feed } from "./model";
import { feedAccess, feedCsv } from "./service";

export const FEED_REALM = "Leadline conversions";
const CHALLENGE = { "www-authenticate": `Basic realm="${FEED_REALM}", charset="UTF-8"` };
const CSV_HEADERS = {
  "content-type": "text/csv; charset=utf-8",
  // The conversions of an organization, behind credentials: never kept by a cache on the way.
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
};

/** The public JSON surface, whose 401 carries the Basic challenge (RFC 7235 §3.1). */
const feedSurface: SurfaceRender = {
  ...publicSurface,
  refuse: (code) => errorOf(code, "public", code === "unauthenticated" ? CHALLENGE : undefined),
};

/**
 * The feed's Basic credentials. Only refusals are counted per client address (`feed_auth`): a feed
 * fetched with its credentials is never limited, and an address over the limit is refused from
 * memory before any lookup.
 */
function feedAuth(deps: Deps): AccessCheck<Feed, { address: string; feedId: string }> {
  const unauthenticated = Refused.of("unauthenticated");
  const rateLimited = Refused.of("rate_limited");
  return {
    doc: { kind: "basic", realm: FEED_REALM, user: "`{feed_id}`", password: "the feed's `secret`" },
    errors: ["unauthenticated", "rate_limited"],
    gate: (request, server, selected) => {
      const address = hashBucket(deps.ipSalt, clientAddress(request, server, deps.config.trustProxy));
      return deps.limits.overFromMemory("feed_auth", address) ? rateLimited : { address, feedId: selected.params.feed_id ?? "" };
    },
    admit: async ({ address, feedId }, request) => {
      const feed = await feedAccess(deps.sql, feedId, request.headers.get("authorization"));
      if (feed !== null) return feed;
      return (await deps.limits.take("feed_auth", address)) ? unauthenticated : rateLimited;
    },
  };
}

export function conversionRoutes(deps: Deps): Route[] {
  return [
    defineRoute(
      deps,
      {
        id: "conversionFeed",
        tag: "Conversions",
        summary: "A Google Ads offline click-conversion feed",
        description:
          `The feed's conversions of the last ${FEED_DAYS} days whose lead's (or, for a call without a lead, the call's) ` +
          "attribution has a `gclid`, oldest first, in Google Ads' click-conversion import format: `Parameters:TimeZone=` and " +
          "the organization's time zone, the header `Google Click ID,Conversion Name,Conversion Time,Conversion Value,Conversion " +
          "Currency`, then one row per conversion and action (times `yyyy-MM-dd HH:mm:ss` in that zone, values with at most two " +
          "decimals, RFC 4180 quoting; a cell that would start with `=`, `+`, `-` or `@` starts with `'`). Streamed. Schedule it " +
          "in Google Ads under Goals → Conversions → Uploads → Schedules, source HTTPS.",
        method: "GET",
        path: "/conversions/{feed_id}.csv",
        access: feedAuth(deps),
        surface: feedSurface,
        params: textParam("feed_id"),
        answers: { 200: { description: "The feed, as CSV", contentType: "text/csv; charset=utf-8" } },
      },
      (_input, { grant }) => new Response(feedCsv(deps.sql, grant, deps.clock.now()), { headers: CSV_HEADERS }),
    ),
  ];
}
