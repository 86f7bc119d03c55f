// A dialer's call report (operations.md §4): {lead_id?, phone?, dial_id?, status, secs, agent,
// recording_id?, ai_summary?, epoch?, to_number?}. `status`, `secs` and `agent` are required.
import { Type as t } from "@sinclair/typebox";
import { AppError } from "../errors";
import { cut, idField, textField } from "../http/fields";
import { fieldChecker } from "../http/input";
import { objectFields, type Input } from "../http/route";
import { digitsOf } from "../leads/phone";

const id = t.Union([t.Integer({ minimum: 1 }), t.String()]);
const scalar = t.Union([t.String(), t.Number()]);

export const CallReportInput = t.Object(
  {
    lead_id: t.Optional(id),
    phone: t.Optional(scalar),
    dial_id: t.Optional(id),
    status: t.Union([t.String(), t.Number()], { description: "the dialer's disposition, up to 40 characters" }),
    secs: t.Union([t.Integer({ minimum: 0 }), t.String()], { description: "whole seconds" }),
    agent: scalar,
    recording_id: t.Optional(id),
    ai_summary: t.Optional(t.Union([t.String(), t.Null()])),
    epoch: t.Optional(t.Union([t.Integer(), t.String()], { description: "Unix seconds of the call; default now" })),
    to_number: t.Optional(scalar),
  },
  { additionalProperties: true },
);

export const CallReportResult = t.Object(
  { ok: t.Literal(true), call_id: t.Integer(), lead_id: t.Union([t.Integer(), t.Null()]) },
  { additionalProperties: false },
);

export interface CallReport {
  leadId: number | null;
  phone: string;
  dialId: number | null;
  status: string;
  secs: number;
  agent: string;
  recordingId: number | null;
  aiSummary: string | null;
  epoch: number | null;
  toNumber: string;
}

const invalid = (field: string, why: string) => new AppError("invalid_input", `${field}: ${why}`);
const given = (v: unknown) => v !== undefined && v !== null && v !== "";

function optionalId(raw: Record<string, unknown>, name: string): number | null {
  if (!given(raw[name])) return null;
  const id = idField(raw[name]);
  if (id === null) throw invalid(name, "expected a positive integer");
  return id;
}

const reportFields = fieldChecker(CallReportInput);

/** The report, or invalid_input naming the first field at fault. */
export function parseCallReport(raw: Record<string, unknown>, nowMs: number): CallReport {
  const f = reportFields(raw);
  const status = textField(f.status);
  if (!status) throw invalid("status", "required");
  if (!given(raw.secs)) throw invalid("secs", "required");
  const secs = typeof f.secs === "string" && /^\s*\d+\s*$/.test(f.secs) ? Number(f.secs) : f.secs;
  if (typeof secs !== "number" || !Number.isInteger(secs) || secs < 0 || secs > 86_400 * 7) {
    throw invalid("secs", "expected a whole number of seconds");
  }
  let epoch: number | null = null;
  if (given(raw.epoch)) {
    const e = Number(f.epoch);
    // A call cannot start before 2000 or more than a day in the future.
    if (!Number.isInteger(e) || e < 946_684_800 || e > nowMs / 1000 + 86_400) throw invalid("epoch", "expected Unix seconds");
    epoch = e;
  }
  const phone = digitsOf(f.phone);
  const leadId = optionalId(raw, "lead_id");
  const dialId = optionalId(raw, "dial_id");
  if (leadId === null && dialId === null && phone.length < 10) {
    throw invalid("lead_id", "one of lead_id, dial_id or a phone of at least 10 digits is required");
  }
  const agent = textField(f.agent);
  if (!agent) throw invalid("agent", "required");
  const summary = f.ai_summary === undefined || f.ai_summary === null ? null : textField(f.ai_summary);
  return {
    leadId,
    phone: phone.slice(-20),
    dialId,
    status: cut(status, 40),
    secs,
    agent: cut(agent, 60),
    recordingId: optionalId(raw, "recording_id"),
    aiSummary: summary === null ? null : cut(summary, 20_000),
    epoch,
    toNumber: digitsOf(f.to_number).slice(-10),
  };
}

/** The report's body: its fields checked (compiled once), then the rules above; invalid_input names the field. */
export const callReportInput: Input<CallReport> = {
  schema: CallReportInput,
  read: (value, now) => parseCallReport(objectFields(value), now),
};
