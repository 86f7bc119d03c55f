// What a provisioning run would do, object by object: each file object merged with its stored
// row (merge.ts) into the row to store and the list of changes. A run writes this plan; a dry run
// prints it; the audit log keeps its changes. Reading it locks the rows it will change, so that
// the values compared are the ones the writes replace.
import type { Actor } from "../auth/actor";
import { hashKey } from "../auth/keys";
import type { Tx } from "../db/client";
import type { Fields } from "./fields";
import { changesOf, mergeObject, type Change, type Row } from "./merge";
import { API_KEY_FIELDS, SETTING_FIELDS, TABLES, type ProvisioningFile, type TableName } from "./model";

export interface Planned {
  section: keyof ProvisioningFile;
  /** Its place in the file (`orgs[0]`). */
  path: string;
  /** Its identifier (a key's id once it has one; null for a key not made yet). */
  key: string | number | null;
  /** How the dry run names it: `org 1`, `pool "acme-site"`, `key 5 "site form"`. */
  what: string;
  /** The audit log's `target` and action noun: `org:1`, `org`. */
  target: string;
  noun: string;
  /** The organization whose audit log it belongs to (null: the house's). */
  orgId: number | null;
  created: boolean;
  changes: Change[];
  /** The object as it will be stored (secrets sealed). */
  row: Row;
  stored: Row | null;
}

export interface Plan {
  objects: Planned[];
  problems: string[];
}

export interface PlanContext {
  tx: Tx;
  actor: Actor;
  secretKey: Buffer | null;
  /** Lock the rows read (a run): `for no key update`, which rows referencing them do not wait for. */
  lock: boolean;
}

const label = (v: unknown) => (typeof v === "string" ? JSON.stringify(v) : String(v));

/** The stored rows of a table section for the keys given, in the file's form, by key. */
async function storedRows(ctx: PlanContext, name: TableName, keys: (string | number)[]): Promise<Map<string | number, Row>> {
  const { tx } = ctx;
  const spec = TABLES[name];
  if (keys.length === 0) return new Map();
  const fields = spec.fields as Fields;
  const columns = Object.entries(fields).map(([field, f]) => tx`, ${f.load ? f.load(tx) : tx`t.${tx(f.column ?? field)}`} as ${tx(field)}`);
  const rows = await tx<Row[]>`
    select t.${tx(spec.key)} as "__key" ${columns} from ${tx(spec.table)} t
    where t.${tx(spec.key)} in ${tx(keys)}
    ${ctx.lock ? tx`for no key update of t` : tx``}`;
  return new Map(rows.map((r) => [r.__key as string | number, r]));
}

/** Plans one section stored in its own table. */
export async function planTable(ctx: PlanContext, name: TableName, items: Row[]): Promise<Plan> {
  const spec = TABLES[name];
  const fields = spec.fields as Fields;
  const stored = await storedRows(ctx, name, items.map((i) => i[spec.key] as string | number));
  const objects: Planned[] = [];
  const problems: string[] = [];
  items.forEach((item, i) => {
    const key = item[spec.key] as string | number;
    const path = `${name}[${i}]`;
    const what = `${spec.noun} ${label(key)}`;
    const before = stored.get(key) ?? null;
    const refused = confinementProblem(ctx.actor, name, key, item, before);
    if (refused) {
      problems.push(`${path}: ${refused}`);
      return;
    }
    const merged = mergeObject(fields, before, item, path, what, ctx.secretKey);
    problems.push(...merged.problems, ...(name === "users" ? consoleRoleProblems(merged.target, path) : []));
    const orgId = name === "orgs" ? (key as number) : ((merged.target.org_id as number | null | undefined) ?? null);
    objects.push({ section: name, path, key, what, target: `${spec.noun}:${key}`, noun: spec.noun, orgId, created: before === null, changes: merged.changes, row: merged.target, stored: before });
  });
  return { objects, problems };
}

/**
 * An organization's user acting through these functions (the console's settings) reaches its own
 * organization's objects only: another one's answers as missing, and nothing moves between them.
 * The operator (a provisioning run) is the platform and reaches everything.
 */
function confinementProblem(actor: Actor, name: TableName, key: string | number, item: Row, stored: Row | null): string | null {
  if (actor.orgId === null) return null;
  if (name === "orgs") return key === actor.orgId ? null : `org ${label(key)} does not exist`;
  if (!("org_id" in TABLES[name].fields)) return `${name} belong to the platform`;
  if (stored !== null && stored.org_id !== actor.orgId) return `${TABLES[name].noun} ${label(key)} does not exist`;
  if (item.org_id !== actor.orgId) return `org_id: org ${label(item.org_id)} does not exist`;
  return null;
}

/** A console user's email is one person's: one another user (not in the file) has is refused, naming both. */
export async function takenEmails(ctx: PlanContext, users: Planned[]): Promise<string[]> {
  const wanted = users.filter((u) => u.row.email !== null && u.changes.some((c) => c.field === "email"));
  if (wanted.length === 0) return [];
  const taken = await ctx.tx<{ id: string; email: string }[]>`
    select id, email from users where email in ${ctx.tx(wanted.map((u) => u.row.email as string))} and id not in ${ctx.tx(users.map((u) => u.key as string))}`;
  const holder = new Map(taken.map((r) => [r.email, r.id]));
  return wanted.filter((u) => holder.has(u.row.email as string)).map((u) => `${u.path}.email: ${JSON.stringify(u.row.email)} is already user ${JSON.stringify(holder.get(u.row.email as string))}`);
}

/** The console roles of a user as it will be stored: an admin acts for every organization, others for one. */
function consoleRoleProblems(user: Row, path: string): string[] {
  const role = user.role as string | null;
  if (role === null || role === undefined) return [];
  if (user.email === null) return [`${path}.role: a console role needs an email`];
  if (role === "admin" && user.org_id !== null) return [`${path}.role: an admin acts for every organization (org_id null)`];
  if (role !== "admin" && user.org_id === null) return [`${path}.role: a ${role} belongs to one organization (org_id)`];
  return [];
}

/** The settings section: one object, each setting a row of `settings`. */
export async function planSettings(ctx: PlanContext, settings: Row): Promise<Plan> {
  if (ctx.actor.orgId !== null) return { objects: [], problems: ["settings: belong to the platform"] };
  const names = Object.keys(settings).filter((k) => settings[k] !== undefined);
  const rows = names.length ? await ctx.tx<{ key: string; value: unknown }[]>`select key, value from settings where key in ${ctx.tx(names)}` : [];
  const stored: Row = Object.fromEntries(Object.keys(SETTING_FIELDS).map((k) => [k, null]));
  for (const r of rows) stored[r.key] = r.value;
  const merged = mergeObject(SETTING_FIELDS, stored, settings, "settings", "settings", ctx.secretKey);
  const object: Planned = { section: "settings", path: "settings", key: "settings", what: "settings", target: "settings", noun: "settings", orgId: null, created: false, changes: merged.changes, row: merged.target, stored };
  return { objects: [object], problems: merged.problems };
}

/** An API key's plan: the key row it names (by hash, or by name and org), or a key to generate. */
export interface PlannedKey extends Planned {
  /** The stored key's id; null: a new key (`generate`: its plaintext made and printed by the run). */
  id: number | null;
  generate: boolean;
  revoked: boolean;
  /** The plaintext the file chose, to find and write the key by its hash (never printed). */
  chosen: string | null;
}

const KEY_DIFF_FIELDS = (({ key: _key, ...rest }) => rest)(API_KEY_FIELDS) satisfies Fields;

type KeyRow = { id: number; name: string; org_id: number | null; scopes: string[]; agent: string | null; active: boolean; revoked: boolean };

/**
 * A key given in the file is identified by its hash. A key without one is identified by
 * (name, org_id) among the provisioned keys that are not revoked; only when there is none is a
 * key generated (and printed once). A revoked key is never reactivated: revocation is final.
 */
export async function planKeys(ctx: PlanContext, keys: Row[]): Promise<{ objects: PlannedKey[]; problems: string[] }> {
  const { tx } = ctx;
  const objects: PlannedKey[] = [];
  const problems: string[] = [];
  for (const [i, spec] of keys.entries()) {
    const path = `api_keys[${i}]`;
    const chosen = (spec.key as string | undefined) ?? null;
    const lock = ctx.lock ? tx`for no key update` : tx``;
    const [row] = chosen !== null
      ? await tx<KeyRow[]>`
          select id, name, org_id, scopes, agent, active, revoked_at is not null as revoked from api_keys
          where key_hash = ${hashKey(chosen)} ${lock}`
      : await tx<KeyRow[]>`
          select id, name, org_id, scopes, agent, active, false as revoked from api_keys
          where provisioned and revoked_at is null and name = ${spec.name as string} and org_id is not distinct from ${spec.org_id as number | null}
          order by id desc limit 1 ${lock}`;
    const stored: Row | null = row ? { name: row.name, org_id: row.org_id, scopes: [...row.scopes], agent: row.agent, active: row.active } : null;
    const what = row ? `key ${row.id} ${label(row.name)}` : `key ${label(spec.name)} (${spec.org_id === null ? "platform" : `org ${spec.org_id}`})`;
    if (ctx.actor.orgId !== null && (spec.org_id !== ctx.actor.orgId || (row && row.org_id !== ctx.actor.orgId))) {
      problems.push(`${path}: ${row && row.org_id !== ctx.actor.orgId ? `${what} does not exist` : `org_id: org ${label(spec.org_id)} does not exist`}`);
      continue;
    }
    const merged = mergeObject(KEY_DIFF_FIELDS, stored, spec, path, what, ctx.secretKey);
    // Revocation is final: a file that says `active: true` does not bring a revoked key back.
    if (row?.revoked) merged.target.active = false;
    const changes = stored === null ? merged.changes : changesOf(KEY_DIFF_FIELDS, stored, merged.target);
    problems.push(...merged.problems);
    objects.push({
      section: "api_keys",
      path,
      key: row?.id ?? null,
      what,
      target: row ? `key:${row.id}` : "key:new",
      noun: "key",
      orgId: (merged.target.org_id as number | null) ?? null,
      created: row === undefined,
      changes,
      row: merged.target,
      stored,
      id: row?.id ?? null,
      generate: row === undefined && chosen === null,
      revoked: row?.revoked ?? false,
      chosen,
    });
  }
  return { objects, problems };
}
