// CTI dial, lookup and the agent's queue (api-v1.md; operations.md §4 cti_queue.php).
import { Type as t } from "@sinclair/typebox";

const closed = { additionalProperties: false } as const;

export const DialInput = t.Object(
  { phone: t.Union([t.String(), t.Number()], { description: "sanitized to digits; at least 10" }) },
  { additionalProperties: true },
);

export const DialResult = t.Object({ ok: t.Literal(true), id: t.Integer(), lead_id: t.Union([t.Integer(), t.Null()]) }, closed);

export const LookupResult = t.Union([
  t.Object({ ok: t.Literal(true), found: t.Literal(true), lead_id: t.Integer(), name: t.String() }, closed),
  t.Object({ ok: t.Literal(true), found: t.Literal(false) }, closed),
]);

export const QueueResult = t.Object(
  {
    ok: t.Literal(true),
    dial: t.Union([
      t.Object(
        {
          id: t.Integer(),
          lead_id: t.Union([t.Integer(), t.Null()]),
          phone: t.String(),
          name: t.Union([t.String(), t.Null()]),
          epoch: t.Integer(),
          dnc: t.Boolean({ description: "the number is on the do-not-contact list of the dial's organization: skip it" }),
          outside_window: t.Boolean({
            description: "the lead's local time is outside its calling window (8:00–21:00 local, or its state's stricter hours); false when the zone is unknown",
          }),
          local_time: t.Union([t.String({ description: "ISO-8601 with the lead's UTC offset, e.g. 2026-01-15T07:30:00-06:00" }), t.Null()], {
            description: "the lead's local time (its state's zone, else its area code's); null when unknown",
          }),
        },
        closed,
      ),
      t.Null(),
    ]),
  },
  closed,
);
