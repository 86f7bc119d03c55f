// The business events an endpoint can subscribe to (`*` for all). Each is written to the outbox
// by the feature that causes it, in the transaction of the change; docs/webhooks.md lists the payloads.
export const EVENT_TYPES = [
  "lead.created",
  "message.sent",
  "message.failed",
  "message.received",
  "appointment.booked",
  "appointment.rescheduled",
  "appointment.confirmed",
  "appointment.cancelled",
  "appointment.completed",
  "appointment.no_show",
  "call.completed",
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

export const isSubscription = (s: string): boolean => s === "*" || (EVENT_TYPES as readonly string[]).includes(s);
