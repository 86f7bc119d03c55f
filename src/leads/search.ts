// Lead search for the console: one text box (a name, a phone in any format, or an email), filters
// by campaign, list, status and creation date, keyset pages ordered newest first. Every query is
// confined to the actor's organization in SQL (scope.ts). The indexes that keep a page cheap at a
// million leads are sql/0018's, 0019's and 0026's; docs/console-leads.md has their plans. Names
// are matched folded (sql/0026 leadline_fold: "jose" finds José), the typed words folded by the
// same function in the database (foldWords).
import type { PendingQuery, Row } from "postgres";
import type { Sql, Tx } from "../db/client";
import { leadName } from "./match";
import { inTenant } from "./scope";

type Fragment = PendingQuery<Row[]>;

export interface LeadFilter {
  /** Free text: an email (has `@`), a phone (10 or more digits, any punctuation), else a name. */
  q: string;
  campaign: string | null;
  list: number | null;
  status: string | null;
  /** The lead's `source` as intake took it, exactly (`''`: leads that came without one); null or absent: any. */
  source?: string | null;
  /** Creation dates `YYYY-MM-DD`, both inclusive, in `zone`. */
  from: string | null;
  to: string | null;
  zone: string;
}

/** Where a page starts: after the lead created at `micros` (Unix µs, exact) with id `id`. */
export interface LeadCursor {
  micros: number;
  id: number;
}

export const cursorText = (c: LeadCursor) => `${c.micros}.${c.id}`;

export function parseCursor(text: string | undefined | null): LeadCursor | null {
  const m = /^(-?\d{1,17})\.(\d{1,17})$/.exec(text ?? "");
  return m ? { micros: Number(m[1]), id: Number(m[2]) } : null;
}

export interface LeadListRow {
  id: number;
  name: string;
  phone: string;
  email: string;
  status: string;
  campaign_id: string;
  list_id: number;
  /** Where the lead came from: intake's `source`, and its first touch's (DNI attribution) source and medium. */
  source: string;
  touch_source: string;
  touch_medium: string;
  created_at: Date;
  /** The lead's organization's time zone (admins see each lead in its own). */
  timezone: string;
  micros: number;
}

/** What the text box means: the kind of match and its normalized value; null: nothing to match on. */
export type TextMatch =
  | { kind: "none" }
  | { kind: "email"; prefix: string }
  | { kind: "phone"; last10: string }
  | { kind: "name"; words: string[] }
  | { kind: "short_phone" };

export function textMatch(q: string): TextMatch {
  // NUL is no character a name, phone or email holds, and PostgreSQL's text cannot carry it.
  const s = q.replaceAll("\u0000", "").trim();
  if (s === "") return { kind: "none" };
  if (s.includes("@")) return { kind: "email", prefix: s.toLowerCase() };
  // Only phone characters: digits, spaces, + ( ) - . /
  if (/^[\d\s+().\-/]+$/.test(s)) {
    const digits = s.replace(/\D/g, "");
    return digits.length >= 10 ? { kind: "phone", last10: digits.slice(-10) } : { kind: "short_phone" };
  }
  const words = s.toLowerCase().split(/\s+/).filter((w) => w !== "").slice(0, 4);
  return { kind: "name", words };
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;
/** A `YYYY-MM-DD` that is a real calendar date, else null. */
export function dateOrNull(s: string | null | undefined): string | null {
  if (!s || !DATE.test(s)) return null;
  const d = new Date(`${s}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().startsWith(s) ? s : null;
}

/** `like` pattern of a literal prefix. */
export const likePrefix = (s: string) => s.replace(/[\\%_]/g, (c) => "\\" + c) + "%";

/**
 * Words folded by the database's leadline_fold (sql/0026), the function the name indexes are built
 * on, so what is typed and what is stored are folded alike whatever the server's locale; words
 * that fold to nothing are dropped. One round trip of a few microseconds of work.
 */
export async function foldWords(sql: Sql | Tx, words: string[]): Promise<string[]> {
  if (words.length === 0) return [];
  const [row] = await sql<{ f: string[] }[]>`
    select array(select leadline_fold(u.w) from unnest(${words}::text[]) with ordinality as u(w, i) order by u.i) as f`;
  return row!.f.filter((w) => w !== "");
}

/** A name column as the indexes of sql/0026 hold it: folded. */
const folded = (sql: Sql | Tx, col: Fragment) => sql`leadline_fold(${col})`;

/**
 * The filter as SQL over the alias `l`. A name of one word matches a first or last name that
 * starts with it; of several, the first name starts with the first word and the last name with
 * the last. Name words come folded (foldWords); prefix matches on leadline_fold(…) use the
 * text_pattern_ops indexes of sql/0026.
 */
function filterSql(sql: Sql, orgId: number | null, f: LeadFilter, only?: Fragment): Fragment {
  const m = textMatch(f.q);
  let text: Fragment;
  if (only) text = only;
  else switch (m.kind) {
    case "none":
      text = sql`true`;
      break;
    case "email":
      text = sql`l.email like ${likePrefix(m.prefix)} and l.email <> ''`;
      break;
    case "phone":
      text = sql`l.phone = ${m.last10}`;
      break;
    case "short_phone":
      text = sql`false`;
      break;
    case "name":
      text =
        m.words.length === 1
          ? sql`(${folded(sql, sql`l.first_name`)} like ${likePrefix(m.words[0])} or ${folded(sql, sql`l.last_name`)} like ${likePrefix(m.words[0])})`
          : sql`(${folded(sql, sql`l.first_name`)} like ${likePrefix(m.words[0])} and ${folded(sql, sql`l.last_name`)} like ${likePrefix(m.words[m.words.length - 1])})`;
      break;
  }
  const from = dateOrNull(f.from);
  const to = dateOrNull(f.to);
  // A campaign or list of another organization matches nothing: checked once (an InitPlan) before
  // any lead is read, instead of walking the campaign's leads only to drop each one.
  const own = orgId === null ? sql`true` : sql`c.org_id = ${orgId}`;
  return sql`${inTenant(sql, orgId)} and ${text}
    ${f.campaign !== null ? sql`and l.campaign_id = ${f.campaign} and exists (select 1 from campaigns c where c.id = ${f.campaign} and ${own})` : sql``}
    ${f.list !== null ? sql`and l.list_id = ${f.list} and exists (select 1 from lists li join campaigns c on c.id = li.campaign_id where li.id = ${f.list} and ${own})` : sql``}
    ${f.status !== null ? sql`and l.status = ${f.status}` : sql``}
    ${f.source != null ? sql`and l.source = ${f.source}` : sql``}
    ${from !== null ? sql`and l.created_at >= (${from}::date)::timestamp at time zone ${f.zone}` : sql``}
    ${to !== null ? sql`and l.created_at < (${to}::date + 1)::timestamp at time zone ${f.zone}` : sql``}`;
}

/** The exact Unix-µs of created_at, as a number (µs of today's dates stay below 2^53). */
const microsOf = (sql: Sql) => sql`(extract(epoch from l.created_at) * 1000000)::bigint`;

/** A LeadListRow's columns, over `l` (leads) and `o` (its organization). */
export const listColumns = (sql: Sql) => sql`l.id, ${leadName(sql)} as name, l.phone, l.email, l.status, l.campaign_id, l.list_id, l.source,
  coalesce(l.attribution->>'source', '') as touch_source, coalesce(l.attribution->>'medium', '') as touch_medium, l.created_at,
  coalesce(o.timezone, 'UTC') as timezone, ${microsOf(sql)} as micros`;

/** The keyset condition: rows after `cursor` in (created_at desc, id desc) order. */
const after = (sql: Sql, cursor: LeadCursor | null) =>
  cursor === null ? sql`` : sql`and (l.created_at, l.id) < (timestamptz 'epoch' + ${cursor.micros}::bigint * interval '1 microsecond', ${cursor.id}::bigint)`;

/**
 * A search planned with its values (a custom plan), in a transaction of its own. The service's
 * connections plan every statement generically (plan_cache_mode, src/db/client.ts), which cannot
 * see a name or email prefix: on 1,000,000 leads such a plan took 200 ms a search
 * (bench/console.ts `t`) where one made for the prefix takes 1–10 ms (a dense prefix walks the
 * created order, a rare one reads the name index). `set local` ends with the transaction, so it
 * holds through a transaction pooler too.
 */
export function withValuesPlanned<T>(sql: Sql, query: (tx: Tx) => Promise<T>): Promise<T> {
  return sql.begin(async (tx) => {
    await tx`set local plan_cache_mode = force_custom_plan`;
    return query(tx);
  }) as Promise<T>;
}

/** Distinct names a one-word prefix may cover before the search reads its whole range instead. */
export const NAME_WALK_CAP = 64;

/**
 * The least string above every string that starts with `p` in byte order (text_pattern_ops, which
 * UTF-8 keeps in code point order): `p` with its last code point raised by one. Null when none is.
 */
export function prefixEnd(p: string): string | null {
  const cps = [...p];
  while (cps.length > 0) {
    let next = cps.pop()!.codePointAt(0)! + 1;
    if (next === 0xd800) next = 0xe000; // past the surrogates, which no text holds
    if (next <= 0x10ffff) return cps.join("") + String.fromCodePoint(next);
  }
  return null;
}

/** Whether a filter narrows by more than its text (those searches read along other indexes). */
const narrowed = (f: LeadFilter) => f.campaign !== null || f.list !== null || f.status !== null || f.source != null || dateOrNull(f.from) !== null || dateOrNull(f.to) !== null;

/**
 * The distinct folded first and last names starting with `word` — up to NAME_WALK_CAP + 1 of
 * each, so the caller knows when there are more — by a loose index scan: each step asks the name
 * index for the least name above the last one, so a name shared by 2,000 leads costs one descent.
 * Every organization's names: the page's query confines them (a name absent from the organization
 * finds nothing there).
 */
async function namesFrom(sql: Sql, word: string, end: string) {
  const walk = (col: Fragment) => sql`
    with recursive names(n, k) as (
      (select leadline_fold(${col}), 1 from leads l
       where leadline_fold(${col}) ~>=~ ${word} and leadline_fold(${col}) ~<~ ${end}
       order by leadline_fold(${col}) using ~<~ limit 1)
      union all
      select (select leadline_fold(${col}) from leads l
              where leadline_fold(${col}) ~>~ names.n and leadline_fold(${col}) ~<~ ${end}
              order by leadline_fold(${col}) using ~<~ limit 1), k + 1
      from names where names.n is not null and names.k <= ${NAME_WALK_CAP}
    ) select coalesce(array_agg(n) filter (where n is not null), '{}') from names`;
  const [row] = await sql<{ first: string[]; last: string[] }[]>`
    select (${walk(sql`l.first_name`)}) as first, (${walk(sql`l.last_name`)}) as last`;
  return row!;
}

/**
 * A one-word name, nothing else narrowing: leads whose first or last name starts with it, newest
 * first. The prefix's distinct names first (namesFrom), then, for each, its newest leads in index
 * order (sql/0019), merged: about `n` index entries per name whatever the prefix matches, and no
 * sort of them all. Null when the prefix covers more names than NAME_WALK_CAP (a letter or two):
 * byNameRange reads those. The statements carry no pattern, so generic plans serve them.
 */
export async function byNameWalk(sql: Sql, orgId: number | null, word: string, cursor: LeadCursor | null, n: number): Promise<LeadListRow[] | null> {
  const end = prefixEnd(word);
  if (end === null) return null;
  const names = await namesFrom(sql, word, end);
  if (names.first.length > NAME_WALK_CAP || names.last.length > NAME_WALK_CAP) return null;
  if (names.first.length + names.last.length === 0) return [];
  const newest = (col: Fragment, list: string[]) => sql`
    select x.id, x.created_at from unnest(${list}::text[]) as nm(n) cross join lateral (
      select l.id, l.created_at from leads l
      where leadline_fold(${col}) = nm.n and ${inTenant(sql, orgId)} ${after(sql, cursor)}
      order by l.created_at desc, l.id desc limit ${n}) x`;
  return pageOfMatches(sql, newest(sql`l.first_name`, names.first), newest(sql`l.last_name`, names.last), n);
}

/**
 * The page of a one-word name: the newest `n` of the first-name and last-name matches (each a
 * relation of (id, created_at); a lead in both counted once), then only those leads' rows read.
 */
function pageOfMatches(sql: Sql, byFirst: Fragment, byLast: Fragment, n: number) {
  return sql<LeadListRow[]>`
    select ${listColumns(sql)}
    from (${byFirst} union ${byLast} order by created_at desc, id desc limit ${n}) h
    join leads l on l.id = h.id left join orgs o on o.id = l.org_id
    order by l.created_at desc, l.id desc`;
}

/**
 * A one-word name with other filters, or one covering many names: as one condition (`first like p
 * or last like p`) PostgreSQL reads every match from the heap to sort them, 2,000 scattered pages
 * for a name shared by one lead in 500 (8 ms at 1,000,000 leads); as two branches, each finds its
 * newest matches from its name index alone, and only the page's rows are read from the table.
 */
function byNameRange(sql: Sql, orgId: number | null, f: LeadFilter, word: string, cursor: LeadCursor | null, n: number) {
  const p = likePrefix(word);
  const branch = (match: Fragment) => sql`
    (select l.id, l.created_at from leads l where ${filterSql(sql, orgId, f, match)} ${after(sql, cursor)}
     order by l.created_at desc, l.id desc limit ${n})`;
  return pageOfMatches(sql, branch(sql`leadline_fold(l.first_name) like ${p}`), branch(sql`leadline_fold(l.last_name) like ${p}`), n);
}

/** The filter with its name words folded (foldWords); a name that folds to nothing matches nothing. */
async function foldedFilter(sql: Sql, f: LeadFilter): Promise<LeadFilter> {
  const m = textMatch(f.q);
  if (m.kind !== "name") return f;
  const words = await foldWords(sql, m.words);
  // A digit, which no folded name word is all of, keeps an empty result empty (short_phone).
  return { ...f, q: words.length > 0 ? words.join(" ") : "0" };
}

/**
 * One page of leads, newest first, after `cursor`: `limit` rows and whether more follow. Keyset
 * (created_at, id): no OFFSET, so page 1,000 costs what page 1 does.
 */
export async function searchLeads(
  sql: Sql,
  orgId: number | null,
  f: LeadFilter,
  cursor: LeadCursor | null,
  limit: number,
): Promise<{ rows: LeadListRow[]; next: LeadCursor | null }> {
  f = await foldedFilter(sql, f);
  const m = textMatch(f.q);
  const walked = m.kind === "name" && m.words.length === 1 && !narrowed(f) ? await byNameWalk(sql, orgId, m.words[0]!, cursor, limit + 1) : null;
  const rows = walked ?? await withValuesPlanned(sql, (tx) =>
    m.kind === "name" && m.words.length === 1 ? byNameRange(tx as unknown as Sql, orgId, f, m.words[0]!, cursor, limit + 1) : tx<LeadListRow[]>`
    select ${listColumns(sql)}
    from leads l left join orgs o on o.id = l.org_id
    where ${filterSql(sql, orgId, f)}
      ${after(sql, cursor)}
    order by l.created_at desc, l.id desc
    limit ${limit + 1}`);
  const more = rows.length > limit;
  const page = more ? rows.slice(0, limit) : rows;
  const last = page[page.length - 1];
  return { rows: page, next: more && last ? { micros: last.micros, id: last.id } : null };
}

export interface LeadCsvRow {
  lead_id: number;
  first_name: string;
  last_name: string;
  phone: string;
  email: string;
  status: string;
  campaign: string;
  list_id: number;
  address1: string;
  city: string;
  state: string;
  postal_code: string;
  source: string;
  created_at: string;
}

export const LEAD_CSV_COLUMNS: readonly (keyof LeadCsvRow)[] = [
  "lead_id", "first_name", "last_name", "phone", "email", "status", "campaign", "list_id",
  "address1", "city", "state", "postal_code", "source", "created_at",
];

/**
 * Every lead the filter matches, newest first, `batch` rows at a time: the export never holds the
 * whole set in memory. Each batch is its own keyset query (like the pages), not a server-side
 * cursor: a cursor keeps its connection for as long as the download lasts, so a slow or stalled
 * client would hold a pool connection (on the embedded database, the only one) and a snapshot
 * open; between batches this holds nothing. Leads created during the export, being newer than
 * its first row, are not in it.
 */
export async function* leadsForExport(sql: Sql, orgId: number | null, given: LeadFilter, batch = 1000): AsyncGenerator<LeadCsvRow[]> {
  const f = await foldedFilter(sql, given);
  let cursor: LeadCursor | null = null;
  for (;;) {
    const rows: (LeadCsvRow & { micros: number })[] = await withValuesPlanned(sql, (tx) => tx<(LeadCsvRow & { micros: number })[]>`
      select l.id as lead_id, l.first_name, l.last_name, l.phone, l.email, l.status, l.campaign_id as campaign,
             l.list_id, l.address1, l.city, l.state, l.postal_code, l.source,
             to_char(l.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') as created_at, ${microsOf(sql)} as micros
      from leads l
      where ${filterSql(sql, orgId, f)} ${after(sql, cursor)}
      order by l.created_at desc, l.id desc
      limit ${batch}`);
    if (rows.length > 0) yield rows;
    if (rows.length < batch) return;
    const last = rows[rows.length - 1];
    cursor = { micros: last.micros, id: last.lead_id };
  }
}

/** The most sources the filter offers (a source is free text from intake: an organization may send many). */
export const SOURCE_CHOICES = 200;

/** The campaigns, lists and sources the filter offers, within the organization. */
export async function filterChoices(
  sql: Sql,
  orgId: number | null,
): Promise<{ campaigns: { id: string; name: string }[]; lists: { id: number; name: string; campaign_id: string }[]; sources: string[] }> {
  const scope = orgId === null ? sql`true` : sql`c.org_id = ${orgId}`;
  const campaigns = await sql<{ id: string; name: string }[]>`select c.id, c.name from campaigns c where ${scope} order by c.id limit 500`;
  const lists = await sql<{ id: number; name: string; campaign_id: string }[]>`
    select li.id, li.name, li.campaign_id from lists li join campaigns c on c.id = li.campaign_id where ${scope}
    order by li.id limit 1000`;
  // The sources seen are the new-lead counters' dimensions (sql/0027 report_daily, fact 'lead'),
  // a few rows per organization and day, not a scan of the leads.
  const sources = await sql<{ dim: string }[]>`
    select distinct r.dim from report_daily r
    where r.fact = 'lead' and ${orgId === null ? sql`true` : sql`r.org_id = ${orgId}`}
    order by r.dim limit ${SOURCE_CHOICES}`;
  return { campaigns, lists, sources: sources.map((r) => r.dim) };
}
