// Tags: free text per organization on its leads (sql/0026 lead_tags). A tag is trimmed, its inner
// blanks made one space; on a lead it is unique by its lowercase form (its key), the spelling of
// its first use kept. Added and removed through updateLead (edit.ts), which audits and emits
// lead.updated; suggested from the organization's tags by prefix, most used first (org_tags,
// counted by triggers).
import type { Actor } from "../auth/actor";
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
