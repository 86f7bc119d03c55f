// "My work" for an agent (a console user): their pending and claimed dials, their callbacks that
// have come due (and the next ones), and the open conversations in their Mine view. Confined to
// the actor's organization in SQL; dials by the CTI reach rule (src/cti/reach.ts), as the agent's
// own key would reach them.
import type { Actor } from "../auth/actor";
import type { Sql } from "../db/client";
import { dialInReach } from "../cti/reach";
import { leadName } from "../leads/match";
import { inOrg, inboxPage, viewCounts } from "./inbox";
import { callbackColumns, type Callback } from "./callbacks";
import { userOf, type InboxRow } from "./model";

export interface WorkDial {
  id: number;
  lead_id: number | null;
  name: string | null;
  phone: string;
  /** pending, or dialing once the agent's dialer claimed it. */
  status: string;
  created_at: Date;
  claimed_at: Date | null;
}

export interface MyWork {
  dials: WorkDial[];
  /** Come due and not yet done, oldest first. */
  dueCallbacks: Callback[];
  /** Scheduled, soonest first. */
  nextCallbacks: Callback[];
  /** The first page of the Mine view, and its count (capped as the navigation's). */
  conversations: InboxRow[];
  openCount: number;
}

/** How many of each list My work shows. */
export const WORK_LIST = 50;

export async function myWork(sql: Sql, actor: Actor, now: number): Promise<MyWork> {
  const me = userOf(actor);
  if (me === null) return { dials: [], dueCallbacks: [], nextCallbacks: [], conversations: [], openCount: 0 };
  const callbacks = (status: "due" | "scheduled") => sql<Callback[]>`
    select ${callbackColumns(sql)}
    from callbacks cb join conversations c on c.id = cb.conversation_id left join users u on u.id = cb.assignee
    where cb.assignee = ${me} and cb.status = ${status} and ${inOrg(sql, actor.orgId)}
    order by cb.due_at, cb.id limit ${WORK_LIST}`;
  const [dials, dueCallbacks, nextCallbacks, page, counts] = await Promise.all([
    sql<WorkDial[]>`
      select d.id, d.lead_id, (select ${leadName(sql)} from leads l where l.id = d.lead_id) as name, d.phone, d.status,
             d.created_at, d.claimed_at
      from dials d
      where d.agent = ${me} and d.status in ('pending', 'dialing') and ${dialInReach(sql, { orgId: actor.orgId, agent: me })}
      order by d.id limit ${WORK_LIST}`,
    callbacks("due"),
    callbacks("scheduled"),
    inboxPage(sql, actor, { view: "mine" }, null, WORK_LIST, now),
    viewCounts(sql, actor),
  ]);
  return { dials, dueCallbacks, nextCallbacks, conversations: page.rows, openCount: counts.mine };
}
