// GET /conversions/{feed_id}.csv (operations.md §4, §8), declared (src/http/route.ts): a feed of
// Google Ads offline click conversions, fetched on a schedule by Google Ads over HTTPS with the
// feed's id and secret as HTTP Basic credentials.
import { withDeadline } from "../db/deadline";
import { clientAddress, hashBucket, type PeerSource } from "../http/client";
import type { Deps } from "../http/deps";
import { guarded } from "../http/native";
import { errorOf } from "../http/respond";
import type { Route, Selected } from "../http/route";
import { FEED_DAYS } from "./model";
import { feedAccess, feedCsv } from "./service";

export const FEED_REALM = "Leadline conversions";
const CHALLENGE = { "www-authenticate": `Basic realm="${FEED_REALM}", charset="UTF-8"` };
const CSV_HEADERS = {
  "content-type": "text/csv; charset=utf-8",
  // The conversions of an organization, behind credentials: never kept by a cache on the way.
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
};

export function conversionRoutes(deps: Deps): Route[] {
  const handle = guarded<{ server: PeerSource | null; selected: Selected }>(
    async (request, { server, selected }) => {
      const address = hashBucket(deps.ipSalt, clientAddress(request, server, deps.config.trustProxy));
      if (deps.limits.overFromMemory("feed_auth", address)) return errorOf("rate_limited", "public");
      const feed = await withDeadline(feedAccess(deps.sql, selected.params.feed_id ?? "", request.headers.get("authorization")));
      if (feed === null) {
        // Counted only when refused: a feed fetched with its credentials is never limited.
        const within = await deps.limits.take("feed_auth", address);
        return within ? errorOf("unauthenticated", "public", CHALLENGE) : errorOf("rate_limited", "public");
      }
      return new Response(feedCsv(deps.sql, feed, deps.clock.now()), { headers: CSV_HEADERS });
    },
    "public",
  );
  return [
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
      access: { kind: "basic", realm: FEED_REALM, user: "`{feed_id}`", password: "the feed's `secret`" },
      answers: { 200: { description: "The feed, as CSV", contentType: "text/csv; charset=utf-8" } },
      errors: ["unauthenticated", "rate_limited", "unavailable"],
      handle: (request, server, selected) => handle(request, { server, selected }),
    },
  ];
}
