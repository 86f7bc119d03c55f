// The message send input and the Message result (api-v1.md), and who is sending.
import { createHash } from "node:crypto";
import { Type as t } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import type { Actor } from "../auth/actor";
import { AppError, reasonStatus } from "../errors";
import { idField } from "../http/fields";
import { objectFields, type Input } from "../http/route";
import type { GateReason } from "./gates";
import type { ProviderFailure } from "./twilio";

export type { Actor };

export type Channel = "sms" | "email" | "note";

export interface SendInput {
  /** Null when `lead_id` is missing or not an id: answered like a lead that does not exist. */
  leadId: number | null;
  channel: Channel;
  /** As given (only made well-formed UTF-16, which storage needs anyway). */
  body: string;
  subject: string | null;
  operationId: string;
  /** What only an automation's send carries (never the API's): not part of the send's identity. */
  extras?: SendExtras;
}

/** An automation's additions to a send (src/automations/). */
export interface SendExtras {
  /** Merge values beyond the lead's and the org's: `{appointment_time}`, `{reschedule_url}`. */
  values?: Record<string, string>;
  /** An iCalendar text attached to an email as `appointment.ics` (text/calendar); ignored for SMS. */
  ics?: string;
  /** Epoch ms: the send is refused `expired` unless it goes before then (a reminder: the start). */
  sendBefore?: number;
}

// The send input's fields, each compiled once: the checks below and the documented MessageInput
// are the same schemas.
const OperationId = t.String({ pattern: "^[A-Za-z0-9_.:-]{1,96}$", description: "the idempotency identity: reuse only for a retry of the same send" });
const ChannelField = t.Union([t.Literal("sms"), t.Literal("email"), t.Literal("note")]);
// Text columns cannot hold NUL.
const TextField = t.String({ pattern: "^[^\\u0000]*$" });
const operationIdOk = TypeCompiler.Compile(OperationId);
const channelOk = TypeCompiler.Compile(ChannelField);
const stringOk = TypeCompiler.Compile(t.String());
const textOk = TypeCompiler.Compile(TextField);

/** Text as given; null when absent; a refusal for other types and for NUL. */
function textInput(name: string, v: unknown): string | null {
  if (v === undefined || v === null) return null;
  if (!stringOk.Check(v)) throw new AppError("invalid_input", `${name} must be a string`);
  if (!textOk.Check(v)) throw new AppError("invalid_input", `${name} must not contain NUL characters`);
  return v.toWellFormed();
}

/**
 * The send input from a request's fields. Checked in the order the answers are ranked: the
 * operation_id (422 bad_operation_id), the channel and the field types (422 invalid_input). The
 * lead (404) and an empty body (200 empty_body) need the database and come after, in the service.
 */
export function parseSendInput(f: Record<string, unknown>): SendInput {
  // operations.md §7 gives the body exactly: {ok: false, error: "bad_operation_id"}.
  if (!operationIdOk.Check(f.operation_id)) throw new AppError("bad_operation_id");
  if (!channelOk.Check(f.channel)) throw new AppError("invalid_input", "channel must be one of sms, email, note");
  return {
    leadId: idField(f.lead_id),
    channel: f.channel,
    body: textInput("body", f.body) ?? "",
    subject: textInput("subject", f.subject),
    operationId: f.operation_id,
  };
}

/**
 * What an operation_id was first used for: lead, channel, body and subject. The same operation_id
 * with any of them different is a conflict, not a retry.
 */
export function requestHash(input: SendInput): string {
  return createHash("sha256").update(JSON.stringify([input.leadId, input.channel, input.body, input.subject])).digest("base64");
}

/** Every reason a send answers `ok: false` with (api-v1.md; billing reasons are HTTP 402). */
export type SendReason =
  | GateReason
  | "empty_body"
  | ProviderFailure
  /** A retry while the first attempt is still with its provider. */
  | "in_progress"
  /** The sender stopped during the provider call: the provider may or may not have the message. */
  | "outcome_unknown";

/**
 * What a send came to, as a value: the Message result of the contract. `message_id` is the
 * message recorded (null when a gate refused before anything was recorded); `defer_until` (Unix
 * seconds) says it was queued until the recipient's quiet hours end.
 */
export interface MessageResult {
  ok: boolean;
  message_id: number | null;
  reason?: SendReason;
  defer_until?: number;
}

/**
 * The one serializer of a Message result: what the API answers and what a message row stores as
 * its first answer. Field order is fixed: stored results are replayed byte for byte, and the few
 * written by SQL (queries.ts: a note's, a deferral's, an interrupted send's) spell this same form.
 */
export function resultText(r: MessageResult): string {
  const out: MessageResult = { ok: r.ok, message_id: r.message_id };
  if (r.reason !== undefined) out.reason = r.reason;
  if (r.defer_until !== undefined) out.defer_until = r.defer_until;
  return JSON.stringify(out);
}

/** A stored result (messages.result, written by resultText or in its form) read back as a value. */
export function parseResult(text: string): MessageResult {
  const v = JSON.parse(text) as Record<string, unknown>;
  const r: MessageResult = { ok: v.ok === true, message_id: typeof v.message_id === "number" ? v.message_id : null };
  if (typeof v.reason === "string") r.reason = v.reason as SendReason;
  if (typeof v.defer_until === "number") r.defer_until = v.defer_until;
  return r;
}

/** A send's answer over HTTP: the status (402 for billing reasons) and the result's exact JSON text. */
export interface SendAnswer {
  status: 200 | 402;
  text: string;
}

export const answerOf = (r: MessageResult): SendAnswer => ({
  status: r.reason === undefined ? 200 : reasonStatus(r.reason),
  text: resultText(r),
});

// The contract's shapes. The input is checked by parseSendInput, which answers each kind of junk
// with its own code.
export const MessageInput = t.Object(
  {
    lead_id: t.Integer({ description: "a lead in the key's organization" }),
    channel: ChannelField,
    body: t.String({ ...TextField, description: "non-empty after trimming; an email body is HTML (merge values are escaped into it)" }),
    subject: t.Optional(t.String({ ...TextField, description: "email only; default `Message from {company}`" })),
    operation_id: OperationId,
  },
  { additionalProperties: true },
);

export const MessageResultSchema = t.Object(
  {
    ok: t.Boolean(),
    message_id: t.Union([t.Integer(), t.Null()]),
    reason: t.Optional(t.String({ description: "gate or delivery failure; billing reasons come with HTTP 402" })),
    defer_until: t.Optional(t.Integer({ description: "Unix seconds: queued until the recipient's quiet hours end" })),
  },
  { additionalProperties: true },
);

/**
 * The send's body as read: the input, or the refusal it earned, as a value, because a refused
 * request still draws its hit before it is answered (sendFromApi).
 */
export const sendInput: Input<SendInput | AppError> = {
  schema: MessageInput,
  read(value) {
    try {
      return parseSendInput(objectFields(value));
    } catch (err) {
      if (err instanceof AppError) return err;
      throw err;
    }
  },
};
