// The one send path for SMS, email and notes. A new send (sendMessage: the API through
// sendFromApi, automations, the console) and a send queued by quiet hours whose time has come
// (sendDeferred, the worker's step) both go through sendNow, the only function that applies the
// gates (gates.ts) and calls a provider; test/structure.test.ts keeps it so. The answer is a
// value (MessageResult); the API renders it with answerOf, the one serializer being resultText.
//
// The unique index on (sender's scope, operation_id) makes exactly one request record a send;
// any other with the same operation_id and the same send replays the first's stored answer
// (waiting for it while the first is still with its provider), and one with a different send is
// a conflict.
import { withoutTrailingSlashes, type Config } from "../config";
import type { Sql, Tx } from "../db/client";
import { beginWithin, DEADLINE_MS, withDeadline } from "../db/deadline";
import { classify, mapDbError } from "../db/sqlstate";
import { AppError } from "../errors";
import { enqueue } from "../jobs/queue";
import { countedReads, type CountedReads } from "../limits/fused";
import type { KeyHit } from "../limits/key-counter";
import type { Limits } from "../limits/limits";
import { sendEmail } from "./email";
import { unsubscribeUrl } from "./unsubscribe";
import { openSecret, SecretError } from "../secrets/seal";
import { isSink } from "../sink";
import {
  billingGate,
  heldGates,
  contactGate,
  emailConfig,
  orgDay,
  smsConfig,
  type ConsentState,
  type EmailConfig,
  type GateReason,
  type OrgSettings,
  type SmsConfig,
  AUTOMATION_DAILY_CAP,
} from "./gates";
import { emailOf, mergeValues, renderEmail, renderSms } from "./merge";
import { parseResult, requestHash, resultText, type Actor, type MessageResult, type SendInput } from "./model";
import {
  automationSendsOn,
  chargeDeferred,
  countAutomationSends,
  countedProbes,
  failDeferred,
  firstCapWarning,
  insertChargedMany,
  insertDeferred,
  insertNote,
  loadDeferred,
  lockBilling,
  optOutPhone,
  recordOutcome,
  recordSent,
  redefer,
  scopeOf,
  sendContext,
  settledResult,
  type LeadRow,
  type NewSend,
  type PriorRow,
  type Probe,
  type ProbeRead,
  type SendContext,
} from "./queries";
import { PROVIDER_TIMEOUT_MS, sendSms, TWILIO_UNSUBSCRIBED, type ProviderOutcome } from "./twilio";
import { messageSends } from "../metrics/counters";
import { log } from "../log";

export interface SendEnv {
  /** The public base address: Twilio's StatusCallback is `{baseUrl}/hooks/sms_status.php`. */
  baseUrl: string;
  /** The longest wait for a provider (default 10 s); past it the send fails with provider_timeout. */
  providerTimeoutMs?: number;
  /** The longest wait for the org's billing row lock (default 2 s); past it, billing_unavailable. */
  billingLockMs?: number;
  /** LEADLINE_SECRET_KEY: opens the org's stored auth token / SMTP URL (src/secrets/). */
  secretKey?: Buffer | null;
  /**
   * Signs the unsubscribe link of a non-transactional email (unsubscribe.ts); absent, emails go
   * without List-Unsubscribe (a test's env). `serve` always has one (src/app/settings.ts).
   */
  unsubscribeKey?: Buffer | null;
  /** The bound on each database step (default the contract's DEADLINE_MS; Config.deadlineMs). */
  deadlineMs?: number;
}

/** What the send path needs of the configuration and of what `serve` loaded at start. */
export const sendEnv = (deps: { config: Config; unsubscribeKey: Buffer }): SendEnv => ({
  baseUrl: deps.config.baseUrl,
  secretKey: deps.config.secretKey,
  unsubscribeKey: deps.unsubscribeKey,
  ...(deps.config.providerTimeoutMs === null ? {} : { providerTimeoutMs: deps.config.providerTimeoutMs }),
  ...(deps.config.deadlineMs === null ? {} : { deadlineMs: deps.config.deadlineMs }),
});

export const BILLING_LOCK_MS = 2_000;

/** The job kind of a send deferred by quiet hours (ref: the message id; due at defer_until). */
export const DEFERRED_SEND = "message.deferred";

/** How long a send waits for its provider (default PROVIDER_TIMEOUT_MS, 10 s). */
export const providerTimeoutOf = (env: SendEnv) => env.providerTimeoutMs ?? PROVIDER_TIMEOUT_MS;
/** A `sending` row older than this lost its sender (far beyond any provider wait). */
const leaseOf = (env: SendEnv) => providerTimeoutOf(env) + 60_000;
/** How long a retry waits for the first attempt's answer while that one is with its provider. */
const replayWaitOf = (env: SendEnv) => 2 * providerTimeoutOf(env);

/**
 * The longest a send can take: the billing lock, a provider wait or a retry's wait for the first
 * answer, and its database steps. The API's deadline for r=messages.
 */
export const sendDeadline = (env: SendEnv) => replayWaitOf(env) + (env.billingLockMs ?? BILLING_LOCK_MS) + 3 * deadlineOf(env);

/**
 * Each database step of a send is bounded like any request's database work (a database that is
 * away or stuck answers 503 in about a second); only the provider wait is long.
 */
const step = <T>(env: SendEnv, work: Promise<T>, times = 1) => withDeadline(work, deadlineOf(env) * times);
/** The bound on one database step of a send (SendEnv.deadlineMs, else the contract's second). */
const deadlineOf = (env: SendEnv) => env.deadlineMs ?? DEADLINE_MS;

export const statusCallbackUrl = (baseUrl: string) => `${withoutTrailingSlashes(baseUrl)}/hooks/sms_status.php`;

const refusal = (reason: GateReason | "empty_body"): MessageResult => ({ ok: false, message_id: null, reason });

class Refused extends Error {
  constructor(readonly reason: GateReason) {
    super(reason);
  }
}
const TAKEN = new Error("the message was taken by a concurrent run");

const isLockTimeout = (err: unknown) => classify(err) === "lock_timeout";

export type Probes = CountedReads<ProbeRead, Probe>;

/** The API's first reads, batched across concurrent requests, each drawing its request's hit. */
export const messageProbes = (sql: Sql, limits: Limits, deadlineMs: number | null = null): Probes =>
  countedReads(limits.keys, (reads, seqs) => countedProbes(sql, reads, seqs), deadlineMs);

/**
 * The API's send: the first read (lead in scope, a prior send under the operation_id) is batched
 * and draws the request's hit, so a retry costs one shared statement. A request refused before it
 * reads still counts.
 */
export async function sendFromApi(sql: Sql, probes: Probes, hit: KeyHit, actor: Actor, read: SendInput | AppError, now: number, env: SendEnv): Promise<MessageResult> {
  if (read instanceof AppError || read.leadId === null) {
    await probes.countAlone(hit);
    throw read instanceof AppError ? read : new AppError("not_found");
  }
  const probe = await step(env, probes.load(hit, { orgId: actor.orgId, scope: scopeOf(actor), leadId: read.leadId, operationId: read.operationId }));
  return sendMessage(sql, actor, read, now, env, probe);
}

/**
 * The caller's own row beside a new message's, written in the transaction that records the message
 * (the console's audit row): a send recorded is never without it, and a replay or a refusal, which
 * record nothing, writes none. `deferUntil`: epoch ms when quiet hours queued it, else null.
 */
export type Recorded = (tx: Tx, messageId: number, deferUntil: number | null) => Promise<void>;

/**
 * A new send, from the API, an automation or the console. `now` is epoch ms from the caller's
 * clock. `probe`: the first read, when the caller made it (sendFromApi). `recorded`: see Recorded.
 * The answer is a value; the API renders it with answerOf (model.ts), automations read it as it is.
 */
export async function sendMessage(
  sql: Sql,
  actor: Actor,
  input: SendInput,
  now: number,
  env: SendEnv,
  probe?: Probe,
  recorded?: Recorded,
): Promise<MessageResult> {
  if (input.leadId === null) throw new AppError("not_found");
  const hash = requestHash(input);
  let first: Probe;
  if (probe) first = probe;
  else {
    const c = await step(env, sendContext(sql, actor, input.leadId, "note", input.operationId));
    first = { leadFound: c.lead !== null, prior: c.prior };
  }
  // The lead is checked first: an empty body for someone else's lead is still a 404.
  if (!first.leadFound) throw new AppError("not_found");
  if (input.body.trim() === "") return refusal("empty_body");
  if (first.prior) return replay(sql, first.prior, hash, now, env);
  // Three rounds at most: a round ends early only when a concurrent request took the
  // operation_id between this one's read and its insert, and the next read then finds it.
  for (let round = 0; round < 3; round++) {
    const answer =
      input.channel === "note" ? await note(sql, actor, input, hash, now, env, recorded) : await send(sql, actor, input, hash, now, env, recorded);
    if (answer !== null) return answer;
  }
  throw new Error(`operation_id ${input.operationId} changed hands three times`);
}

async function note(sql: Sql, actor: Actor, input: SendInput, hash: string, now: number, env: SendEnv, recorded?: Recorded): Promise<MessageResult | null> {
  const insert = (q: Sql) => insertNote(q, actor, input.leadId!, input.body, input.subject ?? "", input.operationId, hash, new Date(now));
  const r =
    recorded === undefined
      ? await step(env, insert(sql))
      : await beginWithin(sql, deadlineOf(env), async (tx) => {
          const row = await insert(tx as unknown as Sql);
          if (row.id !== null) await recorded(tx, row.id, null);
          return row;
        });
  if (r.lead_id === null) throw new AppError("not_found");
  if (r.id !== null) return parseResult(r.result!);
  return r.prior ? replay(sql, r.prior, hash, now, env) : null;
}

/** A new SMS or email: read its recipient, then sendNow records it as a new message. Null: read again. */
async function send(sql: Sql, actor: Actor, input: SendInput, hash: string, now: number, env: SendEnv, recorded?: Recorded): Promise<MessageResult | null> {
  const channel = input.channel as "sms" | "email";
  const ctx = await step(env, sendContext(sql, actor, input.leadId, channel, input.operationId));
  if (!ctx.lead) throw new AppError("not_found");
  if (ctx.prior) return replay(sql, ctx.prior, hash, now, env);
  const [went] = await sendNow(sql, [newOutgoing(actor, input, hash, ctx, ctx.lead, now, recorded)], now, env);
  if (went!.kind === "refused") {
    // Refused after waiting for the billing row: a concurrent request with this operation_id may
    // have recorded it meanwhile (and spent the last credit), and a retry answers what the first
    // got, never a refusal of its own. Read again only then: a refusal without a wait is cheap.
    if (went!.waited) {
      const again = await step(env, sendContext(sql, actor, input.leadId, channel, input.operationId));
      if (again.prior) return replay(sql, again.prior, hash, now, env);
    }
    return refusal(went!.reason);
  }
  if (went!.kind === "taken") return null;
  return went!.result;
}

/** A new send as sendNow takes it, from what its context read said (the lead, its org, consent). */
function newOutgoing(actor: Actor, input: SendInput, hash: string, ctx: SendContext, lead: LeadRow, now: number, recorded?: Recorded): Outgoing {
  const channel = input.channel as "sms" | "email";
  const extras = input.extras;
  const ics = channel === "email" ? (extras?.ics ?? null) : null;
  const sendBefore = extras?.sendBefore ?? null;
  const row = (org: OrgSettings, to: string, text: Text): NewSend => ({
    actor,
    lead,
    orgId: org.id,
    channel,
    body: text.body,
    subject: text.subject,
    operationId: input.operationId,
    hash,
    to,
    now: new Date(now),
    ics,
    sendBefore: sendBefore === null ? null : new Date(sendBefore),
  });
  return {
    channel,
    lead,
    org: ctx.org,
    consent: ctx.consent,
    listed: ctx.listed,
    text: { body: input.body, subject: input.subject ?? "", merged: false, values: extras?.values },
    // A new automation send counts against the org's daily cap; a queued one was counted when recorded.
    capped: actor.type === "automation",
    sendBefore,
    ics,
    async defer(tx, org, until, to, text) {
      const d = await insertDeferred(tx, row(org, to, text), new Date(until));
      if (!d) return null;
      // The worker's job, in the same transaction: a queued message always has one.
      await enqueue(tx, { kind: DEFERRED_SEND, ref: d.id, runAt: until });
      await recorded?.(tx, d.id, until);
      return parseResult(d.result);
    },
    row,
    charged: recorded && ((tx, id) => recorded(tx, id, null)),
  };
}

/** One new send of a batch (sendBatch): its actor and input, and its context as the caller read it. */
export interface BatchSend {
  actor: Actor;
  input: SendInput;
  ctx: SendContext;
}

/**
 * Many new SMS and email sends at once (the reminder scheduler's batches), each as sendMessage
 * would make it but through one sendNow: the sends of one organization are gated, recorded and
 * charged under one lock of its billing row, in one transaction. Each send's context was read by
 * the caller (sendContexts) and has its lead and no prior send. The answers in input order; null
 * for a send the caller must make alone with sendMessage, which reads again and replays or
 * retries: its operation_id was taken meanwhile, or it was refused after the wait for the billing
 * row (a concurrent send under its operation_id may have recorded it: see send).
 */
export async function sendBatch(sql: Sql, sends: readonly BatchSend[], now: number, env: SendEnv): Promise<(MessageResult | null)[]> {
  const went = await sendNow(
    sql,
    sends.map((s) => newOutgoing(s.actor, s.input, requestHash(s.input), s.ctx, s.ctx.lead!, now)),
    now,
    env,
  );
  return went.map((w) => (w.kind === "taken" || (w.kind === "refused" && w.waited) ? null : w.kind === "refused" ? refusal(w.reason) : w.result));
}

/** The text of a message as it goes out (asSent), or as given when `merged` is false. */
interface Text {
  body: string;
  subject: string;
}

/**
 * A message to send now, whatever asked for it: a new send (API, automation, console) or one
 * queued by quiet hours whose time has come (the deferred-send worker). What the gates read of
 * its recipient, and how its origin records the two ways the gates let it through; a refusal is
 * recorded by the caller (a new send records nothing, a queued one becomes `failed`).
 */
interface Outgoing {
  channel: "sms" | "email";
  lead: LeadRow;
  org: OrgSettings | null;
  consent: ConsentState;
  /** Whether the address is on the organization's do-not-contact list (read with the consent). */
  listed: boolean;
  /** The request's template (merged: false), or the text stored merged when it was queued (sql/0014). */
  text: Text & { merged: boolean; values?: Record<string, string> };
  /** Subject to the org's daily automation cap (capGate): a new automation send. */
  capped: boolean;
  /** Epoch ms it must go before (sendBeforeGate), or null. */
  sendBefore: number | null;
  /** An email's calendar event (appointment.ics), or null. */
  ics: string | null;
  /** In the billing transaction: it waits until `until` (epoch ms); its answer, null when taken meanwhile. */
  defer(tx: Tx, org: OrgSettings, until: number, to: string, text: Text): Promise<MessageResult | null>;
  /**
   * A new send: its message row, which the group's charge inserts (insertChargedMany, one
   * statement for every new send of the group), then `charged` in the same transaction.
   */
  row?: (org: OrgSettings, to: string, text: Text) => NewSend;
  charged?: (tx: Tx, messageId: number) => Promise<void>;
  /** A queued send: in the billing transaction, recorded `sending` and charged; its message id, null when taken meanwhile. */
  charge?(tx: Tx, org: OrgSettings, cost: number, to: string, text: Text, sendingUntil: Date): Promise<number | null>;
}

/**
 * How sendNow ended. `busy`: the billing row stayed locked past its wait (billing_unavailable).
 * `waited`: refused by the billing gate, after the wait for the billing row.
 */
type Went =
  | { kind: "refused"; reason: GateReason; busy: boolean; waited: boolean }
  | { kind: "queued"; until: number; result: MessageResult }
  | { kind: "delivered"; result: MessageResult }
  | { kind: "taken" };

/** A send past the contact gate: where it goes and the text it goes with. */
interface Addressed {
  i: number;
  m: Outgoing;
  to: string;
  text: Text;
}

/** How a send fared in its group's billing transaction. */
type Held = { kind: "refused"; reason: GateReason } | { kind: "queued"; until: number; result: MessageResult } | { kind: "charged"; id: number };

/** How many provider calls of one batch are under way at once. */
export const PROVIDER_CALLS_AT_ONCE = 32;

/**
 * How much longer than one send's a batch of `n` sends may take with its provider: its calls go
 * PROVIDER_CALLS_AT_ONCE at a time. Added to the `sending` lease of its messages (so a call that
 * starts late is not taken for one whose sender died) and to its jobs' lease.
 */
export const batchCallsMs = (env: SendEnv, n: number) => providerTimeoutOf(env) * Math.max(0, Math.ceil(n / PROVIDER_CALLS_AT_ONCE) - 1);

/**
 * THE send: the gates in their order (gates.ts), the record, the provider, the outcome; the only
 * function that calls a gate or a provider. It takes a batch (a single send is a batch of one)
 * and answers each of its sends in input order. A send is recorded before the provider is called
 * and its outcome after, with no transaction or pooled connection held in between:
 *   1. contact gate (address, do-not-contact list, consent/opt-out, provider settings), on what the caller read;
 *   2. per organization, one short transaction: lock the org's billing row, apply the gates held
 *      under it (heldGates: billing, automation cap, quiet hours, send-before) to its sends in
 *      order, then `defer` each deferred one, and charge the rest (recorded `sending` with their
 *      lease, the credits deducted beside a ledger entry each) in one statement. Concurrent sends
 *      of one org serialize on that row lock, so the balance never goes below zero however many
 *      race for it, and a group takes it once however many sends it has. Marking a message
 *      `sending` before the call is what keeps a process killed mid-call from ever sending it again;
 *   3. the provider, bounded in time (10 s), with the org's stored secret opened (callProvider);
 *   4. the outcomes (settle): `sent`, or `failed` with the charge refunded.
 * A queued message goes through all of it again when its time comes: a lead who opted out
 * meanwhile is not texted, and billing is charged then. An operation_id taken meanwhile rolls its
 * whole group back (`taken` for each of its sends: the callers read again).
 */
async function sendNow(sql: Sql, ms: readonly Outgoing[], now: number, env: SendEnv): Promise<Went[]> {
  const went: Went[] = new Array(ms.length);
  const groups = new Map<number, Addressed[]>();
  ms.forEach((m, i) => {
    const contact = contactGate(m.channel, m.org, m.lead, m.consent, m.listed);
    if (!contact.ok) {
      went[i] = { kind: "refused", reason: contact.reason, busy: false, waited: false };
      return;
    }
    const org = m.org!; // the provider gate passed, so there is an org
    const text: Text = m.text.merged ? { body: m.text.body, subject: m.text.subject } : asSent(m.channel, m.text.body, m.text.subject, m.lead, org, m.text.values);
    const group = groups.get(org.id) ?? [];
    group.push({ i, m, to: contact.to, text });
    groups.set(org.id, group);
  });
  const lockMs = env.billingLockMs ?? BILLING_LOCK_MS;
  const sendingUntil = new Date(now + leaseOf(env) + batchCallsMs(env, ms.length));
  const calls: { a: Addressed; org: OrgSettings; id: number }[] = [];
  for (const group of groups.values()) {
    const org = group[0]!.m.org!;
    let held: Held[];
    try {
      // Not committed after the request has answered 503 (a charge nobody would send).
      // A large group's statements carry more rows: a deadline a second longer per 500 sends.
      held = await beginWithin(sql, lockMs + deadlineOf(env) * Math.ceil(group.length / 500), async (tx) => {
        const billing = await lockBilling(tx, org.id, lockMs);
        // Counted under the billing row's lock, which every send of the org holds while it
        // records: exact across instances, however many automation sends race for the last one.
        // The count moves in this transaction, so sends taken meanwhile roll it back.
        const { day } = orgDay(now, org.timezone);
        const capped = group.filter((a) => a.m.capped).length;
        const used = capped > 0 ? await automationSendsOn(tx, org.id, day) : 0;
        const verdicts = heldGates(org, billing, used, group.map((a) => a.m), now);
        const out: Held[] = new Array(group.length);
        const fresh: { k: number; cost: number }[] = [];
        let counted = 0;
        for (let k = 0; k < group.length; k++) {
          const v = verdicts[k]!;
          const a = group[k]!;
          if (!v.ok) {
            out[k] = { kind: "refused", reason: v.reason };
            continue;
          }
          if (a.m.capped) counted++;
          if (v.deferUntil !== null) {
            const result = await a.m.defer(tx, org, v.deferUntil, a.to, a.text);
            if (result === null) throw TAKEN;
            out[k] = { kind: "queued", until: v.deferUntil, result };
          } else if (a.m.row) fresh.push({ k, cost: v.cost });
          else {
            const id = await a.m.charge!(tx, org, v.cost, a.to, a.text, sendingUntil);
            if (id === null) throw TAKEN;
            out[k] = { kind: "charged", id };
          }
        }
        const ids = await insertChargedMany(
          tx,
          org.id,
          fresh.map(({ k, cost }) => ({ send: group[k]!.m.row!(org, group[k]!.to, group[k]!.text), cost })),
          sendingUntil,
          new Date(now),
        );
        for (let f = 0; f < fresh.length; f++) {
          const id = ids[f];
          if (id === null || id === undefined) throw TAKEN;
          const { k } = fresh[f]!;
          await group[k]!.m.charged?.(tx, id);
          out[k] = { kind: "charged", id };
        }
        if (counted > 0) await countAutomationSends(tx, org.id, day, counted);
        return out;
      });
    } catch (err) {
      const gone: Went | null = isLockTimeout(err)
        ? { kind: "refused", reason: "billing_unavailable", busy: true, waited: true }
        : err === TAKEN
          ? { kind: "taken" }
          : null;
      if (gone === null) throw err;
      for (const a of group) went[a.i] = gone;
      continue;
    }
    let capRefused = false;
    group.forEach((a, k) => {
      const h = held[k]!;
      if (h.kind === "refused") {
        capRefused ||= h.reason === "automation_cap";
        went[a.i] = { kind: "refused", reason: h.reason, busy: false, waited: true };
      } else if (h.kind === "queued") went[a.i] = h;
      else calls.push({ a, org, id: h.id });
    });
    if (capRefused) await warnCapReached(sql, org, now, env);
  }
  if (calls.length === 0) return went;
  // The text as stored: the provider gets exactly what the conversation shows.
  const outcomes = await inParallel(calls, PROVIDER_CALLS_AT_ONCE, ({ a, org, id }) =>
    callProvider(
      a.m.channel,
      org,
      env,
      id,
      (sms) => sendSms(sms, { to: a.to, body: a.text.body, statusCallback: statusCallbackUrl(env.baseUrl) }, providerTimeoutOf(env)),
      (email) => sendEmail(email, a.to, emailOf(a.text.subject, a.text.body), providerTimeoutOf(env), a.m.ics, unsubscribeLink(env, id, a.m.ics)),
    ),
  );
  const results = await settle(
    sql,
    calls.map(({ a, org, id }, c) => ({ id, channel: a.m.channel, to: a.to, org, outcome: outcomes[c]! })),
    now,
    env,
  );
  calls.forEach(({ a }, c) => (went[a.i] = { kind: "delivered", result: results[c]! }));
  return went;
}

/** `work` over `items`, at most `width` at once; the answers in input order. */
async function inParallel<T, R>(items: readonly T[], width: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await work(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
  return out;
}

/**
 * The List-Unsubscribe link of an email (unsubscribe.ts): every email but an appointment's own
 * (one that carries its calendar event), which is transactional. Null without a key.
 */
function unsubscribeLink(env: SendEnv, messageId: number, ics: string | null): string | null {
  if (ics !== null || !env.unsubscribeKey) return null;
  return unsubscribeUrl(env.baseUrl, env.unsubscribeKey, messageId);
}

/**
 * The text a send goes out with, which its row stores and the conversation shows: the lead's
 * values merged in (HTML-escaped into an email's body), an email's subject as its header has it
 * (the org's default when none is given). An SMS keeps its subject, which is not sent, as given.
 * Merged once, when the send is recorded: a send deferred by quiet hours goes out later with the
 * text stored now, so what the conversation showed all along is what the lead receives. The
 * request's own fields stay the idempotency identity (request_hash). A saved reply's preview
 * (src/replies/) is this same function, so it shows what the send would be.
 */
export function asSent(channel: "sms" | "email", body: string, subject: string, lead: LeadRow, org: OrgSettings, extra?: Record<string, string>): Text {
  const values = extra ? { ...extra, ...mergeValues(lead, org) } : mergeValues(lead, org);
  if (channel === "sms") return { body: renderSms(body, values), subject };
  const mail = renderEmail(body, subject, values);
  return { body: mail.html, subject: mail.subject };
}

/**
 * The one warning of an organization's day that its automation cap refused a send (issue 27 §9):
 * logged by whichever instance records the (org, day) first; later refusals that day log nothing.
 * Never fails the send's answer: the refusal stands whether or not the warning could be written.
 */
async function warnCapReached(sql: Sql, org: OrgSettings, now: number, env: SendEnv): Promise<void> {
  const { day } = orgDay(now, org.timezone);
  try {
    if (!(await step(env, firstCapWarning(sql, org.id, day, new Date(now))))) return;
  } catch {
    return;
  }
  log.warn("automation daily cap reached: the organization's automation sends are refused (automation_cap) until its next day", {
    org_id: org.id,
    cap: org.automationCap ?? AUTOMATION_DAILY_CAP,
    day,
  });
}

/**
 * A retry of a recorded send: the first answer (its stored text, which resultText renders back
 * byte for byte). While the first request is still with its provider there is no answer yet; the
 * retry waits for it (polling, holding nothing) up to twice the provider wait, then says
 * `in_progress` (its sender may have died: after the lease, the row becomes `unknown` and retries
 * get outcome_unknown).
 */
async function replay(sql: Sql, prior: PriorRow, hash: string, now: number, env: SendEnv): Promise<MessageResult> {
  if (prior.request_hash !== hash) throw new AppError("operation_id_conflict", "operation_id was already used for a different send");
  if (prior.result !== null) return parseResult(prior.result);
  const deadline = performance.now() + replayWaitOf(env);
  for (let first = true; performance.now() < deadline; first = false) {
    if (!first) await Bun.sleep(20);
    const result = await step(env, settledResult(sql, prior.id, new Date(now)));
    if (result !== null) return parseResult(result);
  }
  return { ok: false, message_id: prior.id, reason: "in_progress" };
}

/** How long a provider's answer is kept trying to be written while the database is away (well inside the `sending` lease). */
export const OUTCOME_RETRY_MS = 30_000;
/** The part of it the request itself waits, before answering 503 and leaving the rest to the background. */
const IN_REQUEST_RETRY_MS = 3_000;

/**
 * A write of what a provider answered, tried again while the database is away or too slow: the
 * answer exists only in this process, and left unwritten the message ends `unknown` after its
 * lease (never sent again, its fate lost). A database restart under load left texts that had gone
 * out that way (test/faults.test.ts). The write only settles a row still `sending`, so one that
 * landed before its answer was lost is not repeated.
 */
async function untilWritten<T>(write: () => Promise<T>, budgetMs: number): Promise<T> {
  const end = performance.now() + budgetMs;
  for (let wait = 100; ; wait = Math.min(2 * wait, 2000)) {
    try {
      return await write();
    } catch (err) {
      if (mapDbError(err)?.code !== "unavailable" || performance.now() + wait > end) throw err;
      await Bun.sleep(wait);
    }
  }
}

/** A provider call's answer for one message, to record. */
interface Answered {
  id: number;
  channel: "sms" | "email";
  to: string;
  org: OrgSettings;
  outcome: ProviderOutcome;
}

/**
 * Records how the provider calls ended (and a Twilio 21610 as the phone's opt-out); each message's
 * stored answer, which for a message queued first is its first answer. The sent ones in one
 * statement (recordSent), a failure (rare: its refund and reason) in one of its own.
 */
async function settle(sql: Sql, answered: readonly Answered[], now: number, env: SendEnv): Promise<MessageResult[]> {
  const at = new Date(now);
  const results = answered.map(({ id, channel, outcome }): MessageResult => {
    messageSends.inc(channel, outcome.ok ? "sent" : "failed");
    return outcome.ok ? { ok: true, message_id: id } : { ok: false, message_id: id, reason: outcome.reason };
  });
  const sent = answered.flatMap((a, i) => (a.outcome.ok ? [{ id: a.id, providerId: a.outcome.providerId, result: resultText(results[i]!) }] : []));
  const record = async () => {
    const stored = new Map<number, string | null>();
    const rows = await recordSent(sql, sent, at);
    sent.forEach((x, k) => stored.set(x.id, rows[k]?.result ?? null));
    for (const [i, a] of answered.entries()) {
      if (a.outcome.ok) continue;
      const row = await recordOutcome(sql, a.id, { ok: false, providerId: null, reason: a.outcome.reason, error: a.outcome.error, result: resultText(results[i]!), now: at });
      stored.set(a.id, row?.result ?? null);
    }
    return stored;
  };
  let stored: Map<number, string | null>;
  try {
    // A database away for a moment (a restart) is waited for, so the request still gets its answer.
    // Both writes act only on a message still `sending`, so a repeat of what landed changes nothing.
    stored = await untilWritten(() => step(env, record(), Math.ceil(answered.length / 500)), IN_REQUEST_RETRY_MS);
  } catch (err) {
    // Away for longer, or slow: this request answers 503 and the outcomes keep being written in
    // the background (recordOutcome acts only on a message still `sending`), so that a text that
    // went out is not left `sending` until its lease and then `unknown`. A retry of the send then
    // replays it.
    void recordLater(record);
    throw err;
  }
  const out: MessageResult[] = [];
  for (const [i, a] of answered.entries()) {
    if (!a.outcome.ok && a.channel === "sms" && a.outcome.code === TWILIO_UNSUBSCRIBED) await step(env, optOutPhone(sql, a.org.id, a.to, "provider:21610", at));
    const text = stored.get(a.id) ?? (await step(env, settledResult(sql, a.id, at)));
    out.push(text === null ? results[i]! : parseResult(text));
  }
  return out;
}

/** The background tries of an outcome the request could not write: until OUTCOME_RETRY_MS from the answer. */
async function recordLater(record: () => Promise<unknown>): Promise<void> {
  await untilWritten(record, OUTCOME_RETRY_MS - IN_REQUEST_RETRY_MS).catch(() => {
    // Still away: the lease (recoverInterrupted) decides.
  });
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
  messageId: number,
  sms: (cfg: SmsConfig) => Promise<ProviderOutcome>,
  email: (cfg: EmailConfig) => Promise<ProviderOutcome>,
): Promise<ProviderOutcome> {
  const key = env.secretKey ?? null;
  // A `sink:` provider (src/sink.ts) takes the message here, in the process: recorded as sent under
  // a provider id naming the sink, nothing leaves the machine. Checked after the secret is opened,
  // since a provisioned smtp_url is stored sealed.
  const sunk: ProviderOutcome = { ok: true, providerId: `sink-${messageId}`, status: "sent" };
  try {
    if (channel === "sms") {
      const cfg = smsConfig(org.sms)!;
      if (isSink(cfg.base_url)) return sunk;
      return await sms({ ...cfg, auth_token: openSecret(key, cfg.auth_token, `org ${org.id}'s sms.auth_token`) });
    }
    const cfg = emailConfig(org.email)!;
    const smtpUrl = openSecret(key, cfg.smtp_url, `org ${org.id}'s email.smtp_url`);
    if (isSink(smtpUrl)) return sunk;
    return await email({ ...cfg, smtp_url: smtpUrl });
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
 * The deferred-send worker's step for one message: when its time has come, it goes through
 * sendNow like a new send (the same gates again, charged now), recorded on its own row. Safe to
 * run twice: only a `queued` message is charged, and charging marks it `sending` first.
 */
export async function sendDeferred(sql: Sql, messageId: number, now: number, env: SendEnv): Promise<DeferredStep> {
  const at = new Date(now);
  const row = await step(env, loadDeferred(sql, messageId));
  if (!row || !row.context.lead) return { done: true };
  if (row.defer_until && row.defer_until.getTime() > now) return { retryAt: row.defer_until.getTime() };
  const [went] = await sendNow(
    sql,
    [{
      channel: row.channel,
      lead: row.context.lead,
      org: row.context.org,
      consent: row.context.consent,
      listed: row.context.listed,
      text: { body: row.body, subject: row.subject, merged: row.merged },
      capped: false,
      sendBefore: row.send_before?.getTime() ?? null,
      ics: row.channel === "email" ? row.ics : null,
      async defer(tx, _org, until) {
        if (!(await redefer(tx, messageId, new Date(until), at))) return null;
        return { ok: true, message_id: messageId, defer_until: Math.ceil(until / 1000) };
      },
      charge: (tx, org, cost, to, text, sendingUntil) => chargeDeferred(tx, messageId, org.id, cost, to, text, at, sendingUntil),
    }],
    now,
    env,
  );
  if (went!.kind === "queued") return { retryAt: went!.until };
  if (went!.kind === "refused") {
    if (went!.busy) return { retryAt: now + BILLING_RETRY_MS };
    await step(env, failDeferred(sql, messageId, went!.reason, at));
  }
  return { done: true };
}
