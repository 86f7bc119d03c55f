// The one send path for SMS, email and notes. The API, the deferred-send worker and automations
// all call sendMessage; the gates (gates.ts) are applied here and nowhere else.
//
// A send is recorded before the provider is called and its outcome after, with no transaction or
// pooled connection held in between:
//   1. read: the lead in the actor's scope and any message already recorded under the
//      operation_id (from the API: one statement batched with other requests' that also draws the
//      request's rate-limit hit), then the lead's org and the recipient's consent;
//   2. record (one short transaction): lock the org's billing row, apply the billing gate, then
//      either record the message `queued` until quiet hours end, or record it `sending` and deduct
//      its cost with a ledger entry. Concurrent sends of one org serialize on that row lock, so the
//      balance never goes below zero however many race for it. Marking the message `sending`
//      before the call is what keeps a process killed mid-call from ever sending it again;
//   3. call the provider, bounded in time (10 s);
//   4. record the outcome (one statement): `sent`, or `failed` with the charge refunded.
// The unique index on (sender's scope, operation_id) makes exactly one request record a send;
// any other with the same operation_id and the same send replays the first's stored answer
// (waiting for it while the first is still with its provider), and one with a different send is
// a conflict.
import { withoutTrailingSlashes, type Config } from "../config";
import type { Sql } from "../db/client";
import { DEADLINE_MS, withDeadline } from "../db/deadline";
import { classify } from "../db/sqlstate";
import { AppError, reasonStatus } from "../errors";
import { enqueue } from "../jobs/queue";
import { countedReads, type CountedReads } from "../limits/fused";
import type { KeyHit } from "../limits/key-counter";
import type { Limits } from "../limits/limits";
import { sendEmail } from "./email";
import { openSecret, SecretError } from "../secrets/seal";
import { billingGate, contactGate, emailConfig, quietGate, smsConfig, type EmailConfig, type GateReason, type OrgSettings, type SmsConfig } from "./gates";
import { emailOf, mergeValues, renderEmail, renderSms } from "./merge";
import { requestHash, resultText, type Actor, type SendAnswer, type SendInput } from "./model";
import {
  chargeDeferred,
  countedProbes,
  failDeferred,
  insertCharged,
  insertDeferred,
  insertNote,
  lockBilling,
  lockDeferred,
  optOutPhone,
  recordOutcome,
  redefer,
  scopeOf,
  sendContext,
  settledResult,
  type LeadRow,
  type NewSend,
  type PriorRow,
  type Probe,
  type ProbeRead,
} from "./queries";
import { PROVIDER_TIMEOUT_MS, sendSms, TWILIO_UNSUBSCRIBED, type ProviderOutcome } from "./twilio";

export interface SendEnv {
  /** The public base address: Twilio's StatusCallback is `{baseUrl}/hooks/sms_status.php`. */
  baseUrl: string;
  /** The longest wait for a provider (default 10 s); past it the send fails with provider_timeout. */
  providerTimeoutMs?: number;
  /** The longest wait for the org's billing row lock (default 2 s); past it, billing_unavailable. */
  billingLockMs?: number;
  /** LEADLINE_SECRET_KEY: opens the org's stored auth token / SMTP URL (src/secrets/). */
  secretKey?: Buffer | null;
}

/** What the send path needs of the configuration. */
export const sendEnv = (config: Config): SendEnv => ({ baseUrl: config.baseUrl, secretKey: config.secretKey });

export const BILLING_LOCK_MS = 2_000;

/** The job kind of a send deferred by quiet hours (ref: the message id; due at defer_until). */
export const DEFERRED_SEND = "message.deferred";

const timeoutOf = (env: SendEnv) => env.providerTimeoutMs ?? PROVIDER_TIMEOUT_MS;
/** A `sending` row older than this lost its sender (far beyond any provider wait). */
const leaseOf = (env: SendEnv) => timeoutOf(env) + 60_000;
/** How long a retry waits for the first attempt's answer while that one is with its provider. */
const replayWaitOf = (env: SendEnv) => 2 * timeoutOf(env);

/**
 * The longest a send can take: the billing lock, a provider wait or a retry's wait for the first
 * answer, and its database steps. The API's deadline for r=messages.
 */
export const sendDeadline = (env: SendEnv) => replayWaitOf(env) + (env.billingLockMs ?? BILLING_LOCK_MS) + 3 * DEADLINE_MS;

/**
 * Each database step of a send is bounded like any request's database work (a database that is
 * away or stuck answers 503 in about a second); only the provider wait is long.
 */
const step = <T>(work: Promise<T>, ms = DEADLINE_MS) => withDeadline(work, ms);

export const statusCallbackUrl = (baseUrl: string) => `${withoutTrailingSlashes(baseUrl)}/hooks/sms_status.php`;

const refusal = (reason: GateReason | "empty_body"): SendAnswer => ({
  status: reasonStatus(reason),
  text: resultText({ ok: false, message_id: null, reason }),
});

class Refused extends Error {
  constructor(readonly reason: GateReason) {
    super(reason);
  }
}
const TAKEN = new Error("operation_id taken by a concurrent request");

const isLockTimeout = (err: unknown) => classify(err) === "lock_timeout";

export type Probes = CountedReads<ProbeRead, Probe>;

/** The API's first reads, batched across concurrent requests, each drawing its request's hit. */
export const messageProbes = (sql: Sql, limits: Limits): Probes => countedReads(limits.keys, (reads, seqs) => countedProbes(sql, reads, seqs));

/**
 * The API's send: the first read (lead in scope, a prior send under the operation_id) is batched
 * and draws the request's hit, so a retry costs one shared statement. A request refused before it
 * reads still counts.
 */
export async function sendFromApi(sql: Sql, probes: Probes, hit: KeyHit, actor: Actor, read: SendInput | AppError, now: number, env: SendEnv): Promise<SendAnswer> {
  if (read instanceof AppError || read.leadId === null) {
    await probes.countAlone(hit);
    throw read instanceof AppError ? read : new AppError("not_found");
  }
  const probe = await step(probes.load(hit, { orgId: actor.orgId, scope: scopeOf(actor), leadId: read.leadId, operationId: read.operationId }));
  return sendMessage(sql, actor, read, now, env, probe);
}

/**
 * The one send function. `now` is epoch ms from the caller's clock. `probe`: the first read, when
 * the caller made it (sendFromApi).
 */
export async function sendMessage(sql: Sql, actor: Actor, input: SendInput, now: number, env: SendEnv, probe?: Probe): Promise<SendAnswer> {
  if (input.leadId === null) throw new AppError("not_found");
  const hash = requestHash(input);
  let first: Probe;
  if (probe) first = probe;
  else {
    const c = await step(sendContext(sql, actor, input.leadId, "note", input.operationId));
    first = { leadFound: c.lead !== null, prior: c.prior };
  }
  // The lead is checked first: an empty body for someone else's lead is still a 404.
  if (!first.leadFound) throw new AppError("not_found");
  if (input.body.trim() === "") return refusal("empty_body");
  if (first.prior) return replay(sql, first.prior, hash, now, env);
  // Three rounds at most: a round ends early only when a concurrent request took the
  // operation_id between this one's read and its insert, and the next read then finds it.
  for (let round = 0; round < 3; round++) {
    const answer = input.channel === "note" ? await note(sql, actor, input, hash, now, env) : await send(sql, actor, input, hash, now, env);
    if (answer !== null) return answer;
  }
  throw new Error(`operation_id ${input.operationId} changed hands three times`);
}

async function note(sql: Sql, actor: Actor, input: SendInput, hash: string, now: number, env: SendEnv): Promise<SendAnswer | null> {
  const r = await step(insertNote(sql, actor, input.leadId!, input.body, input.subject ?? "", input.operationId, hash, new Date(now)));
  if (r.lead_id === null) throw new AppError("not_found");
  if (r.id !== null) return { status: 200, text: r.result! };
  return r.prior ? replay(sql, r.prior, hash, now, env) : null;
}

async function send(sql: Sql, actor: Actor, input: SendInput, hash: string, now: number, env: SendEnv): Promise<SendAnswer | null> {
  const channel = input.channel as "sms" | "email";
  const ctx = await step(sendContext(sql, actor, input.leadId, channel, input.operationId));
  if (!ctx.lead) throw new AppError("not_found");
  if (ctx.prior) return replay(sql, ctx.prior, hash, now, env);
  const contact = contactGate(channel, ctx.org, ctx.lead, ctx.consent);
  if (!contact.ok) return refusal(contact.reason);
  const org = ctx.org!; // the provider gate passed, so there is an org
  const lead = ctx.lead;
  const text = asSent(channel, input.body, input.subject, lead, org);
  const s: NewSend = {
    actor,
    lead,
    orgId: org.id,
    channel,
    body: text.body,
    subject: text.subject,
    operationId: input.operationId,
    hash,
    to: contact.to,
    now: new Date(now),
  };
  let recorded: { kind: "deferred"; result: string } | { kind: "charged"; id: number };
  const lockMs = env.billingLockMs ?? BILLING_LOCK_MS;
  try {
    recorded = await step(
      sql.begin(async (tx) => {
        const billing = billingGate(channel, await lockBilling(tx, org.id, lockMs));
        if (!billing.ok) throw new Refused(billing.reason);
        const deferUntil = quietGate(org, lead, now);
        if (deferUntil !== null) {
          const d = await insertDeferred(tx, s, new Date(deferUntil));
          if (!d) throw TAKEN;
          // The worker's job, in the same transaction: a queued message always has one.
          await enqueue(tx, { kind: DEFERRED_SEND, ref: d.id, runAt: deferUntil });
          return { kind: "deferred" as const, result: d.result };
        }
        const id = await insertCharged(tx, s, billing.cost, new Date(now + leaseOf(env)));
        if (id === null) throw TAKEN;
        return { kind: "charged" as const, id };
      }),
      lockMs + DEADLINE_MS,
    );
  } catch (err) {
    if (err instanceof Refused) return refusal(err.reason);
    if (isLockTimeout(err)) return refusal("billing_unavailable");
    if (err === TAKEN) return null;
    throw err;
  }
  if (recorded.kind === "deferred") return { status: 200, text: recorded.result };
  return { status: 200, text: await deliverAndRecord(sql, recorded.id, channel, contact.to, s.body, s.subject, org, now, env) };
}

/**
 * The text a send goes out with, which its row stores and the conversation shows: the lead's
 * values merged in (HTML-escaped into an email's body), an email's subject as its header has it
 * (the org's default when none is given). An SMS keeps its subject, which is not sent, as given.
 * Merged once, when the send is recorded: a send deferred by quiet hours goes out later with the
 * text stored now, so what the conversation showed all along is what the lead receives. The
 * request's own fields stay the idempotency identity (request_hash).
 */
function asSent(channel: "sms" | "email", body: string, subject: string | null, lead: LeadRow, org: OrgSettings): { body: string; subject: string } {
  const values = mergeValues(lead, org);
  if (channel === "sms") return { body: renderSms(body, values), subject: subject ?? "" };
  const mail = renderEmail(body, subject, values);
  return { body: mail.html, subject: mail.subject };
}

/**
 * A retry of a recorded send: the first answer, byte for byte. While the first request is still
 * with its provider there is no answer yet; the retry waits for it (polling, holding nothing) up
 * to twice the provider wait, then says `in_progress` (its sender may have died: after the lease,
 * the row becomes `unknown` and retries get outcome_unknown).
 */
async function replay(sql: Sql, prior: PriorRow, hash: string, now: number, env: SendEnv): Promise<SendAnswer> {
  if (prior.request_hash !== hash) throw new AppError("operation_id_conflict", "operation_id was already used for a different send");
  if (prior.result !== null) return { status: 200, text: prior.result };
  const deadline = performance.now() + replayWaitOf(env);
  for (let first = true; performance.now() < deadline; first = false) {
    if (!first) await Bun.sleep(20);
    const result = await step(settledResult(sql, prior.id, new Date(now)));
    if (result !== null) return { status: 200, text: result };
  }
  return { status: 200, text: resultText({ ok: false, message_id: prior.id, reason: "in_progress" }) };
}

/** Calls the provider (outside any transaction) with the stored text and records the outcome; returns the stored answer. */
async function deliverAndRecord(
  sql: Sql,
  id: number,
  channel: "sms" | "email",
  to: string,
  body: string,
  subject: string,
  org: OrgSettings,
  now: number,
  env: SendEnv,
): Promise<string> {
  // The text as stored (asSent): the provider gets exactly what the conversation shows.
  const outcome: ProviderOutcome = await callProvider(
    channel,
    org,
    env,
    (sms) => sendSms(sms, { to, body, statusCallback: statusCallbackUrl(env.baseUrl) }, timeoutOf(env)),
    (email) => sendEmail(email, to, emailOf(subject, body), timeoutOf(env)),
  );
  const text = resultText(outcome.ok ? { ok: true, message_id: id } : { ok: false, message_id: id, reason: outcome.reason });
  const at = new Date(now);
  const stored = await step(recordOutcome(sql, id, {
    ok: outcome.ok,
    providerId: outcome.ok ? outcome.providerId : null,
    reason: outcome.ok ? null : outcome.reason,
    error: outcome.ok ? "" : outcome.error,
    result: text,
    now: at,
  }));
  if (!outcome.ok && channel === "sms" && outcome.code === TWILIO_UNSUBSCRIBED) await step(optOutPhone(sql, org.id, to, "provider:21610", at));
  return stored?.result ?? (await step(settledResult(sql, id, at))) ?? text;
}

/**
 * The provider call with the org's stored secret opened. One this process cannot open (sealed
 * under another key since serve started, which otherwise refuses to start) fails the send as a
 * provider_error whose stored error says which key sealed it; the charge is refunded as for any
 * failed call.
 */
async function callProvider(
  channel: "sms" | "email",
  org: OrgSettings,
  env: SendEnv,
  sms: (cfg: SmsConfig) => Promise<ProviderOutcome>,
  email: (cfg: EmailConfig) => Promise<ProviderOutcome>,
): Promise<ProviderOutcome> {
  const key = env.secretKey ?? null;
  try {
    if (channel === "sms") {
      const cfg = smsConfig(org.sms)!;
      return await sms({ ...cfg, auth_token: openSecret(key, cfg.auth_token, `org ${org.id}'s sms.auth_token`) });
    }
    const cfg = emailConfig(org.email)!;
    return await email({ ...cfg, smtp_url: openSecret(key, cfg.smtp_url, `org ${org.id}'s email.smtp_url`) });
  } catch (err) {
    if (!(err instanceof SecretError)) throw err;
    return { ok: false, reason: "provider_error", error: err.message };
  }
}

/** A job's outcome (src/jobs/queue.ts): finished, or due again at `retryAt` (epoch ms). */
export type DeferredStep = { done: true } | { retryAt: number };

/** Retry delay when the billing row stays locked past its wait. */
const BILLING_RETRY_MS = 30_000;

/**
 * The deferred-send worker's step for one message: when its time has come, the same gates again
 * (a lead who opted out meanwhile is not texted; billing is charged now), then the provider. Safe
 * to run twice: only a `queued` message is claimed, and claiming marks it `sending` first.
 */
export async function sendDeferred(sql: Sql, messageId: number, now: number, env: SendEnv): Promise<DeferredStep> {
  const at = new Date(now);
  type Step = { kind: "done" } | { kind: "later"; at: number } | { kind: "send"; to: string; channel: "sms" | "email"; text: { body: string; subject: string }; org: OrgSettings };
  let next: Step;
  const lockMs = env.billingLockMs ?? BILLING_LOCK_MS;
  try {
    next = await step(sql.begin(async (tx): Promise<Step> => {
      const row = await lockDeferred(tx, messageId);
      if (!row || !row.context.lead) return { kind: "done" };
      if (row.defer_until && row.defer_until.getTime() > now) return { kind: "later", at: row.defer_until.getTime() };
      const { lead, org, consent } = row.context;
      const contact = contactGate(row.channel, org, lead, consent);
      if (!contact.ok) {
        await failDeferred(tx, messageId, contact.reason, at);
        return { kind: "done" };
      }
      const billing = billingGate(row.channel, await lockBilling(tx, org!.id, lockMs));
      if (!billing.ok) {
        await failDeferred(tx, messageId, billing.reason, at);
        return { kind: "done" };
      }
      const again = quietGate(org, lead, now);
      if (again !== null) {
        await redefer(tx, messageId, new Date(again), at);
        return { kind: "later", at: again };
      }
      // A message queued before its text was stored merged (sql/0014) is merged now, like then.
      const text = row.merged ? { body: row.body, subject: row.subject } : asSent(row.channel, row.body, row.subject, lead, org!);
      await chargeDeferred(tx, messageId, org!.id, billing.cost, contact.to, text, at, new Date(now + leaseOf(env)));
      return { kind: "send", to: contact.to, channel: row.channel, text, org: org! };
    }), lockMs + DEADLINE_MS);
  } catch (err) {
    if (isLockTimeout(err)) return { retryAt: now + BILLING_RETRY_MS };
    throw err;
  }
  if (next.kind === "done") return { done: true };
  if (next.kind === "later") return { retryAt: next.at };
  await deliverAndRecord(sql, messageId, next.channel, next.to, next.text.body, next.text.subject, next.org, now, env);
  return { done: true };
}
