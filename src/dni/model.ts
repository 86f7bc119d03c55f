// The number-insertion API's request and answer shapes (api-v1.md "Number-insertion (DNI)
// objects"). Requests are checked field by field on the wire (src/http/route.ts fieldsInput: a
// field of another type reads as missing), then read by the rules of rules.ts; the answers are
// exactly these fields.
import { Type as t } from "@sinclair/typebox";
import { EVENT_NAME_MAX, POOL_MAX, VISITOR_MAX } from "./rules";

const closed = { additionalProperties: false } as const;
// Text fields take numbers too, read as their text (rules.ts).
const scalar = (description?: string) => t.Union([t.String(), t.Number()], description ? { description } : {});
const utmText = t.Optional(scalar());

/** The two fields every action needs, checked before anything else is read. */
export const Identity = t.Object(
  {
    pool: scalar(`the pool's key, at most ${POOL_MAX} characters after trimming: a low-trust public identifier`),
    visitor: scalar(`letters, digits, _ and - are kept, cut to ${VISITOR_MAX}`),
  },
  { additionalProperties: true },
);
const { pool, visitor } = Identity.properties;

export const LeaseRequest = t.Object(
  {
    pool,
    visitor,
    utm: t.Optional(t.Object({ source: utmText, medium: utmText, campaign: utmText, term: utmText, content: utmText })),
    utm_source: t.Optional(scalar("taken when `utm` lacks it (forms and older snippets)")),
    utm_medium: utmText,
    utm_campaign: utmText,
    utm_term: utmText,
    utm_content: utmText,
    gclid: t.Optional(scalar("Google's click id, from the landing page's address")),
    gbraid: t.Optional(scalar("Google's click id for app campaigns measured on the web (iOS)")),
    wbraid: t.Optional(scalar("Google's click id for web-to-app measurement (iOS)")),
    fbclid: t.Optional(scalar("Meta's click id")),
    msclkid: t.Optional(scalar("Microsoft Advertising's click id")),
    landing: t.Optional(scalar("URL")),
    referrer: t.Optional(scalar("URL")),
  },
  { additionalProperties: true },
);

export const HeartbeatRequest = Identity;

export const EventRequest = t.Object(
  {
    pool,
    visitor,
    kind: t.String({ description: "pageview, form or custom; anything else is stored as custom" }),
    name: t.Optional(scalar(`cut to ${EVENT_NAME_MAX} characters`)),
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
