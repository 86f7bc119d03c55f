// A dialer's call report: {lead_id?, phone?, dial_id?, status, secs, agent, recording_id?,
// ai_summary?, epoch?, to_number?}.
import { AppError } from "../http/errors";
import { cut, digitsOf, idField, textField } from "../http/text";

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

function optionalId(f: Record<string, unknown>, name: string): number | null {
  const v = f[name];
  if (v === undefined || v === null || v === "") return null;
  const id = idField(v);
  if (id === null) throw invalid(name, "expected a positive integer");
  return id;
}

export function parseCallReport(f: Record<string, unknown>, now: Date): CallReport {
  const status = textField(f.status);
  if (!status) throw invalid("status", "required");
  const secsRaw = f.secs ?? 0;
  const secs = typeof secsRaw === "string" && /^\s*\d+\s*$/.test(secsRaw) ? Number(secsRaw) : secsRaw;
  if (typeof secs !== "number" || !Number.isInteger(secs) || secs < 0 || secs > 86_400 * 7) {
    throw invalid("secs", "expected a whole number of seconds");
  }
  let epoch: number | null = null;
  if (f.epoch !== undefined && f.epoch !== null && f.epoch !== "") {
    const e = Number(f.epoch);
    // A call cannot start before 2000 or more than a day in the future.
    if (!Number.isInteger(e) || e < 946_684_800 || e > now.getTime() / 1000 + 86_400) {
      throw invalid("epoch", "expected Unix seconds");
    }
    epoch = e;
  }
  const phone = digitsOf(f.phone);
  const leadId = optionalId(f, "lead_id");
  const dialId = optionalId(f, "dial_id");
  if (leadId === null && dialId === null && phone.length < 10) {
    throw invalid("lead_id", "one of lead_id, dial_id or a phone of at least 10 digits is required");
  }
  const summary = f.ai_summary === undefined || f.ai_summary === null ? null : textField(f.ai_summary);
  return {
    leadId,
    phone: phone.slice(-20),
    dialId,
    status: cut(status, 40),
    secs,
    agent: cut(textField(f.agent) ?? "", 60),
    recordingId: optionalId(f, "recording_id"),
    aiSummary: summary === null ? null : cut(summary, 20_000),
    epoch,
    toNumber: digitsOf(f.to_number).slice(-10),
  };
}
