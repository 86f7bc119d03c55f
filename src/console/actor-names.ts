// Who did each timeline entry, as a person reads it: a console user's name, "API key: <its name>",
// "Automation: <its trigger>", the dialer's agent by name. Only ids that appear in the lead's own
// timeline (already confined to the viewer's organization) are looked up, in one statement.
import type { Entry } from "../conversations/timeline";
import type { Sql } from "../db/client";

/** "user:<id>", "api_key:<id>", "automation:<id>" → the words to show. */
export type ActorNames = ReadonlyMap<string, string>;

export async function actorNames(sql: Sql, entries: readonly Entry[]): Promise<ActorNames> {
  const users = new Set<string>();
  const keys = new Set<number>();
  const autos = new Set<number>();
  for (const e of entries) {
    if (e.kind === "msg" && e.actor_id) {
      if (e.actor_type === "user") users.add(e.actor_id);
      else if (e.actor_type === "api_key" && /^\d{1,15}$/.test(e.actor_id)) keys.add(Number(e.actor_id));
      else if (e.actor_type === "automation" && /^\d{1,15}$/.test(e.actor_id)) autos.add(Number(e.actor_id));
    } else if (e.kind === "call" && e.agent) users.add(e.agent);
    else if (e.kind === "event" && e.actor) {
      // An event's actor is an id or already a name, depending on its writer: ids are looked up.
      if (e.actor_role === "user") users.add(e.actor);
      else if (e.actor_role === "api_key" && /^\d{1,15}$/.test(e.actor)) keys.add(Number(e.actor));
      else if (e.actor_role === "automation" && /^\d{1,15}$/.test(e.actor)) autos.add(Number(e.actor));
    }
  }
  if (users.size + keys.size + autos.size === 0) return new Map();
  const rows = await sql<{ k: string; name: string }[]>`
    select 'user:' || id as k, coalesce(nullif(name, ''), email, id) as name from users where id = any(${[...users]}::text[])
    union all
    select 'api_key:' || id, 'API key: ' || coalesce(nullif(name, ''), key_prefix) from api_keys where id = any(${[...keys]}::bigint[])
    union all
    select 'automation:' || id, 'Automation: ' || replace(trigger, '_', ' ') || ' #' || id from automations where id = any(${[...autos]}::bigint[])`;
  return new Map(rows.map((r) => [r.k, r.name]));
}

const KINDS: Record<string, string> = {
  provider: "the provider",
  worker: "Leadline",
  booking: "the booking page",
  operator: "an operator",
  recipient: "the recipient",
};

/**
 * The words for an event's actor (`actor`, `actor_role` as its writer stored them): a person by
 * name, "API key: …", "Automation: …", the booking page's visitor by the name they gave.
 */
export function eventActorWords(actor: string, role: string, names: ActorNames): string {
  if (role === "user" || role === "api_key" || role === "automation") return actorWords(role, actor, names);
  if (role === "booking") return `the booking link ${actor}`;
  if (role === "" || KINDS[role] === actor) return actor;
  return `${actor} (${KINDS[role] ?? role})`;
}

/** The words for a message's actor. */
export function actorWords(type: string, id: string, names: ActorNames): string {
  const named = names.get(`${type}:${id}`);
  if (named) return named;
  if (type === "api_key") return `API key #${id}`;
  if (type === "automation") return `Automation #${id}`;
  if (type === "user") return id;
  return KINDS[type] ?? (type || "Leadline");
}
