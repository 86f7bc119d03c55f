// The Today report's figures (docs/reports.md says exactly what each one counts).
import type { Refusal } from "../errors";

export interface SourceCount {
  /** The lead's `source` as it came in ('' when none was given). */
  source: string;
  leads: number;
}

/** One day of the organization, in its time zone. */
export interface DayFigures {
  day: string;
  leads: { total: number; bySource: SourceCount[] };
  calls: { answered: number; missed: number; talkSecs: number };
  /** From a new lead or an inbound message to the first reply or answered call of a person. */
  firstResponse: {
    /** First responses given on the day. */
    responses: number;
    /** Nearest-rank percentiles of their times, in seconds; null without responses. */
    medianSecs: number | null;
    p90Secs: number | null;
    /** Leads whose wait began on the day and who have had no response yet. */
    waiting: number;
  };
  /** Booked: made on the day; the others: appointments whose slot starts on the day, by status now. */
  appointments: { booked: number; pending: number; confirmed: number; completed: number; noShows: number; cancelled: number };
  messages: { sent: number; sms: number; email: number; cost: number; inbound: number; replies: number };
  /** Leads a person replied to or spoke with on the day. */
  conversations: number;
}

/** A person's day: a console user (their replies) and a CTI agent (their calls), by id. */
export interface AgentFigures {
  agent: string;
  /** The user's name in the organization ('' for an agent id that names no user of it). */
  name: string;
  conversations: number;
  replies: number;
  calls: number;
  answered: number;
  missed: number;
  talkSecs: number;
  responses: number;
  medianResponseSecs: number | null;
}

export interface TodayReport {
  ok: true;
  org: { id: number; name: string; zone: string };
  day: string;
  today: DayFigures;
  yesterday: DayFigures;
  /** The same weekday a week before. */
  lastWeek: DayFigures;
  /** The day's people, most conversations first. */
  agents: AgentFigures[];
}

/**
 * org_required: a platform actor (an admin) named no organization; not_found: no such one;
 * bad_day: not a calendar day YYYY-MM-DD; not_allowed: an agent (the report is a manager's).
 */
export type TodayRefusal = Refusal<"org_required" | "not_found" | "bad_day" | "not_allowed">;

export interface TodayOptions {
  /** An admin's pick; ignored for an actor confined to its organization. */
  org?: number | null;
  /** YYYY-MM-DD in the organization's zone; default its day at `now`. */
  day?: string | null;
}
