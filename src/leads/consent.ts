// A lead's consent per channel, as the send path's gate reads it, and the console's change of it.
import type { Sql, Tx } from "../db/client";

export type ConsentValue = "none" | "in" | "out";
export const CONSENT_VALUES: readonly ConsentValue[] = ["none", "in", "out"];

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

/**
 * Sets the consent of the lead's address on a channel for every lead of its organization on that
 * address (the gate reads them together, as an SMS STOP sets them together), inside the caller's
 * transaction, which also writes the audit row. The conversation gets a `consent.changed` event.
 * Returns the leads changed; null when the lead has no address on that channel.
 */
export async function setConsent(
  tx: Tx,
  leadId: number,
  channel: "sms" | "email",
  consent: ConsentValue,
  who: { name: string; source: string },
  now: Date,
): Promise<number[] | null> {
  const [lead] = await tx<{ address: string; org_id: number | null }[]>`
    select case when ${channel} = 'sms' then phone else email end as address, org_id from leads where id = ${leadId} for update`;
  if (!lead || lead.address === "") return null;
  const rows = await tx<{ lead_id: number }[]>`
    insert into lead_channels (lead_id, channel, address, consent, consent_at, consent_source, updated_at)
    select l.id, ${channel}, ${lead.address}, ${consent}, ${now}, ${who.source}, ${now}
    from leads l
    where l.id = ${leadId}
       or (l.org_id is not distinct from ${lead.org_id}::bigint
           and ${channel === "sms" ? tx`l.phone` : tx`l.email`} = ${lead.address})
    on conflict (lead_id, channel) do update
      set address = excluded.address, consent = excluded.consent, consent_at = excluded.consent_at,
          consent_source = excluded.consent_source, updated_at = excluded.updated_at
    returning lead_id`;
  await tx`
    insert into lead_events (lead_id, event, label, actor, actor_role, note, created_at)
    values (${leadId}, 'consent.changed', ${`${channel === "sms" ? "SMS" : "Email"} consent: ${consent}`}, ${who.name}, 'user', '', ${now})`;
  return rows.map((r) => r.lead_id);
}
