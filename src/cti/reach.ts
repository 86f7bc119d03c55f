// Which dials an actor reaches, in SQL (a `where` fragment over the alias `d` for dials), shared by
// the claim (cti_queue.php) and reports by dial_id (calls.php) so the rule is written once.
import type { Actor } from "../auth/actor";
import type { Sql } from "../db/client";

/**
 * The platform reaches every dial. A tenant key reaches a dial when
 * - the dial's lead is in its organization (the lead's current one: a moved lead takes its dials
 *   along, like every other read), or
 * - the dial has no lead and was queued by its organization (`queued_org_id`), or
 * - a platform key queued the dial (`queued_org_id` null) for the agent this key is bound to: that
 *   is how the platform hands work to an agent, and then only the dial's phone and name show.
 * A dial queued by another organization's key is never reached, even by a key bound to the same
 * house agent.
 */
export function dialInReach(sql: Sql, actor: Pick<Actor, "orgId" | "agent">) {
  if (actor.orgId === null) return sql`true`;
  const own = sql`(case when d.lead_id is null then d.queued_org_id = ${actor.orgId}
    else exists (select 1 from leads l where l.id = d.lead_id and l.org_id = ${actor.orgId}) end)`;
  if (actor.agent === null) return own;
  return sql`(${own} or (d.queued_org_id is null and d.agent = ${actor.agent}))`;
}
