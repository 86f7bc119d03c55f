// A feed's fetch: its credentials checked, then its conversions of the last 90 days streamed as
// Google Ads' CSV, page by page as the client reads (src/http/csv.ts pulls the next page only
// when the last has been taken).
import { timingSafeEqual } from "node:crypto";
import type { Sql } from "../db/client";
import { basicCredentials } from "../http/access";
import { csvStream } from "../http/csv";
import { conversionRows, FEED_DAYS, FEED_ID_PATTERN, feedHead, feedSecretHash, type Feed } from "./model";
import { conversionPage, findFeed } from "./queries";

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
const MIN_SPAN_MS = 1000;
/** Conversions a page of time aims at: a page of CSV is about 150 KB. */
export const FEED_PAGE = 1000;

const FEED_ID = new RegExp(FEED_ID_PATTERN);

// Compared when the feed is unknown, so that an unknown feed costs what a wrong secret does.
const NO_FEED = feedSecretHash("no such feed");

/**
 * The feed `feedId` when the request's HTTP Basic credentials are its id and secret, else null
 * (missing, malformed, another user, a wrong secret and an unknown feed alike). The secret's hash
 * is compared in constant time.
 */
export async function feedAccess(sql: Sql, feedId: string, authorization: string | null): Promise<Feed | null> {
  const given = basicCredentials(authorization);
  if (given === null || given.user !== feedId || !FEED_ID.test(feedId)) return null;
  const feed = await findFeed(sql, feedId);
  const ok = timingSafeEqual(feedSecretHash(given.password), feed?.secret_hash ?? NO_FEED);
  return ok && feed ? feed : null;
}

/**
 * The feed's conversions as CSV rows, a page of time at a time, from `now` − 90 days to `now`
 * (inclusive: a call reported for a time ahead waits for it). A page's span adapts to what the last
 * one held, aiming at `page` conversions: an hour at first, then up to four times wider or
 * narrower each page, so a sparse feed takes a few statements and a dense one pages of about
 * `page`. A span that turns out to hold more than four pages (a burst after a quiet stretch) is
 * read again an eighth as wide, so a page holds at most that many conversions (but a single
 * second's, read whole).
 */
export async function* feedRows(sql: Sql, feed: Feed, now: number, page = FEED_PAGE): AsyncGenerator<string[][]> {
  const end = now + 1;
  const most = 4 * page;
  let from = now - FEED_DAYS * DAY_MS;
  let span = HOUR_MS;
  while (from < end) {
    const to = Math.min(end, from + span);
    const whole = to - from <= MIN_SPAN_MS;
    const read = await conversionPage(sql, feed, new Date(from), new Date(to), whole ? null : most + 1);
    if (read.length > most && !whole) {
      span = Math.max(MIN_SPAN_MS, Math.floor(span / 8));
      continue;
    }
    const rows = read.flatMap((c) => conversionRows(feed.actions, c));
    if (rows.length > 0) yield rows;
    from = to;
    span = Math.max(MIN_SPAN_MS, Math.round(span * Math.min(4, Math.max(0.25, page / Math.max(1, read.length)))));
  }
}

/** The whole CSV answer's body: the time zone line, the header, every row. */
export const feedCsv = (sql: Sql, feed: Feed, now: number): ReadableStream<Uint8Array> =>
  csvStream(feedHead(feed.timezone), feedRows(sql, feed, now), (row) => row);
