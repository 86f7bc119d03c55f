// The contract's pure rules for number insertion: identifiers, number formatting, attribution
// fields and browser events. No database, no clock.
import { cleanText, cut, isNumericText, textField } from "../http/fields";

export const POOL_MAX = 48;
export const VISITOR_MAX = 48;
export const EVENT_NAME_MAX = 80;
export const META_MAX_BYTES = 4000;
/** Request bodies larger than this are never read whole (and then fail field validation). */
export const BODY_MAX_BYTES = 65_536;

const PLAIN_POOL = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;
const PLAIN_VISITOR = /^[A-Za-z0-9_-]{1,48}$/;

/** A pool key as sent, or null when it cannot name a pool (absent, empty, over 48 characters). */
export function poolKeyOf(v: unknown): string | null {
  // Printable ASCII with no space at either end is what cleaning would leave as it is.
  if (typeof v === "string" && v.length <= POOL_MAX && PLAIN_POOL.test(v)) return v;
  const s = textField(v);
  if (s === null || s === "" || s.length > POOL_MAX) return null;
  return s;
}

/** Letters, digits, `_` and `-` kept, cut to 48; null when nothing is left (visitor_required). */
export function visitorOf(v: unknown): string | null {
  if (typeof v === "string" && PLAIN_VISITOR.test(v)) return v;
  const s = textField(v);
  if (s === null) return null;
  const kept = s.replace(/[^A-Za-z0-9_-]+/g, "").slice(0, VISITOR_MAX);
  return kept === "" ? null : kept;
}

/** `(512) 555-0101` for a 10-digit US number (a leading 1 of 11 digits dropped); other digits as they are. */
export function formatNumber(digits: string): string {
  const d = digits.length === 11 && digits.startsWith("1") ? digits.slice(1) : digits;
  if (!/^\d{10}$/.test(d)) return digits;
  return `(${d.slice(0, 3)}) ${d.slice(3, 6)}-${d.slice(6)}`;
}

/** The ad platforms' click ids a lease carries (operations.md §5): Google's three, Meta's, Microsoft's. */
export const CLICK_IDS = ["gclid", "gbraid", "wbraid", "fbclid", "msclkid"] as const;
export type ClickId = (typeof CLICK_IDS)[number];
/** Click ids are opaque tokens; real ones are well under this (fbclid, the longest, a few hundred). */
export const CLICK_ID_MAX = 500;

export interface Attribution extends Record<ClickId, string> {
  utm_source: string;
  utm_medium: string;
  utm_campaign: string;
  utm_term: string;
  utm_content: string;
  landing: string;
  referrer: string;
}

const UTM_KEYS = ["source", "medium", "campaign", "term", "content"] as const;
const text = (v: unknown, max: number) => cut(textField(v) ?? "", max);

/**
 * First-touch attribution from a lease body: `utm` is an object of strings; flat `utm_source`…
 * fields are taken too when the object lacks them (forms and older snippets send them so).
 */
export function attributionOf(f: Record<string, unknown>): Attribution {
  const utm = f.utm !== null && typeof f.utm === "object" && !Array.isArray(f.utm) ? (f.utm as Record<string, unknown>) : {};
  const out = {} as Attribution;
  for (const k of UTM_KEYS) out[`utm_${k}`] = text(utm[k] ?? f[`utm_${k}`], 200);
  for (const k of CLICK_IDS) out[k] = text(f[k], CLICK_ID_MAX);
  out.landing = text(f.landing, 2000);
  out.referrer = text(f.referrer, 2000);
  return out;
}

export type EventKind = "pageview" | "form" | "custom";

export interface BrowserEvent {
  kind: EventKind;
  name: string;
  value: number;
  /** Encoded JSON of an object of at most 4,000 bytes, else null (silently dropped). */
  meta: string | null;
}

/** Numbers and numeric strings; anything else (and non-finite values) is 0. */
function eventValue(v: unknown): number {
  if (typeof v === "number") return Number.isFinite(v) ? v : 0;
  if (typeof v === "string" && isNumericText(v)) {
    const n = Number(v);
    return Number.isFinite(n) ? n : 0;
  }
  return 0;
}

/** PostgreSQL's jsonb holds neither NUL nor lone surrogates: clean every string and key. */
function cleanJson(v: unknown): unknown {
  if (typeof v === "string") return v.toWellFormed().replace(/\u0000/g, "");
  if (Array.isArray(v)) return v.map(cleanJson);
  if (v !== null && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[cleanJson(k) as string] = cleanJson(x);
    return out;
  }
  return v;
}

function eventMeta(v: unknown): string | null {
  if (v === null || typeof v !== "object" || Array.isArray(v)) return null;
  const encoded = JSON.stringify(cleanJson(v));
  return Buffer.byteLength(encoded, "utf8") <= META_MAX_BYTES ? encoded : null;
}

export function eventOf(f: Record<string, unknown>): BrowserEvent {
  const kind = f.kind === "pageview" || f.kind === "form" ? f.kind : "custom";
  return { kind, name: text(f.name, EVENT_NAME_MAX), value: eventValue(f.value), meta: eventMeta(f.meta) };
}

/** A user agent as stored: cleaned and cut. */
export function userAgentOf(v: string | null | undefined): string {
  return v ? cut(cleanText(v), 400) : "";
}
