// Operator actions on API keys (the `leadline keys` commands and provisioning). Plaintext keys
// leave this module only in the result of the call that created them.
import type { Sql, Tx } from "../db/client";
import { SCOPES, displayPrefix, generateKey, hashKey, type Scope } from "./keys";

export interface KeyGrant {
  name: string;
  org_id: number | null;
  scopes: Scope[];
  agent: string | null;
}

export interface IssuedKey extends KeyGrant {
  id: number;
  key: string;
}

export interface KeyListing extends KeyGrant {
  id: number;
  /** The display prefix of a generated key; null for a chosen key (or one whose origin is unknown). */
  prefix: string | null;
  active: boolean;
  provisioned: boolean;
  created_at: Date;
  revoked_at: Date | null;
  last_used_at: Date | null;
}

/** Scopes in their canonical order, so that equal grants compare equal in SQL. */
export const canonicalScopes = (scopes: readonly string[]): Scope[] => SCOPES.filter((s) => scopes.includes(s));

/** Running servers cache keys; this tells them to drop the cache. Send it after the commit. */
export async function notifyKeysChanged(sql: Sql): Promise<void> {
  await sql`select pg_notify('leadline_keys', '')`;
}

/**
 * Writes a key: inserted, or (same plaintext, from a provisioning file) updated to these grants.
 * A revoked key stays inactive: revocation is final. Answers the row when it was written, null
 * when it already had exactly these grants. `prefix`: what listings show, '' for a chosen key
 * (none of its characters is stored in clear).
 */
export async function putKey(
  tx: Tx,
  grant: KeyGrant & { active?: boolean; provisioned?: boolean },
  plaintext: string,
  prefix = "",
): Promise<{ id: number; inserted: boolean } | null> {
  const scopes = canonicalScopes(grant.scopes);
  const [row] = await tx<{ id: number; inserted: boolean }[]>`
    insert into api_keys (key_hash, key_prefix, name, org_id, scopes, agent, active, provisioned)
    values (${hashKey(plaintext)}, ${prefix}, ${grant.name}, ${grant.org_id},
            ${tx.array(scopes, 25)}, ${grant.agent}, ${grant.active ?? true}, ${grant.provisioned ?? false})
    on conflict (key_hash) do update set
      name = excluded.name, org_id = excluded.org_id, scopes = excluded.scopes, agent = excluded.agent,
      active = excluded.active and api_keys.revoked_at is null, provisioned = excluded.provisioned
    where (api_keys.name, api_keys.org_id, api_keys.scopes, api_keys.agent, api_keys.active, api_keys.provisioned)
      is distinct from
      (excluded.name, excluded.org_id, excluded.scopes, excluded.agent,
       excluded.active and api_keys.revoked_at is null, excluded.provisioned)
    returning id, (xmax = 0) as inserted`;
  return row ?? null;
}

/** A new key with a generated plaintext, returned this once. */
export async function insertKey(tx: Tx, grant: KeyGrant & { active?: boolean; provisioned?: boolean }): Promise<IssuedKey> {
  const plaintext = generateKey();
  const row = await putKey(tx, grant, plaintext, displayPrefix(plaintext));
  return { id: row!.id, key: plaintext, name: grant.name, org_id: grant.org_id, scopes: canonicalScopes(grant.scopes), agent: grant.agent };
}

/**
 * The rule for binding a key to an agent: the agent must exist and belong to the key's
 * organization or to the house (a user with no organization, shared by several organizations'
 * keys: src/cti/reach.ts keeps each organization's dials to its own keys). A platform key may be
 * bound to any user. `agentOrg`: the agent's org, null for the house, undefined for a
 * user that does not exist. The problem in words, or null.
 */
export function agentProblem(grant: Pick<KeyGrant, "org_id" | "agent">, agentOrg: number | null | undefined): string | null {
  if (grant.agent === null) return null;
  if (agentOrg === undefined) return `user ${JSON.stringify(grant.agent)} does not exist`;
  if (grant.org_id !== null && agentOrg !== null && agentOrg !== grant.org_id) {
    return `user ${JSON.stringify(grant.agent)} belongs to org ${agentOrg}, not ${grant.org_id} (a key of an organization may be bound only to a user of that organization or to a house user)`;
  }
  return null;
}

/**
 * Why a key operation was refused, in words (the CLI prints them); `kind` lets the console answer
 * a missing key (or one of another organization) as not found.
 */
export class KeyRefused extends Error {
  constructor(
    readonly kind: "not_found" | "revoked" | "invalid_grant",
    message: string,
  ) {
    super(message);
  }
}

/** The keys of one organization, or every key for the platform (null). */
const ofOrg = (sql: Sql | Tx, orgId: number | null) => (orgId === null ? sql`true` : sql`org_id = ${orgId}`);

/** The org must exist, and the agent binding must follow agentProblem's rule. */
export async function checkGrant(tx: Tx, grant: Pick<KeyGrant, "org_id" | "agent">): Promise<void> {
  if (grant.org_id !== null) {
    const [org] = await tx`select 1 from orgs where id = ${grant.org_id}`;
    if (!org) throw new KeyRefused("invalid_grant", `org ${grant.org_id} does not exist`);
  }
  if (grant.agent !== null) {
    const [user] = await tx<{ org_id: number | null }[]>`select org_id from users where id = ${grant.agent}`;
    const problem = agentProblem(grant, user ? user.org_id : undefined);
    if (problem) throw new KeyRefused("invalid_grant", problem);
  }
}

/** A checked grant written as a new key, inside the caller's transaction (send notifyKeysChanged after it commits). */
export async function createKeyIn(tx: Tx, grant: KeyGrant): Promise<IssuedKey> {
  await checkGrant(tx, grant);
  return insertKey(tx, grant);
}

export async function createKey(sql: Sql, grant: KeyGrant): Promise<IssuedKey> {
  const issued = await sql.begin((tx) => createKeyIn(tx, grant));
  await notifyKeysChanged(sql);
  return issued;
}

/** Every key, or one organization's (`orgId`; null: all of them). */
export async function listKeys(sql: Sql, orgId: number | null = null): Promise<KeyListing[]> {
  return sql<KeyListing[]>`
    select id, nullif(key_prefix, '') as prefix, name, org_id, scopes, agent, active, provisioned,
           created_at, revoked_at, last_used_at
    from api_keys where ${ofOrg(sql, orgId)} order by id`;
}

/**
 * Revokes key `id` of organization `orgId` (null: any) inside the caller's transaction. Revocation
 * is final: nothing (not even provisioning) makes a revoked key active again.
 */
export async function revokeKeyIn(tx: Sql | Tx, id: number, now: Date, orgId: number | null = null): Promise<{ org_id: number | null }> {
  const [row] = await tx<{ org_id: number | null }[]>`
    update api_keys set active = false, revoked_at = coalesce(revoked_at, ${now})
    where id = ${id} and ${ofOrg(tx, orgId)} returning org_id`;
  if (!row) throw new KeyRefused("not_found", `no API key with id ${id}`);
  return row;
}

/**
 * Revokes every live key bound to user `agent` (of any organization, platform keys too) inside the
 * caller's transaction; answers their ids. A disabled user's keys must stop with them: a dialer
 * holding one would go on claiming and reporting that user's dials.
 */
export async function revokeKeysOfAgent(tx: Tx, agent: string, now: Date): Promise<number[]> {
  const rows = await tx<{ id: number }[]>`
    update api_keys set active = false, revoked_at = ${now}
    where agent = ${agent} and revoked_at is null returning id`;
  return rows.map((r) => r.id).sort((a, b) => a - b);
}

export async function revokeKey(sql: Sql, id: number, now: Date): Promise<void> {
  await revokeKeyIn(sql, id, now);
  await notifyKeysChanged(sql);
}

/**
 * A new key with the old one's grants, the old one (of organization `orgId`; null: any) revoked,
 * inside the caller's transaction.
 */
export async function rotateKeyIn(tx: Tx, id: number, now: Date, orgId: number | null = null): Promise<IssuedKey> {
  const [old] = await tx<(KeyGrant & { active: boolean; provisioned: boolean; revoked_at: Date | null })[]>`
    select name, org_id, scopes, agent, active, provisioned, revoked_at
    from api_keys where id = ${id} and ${ofOrg(tx, orgId)} for update`;
  if (!old) throw new KeyRefused("not_found", `no API key with id ${id}`);
  if (old.revoked_at !== null) throw new KeyRefused("revoked", `API key ${id} is revoked; create a new one instead`);
  // The new key is bound like a created one: never to an agent of another organization (the
  // old binding may predate the rule).
  await checkGrant(tx, old);
  // `provisioned` carries over so that re-applying the provisioning file finds the new key
  // instead of generating yet another one.
  const fresh = await insertKey(tx, old);
  await tx`update api_keys set active = false, revoked_at = ${now} where id = ${id}`;
  return fresh;
}

/** A new key with the old one's grants; the old one is revoked in the same transaction. */
export async function rotateKey(sql: Sql, id: number, now: Date): Promise<IssuedKey> {
  const issued = await sql.begin((tx) => rotateKeyIn(tx, id, now));
  await notifyKeysChanged(sql);
  return issued;
}
