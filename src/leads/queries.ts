import type { Sql, Tx } from "../db/client";
import { inInputOrder } from "../db/batcher";
import { turnTaken, waitingForTurn } from "../db/deadline";
import { namedVisitor } from "../dni/attribution";
import { outboxInsert } from "../events/envelope";
import { drawHit } from "../limits/fused";
import { listed } from "./dnc";
import type { Lead, LeadInput } from "./model";
import { inRowTenant, NO_ORG } from "./scope";

export interface ResolvedList {
  id: number;
  campaign_id: string;
  org_id: number | null;
}

/**
 * The list a lead goes into: the requested list when it exists in the key's organization, else
 * the inbound list (environment over provisioned setting) under the same confinement.
 */
export async function resolveList(
  sql: Sql,
  orgId: number | null,
  requested: number | null,
  envInbound: number | null,
): Promise<ResolvedList | null> {
  const [row] = await sql<ResolvedList[]>`
    select li.id, li.campaign_id, c.org_id
    from lists li join campaigns c on c.id = li.campaign_id
    where li.id in (
        ${requested}::bigint,
        coalesce(${envInbound}::bigint, (
          select (value #>> '{}')::bigint from settings
          where key = 'COMMS_INBOUND_LIST_ID' and jsonb_typeof(value) = 'number')))
      and ${orgId === null ? sql`true` : sql`c.org_id = ${orgId}`}
    order by li.id = ${requested}::bigint desc nulls last
    limit 1`;
  return row ?? null;
}

// postgres.js serializes arrays of booleans, timestamps and nulls wrongly; arrays passed to SQL
// here are of text or numbers only.

/**
 * Creates the lead, or returns the newest one with the same phone in the list. The advisory lock
 * on (list, phone) serializes concurrent intakes of one number; it is taken in its own statement
 * so that the dedup read that follows sees any lead committed by the transaction it waited for.
 * A fresh lead's channels, hopper entry (never for a phone on the organization's do-not-contact
 * list), `new_lead` trigger and `lead.created` outbox event are written in the same statement, so
 * they exist exactly when the lead does; so is its first touch, from the DNI visitor the intake
 * names when that visitor is in a pool of the lead's organization (src/dni/attribution.ts). A
 * duplicate is not touched: it keeps the attribution it has.
 */
export function createOrDedupLead(
  sql: Sql,
  list: ResolvedList,
  input: LeadInput,
  now: Date,
): Promise<{ lead_id: number; deduped: boolean }> {
  return sql.begin((tx) => createOrDedupLeadIn(tx, list, input, now));
}

/**
 * createOrDedupLead inside the caller's transaction (booking creates the lead with its appointment).
 * `via` names the path in the lead's source metadata and as the source of any consent recorded;
 * `now` (the clock's) is the lead's creation time, its consent's and its `lead.created` event's.
 */
export async function createOrDedupLeadIn(
  tx: Tx,
  list: ResolvedList,
  input: LeadInput,
  now: Date,
  via = "lead_intake",
): Promise<{ lead_id: number; deduped: boolean }> {
  await tx`select ${waitingForTurn(tx)}, pg_advisory_xact_lock(hashtextextended(${`lead:${list.id}:${input.phone}`}, 0)), ${turnTaken(tx)}`;
  const channels = [
    { channel: "sms", address: input.phone, consent: input.consent.sms },
    ...(input.email ? [{ channel: "email", address: input.email, consent: input.consent.email }] : []),
  ];
  const [row] = await tx<{ lead_id: number; deduped: boolean }[]>`
    with dup as (
      select id from leads where list_id = ${list.id} and phone = ${input.phone}
      order by id desc limit 1
    ), vis as (${namedVisitor(tx, input.dniVisitor ?? null, input.dniPool ?? null, tx`${list.org_id}::bigint`)}
    ), ins as (
      insert into leads (list_id, phone, first_name, last_name, email, address1, city, state,
                         postal_code, source, source_meta, created_at, attribution)
      select ${list.id}, ${input.phone}, ${input.firstName}, ${input.lastName}, ${input.email},
             ${input.address1}, ${input.city}, ${input.state}, ${input.postalCode}, ${input.source},
             jsonb_build_object('source', ${input.source}::text, 'via', ${via}::text), ${now}::timestamptz,
             (select attribution from vis)
      where not exists (select 1 from dup)
      returning id, created_at, attribution
    ), ch as (
      insert into lead_channels (lead_id, channel, address, consent, consent_at, consent_source)
      select ins.id, x.channel, x.address,
             case when y.consent then 'in' else 'none' end,
             case when y.consent then ${now}::timestamptz end,
             case when y.consent then ${via}::text end
      from ins, unnest(${channels.map((c) => c.channel)}::text[], ${channels.map((c) => c.address)}::text[],
                       ${channels.map((c) => (c.consent ? "t" : "f"))}::text[]) as x(channel, address, consent_text),
           lateral (select x.consent_text::boolean as consent) as y
    ), hop as (
      -- The hopper never takes a phone on the organization's do-not-contact list (dnc.ts).
      insert into hopper (campaign_id, lead_id)
      select ${list.campaign_id}, ins.id from ins
      where ${input.hopper}::boolean
        and not (${list.org_id === null ? tx`false` : listed(tx, list.org_id, "phone", input.phone)})
    ), trg as (
      insert into automation_triggers (org_id, trigger, lead_id)
      select ${list.org_id}::bigint, 'new_lead', ins.id from ins
    ), evt as (${outboxInsert(tx, {
      type: "lead.created",
      at: now,
      orgId: tx`${list.org_id}::bigint`,
      data: tx`jsonb_build_object(
        'lead_id', ins.id, 'list_id', ${list.id}::bigint, 'campaign', ${list.campaign_id}::text,
        'org_id', ${list.org_id}::bigint, 'phone', ${input.phone}::text, 'source', ${input.source}::text,
        'created_at', to_char(ins.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'attribution', ins.attribution)`,
      from: tx`ins`,
    })})
    select coalesce((select id from ins), (select id from dup)) as lead_id,
           exists (select 1 from dup) as deduped`;
  return row;
}

export interface LeadRead {
  orgId: number | null;
  leadId: number;
}

/**
 * Get lead for many requests in one statement (src/limits/fused.ts): one row per read, each
 * drawing its key's hit, with the lead as the contract returns it when it is in the key's scope.
 */
export async function countedLeads(sql: Sql, reads: readonly LeadRead[], seqs: number[]): Promise<{ hit_: number; out: Lead | null }[]> {
  const rows = await sql<({ i: number; hit_: number } & Nullable<Lead>)[]>`
    select u.i, ${drawHit(sql)},
           l.id as lead_id, l.first_name, l.last_name, l.phone, l.email, l.address1, l.city, l.state,
           l.postal_code, l.status, l.campaign_id as campaign
    from unnest(${seqs}::int8[], ${reads.map((r) => r.orgId ?? NO_ORG)}::int8[],
                ${reads.map((r) => r.leadId)}::int8[]) with ordinality as u(seq, org, id, i)
    left join leads l on l.id = u.id and ${inRowTenant(sql)}`;
  // Field by field: copying the row with a rest pattern showed in profiles (copyDataProperties).
  return inInputOrder(rows, reads.length).map((r) => ({
    hit_: r.hit_,
    out:
      r.lead_id === null
        ? null
        : {
            lead_id: r.lead_id,
            first_name: r.first_name!,
            last_name: r.last_name!,
            phone: r.phone!,
            email: r.email!,
            address1: r.address1!,
            city: r.city!,
            state: r.state!,
            postal_code: r.postal_code!,
            status: r.status!,
            campaign: r.campaign!,
          },
  }));
}

type Nullable<T> = { [K in keyof T]: T[K] | null };
