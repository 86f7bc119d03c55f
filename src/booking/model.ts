// The booking API's inputs and answers (api-v1.md "Booking objects"; operations.md §7).
// Inputs arrive as loosely typed JSON or form fields, in the query or the body; every rule here
// turns junk into a clear code, never an exception.
import type { ErrorCode } from "../errors";
import { cut, emailField, textField } from "../http/fields";
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

/** A Unix-seconds integer from a number or a string of digits; null otherwise. */
export function epochOf(v: unknown): number | null {
  const n = typeof v === "number" ? v : typeof v === "string" && /^\s*\d{1,15}\s*$/.test(v) ? Number(v) : NaN;
  return Number.isSafeInteger(n) && n > 0 ? n : null;
}

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
