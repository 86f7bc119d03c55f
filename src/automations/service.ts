// An automation run: the automation's message, sent for one lead through the one send function
// (src/messages/service.ts), with its gates: consent, quiet hours, billing, the organization's
// daily automation cap, a channel to send to. The run records the gate's answer. The
// operation_id is derived from (automation, subject, occurrence): a run retried after a crash, or
// run by two instances, sends at most once (the send path replays the first answer), and a subject
// has one run per automation and occurrence (unique key, sql/0020).
//
// An appointment's runs (appointment_booked, appointment_reminder) read the appointment when they
// run: a cancelled one is not written to; a reminder whose appointment moved is not sent (booking
// made another for the new start); a reminder must go before the start (the send path's
// send-before gate: quiet hours that end at or after the start, or a worker that comes too late,
// refuse it `expired`). Their emails carry the appointment as an iCalendar attachment.
import { systemActor } from "../auth/actor";
import { withoutTrailingSlashes } from "../config";
import type { Clock } from "../clock";
import type { Sql } from "../db/client";
import { AppError } from "../errors";
import type { Job, Outcome } from "../jobs/queue";
import type { MessageResult, SendExtras, SendReason } from "../messages/model";
import { scopeOf, sendContexts } from "../messages/queries";
import { sendBatch, sendMessage, type BatchSend, type SendEnv } from "../messages/service";
import { AUTOMATION_RUN } from "./appointments";
import { appointmentIcs } from "./ics";
import { finishRun, finishRuns, loadRun, loadRunAppointment, loadRuns, type RunAppointment, type RunOutcome, type RunRow } from "./queries";

export { AUTOMATION_RUN };

/**
 * The send's operation_id: the same for every run of one automation for one subject and
 * occurrence (a new_lead's is `automation/{id}/lead/{lead}`, as before sql/0020). Its `/` is a
 * character the API refuses in an operation_id, so no API send in the org can take it first.
 */
export const automationOperationId = (automationId: number, subjectId: number, kind: RunRow["subject_kind"] = "lead", occurrence = 0) =>
  `automation/${automationId}/${kind}/${subjectId}${occurrence === 0 ? "" : `/at/${occurrence}`}`;

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
  const about = extrasOf(run, run.subject_kind === "appointment" ? await loadRunAppointment(sql, run.subject_id) : null, env, now);
  if ("skip" in about) {
    await finishRun(sql, run.id, skipped(about.skip), new Date(now));
    return { done: true };
  }
  const actor = systemActor("automation", String(run.automation_id), run.org_id);
  const operationId = automationOperationId(run.automation_id, run.subject_id, run.subject_kind, run.occurrence);
  let outcome: RunOutcome | null;
  try {
    const result = await sendMessage(
      sql,
      actor,
      { leadId: run.lead_id, channel: run.channel, body: run.body, subject: run.subject, operationId, extras: about.extras },
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

/**
 * What an appointment's run adds to its send, from the appointment as it is now (`appt`, read
 * with or after the run); or why it is not sent. Other runs add nothing.
 */
function extrasOf(run: RunRow, appt: RunAppointment | null, env: SendEnv, now: number): { extras?: SendExtras } | { skip: string } {
  if (run.subject_kind !== "appointment") return {};
  if (appt === null) return { skip: "appointment_not_found" };
  if (appt.status === "cancelled") return { skip: "appointment_cancelled" };
  if (appt.status !== "pending" && appt.status !== "confirmed") return { skip: `appointment_${appt.status}` };
  const reminder = run.trigger === "appointment_reminder";
  if (reminder && appt.slot_epoch !== run.occurrence) return { skip: "appointment_moved" };
  const values = run.merge ?? {};
  const extras: SendExtras = { values };
  if (run.send_before !== null) extras.sendBefore = run.send_before.getTime();
  if (run.channel === "email") {
    const host = new URL(withoutTrailingSlashes(env.baseUrl)).host || "leadline";
    extras.ics = appointmentIcs(
      {
        id: appt.id,
        start: appt.slot_epoch,
        minutes: appt.slot_minutes,
        status: appt.status,
        calendar: appt.calendar,
        business: appt.business,
        rescheduleUrl: values.reschedule_url ?? null,
      },
      host,
      now,
    );
  }
  return { extras };
}

/**
 * A batch of run jobs (the scheduler's claim), as runAutomation would run each, with the common
 * case batched: the runs and their appointments read in one statement, the sends' contexts in one
 * per channel, the sends through sendBatch (one billing lock per organization for all of its
 * sends), and the runs finished with their jobs deleted in one statement. Anything else — a note,
 * an empty body, a lead gone, a send already recorded under the operation_id (a retry: replayed),
 * a send the batch hands back (sendBatch's null) — runs alone through runAutomation, exactly as
 * before. Outcomes in input order.
 */
export async function runAutomations(sql: Sql, clock: Clock, env: SendEnv, jobs: readonly Job[]): Promise<Outcome[]> {
  const now = clock.now();
  const runs = new Map((await loadRuns(sql, jobs.map((j) => j.ref!))).map((r) => [r.id, r]));
  const outcomes: Outcome[] = new Array(jobs.length);
  const finished: { i: number; runId: number; jobId: number; outcome: RunOutcome }[] = [];
  const alone: number[] = [];
  const sends: { i: number; run: RunRow; send: Omit<BatchSend, "ctx"> }[] = [];
  jobs.forEach((job, i) => {
    const run = runs.get(job.ref!);
    if (!run || run.status !== "pending") {
      outcomes[i] = { done: true };
      return;
    }
    const finish = (outcome: RunOutcome) => finished.push({ i, runId: run.id, jobId: job.id, outcome });
    if (!run.active) return finish(skipped("automation_inactive"));
    const about = extrasOf(run, run.appt, env, now);
    if ("skip" in about) return finish(skipped(about.skip));
    if (run.channel === "note" || run.body.trim() === "") return alone.push(i);
    const actor = systemActor("automation", String(run.automation_id), run.org_id);
    const operationId = automationOperationId(run.automation_id, run.subject_id, run.subject_kind, run.occurrence);
    sends.push({ i, run, send: { actor, input: { leadId: run.lead_id, channel: run.channel, body: run.body, subject: run.subject, operationId, extras: about.extras } } });
  });
  const contexts = await sendContexts(
    sql,
    sends.map(({ run, send }) => ({ orgId: run.org_id, scope: scopeOf(send.actor), leadId: run.lead_id, channel: run.channel as "sms" | "email", operationId: send.input.operationId })),
  );
  // A lead gone, or a send already recorded (a retry), goes alone: sendMessage answers not_found or replays.
  const batched = sends.flatMap((s, k) => (contexts[k]!.lead && !contexts[k]!.prior ? [{ ...s, send: { ...s.send, ctx: contexts[k]! } }] : (alone.push(s.i), [])));
  const results = await sendBatch(sql, batched.map((b) => b.send), now, env);
  batched.forEach(({ i }, k) => {
    const result = results[k];
    if (result === null || result === undefined) return alone.push(i);
    const outcome = runOutcome(result);
    if (outcome === null) outcomes[i] = { retryAt: clock.now() + RETRY_MS, error: "the send is not settled yet" };
    else finished.push({ i, runId: jobs[i]!.ref!, jobId: jobs[i]!.id, outcome });
  });
  await finishRuns(sql, finished, new Date(clock.now()));
  for (const f of finished) outcomes[f.i] = { done: true, removed: true };
  for (const i of alone) outcomes[i] = await runAutomation(sql, clock, env, jobs[i]!.ref!);
  return outcomes;
}
