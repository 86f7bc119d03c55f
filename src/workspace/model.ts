// The workspace's shapes (docs/workspace.md): conversations as the inbox lists them, its views
// and filters, and where a page starts.
import type { Actor } from "../auth/actor";
import { AppError } from "../errors";

export type ConversationStatus = "open" | "snoozed" | "closed";

/** The inbox's views: Mine, Unassigned, All open, Snoozed, Closed. */
export type View = "mine" | "unassigned" | "open" | "snoozed" | "closed";
export const VIEWS: readonly View[] = ["mine", "unassigned", "open", "snoozed", "closed"];

/** The channels a list is filtered by: its last message's. */
export type ListChannel = "sms" | "email" | "note";
export const LIST_CHANNELS: readonly ListChannel[] = ["sms", "email", "note"];

export interface InboxFilter {
  view: View;
  channel?: ListChannel | null;
  /** A user's id, or "none" for unassigned conversations. */
  assignee?: string | null;
}

/** Where a page starts: after the conversation active at `micros` (Unix µs, exact) with id `id`. */
export interface ListCursor {
  micros: number;
  id: number;
}

export const listCursorText = (c: ListCursor) => `${c.micros}.${c.id}`;

export function parseListCursor(text: string | null | undefined): ListCursor | null {
  const m = /^(\d{1,17})\.(\d{1,17})$/.exec(text ?? "");
  return m ? { micros: Number(m[1]), id: Number(m[2]) } : null;
}

/** One row of the inbox: what the list shows of a conversation. */
export interface InboxRow {
  id: number;
  lead_id: number;
  org_id: number | null;
  status: ConversationStatus;
  snoozed_until: Date | null;
  assignee: string | null;
  assignee_name: string | null;
  last_activity_at: Date;
  last_message_id: number | null;
  last_channel: string | null;
  last_direction: string | null;
  /** The last message on one line (an email's subject), at most 140 characters. */
  snippet: string;
  /** Since when the lead has waited for an answer (their first unanswered inbound), or null. */
  waiting_since: Date | null;
  /** The lead's name; '' when it has none (the list shows the phone, formatted). */
  name: string;
  phone: string;
  /** The organization's zone, the one times are stated in. */
  timezone: string;
  sms_opted_out: boolean;
  email_opted_out: boolean;
  /** When the lead's quiet hours end, if a text sent now would be deferred (gates.ts quietGate); null otherwise. */
  quiet_until: number | null;
  /** A callback of this conversation has come due and is not done. */
  callback_due: boolean;
  cursor: string;
}

/** The console user acting, whose Mine view and work these are; null for any other actor. */
export const userOf = (actor: Actor): string | null => (actor.type === "user" ? actor.id : null);

/** The ids of a bulk action: at most this many at once. */
export const BULK_MAX = 500;

export function bulkIds(ids: readonly unknown[]): number[] {
  if (ids.length === 0 || ids.length > BULK_MAX) throw new AppError("invalid_input", `ids: between 1 and ${BULK_MAX} conversations`);
  const out = new Set<number>();
  for (const v of ids) {
    const n = typeof v === "string" && /^\d{1,15}$/.test(v) ? Number(v) : v;
    if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 1) throw new AppError("invalid_input", "ids: expected conversation ids");
    out.add(n);
  }
  return [...out];
}
