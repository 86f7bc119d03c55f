// Tags: free text per organization on its leads (sql/0026 lead_tags). A tag is trimmed, its inner
// blanks made one space; on a lead it is unique by its lowercase form (its key), the spelling of
// its first use kept. Added and removed through updateLead (edit.ts), which audits and emits
// lead.updated; suggested from the organization's tags by prefix, most used first (org_tags,
// counted by triggers). An organization's manager renames a tag on all its leads at once, merges it
// into another (a rename to a tag the organization has), or deletes it from all its leads.
import type { Actor } from "../auth/actor";
import { audit } from "../auth/audit";
import type { Sql, Tx } from "../db/client";
import { AppError } from "../errors";
import { cleanText } from "../http/fields";
import { inTenant } from "./scope";

export const TAG_MAX = 40;
/** Tags one lead may carry. */
export const TAGS_PER_LEAD = 50;

export interface Tag {
  tag: string;
  key: string;
}

/**
 * A tag as stored, or why it cannot be one: empty after trimming, longer than TAG_MAX, or holding
 * a comma or a control character (a form's list of tags is comma-separated).
 */
export function tagOf(raw: unknown): Tag | { problem: string } {
  if (typeof raw !== "string") return { problem: "a tag is text" };
  const tag = cleanText(raw).replace(/\s+/g, " ");
  if (tag === "") return { problem: "a tag cannot be empty" };
  if ([...tag].length > TAG_MAX) return { problem: `a tag has at most ${TAG_MAX} characters` };
  if (/[,\p{Cc}]/u.test(tag)) return { problem: "a tag cannot hold a comma or a control character" };
  return { tag, key: tag.toLowerCase() };
}

/** Tags in the order of their keys (JavaScript's, whatever the database's collation). */
export const sortTags = <T extends Tag>(tags: T[]): T[] => tags.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));

/** The lead's tags, in the order of their lowercase form. Null when the lead is not in the actor's scope. */
export async function leadTags(sql: Sql | Tx, actor: Actor, leadId: number): Promise<string[] | null> {
  const [row] = await sql<{ tags: Tag[] }[]>`
    select coalesce((select json_agg(json_build_object('tag', t.tag, 'key', t.tag_key)) from lead_tags t where t.lead_id = l.id), '[]') as tags
    from leads l where l.id = ${leadId} and ${inTenant(sql as Sql, actor.orgId)}`;
  return row ? sortTags(row.tags).map((t) => t.tag) : null;
}

export interface TagSuggestion {
  tag: string;
  uses: number;
}

/**
 * The organization's tags starting with `prefix` (any case; empty: all), most used first, then in
 * order: what the tag box offers as the agent types. A tenant actor is confined to its own
 * organization (another one's is `not_found`); an admin names the lead's (null: the house's).
 * Reads the organization's distinct tags in org_tags alone, however many leads carry them.
 */
export async function suggestTags(sql: Sql, actor: Actor, orgId: number | null, prefix: string, limit = 10): Promise<TagSuggestion[]> {
  if (actor.orgId !== null && orgId !== actor.orgId) throw new AppError("not_found");
  const key = cleanText(prefix).replace(/\s+/g, " ").toLowerCase();
  return sql<TagSuggestion[]>`
    select tag, uses from org_tags
    where org_key = ${orgId ?? -1} and uses > 0 and starts_with(tag_key, ${key})
    order by uses desc, tag_key
    limit ${Math.max(1, Math.min(limit, 50))}`;
}

export interface OrgTag extends Tag {
  /** Leads of the organization carrying it now (org_tags' count). */
  leads: number;
}

const confined = (actor: Actor, orgId: number) => {
  if (actor.orgId !== null && orgId !== actor.orgId) throw new AppError("not_found");
};

/** The organization's tags with how many leads carry each, in key order. */
export async function orgTags(sql: Sql, actor: Actor, orgId: number): Promise<OrgTag[]> {
  confined(actor, orgId);
  return sortTags(await sql<OrgTag[]>`select tag, tag_key as key, uses as leads from org_tags where org_key = ${orgId} and uses > 0`);
}

export type TagRename =
  | { ok: true; changed: false }
  | { ok: true; changed: true; merged: boolean; tag: string; leads: number }
  | { ok: false; reason: "invalid_tag"; problem: string };

/**
 * Tag `fromKey` of the organization's leads becomes `to`, audited `tag.rename` (or `tag.merge`
 * when the organization already has `to`'s key: the leads carrying both keep one, in the spelling
 * the organization already uses) with the previous and new spelling and how many leads. A lead's
 * tag rows are deleted and inserted again, never updated in place, so org_tags' triggers count
 * both keys. The org_tags rows of both keys are locked first: two renames of one tag run one after
 * the other, the second finding it gone (`not_found`). A lead tagged `fromKey` by an edit that
 * commits meanwhile keeps it (the tag then lists that lead again), as after any later edit.
 */
export function renameTag(sql: Sql, actor: Actor, orgId: number, fromKey: string, to: unknown): Promise<TagRename> {
  confined(actor, orgId);
  const next = tagOf(to);
  if ("problem" in next) return Promise.resolve({ ok: false, reason: "invalid_tag", problem: next.problem });
  return sql.begin(async (tx) => {
    // Both rows locked in one statement, in key order: a rename of A to B and one of B to A at the
    // same moment wait for each other instead of deadlocking.
    const rows = await tx<Tag[]>`
      select tag, tag_key as key from org_tags
      where org_key = ${orgId} and tag_key in ${tx([fromKey, next.key])} and uses > 0
      order by tag_key collate "C" for update`;
    const from = rows.find((r) => r.key === fromKey);
    if (!from) throw new AppError("not_found");
    if (next.key === from.key && next.tag === from.tag) return { ok: true, changed: false } as const;
    const target = next.key === from.key ? undefined : rows.find((r) => r.key === next.key);
    const tag = target?.tag ?? next.tag;
    const moved = await tx<{ lead_id: number; created_at: Date }[]>`
      delete from lead_tags where org_id = ${orgId} and tag_key = ${from.key} returning lead_id, created_at`;
    if (moved.length > 0) {
      await tx`
        insert into lead_tags ${tx(moved.map((m) => ({ lead_id: m.lead_id, org_id: orgId, tag, tag_key: next.key, created_at: m.created_at })))}
        on conflict do nothing`;
    }
    const merged = target !== undefined;
    await audit(tx, actor, merged ? "tag.merge" : "tag.rename", `tag:${from.key}`, { from: from.tag, to: tag, leads: moved.length }, orgId);
    return { ok: true, changed: true, merged, tag, leads: moved.length } as const;
  }) as Promise<TagRename>;
}

/** Removes tag `key` from every lead of the organization, audited `tag.delete` with how many. */
export function deleteTag(sql: Sql, actor: Actor, orgId: number, key: string): Promise<{ tag: string; leads: number }> {
  confined(actor, orgId);
  return sql.begin(async (tx) => {
    const t = await lockedTag(tx, orgId, key);
    const gone = await tx`delete from lead_tags where org_id = ${orgId} and tag_key = ${t.key}`;
    await audit(tx, actor, "tag.delete", `tag:${t.key}`, { tag: t.tag, leads: gone.count }, orgId);
    return { tag: t.tag, leads: gone.count };
  }) as Promise<{ tag: string; leads: number }>;
}

/** The organization's tag row, locked for the rest of the transaction; a tag no lead carries is `not_found`. */
async function lockedTag(tx: Tx, orgId: number, key: string): Promise<Tag> {
  const [row] = await tx<Tag[]>`select tag, tag_key as key from org_tags where org_key = ${orgId} and tag_key = ${key} and uses > 0 for update`;
  if (!row) throw new AppError("not_found");
  return row;
}
