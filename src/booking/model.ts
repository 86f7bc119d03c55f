// The booking API's inputs and answers (api-v1.md "Booking objects"; operations.md §7).
// Inputs arrive as loosely typed JSON or form fields, in the query or the body; every rule here
// turns junk into a clear code, never an exception.
import { Type as t } from "@sinclair/typebox";
import type { ErrorCode } from "../errors";
import { cut, emailField, textField, idField } from "../http/fields";
import { phone10 } from "../leads/phone";
import type { Slot } from "./slots";

/** Codes a booking request can fail with (src/errors.ts; HTTP 200 on the booking surface). */
export type BookingCode = Extract<
  ErrorCode,
  | "unknown_link"
  | "bad_epoch"
  | "slot_unavailable"
  | "name_required"
  | "phone_required"
  | "bad_phone"
  | "token_required"
  | "unknown_token"
  | "not_pending"
  | "rate_limited"
>;

export interface Refused<C extends string = BookingCode> {
  ok: false;
  error: C;
}

export interface SlotsResult {
  ok: true;
  slots: Slot[];
  tz: string;
  name: string;
  /** Only when a reschedule token came with the request: null when it is not valid for this link. */
  appointment?: AppointmentView | null;
}

export type SlotsAnswer = SlotsResult | { ok: false; error: "unknown_link"; slots: [] };

/** What the reschedule view shows of the appointment its token moves. */
export interface AppointmentView {
  appt_id: number;
  epoch: number;
  label: string;
  status: string;
}

export interface BookResult {
  ok: true;
  appt_id: number;
  label: string;
  token: string;
  reschedule_url: string;
}

export interface RescheduleResult {
  ok: true;
  appt_id: number;
  epoch: number;
}

export const NAME_MAX = 120;
const SLUG = /^[a-z0-9-]{1,64}$/;

/** The link slug from `slug` or `s`; null when absent or not a possible slug. */
export function slugOf(fields: Record<string, unknown>): string | null {
  const raw = textField(fields.slug) || textField(fields.s) || "";
  const slug = raw.toLowerCase();
  return SLUG.test(slug) ? slug : null;
}

/** A Unix-seconds integer from a number or a string of digits; null otherwise (an id's rule: a positive integer). */
export const epochOf = (v: unknown): number | null => idField(v);

/** The reschedule token from `token` or `r`; "" when absent. */
export function tokenOf(fields: Record<string, unknown>): string {
  return textField(fields.token) || textField(fields.r) || "";
}

export interface Person {
  name: string;
  phone: string;
  email: string;
}

/** Name and phone are required (the phone with at least 10 digits); an invalid email becomes "". */
export function personOf(fields: Record<string, unknown>): Person | Refused {
  const name = cut((textField(fields.name) ?? "").replace(/\s+/g, " "), NAME_MAX);
  if (!name) return { ok: false, error: "name_required" };
  const rawPhone = textField(fields.phone) ?? "";
  if (!rawPhone) return { ok: false, error: "phone_required" };
  const phone = phone10(rawPhone);
  if (!phone) return { ok: false, error: "bad_phone" };
  return { name, phone, email: emailField(fields.email) };
}

/** "Jane Q. Public" → first "Jane", last "Q. Public" (60 characters each, as intake stores them). */
export function splitName(name: string): { firstName: string; lastName: string } {
  const at = name.indexOf(" ");
  return at < 0
    ? { firstName: cut(name, 60), lastName: "" }
    : { firstName: cut(name.slice(0, at), 60), lastName: cut(name.slice(at + 1), 60) };
}

// ---- Schemas (what /openapi.json and the route declarations say; the rules above read the fields)

const closed = { additionalProperties: false } as const;
/** A loosely typed field: text, or a number or boolean read as its text (textField); anything else is absent. */
const loose = (description: string) => t.Union([t.String(), t.Number(), t.Boolean()], { description });
const refusal = <C extends string>(codes: readonly C[]) =>
  t.Object({ ok: t.Literal(false), error: t.Union(codes.map((c) => t.Literal(c))), message: t.Optional(t.String()) }, closed);

/**
 * The fields a booking request may carry, in the query or the body (JSON or form; body fields
 * win). Checked on the wire (src/http/input.ts): a field of another type is dropped, and the
 * rules above (slugOf, epochOf, personOf, tokenOf) read what is left, once each.
 */
const slugFields = {
  slug: t.Optional(loose("the booking link's slug: a-z, 0-9 and -, at most 64, case-insensitive")),
  s: t.Optional(loose("the slug, when `slug` is absent")),
};
const tokenFields = {
  token: t.Optional(loose("a reschedule token (a capability: secret)")),
  r: t.Optional(loose("the token, when `token` is absent")),
};
const epoch = t.Optional(loose("the slot's start, Unix seconds, in the future"));

export const SlotsRequest = t.Object({ ...slugFields, ...tokenFields }, { additionalProperties: true });
export const BookRequest = t.Object(
  {
    ...slugFields,
    epoch,
    name: t.Optional(loose(`required; spaces collapsed, cut to ${NAME_MAX}`)),
    phone: t.Optional(loose("required, at least 10 digits")),
    email: t.Optional(loose("an invalid address is stored as empty")),
  },
  { additionalProperties: true },
);
export const RescheduleRequest = t.Object({ ...tokenFields, epoch }, { additionalProperties: true });

export const SlotSchema = t.Object(
  {
    epoch: t.Integer({ description: "the start, Unix seconds" }),
    label: t.String({ description: "Monday, March 9, 2026 at 9:00 AM CDT" }),
    dayKey: t.String({ description: "YYYY-MM-DD in the calendar's zone" }),
    day: t.String(),
    time: t.String({ description: "9:00 AM; with the zone's abbreviation in a repeated hour" }),
    remaining: t.Integer({ description: "seats left" }),
  },
  closed,
);

export const AppointmentViewSchema = t.Object(
  { appt_id: t.Integer(), epoch: t.Integer(), label: t.String(), status: t.String() },
  closed,
);

export const SlotsResultSchema = t.Object(
  {
    ok: t.Literal(true),
    slots: t.Array(SlotSchema),
    tz: t.String({ description: "the calendar's IANA zone" }),
    name: t.String({ description: "the calendar's name" }),
    appointment: t.Optional(
      t.Union([AppointmentViewSchema, t.Null()], {
        description: "only when a token came: the appointment it moves, or null when it is not valid for this link",
      }),
    ),
  },
  closed,
);

export const BookResultSchema = t.Object(
  {
    ok: t.Literal(true),
    appt_id: t.Integer(),
    label: t.String(),
    token: t.String({ description: "the reschedule token: shown once, stored only as hashes" }),
    reschedule_url: t.String({ description: "{BASE_URL}/book/{slug}?r={token}" }),
  },
  closed,
);

export const RescheduleResultSchema = t.Object({ ok: t.Literal(true), appt_id: t.Integer(), epoch: t.Integer() }, closed);

/** Every refusal the booking surface answers with HTTP 200 (src/errors.ts BOOKING_STATUS). */
const BODY_CODES = ["rate_limited", "body_too_large", "malformed_json", "body_timeout"] as const;

export const SlotsAnswerSchema = t.Union([
  SlotsResultSchema,
  t.Object({ ok: t.Literal(false), error: t.Literal("unknown_link"), slots: t.Array(t.Unknown(), { maxItems: 0 }) }, closed),
  refusal(["body_too_large", "malformed_json", "body_timeout"]),
]);
export const BookAnswerSchema = t.Union([
  BookResultSchema,
  refusal(["unknown_link", "bad_epoch", "name_required", "phone_required", "bad_phone", "slot_unavailable", ...BODY_CODES]),
]);
export const RescheduleAnswerSchema = t.Union([
  RescheduleResultSchema,
  refusal(["token_required", "unknown_token", "not_pending", "bad_epoch", "slot_unavailable", ...BODY_CODES]),
]);
