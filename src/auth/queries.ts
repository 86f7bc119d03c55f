import type { Sql } from "../db/client";

export interface KeyRow {
  id: number;
  key_hash: Uint8Array;
  org_id: number | null;
  scopes: string[];
  agent: string | null;
  active: boolean;
  revoked_at: Date | null;
}

export async function findKeyByHash(sql: Sql, hash: Uint8Array): Promise<KeyRow | null> {
  const [row] = await sql<KeyRow[]>`
    select id, key_hash, org_id, scopes, agent, active, revoked_at
    from api_keys where key_hash = ${hash}`;
  return row ?? null;
}

export async function recordLastUse(sql: Sql, ids: number[], times: Date[]): Promise<void> {
  await sql`
    update api_keys k set last_used_at = greatest(k.last_used_at, t.at)
    from unnest(${ids}::bigint[], ${times.map((t) => t.getTime() / 1000)}::float8[]) as u(id, epoch),
         lateral (select to_timestamp(u.epoch) as at) as t
    where k.id = u.id`;
}
