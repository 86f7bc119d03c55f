// A lead's conversation, read or made: the row the workspace's actions and callbacks act on.
// Conversations are made lazily (sql/0023); an action on a lead that has none makes it, open.
import type { Actor } from "../auth/actor";
import type { Sql, Tx } from "../db/client";
import { AppError } from "../errors";
import { inTenant } from "../leads/scope";
import { inOrg } from "./inbox";
import type { ConversationStatus } from "./model";

export interface Conversation {
  id: number;
  lead_id: number;
  org_id: number | null;
  status: ConversationStatus;
  snoozed_until: Date | null;
  assignee: string | null;
  last_activity_at: Date;
  waiting_since: Date | null;
  /** The organization's zone (UTC when it has none): snooze presets and callback times are stated in it. */
  timezone: string;
}

const columns = (sql: Sql | Tx) => sql`
  c.id, c.lead_id, c.org_id, c.status, c.snoozed_until, c.assignee, c.last_activity_at, c.waiting_since,
  coalesce((select o.timezone from orgs o where o.id = c.org_id), 'UTC') as timezone`;

/** A conversation within the actor's organization, or null (another organization's is the same as a missing one). */
export async function findConversation(sql: Sql | Tx, actor: Actor, id: number): Promise<Conversation | null> {
  const [row] = await sql<Conversation[]>`select ${columns(sql)} from conversations c where c.id = ${id} and ${inOrg(sql as Sql, actor.orgId)}`;
  return row ?? null;
}

/** The lead's conversation, if it has one and the lead is within the actor's organization. */
export async function conversationOfLead(sql: Sql | Tx, actor: Actor, leadId: number): Promise<Conversation | null> {
  const [row] = await sql<Conversation[]>`
    select ${columns(sql)} from conversations c join leads l on l.id = c.lead_id
    where c.lead_id = ${leadId} and ${inTenant(sql, actor.orgId)}`;
  return row ?? null;
}

/**
 * The lead's conversation, made (open, active `now`) if it has none; not_found for a lead outside
 * the actor's organization. In the caller's transaction.
 */
export async function ensureConversation(tx: Tx, actor: Actor, leadId: number, now: Date): Promise<Conversation> {
  await tx`
    insert into conversations (lead_id, org_id, status, last_activity_at, created_at, updated_at)
    select l.id, l.org_id, 'open', ${now}, ${now}, ${now} from leads l
    where l.id = ${leadId} and ${inTenant(tx, actor.orgId)}
    on conflict (lead_id) do nothing`;
  const conv = await conversationOfLead(tx, actor, leadId);
  if (!conv) throw new AppError("not_found");
  return conv;
}
