// DNI pools for a manager (their organization's) or an admin (all): name, fallback, placeholder
// and hold TTL; numbers added and deactivated. Writes are provisioning fragments (apply.ts); every
// pool is found confined in SQL. A pool's `numbers` in a fragment is its whole active list
// (writeNumbers deactivates the ones left out), so adding or deactivating one number writes the
// stored list with that one change, checked under the provisioning lock against the list the run
// reads: two changes at the same moment never drop each other's number (the later is rebuilt on
// the list the earlier left).
import type { Actor } from "../../auth/actor";
import type { Sql } from "../../db/client";
import type { Deps } from "../../http/deps";
import type { Planned } from "../../provision/plan";
import type { ProvisioningFile } from "../../provision/model";
import { applySettings, given, type Applied } from "./apply";

export interface PoolRow {
  key: string;
  org_id: number | null;
  name: string;
  fallback: string;
  placeholder: string;
  ttl_seconds: number;
  /** Its active numbers, in order. */
  numbers: string[];
}

export interface PoolForm {
  name?: string;
  fallback?: string;
  placeholder?: string;
  ttl_seconds?: string;
}

const scope = (sql: Sql, actor: Actor) => sql`(${actor.orgId}::bigint is null or p.org_id = ${actor.orgId}::bigint)`;

async function rows(sql: Sql, actor: Actor, key: string | null): Promise<PoolRow[]> {
  return sql<PoolRow[]>`
    select p.key, p.org_id::float8 as org_id, p.name, p.fallback, p.placeholder, p.ttl_seconds::float8 as ttl_seconds,
           array(select n.number from dni_numbers n where n.pool_key = p.key and n.active order by n.number) as numbers
    from dni_pools p where ${scope(sql, actor)} ${key === null ? sql`` : sql`and p.key = ${key}`}
    order by p.org_id nulls first, p.key`;
}

export const poolsOf = (sql: Sql, actor: Actor) => rows(sql, actor, null);
/** A path's key that no pool can have (provisioning's key pattern) is missing without a query. */
const POOL_KEY = /^[A-Za-z0-9_-]{1,64}$/;
export const scopedPool = async (sql: Sql, actor: Actor, key: string) => (POOL_KEY.test(key) ? ((await rows(sql, actor, key))[0] ?? null) : null);

/**
 * A number as typed (`(555) 010-2000`, `555.010.2000`, `+1 555 010 2000`): its 10 digits (a
 * leading US country code 1 dropped, as pools hold 10-digit numbers); anything else is kept for
 * the check to name.
 */
export const numberOf = (typed: string | undefined): string => {
  const s = (typed ?? "").trim();
  if (!/^[0-9()+.\s-]+$/.test(s)) return s;
  const digits = s.replace(/[^0-9]/g, "");
  return digits.length === 11 && digits.startsWith("1") ? digits.slice(1) : digits;
};

/**
 * Provisioning's problems as the pool's form shows them. The number-conflict problem names the
 * pool that has the number, which may be another organization's: it is reworded to name none
 * (docs/security.md), and a list position means nothing on a form of one number.
 */
export const formProblems = (problems: string[]): string[] =>
  problems.map((p) =>
    p
      .replace(/^numbers\[\d+\]: (\S+) is active in pool .*$/s, "number $1: this number is in use by another pool")
      .replace(/^numbers\[\d+\]: /, "number: "),
  );

const worded = (r: Applied): Applied => (r.ok ? r : { ...r, problems: formProblems(r.problems) });

export function poolFields(f: PoolForm): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  // An empty box clears name, fallback and placeholder (null: the file's way to clear a clearable
  // field); an empty TTL keeps the stored one. A box not posted keeps its value.
  if (f.name !== undefined) out.name = given(f.name) ?? null;
  if (f.fallback !== undefined) out.fallback = given(f.fallback) === undefined ? null : numberOf(f.fallback);
  if (f.placeholder !== undefined) out.placeholder = given(f.placeholder) === undefined ? null : numberOf(f.placeholder);
  const ttl = given(f.ttl_seconds);
  if (ttl !== undefined) out.ttl_seconds = /^-?\d{1,9}$/.test(ttl) ? Number(ttl) : ttl;
  return out;
}

export const savePool = async (deps: Deps, actor: Actor, p: PoolRow, f: PoolForm) =>
  worded(await applySettings(deps, actor, { dni_pools: [{ key: p.key, org_id: p.org_id, ...poolFields(f) }] } as unknown as ProvisioningFile));

const CHANGED = "the pool's numbers changed meanwhile";
const same = (a: readonly string[], b: readonly string[]) => a.length === b.length && [...a].sort().every((n, i) => n === [...b].sort()[i]);

export type NumberResult = { ok: true; changed: boolean } | { ok: false; problems: string[] };

/**
 * Writes the pool's active list as `change` makes it from the stored one; the run refuses if the
 * list it reads under its lock is not the one the change was made from, and the change is made
 * again from the newer list.
 */
async function changeNumbers(deps: Deps, actor: Actor, p: PoolRow, change: (numbers: string[]) => string[] | null): Promise<NumberResult> {
  let current = p;
  for (let tries = 0; tries < 5; tries++) {
    const numbers = change(current.numbers);
    if (numbers === null) return { ok: true, changed: false };
    const from = current.numbers;
    const expect = (planned: Planned[]) => (planned.every((o) => o.stored !== null && same((o.stored.numbers as string[] | undefined) ?? [], from)) ? [] : [CHANGED]);
    const r = await applySettings(deps, actor, { dni_pools: [{ key: p.key, org_id: p.org_id, numbers }] } as unknown as ProvisioningFile, false, expect);
    if (r.ok) return { ok: true, changed: true };
    if (!r.problems.includes(CHANGED)) return { ok: false, problems: formProblems(r.problems) };
    const fresh = await scopedPool(deps.sql, actor, p.key);
    if (!fresh) return { ok: false, problems: ["This pool no longer exists."] };
    current = fresh;
  }
  return { ok: false, problems: ["The pool's numbers were being changed at the same moment: try again."] };
}

/** Adds a number (already active in this pool: nothing to change). */
export const addNumber = (deps: Deps, actor: Actor, p: PoolRow, number: string) => changeNumbers(deps, actor, p, (ns) => (ns.includes(number) ? null : [...ns, number]));

/** Deactivates a number (not active in this pool: nothing to change); its row and history stay. */
export const deactivateNumber = (deps: Deps, actor: Actor, p: PoolRow, number: string) =>
  changeNumbers(deps, actor, p, (ns) => (ns.includes(number) ? ns.filter((n) => n !== number) : null));

export const KEY_TAKEN = "key: this key is in use: choose another";

/**
 * A new pool, create-only under the provisioning lock. Pool keys are global (the number-insertion
 * script names its pool by key alone), so a key that exists anywhere is refused with one answer,
 * whoever has it: provisioning says "exists already" for the viewer's own and "does not exist" for
 * another organization's, and neither reaches the form.
 */
export async function addPool(deps: Deps, actor: Actor, orgId: number | null, f: PoolForm & { key?: string }): Promise<Applied> {
  const key = (f.key ?? "").trim();
  const r = await applySettings(deps, actor, { dni_pools: [{ key, org_id: orgId, numbers: [], ...poolFields(f) }] } as unknown as ProvisioningFile, true);
  if (r.ok) return r;
  return { ...r, problems: r.exists ? [KEY_TAKEN] : formProblems(r.problems) };
}
