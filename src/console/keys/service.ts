// API keys for a console viewer: src/auth/admin.ts's services (the CLI's rules: scopes, agent
// binding, final revocation), confined to the viewer's organization in SQL, each change audited
// in its transaction. A tenant viewer's binding rule is stricter than the CLI's (ownAgentOnly). A
// plaintext leaves here only in the answer of the call that made it.
import type { Actor } from "../../auth/actor";
import { createKeyIn, KeyRefused, notifyKeysChanged, revokeKeyIn, rotateKeyIn, type IssuedKey } from "../../auth/admin";
import { isScope, type Scope } from "../../auth/keys";
import type { Clock } from "../../clock";
import type { Sql, Tx } from "../../db/client";
import { audit } from "../audit";

export const NAME_MAX = 100;

/** The create form as posted. */
export interface KeyRequest {
  name: string;
  scopes: string[];
  agent: string;
  /** Admins only: "" for a platform key, else an organization's id. A manager's key is always its organization's. */
  org: string;
}

/**
 * The refusal of a tenant viewer's binding to anyone but a user of their own organization. It names
 * nobody: the id posted may be another organization's user, whose existence is not the viewer's to
 * learn (a missing user gets the same words).
 */
export const OWN_AGENT_ONLY = "Choose the bound agent from the list: a key of your organization may be bound only to one of its own users.";

export type KeyAnswer = { ok: true; issued: IssuedKey } | { ok: false; reason: "not_found" | "refused"; message: string };

function refused(err: unknown): KeyAnswer {
  if (!(err instanceof KeyRefused)) throw err;
  return { ok: false, reason: err.kind === "not_found" ? "not_found" : "refused", message: err.message };
}

/** What the key's grant would be, or what is wrong with the request. */
export function grantOf(actor: Actor, r: KeyRequest): { name: string; org_id: number | null; scopes: Scope[]; agent: string | null } | string {
  const name = r.name.replace(/\s+/g, " ").trim();
  if (!name) return "Give the key a name (what uses it).";
  if (name.length > NAME_MAX) return `The name is longer than ${NAME_MAX} characters.`;
  const scopes = [...new Set(r.scopes)];
  if (scopes.length === 0) return "Choose at least one scope.";
  if (!scopes.every(isScope)) return "Unknown scope.";
  let org_id = actor.orgId;
  if (actor.orgId === null) {
    if (r.org !== "" && !/^[0-9]{1,15}$/.test(r.org)) return "Unknown organization.";
    org_id = r.org === "" ? null : Number(r.org);
  }
  const agent = r.agent.trim();
  return { name, org_id, scopes: scopes as Scope[], agent: agent === "" ? null : agent };
}

/**
 * The console's rule for a tenant viewer (a manager; admins, whose viewer has no organization, keep
 * the CLI's rule): the key may be bound only to a user of the viewer's own organization. The CLI's
 * rule (agentProblem) also admits house users, and a tenant key bound to a house user claims the
 * dials a platform key queued for that user, which are other organizations' leads (src/cti/reach.ts):
 * so binding to the house stays an operator's decision (CLI, provisioning file, an admin here).
 * `for share`: a provisioning run that moves the user to another organization waits for this key,
 * then finds it (movedAgentProblems) and is refused.
 */
async function ownAgentOnly(tx: Tx, orgId: number, agent: string): Promise<void> {
  const [own] = await tx`select 1 from users where id = ${agent} and org_id = ${orgId} for share`;
  if (!own) throw new KeyRefused("invalid_grant", OWN_AGENT_ONLY);
}

export async function createKeyFor(sql: Sql, actor: Actor, r: KeyRequest): Promise<KeyAnswer> {
  const grant = grantOf(actor, r);
  if (typeof grant === "string") return { ok: false, reason: "refused", message: grant };
  try {
    const issued = await sql.begin(async (tx) => {
      if (actor.orgId !== null && grant.agent !== null) await ownAgentOnly(tx, actor.orgId, grant.agent);
      const made = await createKeyIn(tx, grant);
      // In the key's organization's log, also when an admin acts.
      await audit(tx, actor, "key.create", `key:${made.id}`, { name: made.name, org_id: made.org_id, scopes: made.scopes, agent: made.agent }, made.org_id);
      return made;
    });
    await notifyKeysChanged(sql);
    return { ok: true, issued };
  } catch (err) {
    return refused(err);
  }
}

export async function rotateKeyFor(sql: Sql, clock: Clock, actor: Actor, id: number): Promise<KeyAnswer> {
  try {
    const issued = await sql.begin(async (tx) => {
      const fresh = await rotateKeyIn(tx, id, new Date(clock.now()), actor.orgId);
      await audit(tx, actor, "key.rotate", `key:${id}`, { new_key: fresh.id }, fresh.org_id);
      return fresh;
    });
    await notifyKeysChanged(sql);
    return { ok: true, issued };
  } catch (err) {
    return refused(err);
  }
}

/** Revokes the viewer's organization's key `id`; false when it has none with that id. */
export async function revokeKeyFor(sql: Sql, clock: Clock, actor: Actor, id: number): Promise<boolean> {
  try {
    await sql.begin(async (tx) => {
      const key = await revokeKeyIn(tx, id, new Date(clock.now()), actor.orgId);
      await audit(tx, actor, "key.revoke", `key:${id}`, {}, key.org_id);
    });
  } catch (err) {
    if (err instanceof KeyRefused && err.kind === "not_found") return false;
    throw err;
  }
  await notifyKeysChanged(sql);
  return true;
}

/**
 * Who a key may be bound to, for the form: the agents (CTI users, and console users of the agent
 * role) of the viewer's organization (admins: every one, the house's included); managers and
 * admins are not agents. The rules themselves are ownAgentOnly's and checkGrant's, whatever is posted.
 */
export function agentChoices(sql: Sql, orgId: number | null): Promise<{ id: string; name: string; org_id: number | null }[]> {
  return sql<{ id: string; name: string; org_id: number | null }[]>`
    select id, name, org_id from users
    where (role is null or role = 'agent')
      and ${orgId === null ? sql`true` : sql`org_id = ${orgId}`}
    order by org_id nulls first, name, id`;
}

/** The organizations an admin may issue a key for. */
export function orgChoices(sql: Sql): Promise<{ id: number; name: string }[]> {
  return sql<{ id: number; name: string }[]>`select id, name from orgs order by id`;
}
