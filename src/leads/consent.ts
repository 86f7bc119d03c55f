// A lead's consent per channel, as the send path's gate reads it, and the console's change of it.
import type { Sql, Tx } from "../db/client";

export type ConsentValue = "none" | "in" | "out";
export const CONSENT_VALUES: readonly ConsentValue[] = ["none", "in", "out"];
/** The longest reason for a change of consent after an opt-out (kept in the audit row and the timeline). */
export const CONSENT_REASON_MAX = 500;

export interface ChannelConsent {
  channel: "sms" | "email";
  /** The lead's phone or email; '' when the lead has none. */
  address: string;
  /** As the gate decides it (src/messages/queries.ts consentOf): `out` if any of the organization's leads on this address opted out, else `in` if any opted in. */
  consent: ConsentValue;
  /** This lead's own row: when and by what it was last set. */
  consent_at: Date | null;
  consent_source: string;
}

/**
 * The lead's two channels. The effective value spans the organization's leads sharing the address,
 * as the gate does, so what the page says is what a send will meet.
 */
export async function leadConsent(sql: Sql, leadId: number): Promise<ChannelConsent[]> {
  return sql<ChannelConsent[]>`
    select ch.channel, ch.address,
           coalesce((select case when bool_or(c.consent = 'out') then 'out' when bool_or(c.consent = 'in') then 'in' else 'none' end
                     from lead_channels c join leads l2 on l2.id = c.lead_id
                     where c.channel = ch.channel and l2.org_id is not distinct from l.org_id
                       and (c.lead_id = l.id or (ch.address <> '' and c.address = ch.address))), 'none') as consent,
           own.consent_at, coalesce(own.consent_source, '') as consent_source
    from leads l
    cross join lateral (values ('sms', l.phone), ('email', l.email)) as ch (channel, address)
    left join lead_channels own on own.lead_id = l.id and own.channel = ch.channel
    where l.id = ${leadId}
    order by ch.channel desc`;
}

/** What a change of consent did: the leads it set, or why it set none. */
export type ConsentChange =
  | { ok: true; leads: number[]; liftedOptOut: boolean }
  | { ok: false; reason: "no_address" | "opted_out" };

/** A STOP (or another opt-out) that committed while the change was being written: the change is undone. */
class OptOutArrived extends Error {}

/**
 * Sets the consent of the lead's address on a channel for every lead of its organization on that
 * address (the gate reads them together, as an SMS STOP sets them together), inside the caller's
 * transaction, which also writes the audit row. The conversation gets a `consent.changed` event
 * (with `who.note`, the reason of a lifted opt-out).
 *
 * While the address is opted out (any of those leads `out`: what the gate reads), any other value
 * lifts the opt-out, and only a change with `liftOptOut` (a manager's, with a reason: the caller
 * decides) may: otherwise `opted_out`, nothing written. The opt-out rows seen are locked, so a
 * STOP on them waits and lands after this change; one that lands on another lead's row meanwhile
 * is never overwritten (the upsert's guard), and then the whole change is undone (a savepoint) and
 * answered `opted_out`: a STOP always wins over a change that did not know of it.
 */
export async function setConsent(
  tx: Tx,
  leadId: number,
  channel: "sms" | "email",
  consent: ConsentValue,
  who: { name: string; source: string; note?: string },
  now: Date,
  liftOptOut = false,
): Promise<ConsentChange> {
  const [lead] = await tx<{ address: string; org_id: number | null }[]>`
    select case when ${channel} = 'sms' then phone else email end as address, org_id from leads where id = ${leadId} for update`;
  if (!lead || lead.address === "") return { ok: false, reason: "no_address" };
  const optedOut = (sql: Tx, lock: boolean) => sql<{ lead_id: number }[]>`
    select c.lead_id from lead_channels c join leads l2 on l2.id = c.lead_id
    where c.channel = ${channel} and c.consent = 'out' and l2.org_id is not distinct from ${lead.org_id}::bigint
      and (c.lead_id = ${leadId} or c.address = ${lead.address})
    order by c.lead_id ${lock ? sql`for update of c` : sql``}`;
  const seenOut = consent === "out" ? [] : (await optedOut(tx, true)).map((r) => r.lead_id);
  const lifting = seenOut.length > 0;
  if (lifting && !liftOptOut) return { ok: false, reason: "opted_out" };
  try {
    const leads = await tx.savepoint(async (sp) => {
      const rows = await sp<{ lead_id: number }[]>`
        insert into lead_channels (lead_id, channel, address, consent, consent_at, consent_source, updated_at)
        select l.id, ${channel}, ${lead.address}, ${consent}, ${now}, ${who.source}, ${now}
        from leads l
        where l.id = ${leadId}
           or (l.org_id is not distinct from ${lead.org_id}::bigint
               and ${channel === "sms" ? sp`l.phone` : sp`l.email`} = ${lead.address})
        on conflict (lead_id, channel) do update
          set address = excluded.address, consent = excluded.consent, consent_at = excluded.consent_at,
              consent_source = excluded.consent_source, updated_at = excluded.updated_at
          where excluded.consent = 'out' or lead_channels.consent <> 'out' or lead_channels.lead_id = any(${seenOut}::bigint[])
        returning lead_id`;
      if (consent !== "out" && (await optedOut(sp, false)).length > 0) throw new OptOutArrived();
      await sp`
        insert into lead_events (lead_id, event, label, actor, actor_role, note, created_at)
        values (${leadId}, 'consent.changed', ${`${channel === "sms" ? "SMS" : "Email"} consent: ${consent}${lifting ? " (opt-out lifted)" : ""}`}, ${who.name}, 'user', ${who.note ?? ""}, ${now})`;
      return rows.map((r) => r.lead_id);
    });
    return { ok: true, leads, liftedOptOut: lifting };
  } catch (err) {
    if (err instanceof OptOutArrived) return { ok: false, reason: "opted_out" };
    throw err;
  }
}
