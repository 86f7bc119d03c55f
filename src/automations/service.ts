// An automation run: the automation's message, sent for one lead through the one send function
// (src/messages/service.ts), with its gates: consent, quiet hours, billing, a channel to send to.
// The run records the gate's answer. The operation_id is derived from (automation, lead): a run
// retried after a crash, or run by two instances, sends at most once (the send path replays the
// first answer), and a lead is the subject of one run per automation (unique key).
import { systemActor } from "../auth/actor";
import type { Clock } from "../clock";
import type { Sql } from "../db/client";
import { AppError } from "../errors";
import type { Outcome } from "../jobs/queue";
import type { MessageResult, SendReason } from "../messages/model";
import { sendMessage, type SendEnv } from "../messages/service";
import { finishRun, loadRun, type RunOutcome } from "./queries";

export const AUTOMATION_RUN = "automation.run";

/**
 * The send's operation_id: the same for every run of one automation for one lead. Its `/` is a
 * character the API refuses in an operation_id, so no API send in the org can take it first.
 */
export const automationOperationId = (automationId: number, leadId: number) => `automation/${automationId}/lead/${leadId}`;

/** Answers that say "not now", not "no": the run is tried again, under the same operation_id. */
const TRANSIENT = new Set<SendReason>(["in_progress", "billing_unavailable"]);
/** Refusals after a provider was tried: the message is recorded as failed (and refunded). */
const FAILED = new Set<SendReason>(["provider_error", "provider_unavailable", "provider_timeout", "outcome_unknown"]);
export const RETRY_MS = 30_000;

/** What a send's answer means for the run; null when it should be tried again later. */
export function runOutcome(r: MessageResult): RunOutcome | null {
  const base = { messageId: r.message_id, result: { ...r } as Record<string, unknown> };
  if (r.ok) {
    return r.defer_until !== undefined
      ? { ...base, status: "deferred", reason: null, deferUntil: new Date(r.defer_until * 1000) }
      : { ...base, status: "sent", reason: null, deferUntil: null };
  }
  if (TRANSIENT.has(r.reason!)) return null;
  return { ...base, status: FAILED.has(r.reason!) ? "failed" : "blocked", reason: r.reason!, deferUntil: null };
}

const skipped = (reason: string): RunOutcome => ({ status: "skipped", reason, messageId: null, deferUntil: null, result: null });

export async function runAutomation(sql: Sql, clock: Clock, env: SendEnv, runId: number): Promise<Outcome> {
  const run = await loadRun(sql, runId);
  if (run === null || run.status !== "pending") return { done: true };
  const now = clock.now();
  if (!run.active) {
    await finishRun(sql, run.id, skipped("automation_inactive"), new Date(now));
    return { done: true };
  }
  const actor = systemActor("automation", String(run.automation_id), run.org_id);
  let outcome: RunOutcome | null;
  try {
    const result = await sendMessage(
      sql,
      actor,
      { leadId: run.lead_id, channel: run.channel, body: run.body, subject: run.subject, operationId: automationOperationId(run.automation_id, run.lead_id) },
      now,
      env,
    );
    outcome = runOutcome(result);
  } catch (err) {
    // An outage, or a database too slow for a step's deadline (AppError unavailable): the job runs
    // again later, under the same operation_id. Recorded as failed, the lead's run was lost for good
    // to a database restart or a busy minute (test/faults.test.ts).
    if (!(err instanceof AppError) || err.code === "unavailable") throw err;
    // not_found: the lead left the automation's organization (or was deleted).
    outcome = err.code === "not_found" ? skipped("lead_not_found") : { ...skipped(err.code), status: "failed" };
  }
  if (outcome === null) return { retryAt: clock.now() + RETRY_MS, error: "the send is not settled yet" };
  await finishRun(sql, run.id, outcome, new Date(clock.now()));
  return { done: true };
}
