// The number-insertion API's request and answer shapes (api-v1.md "Number-insertion (DNI)
// objects"). Requests are read leniently (rules.ts: a pool or visitor of the wrong type is one
// that is missing); the answers are exactly these fields.
import { Type as t } from "@sinclair/typebox";
import { EVENT_NAME_MAX, POOL_MAX } from "./rules";

const closed = { additionalProperties: false } as const;
const utmText = t.Optional(t.String());

// A pool or visitor sent as a number is read as its text (rules.ts); of another type, as missing.
const pool = t.Union([t.String({ maxLength: POOL_MAX }), t.Number()]);
const visitor = t.Union([t.String(), t.Number()]);

export const LeaseRequest = t.Object(
  {
    pool: t.Union([t.String({ maxLength: POOL_MAX }), t.Number()], { description: "the pool's key: a low-trust public identifier" }),
    visitor: t.Union([t.String(), t.Number()], { description: "letters, digits, _ and - are kept, cut to 48" }),
    utm: t.Optional(t.Object({ source: utmText, medium: utmText, campaign: utmText, term: utmText, content: utmText })),
    gclid: t.Optional(t.String()),
    landing: t.Optional(t.String({ description: "URL" })),
    referrer: t.Optional(t.String({ description: "URL" })),
  },
  { additionalProperties: true },
);

export const HeartbeatRequest = t.Object({ pool, visitor }, { additionalProperties: true });

export const EventRequest = t.Object(
  {
    pool,
    visitor,
    kind: t.String({ description: "pageview, form or custom; anything else is stored as custom" }),
    name: t.Optional(t.String({ description: `cut to ${EVENT_NAME_MAX} characters` })),
    value: t.Optional(t.Union([t.Number(), t.String()], { description: "default 0" })),
    meta: t.Optional(t.Record(t.String(), t.Unknown(), { description: "kept when its JSON is at most 4,000 bytes" })),
  },
  { additionalProperties: true },
);

export const LeaseResult = t.Object(
  {
    ok: t.Literal(true),
    number: t.String({ description: "digits" }),
    formatted: t.String({ description: "(512) 555-0101" }),
    ttl: t.Integer({ description: "seconds the hold lasts without a lease or heartbeat; 0 for the fallback" }),
    fallback: t.Boolean(),
    placeholder: t.String({ description: "digits" }),
    placeholder_formatted: t.String(),
  },
  closed,
);

export const HeartbeatResult = t.Union([
  t.Object({ ok: t.Literal(true), ttl: t.Integer() }, closed),
  t.Object({ ok: t.Literal(false), error: t.Literal("not_leased") }, closed),
]);

export const EventResult = t.Object({ ok: t.Literal(true) }, closed);
