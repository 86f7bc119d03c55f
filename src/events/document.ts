// The outbound events as /openapi.json's `webhooks` section says them: one webhook per event type,
// its body from the same schemas as EVENT_DATA (src/events/model.ts), its Standard Webhooks
// signature headers as src/events/sign.ts writes them.
import { Type as t } from "@sinclair/typebox";
import type { WebhookDoc } from "../http/openapi";
import { eventEnvelope } from "./model";
import { EVENT_TYPES, type EventType } from "./types";

const SUMMARIES: Record<EventType, string> = {
  "lead.created": "A new lead, from intake or a booking (never for a duplicate)",
  "lead.updated":
    "A lead's fields, status or tags were changed (the console, an operator): `changes` holds each changed field with its previous (`from`) and new (`to`) value, and nothing else",
  "message.sent": "The provider accepted an SMS or email",
  "message.failed": "A send failed: a provider refusal, a deferred send refused by a gate, or a failed status callback",
  "message.received": "An inbound SMS",
  "appointment.booked": "An appointment was booked",
  "appointment.rescheduled": "An appointment was moved to another slot",
  "appointment.confirmed": "An operator confirmed a pending appointment",
  "appointment.cancelled": "An operator cancelled an appointment; its seat is offered again",
  "appointment.completed": "An operator marked an appointment as held (completed)",
  "appointment.no_show": "An operator marked an appointment as a no-show",
  "call.completed": "A dialer reported a call",
};

const HEADERS: WebhookDoc["headers"] = [
  {
    name: "webhook-id",
    description: "`evt_<n>`: the event's id, the same on every attempt and for every endpoint; drop duplicates by it.",
    schema: t.String({ pattern: "^evt_[0-9]+$" }),
  },
  {
    name: "webhook-timestamp",
    description: "Unix seconds of this attempt; reject ones far from your clock (replays).",
    schema: t.String({ pattern: "^[0-9]+$" }),
  },
  {
    name: "webhook-signature",
    description:
      '`v1,` and the base64 HMAC-SHA256 of `"{webhook-id}.{webhook-timestamp}.{body}"`, keyed by the base64-decoded ' +
      "bytes after `whsec_` of the endpoint's secret (Standard Webhooks).",
    schema: t.String({ pattern: "^v1,[A-Za-z0-9+/=]+$" }),
  },
];

export const eventWebhooks = (): WebhookDoc[] =>
  EVENT_TYPES.map((type) => ({
    name: type,
    summary: SUMMARIES[type],
    description:
      "POSTed as JSON `{type, timestamp, data}` (`timestamp`: when the event happened, ISO-8601 UTC) to every active endpoint " +
      "subscribed to this type or `*`, at least once, signed as in Standard Webhooks (https://www.standardwebhooks.com).",
    payload: eventEnvelope(type),
    headers: HEADERS,
  }));
