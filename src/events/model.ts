// The bodies of outbound events (operations.md §6, §7): `{type, timestamp, data}`, one schema of
// `data` per type. Written by the features that cause them (in their transactions), delivered
// signed by src/events. Times are ISO-8601 UTC with milliseconds.
import { Type as t, type TSchema } from "@sinclair/typebox";
import type { EventType } from "./types";

const id = t.Integer();
const nid = t.Union([t.Integer(), t.Null()]);
const str = t.String();
const nstr = t.Union([t.String(), t.Null()]);
const time = t.String({ description: "ISO-8601 UTC" });
const closed = { additionalProperties: false } as const;

/**
 * The first touch of the DNI visitor behind the lead (operations.md §6), or null: the visitor who
 * held the called pool number at the call's time, or the one intake's `dni_visitor` named; a lead
 * keeps the first it is given and its later events carry that one. Fields the visit did not have
 * are null.
 */
export const Attribution = t.Union(
  [
    t.Object(
      {
        pool: t.String({ description: "the DNI pool's key" }),
        visitor: t.String({ description: "the visitor id (the script's cookie)" }),
        source: nstr,
        medium: nstr,
        campaign: nstr,
        term: nstr,
        content: nstr,
        gclid: t.Union([t.String(), t.Null()], { description: "Google Ads click id" }),
        gbraid: nstr,
        wbraid: nstr,
        fbclid: t.Union([t.String(), t.Null()], { description: "Meta click id" }),
        msclkid: t.Union([t.String(), t.Null()], { description: "Microsoft Advertising click id" }),
        landing: t.Union([t.String(), t.Null()], { description: "the landing page's address" }),
        referrer: nstr,
        first_seen_at: t.String({ description: "ISO-8601 UTC: the visitor's first lease" }),
      },
      { ...closed, title: "First touch" },
    ),
    t.Null(),
  ],
  { description: "The first touch of the DNI visitor behind the lead, or null (operations.md §6)" },
);

const message = {
  message_id: id,
  lead_id: id,
  org_id: nid,
  channel: str,
  to: str,
  status: str,
  provider_id: nstr,
  operation_id: nstr,
  actor_type: str,
  actor_id: str,
};

const appointment = {
  appt_id: id,
  calendar_id: id,
  calendar: str,
  link: str,
  org_id: nid,
  lead_id: nid,
  epoch: id,
  label: str,
  starts_at: time,
  name: str,
  phone: str,
  email: str,
  status: str,
};

/**
 * An operator's change of an appointment's status (src/booking/states.ts): the appointment as it
 * is now, the status it left, and who changed it (an Actor: `user` and a console user's id, …).
 */
function statusChange() {
  return t.Object(
    { ...appointment, previous_status: str, actor_type: str, actor_id: str, updated_at: time },
    closed,
  );
}

export const EVENT_DATA: Record<EventType, TSchema> = {
  "lead.created": t.Object(
    { lead_id: id, list_id: id, campaign: str, org_id: nid, phone: str, source: str, created_at: time, attribution: Attribution },
    closed,
  ),
  "call.completed": t.Object(
    {
      call_id: id, lead_id: nid, org_id: nid, dial_id: nid, phone: str, to_number: str, status: str, secs: id,
      agent: str, recording_id: nid, ai_summary: nstr, occurred_at: time, attribution: Attribution,
    },
    closed,
  ),
  "message.sent": t.Object(message, closed),
  "message.failed": t.Object({ ...message, reason: str, error: str }, closed),
  "message.received": t.Object(
    { message_id: id, lead_id: id, org_id: nid, channel: str, from: str, to: str, body: str, provider_id: nstr, consent: nstr },
    closed,
  ),
  "appointment.booked": t.Object({ ...appointment, created_at: time, attribution: Attribution }, closed),
  "appointment.rescheduled": t.Object(
    { ...appointment, previous_epoch: id, previous_label: str, previous_starts_at: time, updated_at: time },
    closed,
  ),
  "appointment.confirmed": statusChange(),
  "appointment.cancelled": statusChange(),
  "appointment.completed": statusChange(),
  "appointment.no_show": statusChange(),
};

/** The body of any event: its type, when it happened, and its data (per EVENT_DATA). */
export const EventBody = t.Object({ type: t.String(), timestamp: time, data: t.Record(t.String(), t.Unknown()) }, closed);

/** The whole body of one type of event: the envelope with that type's data (what is POSTed). */
export const eventEnvelope = (type: EventType): TSchema =>
  t.Object({ type: t.Literal(type), timestamp: time, data: EVENT_DATA[type] }, { ...closed, title: `${type} event` });
