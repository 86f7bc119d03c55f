// A Google Ads offline click-conversion feed (operations.md §8): what a feed is, and the CSV it
// answers, as pure functions. Google's format: a `Parameters:TimeZone=` line naming the zone of
// the times, a header, then one row per conversion — the click id, the conversion action's name
// as it is in Google Ads, the time, the value and its currency. Google Ads ignores a row it has
// imported before, so every conversion of the window is in every fetch.
import { createHash } from "node:crypto";
import { csvLine } from "../http/csv";

/** What converts: a reported call of at least `min_secs`, a new lead, a booked appointment. */
export const CONVERSION_KINDS = ["call", "lead", "booking"] as const;
export type ConversionKind = (typeof CONVERSION_KINDS)[number];

/** One conversion action of a feed, defaults applied (provisioning stores it so). */
export interface FeedAction {
  /** The conversion action's name in Google Ads. */
  name: string;
  on: ConversionKind;
  /** Calls only: the shortest call that counts. */
  min_secs: number;
  value: number;
  currency: string;
}

export interface Feed {
  id: string;
  org_id: number;
  /** The organization's time zone: the feed's times are written in it. */
  timezone: string;
  secret_hash: Buffer;
  actions: FeedAction[];
}

export const FEED_ID_PATTERN = "^[A-Za-z0-9_-]{1,64}$";
export const FEED_SECRET_MIN = 24;
export const DEFAULT_MIN_SECS = 60;
/** Google Ads' lookback for click conversions; older ones are not imported. */
export const FEED_DAYS = 90;

/**
 * How a feed's secret is stored: its SHA-256. The secret is at least 24 characters chosen by the
 * operator (docs/conversions.md: a random one), so a slow hash would only cost every fetch.
 */
export const feedSecretHash = (secret: string): Buffer => createHash("sha256").update(secret, "utf8").digest();

export const FEED_HEADER = ["Google Click ID", "Conversion Name", "Conversion Time", "Conversion Value", "Conversion Currency"] as const;

/** The lines before the rows: the time zone parameter and the header. */
export const feedHead = (timezone: string): string => `Parameters:TimeZone=${timezone}\r\n${csvLine(FEED_HEADER)}`;

/** A value as Google reads it: at most two decimals, no exponent (values are at most 10^15). */
export const feedValue = (v: number): string => String(Number(v.toFixed(2)));

/** One conversion as read from the database: its kind, time (in the feed's zone), click id and a call's length. */
export interface Conversion {
  kind: ConversionKind;
  /** `yyyy-MM-dd HH:mm:ss` in the feed's time zone. */
  time: string;
  gclid: string;
  secs: number;
}

/** The feed's rows for one conversion: one per action of its kind that it qualifies for, in the feed's order. */
export function conversionRows(actions: readonly FeedAction[], c: Conversion): string[][] {
  const rows: string[][] = [];
  for (const a of actions) {
    if (a.on !== c.kind || (c.kind === "call" && c.secs < a.min_secs)) continue;
    rows.push([c.gclid, a.name, c.time, feedValue(a.value), a.currency]);
  }
  return rows;
}
