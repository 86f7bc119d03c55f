// The messaging statements. Tenant confinement is in SQL (leads/scope.ts); idempotency rests on
// the unique index messages_operation (sql/0001, 0005); credits move only beside a ledger entry.
import { inInputOrder } from "../db/batcher";
import { outboxInsert } from "../events/envelope";
import { unprepared, type Sql, type Tx } from "../db/client";
import { leadAddress, listed } from "../leads/dnc";
import { inRowTenant, inTenant, NO_ORG } from "../leads/scope";
import { drawHit } from "../limits/fused";
import type { BillingState, ConsentState, OrgSettings } from "./gates";
import type { Actor, Channel } from "./model";

type Db = Sql | Tx;

/** The house (platform) idempotency scope, as the index messages_operation spells it: coalesce(op_scope, -1). */
export const HOUSE = -1;
export const scopeOf = (actor: Actor) => actor.orgId ?? HOUSE;

export interface LeadRow {
  id: number;
  org_id: number | null;
  phone: string;
  email: string;
  state: string;
  first_name: string;
  last_name: string;
  city: string;
  postal_code: string;
}

export interface PriorRow {
  id: number;
  request_hash: string | null;
  result: string | null;
}

export interface SendContext {
  lead: LeadRow | null;
  org: OrgSettings | null;
  consent: ConsentState;
  /** Whether the channel's address is on the lead's organization's do-not-contact list. */
  listed: boolean;
  prior: PriorRow | null;
}

type ContextRow = Partial<LeadRow> & {
  lead_id: number | null;
  o_id: number | null;
  o_name: string;
  o_company: string;
  o_timezone: string;
  o_quiet_start: string | null;
  o_quiet_end: string | null;
  o_consent: string;
  o_sms: unknown;
  o_email: unknown;
  o_automation_cap: number | null;
  consent: ConsentState | null;
  listed: boolean | null;
  p_id: number | null;
  p_hash: string | null;
  p_result: string | null;
};

/**
 * The recipient's consent on a channel: across the org's leads sharing the address (a person who
 * texted STOP is the same person on a newer lead), `out` if any opted out, else `in` if any opted
 * in, else `none`. Expects the alias `l` for the lead.
 */
export const consentOf = (sql: Db, channel: Channel) => sql`
  (select case when bool_or(c.consent = 'out') then 'out' when bool_or(c.consent = 'in') then 'in' else 'none' end
   from lead_channels c join leads l2 on l2.id = c.lead_id
   where c.channel = ${channel}
     and (c.lead_id = l.id or (c.address <> '' and c.address = ${channel === "sms" ? sql`l.phone` : sql`l.email`}))
     and l2.org_id is not distinct from l.org_id)`;

/** Whether the lead `l`'s address on the channel is on its organization's do-not-contact list (src/leads/dnc.ts). */
const listedOf = (sql: Db, channel: "sms" | "email") => listed(sql, sql`l.org_id`, channel === "sms" ? "phone" : "email", leadAddress(sql, channel === "sms" ? "phone" : "email"));

function toContext(r: ContextRow | undefined): SendContext {
  if (!r || r.lead_id === null) return { lead: null, org: null, consent: "none", listed: false, prior: null };
  const lead: LeadRow = {
    id: r.lead_id,
    org_id: r.org_id ?? null,
    phone: r.phone!,
    email: r.email!,
    state: r.state!,
    first_name: r.first_name!,
    last_name: r.last_name!,
    city: r.city!,
    postal_code: r.postal_code!,
  };
  const org: OrgSettings | null =
    r.o_id === null
      ? null
      : {
          id: r.o_id,
          name: r.o_name,
          company: r.o_company,
          timezone: r.o_timezone,
          quiet: r.o_quiet_start && r.o_quiet_end ? { start: r.o_quiet_start, end: r.o_quiet_end } : null,
          consent: r.o_consent === "explicit" ? "explicit" : "implied",
          sms: r.o_sms,
          email: r.o_email,
          automationCap: r.o_automation_cap,
        };
  const prior = r.p_id === null ? null : { id: r.p_id, request_hash: r.p_hash, result: r.p_result };
  return { lead, org, consent: r.consent ?? "none", listed: r.listed === true, prior };
}

const leadColumns = (sql: Db) => sql`
  l.id as lead_id, l.org_id, l.phone, l.email, l.state, l.first_name, l.last_name, l.city, l.postal_code,
  o.id as o_id, o.name as o_name, o.company as o_company, o.timezone as o_timezone,
  o.quiet_start as o_quiet_start, o.quiet_end as o_quiet_end, o.consent as o_consent,
  o.sms as o_sms, o.email as o_email, o.automation_daily_cap as o_automation_cap`;

/**
 * The lead in the actor's scope and its organization, read as a send reads them to merge a text
 * (a saved reply's preview, src/replies/); null when the lead is not in the actor's scope.
 */
export async function mergeContext(sql: Sql, actor: Actor, leadId: number): Promise<{ lead: LeadRow; org: OrgSettings | null } | null> {
  const [row] = await sql<ContextRow[]>`
    select ${leadColumns(sql)}, null::text as consent, null::bigint as p_id, null::text as p_hash, null::text as p_result
    from leads l left join orgs o on o.id = l.org_id
    where l.id = ${leadId} and ${inTenant(sql, actor.orgId)}`;
  const c = toContext(row);
  return c.lead ? { lead: c.lead, org: c.org } : null;
}

/**
 * Everything a send decides on, in one round trip: the lead if it is in the actor's scope, its
 * org's settings, the recipient's consent, and any message already recorded under the operation_id.
 */
export async function sendContext(
  sql: Sql,
  actor: Actor,
  leadId: number | null,
  channel: Channel,
  operationId: string,
): Promise<SendContext> {
  const [row] = await sql<ContextRow[]>`
    select ${leadColumns(sql)},
           ${channel === "note" ? sql`null::text` : consentOf(sql, channel)} as consent,
           ${channel === "note" ? sql`null::boolean` : listedOf(sql, channel)} as listed,
           p.id as p_id, p.request_hash as p_hash, p.result as p_result
    from (values (1)) as one (x)
    left join leads l on l.id = ${leadId ?? 0} and ${inTenant(sql, actor.orgId)}
    left join orgs o on o.id = l.org_id
    left join messages p on coalesce(p.op_scope, -1) = ${scopeOf(actor)} and p.operation_id = ${operationId}`;
  return toContext(row);
}

/** One send's context to read in a batch (sendContexts): as sendContext's arguments. */
export interface ContextRead {
  orgId: number | null;
  scope: number;
  leadId: number;
  channel: "sms" | "email";
  operationId: string;
}

/**
 * sendContext for many sends at once (the reminder scheduler's batches): one statement per
 * channel, each send's context in input order.
 */
export async function sendContexts(sql: Sql, reads: readonly ContextRead[]): Promise<SendContext[]> {
  const out: SendContext[] = new Array(reads.length);
  for (const channel of ["sms", "email"] as const) {
    const idx = reads.flatMap((r, i) => (r.channel === channel ? [i] : []));
    if (idx.length === 0) continue;
    const rs = idx.map((i) => reads[i]!);
    // Unprepared: a plan kept from when messages was small joins it by scanning (see unprepared).
    const rows = await unprepared(sql<(ContextRow & { i: number })[]>`
      select u.i, ${leadColumns(sql)}, ${consentOf(sql, channel)} as consent, ${listedOf(sql, channel)} as listed,
             p.id as p_id, p.request_hash as p_hash, p.result as p_result
      from unnest(${rs.map((r) => r.orgId ?? NO_ORG)}::int8[], ${rs.map((r) => r.leadId)}::int8[],
                  ${rs.map((r) => r.scope)}::int8[], ${rs.map((r) => r.operationId)}::text[])
           with ordinality as u(org, id, scope, op, i)
      left join leads l on l.id = u.id and ${inRowTenant(sql)}
      left join orgs o on o.id = l.org_id
      left join messages p on coalesce(p.op_scope, -1) = u.scope and p.operation_id = u.op`);
    for (const r of rows) out[idx[Number(r.i) - 1]!] = toContext(r);
  }
  return out;
}

/** The first read of an API send: whether the lead is in the actor's scope, and the operation's prior send. */
export interface Probe {
  leadFound: boolean;
  prior: PriorRow | null;
}

export interface ProbeRead {
  orgId: number | null;
  scope: number;
  leadId: number;
  operationId: string;
}

/**
 * The first read of many API sends in one statement (src/limits/fused.ts), each drawing its
 * request's hit: a retry is then answered from this one statement, with no other round trip.
 */
export async function countedProbes(sql: Sql, reads: readonly ProbeRead[], seqs: number[]): Promise<{ hit_: number; out: Probe }[]> {
  const rows = await sql<{ i: number; hit_: number; lead_id: number | null; p_id: number | null; p_hash: string | null; p_result: string | null }[]>`
    select u.i, ${drawHit(sql)}, l.id as lead_id, p.id as p_id, p.request_hash as p_hash, p.result as p_result
    from unnest(${seqs}::int8[], ${reads.map((r) => r.orgId ?? NO_ORG)}::int8[], ${reads.map((r) => r.leadId)}::int8[],
                ${reads.map((r) => r.scope)}::int8[], ${reads.map((r) => r.operationId)}::text[])
         with ordinality as u(seq, org, id, scope, op, i)
    left join leads l on l.id = u.id and ${inRowTenant(sql)}
    left join messages p on coalesce(p.op_scope, -1) = u.scope and p.operation_id = u.op`;
  return inInputOrder(rows, reads.length).map((r) => ({
    hit_: r.hit_,
    out: {
      leadFound: r.lead_id !== null,
      prior: r.p_id === null ? null : { id: r.p_id, request_hash: r.p_hash, result: r.p_result },
    },
  }));
}

/** What a `sending` row whose lease has lapsed becomes: its sender died during the provider call. */
const interrupted = (sql: Db, now: Date) => sql`
  status = 'unknown', sending_until = null, updated_at = ${now},
  error = 'outcome_unknown: the sender stopped before recording the provider''s answer',
  result = coalesce(m.result, '{"ok":false,"message_id":' || m.id || ',"reason":"outcome_unknown"}')`;

/**
 * A message's stored result, null while its first answer is still being made. A `sending` row
 * past its lease is settled here as interrupted (`unknown`), so a retry after a crash answers at
 * once instead of waiting for the sweep.
 */
export async function settledResult(sql: Sql, id: number, now: Date): Promise<string | null> {
  const [row] = await sql<{ result: string | null }[]>`
    with rec as (
      update messages m set ${interrupted(sql, now)}
      where m.id = ${id} and m.status = 'sending' and m.sending_until < ${now}
      returning m.result
    )
    select coalesce((select result from rec), (select result from messages where id = ${id})) as result`;
  return row?.result ?? null;
}

/**
 * A note in one statement: the lead's scope check, the idempotency check and the insert. Null
 * `id` with a `prior` means the operation_id was used already; neither, with the lead found, means
 * a concurrent request took it between this statement's snapshot and its insert (read again).
 */
export async function insertNote(
  sql: Sql,
  actor: Actor,
  leadId: number,
  body: string,
  subject: string,
  operationId: string,
  hash: string,
  now: Date,
): Promise<{ lead_id: number | null; id: number | null; result: string | null; prior: PriorRow | null }> {
  const [row] = await sql<
    { lead_id: number | null; id: number | null; result: string | null; p_id: number | null; p_hash: string | null; p_result: string | null }[]
  >`
    with lead as (
      select l.id, l.org_id from leads l where l.id = ${leadId} and ${inTenant(sql, actor.orgId)}
    ), prior as (
      select id, request_hash, result from messages
      where coalesce(op_scope, -1) = ${scopeOf(actor)} and operation_id = ${operationId}
    ), nid as (
      select nextval('messages_id_seq') as id from lead where not exists (select 1 from prior)
    ), ins as (
      insert into messages (id, lead_id, org_id, channel, direction, actor_type, actor_id, subject, body, status,
                            operation_id, op_scope, request_hash, result, created_at, updated_at)
      select nid.id, lead.id, lead.org_id, 'note', 'out', ${actor.type}, ${actor.id}, ${subject}, ${body}, 'stored',
             ${operationId}, ${actor.orgId}::bigint, ${hash}, '{"ok":true,"message_id":' || nid.id || '}', ${now}, ${now}
      from nid, lead
      on conflict (coalesce(op_scope, -1), operation_id) where operation_id is not null do nothing
      returning id, result
    )
    select (select id from lead) as lead_id, (select id from ins) as id, (select result from ins) as result,
           prior.id as p_id, prior.request_hash as p_hash, prior.result as p_result
    from (values (1)) as one (x) left join prior on true`;
  return {
    lead_id: row.lead_id,
    id: row.id,
    result: row.result,
    prior: row.p_id === null ? null : { id: row.p_id, request_hash: row.p_hash, result: row.p_result },
  };
}

/**
 * Locks the org's billing row for the rest of the transaction and reads it. The lock wait is
 * bounded (`lock_timeout`): a row held longer makes the statement fail with 55P03, which the
 * caller reports as billing_unavailable.
 */
export async function lockBilling(tx: Tx, orgId: number, lockMs: number): Promise<BillingState> {
  const [, rows] = await Promise.all([
    tx`select set_config('lock_timeout', ${`${Math.max(1, Math.round(lockMs))}ms`}, true)`,
    tx<{ status: string; subscription: string; credits: number; sms_cost: number; email_cost: number }[]>`
      select status, subscription, credits::float8 as credits, sms_cost::float8 as sms_cost, email_cost::float8 as email_cost
      from org_billing where org_id = ${orgId} for update`,
  ]);
  return rows[0] ?? null;
}

export interface NewSend {
  actor: Actor;
  lead: LeadRow;
  orgId: number;
  channel: "sms" | "email";
  body: string;
  subject: string;
  operationId: string;
  hash: string;
  to: string;
  now: Date;
  /** An email's attached calendar event (SendExtras.ics), kept in `meta` with the address. */
  ics: string | null;
  /** SendExtras.sendBefore: a queued send still refused at or after it. */
  sendBefore: Date | null;
}

/** What a message's `meta` holds of its send: the address, and an email's calendar event. */
const sendMeta = (s: { to: string; ics: string | null }) => (s.ics === null ? { to: s.to } : { to: s.to, ics: s.ics });

/**
 * Records sends that passed every gate and charges for them, in one statement of the caller's
 * transaction (which holds the billing row): for sends of one organization (a group; a single send
 * is a group of one), the messages as `sending` with their lease, one deduction of their total
 * from the credits, and a ledger entry each whose balance is the balance after it, as if they had
 * been charged one by one in input order. Each send's message
 * id in input order; null where its operation_id was taken (nothing is charged for it).
 */
export async function insertChargedMany(tx: Tx, orgId: number, sends: readonly { send: NewSend; cost: number }[], sendingUntil: Date, now: Date): Promise<(number | null)[]> {
  if (sends.length === 0) return [];
  const col = <T>(f: (s: NewSend, cost: number) => T) => sends.map((x) => f(x.send, x.cost));
  const rows = await unprepared(tx<{ id: number; operation_id: string }[]>`
    with u as (
      select * from unnest(${col((s) => String(s.lead.id))}::text[], ${col((s) => s.channel)}::text[], ${col((s) => s.actor.type)}::text[],
                           ${col((s) => s.actor.id)}::text[], ${col((s) => s.subject)}::text[], ${col((s) => s.body)}::text[],
                           ${col((s) => JSON.stringify(sendMeta(s)))}::text[], ${col((s) => s.operationId)}::text[],
                           ${col((s) => (s.actor.orgId === null ? "" : String(s.actor.orgId)))}::text[], ${col((s) => s.hash)}::text[],
                           ${col((_, cost) => String(cost))}::text[])
             with ordinality as u(lead_id, channel, actor_type, actor_id, subject, body, meta, operation_id, op_scope, request_hash, cost, i)
    ), ins as (
      insert into messages (lead_id, org_id, channel, direction, actor_type, actor_id, subject, body, status, meta,
                            operation_id, op_scope, request_hash, cost, sending_until, created_at, updated_at)
      select u.lead_id::bigint, ${orgId}, u.channel, 'out', u.actor_type, u.actor_id, u.subject, u.body, 'sending', u.meta::jsonb,
             u.operation_id, nullif(u.op_scope, '')::bigint, u.request_hash, u.cost::numeric, ${sendingUntil}, ${now}, ${now}
      from u order by u.i
      on conflict (coalesce(op_scope, -1), operation_id) where operation_id is not null do nothing
      returning id, operation_id, cost
    ), charged as (
      update org_billing set credits = credits - (select sum(cost) from ins), updated_at = ${now}
      where org_id = ${orgId} and (select sum(cost) from ins) > 0
      returning credits
    ), ledger as (
      insert into credit_ledger (org_id, message_id, kind, amount, balance, created_at)
      select ${orgId}, c.id, 'charge', -c.cost, charged.credits + c.later, ${now}
      from (select id, cost, coalesce(sum(cost) over (order by id rows between 1 following and unbounded following), 0) as later
            from ins where cost > 0) c, charged
      order by c.id
    )
    select id, operation_id from ins`);
  const ids = new Map(rows.map((r) => [r.operation_id, r.id]));
  return sends.map((x) => ids.get(x.send.operationId) ?? null);
}

/**
 * Records a send deferred by quiet hours: `queued` until `deferUntil`, charged when it goes. The
 * answer ({ok, message_id, defer_until}) is built here, where the id is known, and stored as the
 * result that replays return. Null when the operation_id is taken.
 */
export async function insertDeferred(tx: Tx, s: NewSend, deferUntil: Date): Promise<{ id: number; result: string } | null> {
  const epoch = Math.ceil(deferUntil.getTime() / 1000);
  const [row] = await tx<{ id: number; result: string }[]>`
    with nid as (select nextval('messages_id_seq') as id)
    insert into messages (id, lead_id, org_id, channel, direction, actor_type, actor_id, subject, body, status, meta,
                          operation_id, op_scope, request_hash, defer_until, send_before, result, created_at, updated_at)
    select nid.id, ${s.lead.id}, ${s.orgId}, ${s.channel}, 'out', ${s.actor.type}, ${s.actor.id}, ${s.subject}, ${s.body},
           'queued', ${tx.json(sendMeta(s))}, ${s.operationId}, ${s.actor.orgId}::bigint, ${s.hash}, ${new Date(epoch * 1000)}, ${s.sendBefore},
           '{"ok":true,"message_id":' || nid.id || ',"defer_until":' || ${epoch}::bigint || '}', ${s.now}, ${s.now}
    from nid
    on conflict (coalesce(op_scope, -1), operation_id) where operation_id is not null do nothing
    returning id, result`;
  return row ?? null;
}

/** A deferred message's own row and its lead, org and consent; null unless still `queued`. */
export interface DeferredRow {
  id: number;
  channel: "sms" | "email";
  body: string;
  subject: string;
  /** False for a message queued before its text was stored merged (sql/0014): body and subject are the templates. */
  merged: boolean;
  defer_until: Date | null;
  /** The calendar event an email carries (meta.ics), or null. */
  ics: string | null;
  send_before: Date | null;
  context: SendContext;
}

/**
 * Read without a lock, like a new send's context (sendContext): the statements that then record
 * the message's fate (chargeDeferred, redefer, failDeferred) each act only on a row still `queued`,
 * so of two runs of its job one sends it and the other finds nothing.
 */
export async function loadDeferred(sql: Sql, id: number): Promise<DeferredRow | null> {
  // The channel decides the consent statement, so read it first.
  const [head] = await sql<{ channel: "sms" | "email" }[]>`
    select channel from messages where id = ${id} and status = 'queued' and channel in ('sms', 'email')`;
  if (!head) return null;
  const [row] = await sql<(ContextRow & { m_body: string; m_subject: string; m_merged: boolean; m_defer_until: Date | null; m_ics: string | null; m_send_before: Date | null })[]>`
    select ${leadColumns(sql)}, ${consentOf(sql, head.channel)} as consent, ${listedOf(sql, head.channel)} as listed,
           null::bigint as p_id, null::text as p_hash, null::text as p_result,
           m.body as m_body, m.subject as m_subject, m.merged as m_merged, m.defer_until as m_defer_until,
           m.meta->>'ics' as m_ics, m.send_before as m_send_before
    from messages m
    join leads l on l.id = m.lead_id
    left join orgs o on o.id = l.org_id
    where m.id = ${id} and m.status = 'queued'`;
  if (!row) return null;
  return {
    id,
    channel: head.channel,
    body: row.m_body,
    subject: row.m_subject,
    merged: row.m_merged,
    defer_until: row.m_defer_until,
    ics: row.m_ics,
    send_before: row.m_send_before,
    context: toContext(row),
  };
}

/**
 * A deferred message that now goes: charged, `sending`, leased, with the text it goes with. Its id,
 * or null when it was no longer `queued` (another run of its job took it).
 */
export async function chargeDeferred(
  tx: Tx,
  id: number,
  orgId: number,
  cost: number,
  to: string,
  text: { body: string; subject: string },
  now: Date,
  sendingUntil: Date,
): Promise<number | null> {
  const [row] = await tx<{ id: number }[]>`
    with m as (
      update messages set status = 'sending', cost = ${cost}, sending_until = ${sendingUntil}, updated_at = ${now},
                          body = ${text.body}, subject = ${text.subject}, merged = true,
                          meta = coalesce(meta, '{}'::jsonb) || ${tx.json({ to })}
      where id = ${id} and status = 'queued'
      returning id
    ), charged as (
      update org_billing set credits = credits - ${cost}::numeric, updated_at = ${now}
      where org_id = ${orgId} and ${cost}::numeric > 0 and exists (select 1 from m)
      returning credits
    ), ledger as (
      insert into credit_ledger (org_id, message_id, kind, amount, balance, created_at)
      select ${orgId}, m.id, 'charge', -${cost}::numeric, charged.credits, ${now} from m, charged
    )
    select id from m`;
  return row?.id ?? null;
}

/** Moves a deferred message's time (its recipient's quiet hours moved under it); false when no longer `queued`. */
export async function redefer(tx: Tx, id: number, deferUntil: Date, now: Date): Promise<boolean> {
  const rows = await tx`update messages set defer_until = ${deferUntil}, updated_at = ${now} where id = ${id} and status = 'queued' returning id`;
  return rows.length > 0;
}

/**
 * The outbox row of a message event (operations.md §6), written by the statement that makes the
 * change: `m` is that statement's CTE returning the message row. Payload {type, timestamp, data}.
 */
export function eventFrom(sql: Db, type: "message.sent" | "message.failed" | "message.received", at: Date, reason: string | null = null) {
  const data =
    type === "message.received"
      ? sql`jsonb_build_object('message_id', m.id, 'lead_id', m.lead_id, 'org_id', m.org_id, 'channel', m.channel,
              'from', m.meta->>'from', 'to', m.meta->>'to', 'body', m.body, 'provider_id', m.provider_id,
              'consent', m.meta->'consent')`
      : sql`jsonb_build_object('message_id', m.id, 'lead_id', m.lead_id, 'org_id', m.org_id, 'channel', m.channel,
              'to', m.meta->>'to', 'status', m.status, 'provider_id', m.provider_id, 'operation_id', m.operation_id,
              'actor_type', m.actor_type, 'actor_id', m.actor_id
              ${type === "message.failed" ? sql`, 'reason', ${reason}::text, 'error', m.error` : sql``})`;
  return outboxInsert(sql, { type, at, orgId: sql`m.org_id`, data, from: sql`m` });
}

/** A deferred message refused by a gate when its time came: `failed`, with the reason as its error. */
export async function failDeferred(sql: Db, id: number, reason: string, now: Date): Promise<boolean> {
  const rows = await sql`
    with m as (
      update messages set status = 'failed', error = ${reason}, updated_at = ${now}
      where id = ${id} and status = 'queued'
      returning *
    ), evt as (${eventFrom(sql, "message.failed", now, reason)})
    select id from m`;
  return rows.length > 0;
}

export interface Outcome {
  ok: boolean;
  providerId: string | null;
  /** On failure: the API's reason and the provider's error. */
  reason: string | null;
  error: string;
  /** The result to store where none is stored yet (a deferred message keeps its first answer). */
  result: string;
  now: Date;
}

/**
 * Records how a provider call ended, on a message still `sending`, with its event. A failure
 * refunds the charge in the same statement. Returns the stored result (the first answer, for a
 * deferred message), or null when the message was no longer `sending`.
 */
export async function recordOutcome(sql: Sql, id: number, o: Outcome): Promise<{ result: string; org_id: number | null } | null> {
  if (o.ok) return (await recordSent(sql, [{ id, providerId: o.providerId ?? "", result: o.result }], o.now))[0] ?? null;
  const [row] = await sql<{ result: string; org_id: number | null }[]>`
    with m as (
      update messages set status = 'failed', error = ${o.error}, sending_until = null,
                          result = coalesce(result, ${o.result}), updated_at = ${o.now}
      where id = ${id} and status = 'sending'
      returning *
    ), ${refundFrom(sql, o.now)}, evt as (${eventFrom(sql, "message.failed", o.now, o.reason)})
    select result, org_id from m`;
  return row ?? null;
}

/**
 * The successful provider answers of many messages still `sending`, each with its message.sent
 * event, in one statement (a batch's sends: recordOutcome's success for N). Per input, the stored
 * result, or null when the message was no longer `sending`.
 */
export async function recordSent(
  sql: Sql,
  sent: readonly { id: number; providerId: string; result: string }[],
  now: Date,
): Promise<({ result: string; org_id: number | null } | null)[]> {
  if (sent.length === 0) return [];
  const rows = await unprepared(sql<{ id: number; result: string; org_id: number | null }[]>`
    with m as (
      update messages set status = 'sent', provider_id = u.provider_id, sending_until = null,
                          result = coalesce(messages.result, u.result), updated_at = ${now}
      from unnest(${sent.map((x) => x.id)}::int8[], ${sent.map((x) => x.providerId)}::text[], ${sent.map((x) => x.result)}::text[])
           as u(id, provider_id, result)
      where messages.id = u.id and messages.status = 'sending'
      returning messages.*
    ), evt as (${eventFrom(sql, "message.sent", now)})
    select id, result, org_id from m`);
  const byId = new Map(rows.map((r) => [Number(r.id), { result: r.result, org_id: r.org_id }]));
  return sent.map((x) => byId.get(x.id) ?? null);
}

/** CTEs `refunded` and `ledger`: give back the cost of the message(s) in CTE `m`. */
export const refundFrom = (sql: Db, now: Date) => sql`
  refunded as (
    update org_billing b set credits = b.credits + m.cost, updated_at = ${now}
    from m where b.org_id = m.org_id and m.cost > 0
    returning b.credits, m.id, m.org_id, m.cost
  ), ledger as (
    insert into credit_ledger (org_id, message_id, kind, amount, balance, created_at)
    select org_id, id, 'refund', cost, credits, ${now} from refunded
  )`;

/**
 * The organization's automation sends (SMS and email, whatever became of them) recorded in its day
 * `day` (YYYY-MM-DD in its zone): the cap's count. Read in the send's transaction after the org's
 * billing row is locked, which every send of the org takes first, so no concurrent send of the org
 * can record one between this read and this send's own count (countAutomationSend).
 */
export async function automationSendsOn(tx: Tx, orgId: number, day: string): Promise<number> {
  const [row] = await tx<{ sends: number }[]>`select sends from automation_daily_sends where org_id = ${orgId} and day = ${day}::date`;
  return row?.sends ?? 0;
}

/** `n` more automation sends on the org's day, in the transaction that records them (rolled back with it). */
export async function countAutomationSends(tx: Tx, orgId: number, day: string, n: number): Promise<void> {
  await tx`
    insert into automation_daily_sends (org_id, day, sends) values (${orgId}, ${day}::date, ${n})
    on conflict (org_id, day) do update set sends = automation_daily_sends.sends + excluded.sends`;
}

/** True for the first caller of an (org, day), across instances: the one that logs the cap's warning. */
export async function firstCapWarning(sql: Sql, orgId: number, day: string, now: Date): Promise<boolean> {
  const rows = await sql`
    insert into automation_cap_warnings (org_id, day, logged_at) values (${orgId}, ${day}::date, ${now})
    on conflict (org_id, day) do nothing returning org_id`;
  return rows.length > 0;
}

/** After Twilio's 21610 (the recipient replied STOP to this sender): the org's leads on that phone opt out. */
export async function optOutPhone(sql: Db, orgId: number, phone: string, source: string, now: Date): Promise<void> {
  await sql`
    insert into lead_channels (lead_id, channel, address, consent, consent_at, consent_source, updated_at)
    select l.id, 'sms', l.phone, 'out', ${now}, ${source}, ${now} from leads l
    where l.phone = ${phone} and l.org_id = ${orgId}
    on conflict (lead_id, channel) do update
      set consent = 'out', consent_at = excluded.consent_at, consent_source = excluded.consent_source, updated_at = excluded.updated_at`;
}

/**
 * Sends whose process stopped during the provider call: still `sending` past their lease. They are
 * never sent again; they become `unknown` (the provider may or may not have the message, so the
 * charge stands), answering replays with reason outcome_unknown unless a first answer was stored.
 */
export async function recoverInterrupted(sql: Sql, now: Date, limit = 100): Promise<number[]> {
  const rows = await sql<{ id: number }[]>`
    update messages m set ${interrupted(sql, now)}
    where m.id in (
      select id from messages where status = 'sending' and sending_until < ${now}
      order by sending_until limit ${limit} for update skip locked)
    returning m.id`;
  return rows.map((r) => r.id);
}

/** The organization and address an outbound email went to (an unsubscribe link names the message); null for anything else. */
export async function emailRecipient(sql: Db, messageId: number): Promise<{ org_id: number; to: string; company: string } | null> {
  const [row] = await sql<{ org_id: number; to: string; company: string }[]>`
    select m.org_id, lower(m.meta->>'to') as to, coalesce(nullif(o.company, ''), o.name) as company
    from messages m join orgs o on o.id = m.org_id
    where m.id = ${messageId} and m.channel = 'email' and m.direction = 'out' and coalesce(m.meta->>'to', '') <> ''`;
  return row ?? null;
}

/**
 * An email address opts out (an unsubscribe link): the email channel of every lead of the
 * organization on that address, with the time and source, and a `consent.changed` entry on each
 * lead's timeline. An address already opted out keeps its first opt-out (a repeated POST changes
 * nothing). `held`: whether any lead of the organization has the address now.
 */
export async function optOutEmail(tx: Tx, orgId: number, email: string, source: string, now: Date): Promise<{ changed: number; held: boolean }> {
  const [row] = await tx<{ changed: number; held: boolean }[]>`
    with opted as (
      insert into lead_channels (lead_id, channel, address, consent, consent_at, consent_source, updated_at)
      select l.id, 'email', ${email}, 'out', ${now}, ${source}, ${now} from leads l
      where l.org_id = ${orgId} and lower(l.email) = ${email}
      on conflict (lead_id, channel) do update
        set address = excluded.address, consent = 'out', consent_at = excluded.consent_at,
            consent_source = excluded.consent_source, updated_at = excluded.updated_at
        where lead_channels.consent <> 'out'
      returning lead_id
    ), evt as (
      insert into lead_events (lead_id, event, label, actor, actor_role, note, created_at)
      select lead_id, 'consent.changed', 'Email consent: out (unsubscribe link)', 'the recipient', 'recipient', '', ${now} from opted
    )
    select (select count(*) from opted)::int as changed,
           exists (select 1 from leads l where l.org_id = ${orgId} and lower(l.email) = ${email}) as held`;
  return row;
}
