// Find anything (issue 29): one text box over an organization's leads and conversations. A name
// without its accents ("jose" finds José, "nunez" Núñez), a phone in full or by its last 4 to 9
// digits, an email with or without its domain, and the words of messages and notes. Results are
// grouped by lead, those whose own fields match first (newest first), then those whose messages do
// (newest message first), each with the matching message's text around the match. Every statement
// is confined to the actor's organization in SQL (src/leads/scope.ts); docs/leads.md has the
// indexes (sql/0026) and bench/RESULTS.md their times at a million leads.
import type { Actor } from "../auth/actor";
import type { Sql } from "../db/client";
import { cleanText } from "../http/fields";
import { inTenant } from "../leads/scope";
import { likePrefix, listColumns, prefixEnd, searchLeads, withValuesPlanned, type LeadFilter, type LeadListRow } from "../leads/search";
import { messageRead, newestFirst, readSettings } from "./messages";
import { snippetOf } from "./snippet";

/** What the text box was taken for. */
export type WorkspaceQuery =
  | { kind: "none" }
  /** Phone characters with fewer than 4 digits: too short to mean a number. */
  | { kind: "too_short" }
  | { kind: "phone"; last10: string }
  | { kind: "phone_suffix"; digits: string }
  | { kind: "email"; prefix: string }
  /** Anything else: names, an email's local part, and the words of messages. */
  | { kind: "words"; text: string; tokens: string[] };

export const SUFFIX_MIN_DIGITS = 4;
/** An email's local part is looked up from this many characters (fewer match too many addresses). */
export const EMAIL_WORD_MIN = 3;
/** Words of a message search; more narrow nothing a person types. */
const MAX_TOKENS = 8;

export function workspaceQuery(text: string): WorkspaceQuery {
  const s = cleanText(text);
  if (s === "") return { kind: "none" };
  if (s.includes("@")) return { kind: "email", prefix: s.toLowerCase() };
  if (/^[\d\s+().\-/]+$/.test(s)) {
    const digits = s.replace(/\D/g, "");
    if (digits.length >= 10) return { kind: "phone", last10: digits.slice(-10) };
    return digits.length >= SUFFIX_MIN_DIGITS ? { kind: "phone_suffix", digits } : { kind: "too_short" };
  }
  const tokens = s.split(/[^\p{L}\p{N}]+/u).filter((w) => w !== "").slice(0, MAX_TOKENS);
  return { kind: "words", text: s, tokens };
}

export interface MessageSnippet {
  message_id: number;
  channel: string;
  direction: string;
  at: Date;
  /** The message's text (an email's as plain text) around the first match, with … where cut. */
  text: string;
}

export interface WorkspaceHit {
  lead_id: number;
  name: string;
  phone: string;
  email: string;
  status: string;
  created_at: Date;
  /** Why the lead is here: its own field, or one of its messages or notes. */
  matched: "name" | "phone" | "email" | "message";
  /** The newest of its messages that matched, when the words were searched in messages too. */
  snippet: MessageSnippet | null;
}

export interface WorkspaceSearchOptions {
  /** Leads at most (default 20, at most 100). */
  limit?: number;
  /** Search messages and notes too (default true); off for a lead picker. */
  messages?: boolean;
}

export interface WorkspaceResult {
  query: WorkspaceQuery["kind"];
  hits: WorkspaceHit[];
}

/** Messages read to find `limit` leads by their messages: many matches may be one lead's. */
const MESSAGE_ROWS = 200;

/** Searches the actor's organization (an admin's: every organization). */
export async function searchWorkspace(sql: Sql, actor: Actor, text: string, options: WorkspaceSearchOptions = {}): Promise<WorkspaceResult> {
  const limit = Math.max(1, Math.min(options.limit ?? 20, 100));
  const q = workspaceQuery(text);
  const orgId = actor.orgId;
  const hits = new Map<number, WorkspaceHit>();
  const take = (rows: LeadListRow[], matched: WorkspaceHit["matched"]) => {
    for (const r of rows) {
      if (hits.size >= limit) return;
      if (!hits.has(r.id)) hits.set(r.id, { lead_id: r.id, name: r.name, phone: r.phone, email: r.email, status: r.status, created_at: r.created_at, matched, snippet: null });
    }
  };
  const byFields = (qText: string) => searchLeads(sql, orgId, filter(qText), null, limit).then((p) => p.rows);
  switch (q.kind) {
    case "none":
    case "too_short":
      break;
    case "phone":
      take(await byFields(q.last10), "phone");
      break;
    case "email":
      take(await byFields(q.prefix), "email");
      break;
    case "phone_suffix":
      take(await byPhoneSuffix(sql, orgId, q.digits, limit), "phone");
      break;
    case "words": {
      take(await byFields(q.text), "name");
      const word = q.text.toLowerCase();
      if (!/\s/.test(word) && word.length >= EMAIL_WORD_MIN) take(await byEmailStart(sql, orgId, word, limit), "email");
      if (options.messages !== false && q.tokens.length > 0) await byMessages(sql, orgId, q.tokens, hits, limit);
      break;
    }
  }
  return { query: q.kind, hits: [...hits.values()] };
}

const filter = (q: string): LeadFilter => ({ q, campaign: null, list: null, status: null, from: null, to: null, zone: "UTC" });

/**
 * Leads whose phone ends with `digits` (4 to 9 of them), newest first: the stored last 10
 * reversed is an index prefix (sql/0026 leads_phone_reversed). Four digits match one lead in
 * 10,000, so the range is read whole and sorted. Planned with its values: a generic plan cannot
 * tell the narrow range from a wide one and walked the organization's leads newest first instead
 * (60 ms at 100,000 leads, bench/search.ts).
 */
export function byPhoneSuffix(sql: Sql, orgId: number | null, digits: string, limit: number): Promise<LeadListRow[]> {
  const rev = [...digits].reverse().join("");
  return withValuesPlanned(sql, (tx) => tx<LeadListRow[]>`
    select ${listColumns(sql)} from leads l left join orgs o on o.id = l.org_id
    where reverse(l.phone) ~>=~ ${rev} and reverse(l.phone) ~<~ ${prefixEnd(rev)!} and ${inTenant(sql, orgId)}
    order by l.created_at desc, l.id desc
    limit ${limit}`);
}

/** Leads whose email starts with `word` (its local part, without the domain), newest first (leads_email). */
export function byEmailStart(sql: Sql, orgId: number | null, word: string, limit: number): Promise<LeadListRow[]> {
  return withValuesPlanned(sql, (tx) => tx<LeadListRow[]>`
    select ${listColumns(sql)} from leads l left join orgs o on o.id = l.org_id
    where l.email like ${likePrefix(word)} and l.email <> '' and ${inTenant(sql, orgId)}
    order by l.created_at desc, l.id desc
    limit ${limit}`);
}

interface MessageRow {
  id: number;
  lead_id: number;
  channel: string;
  direction: string;
  created_at: Date;
  subject: string;
  body: string;
}

/**
 * The newest messages and notes holding every word (each as a word's start: "lea" finds "leak"),
 * by the full-text column and index of sql/0026 (messages.search); their leads join `hits` after
 * the leads found by their own fields, each with the snippet of its newest matching message. A
 * word in one message of a million is read from the index, one in every tenth by walking the
 * newest messages until enough match: messageRead chooses (./messages.ts).
 */
async function byMessages(sql: Sql, orgId: number | null, tokens: string[], hits: Map<number, WorkspaceHit>, limit: number): Promise<void> {
  const query = tokens.map((t) => `${t}:*`).join(" & ");
  const read = await messageRead(sql, tokens);
  const rows = (await sql.begin(async (tx) => {
    await readSettings(tx, read);
    return tx<MessageRow[]>`
      select m.id, m.lead_id, m.channel, m.direction, m.created_at, m.subject, m.body
      from messages m join leads l on l.id = m.lead_id
      where m.search @@ to_tsquery('simple', leadline_fold(${query}))
        and ${inTenant(sql, orgId)}
      order by ${newestFirst(tx, read)}
      limit ${MESSAGE_ROWS}`;
  })) as MessageRow[];
  const fresh: number[] = [];
  for (const m of rows) {
    const hit = hits.get(m.lead_id);
    if (hit) {
      hit.snippet ??= snippetFor(m, tokens);
      continue;
    }
    if (hits.size + fresh.length >= limit || fresh.includes(m.lead_id)) continue;
    fresh.push(m.lead_id);
  }
  if (fresh.length === 0) return;
  const leads = await sql<LeadListRow[]>`
    select ${listColumns(sql)} from leads l left join orgs o on o.id = l.org_id
    where l.id in ${sql(fresh)} and ${inTenant(sql, orgId)}`;
  const byId = new Map(leads.map((l) => [l.id, l]));
  for (const id of fresh) {
    const l = byId.get(id);
    const m = rows.find((r) => r.lead_id === id)!;
    if (l) hits.set(id, { lead_id: id, name: l.name, phone: l.phone, email: l.email, status: l.status, created_at: l.created_at, matched: "message", snippet: snippetFor(m, tokens) });
  }
}

const snippetFor = (m: MessageRow, tokens: string[]): MessageSnippet => ({
  message_id: m.id,
  channel: m.channel,
  direction: m.direction,
  at: m.created_at,
  text: snippetOf(m.channel, m.subject, m.body, tokens),
});
