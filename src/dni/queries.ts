// The statements of the lease engine. Times are the engine clock's, passed in (epoch ms or Date),
// never the database's now(): expiry is a rule of the engine and tests set its clock.
//
// Lock order, to keep concurrent statements from deadlocking (instances flush overlapping batches
// when visitors alternate between them): a transaction locks visitor rows before hold rows, several
// of either kind in key order, and a history row only while holding its hold row (a history row is
// written only by whoever has just written its hold). An allocation takes its pool's advisory lock
// after its visitor rows and before any hold row, and locks no visitor row while holding it.
import type postgres from "postgres";
import { inInputOrder } from "../db/batcher";
import type { Sql, Tx } from "../db/client";
import { waitingForTurn } from "../db/deadline";
import type { Attribution, BrowserEvent } from "./rules";

export interface PoolRow {
  key: string;
  org_id: number | null;
  fallback: string;
  placeholder: string;
  ttl_seconds: number;
}

export async function findPool(sql: Sql, key: string): Promise<PoolRow | null> {
  const [row] = await sql<PoolRow[]>`
    select key, org_id, fallback, placeholder, ttl_seconds from dni_pools where key = ${key}`;
  return row ?? null;
}

export interface Held {
  number: string;
  hold_id: number;
  expires_at: Date;
}

export interface Visit extends Attribution {
  user_agent: string;
  ip_hash: string;
}

export interface VisitRequest {
  pool: string;
  visitor: string;
  visit: Visit;
  /** The salted hash of the client address's bucket: whose live holds the holds cap counts. */
  holder: string;
  nowMs: number;
  untilMs: number;
}

export interface VisitResult {
  visitor_id: number;
  held: Held | null;
}

/**
 * The visits of leases that missed the cache (distinct pool and visitor pairs), as two CTEs of a
 * statement: `visit_req`, the requests with their `i` (from 1), and `visited`, the visitor rows
 * written (first touch on insert; on update the visit time, and the user agent and address hash
 * of the latest visit), in key order so that concurrent batches lock alike.
 */
function recordVisits(sql: Sql | Tx, requests: VisitRequest[]): postgres.PendingQuery<postgres.Row[]> {
  const col = <K extends keyof Visit>(k: K) => requests.map((r) => r.visit[k]);
  return sql`visit_req as (
      select * from unnest(
        ${requests.map((r) => r.pool)}::text[], ${requests.map((r) => r.visitor)}::text[],
        ${col("utm_source")}::text[], ${col("utm_medium")}::text[], ${col("utm_campaign")}::text[],
        ${col("utm_term")}::text[], ${col("utm_content")}::text[], ${col("gclid")}::text[],
        ${col("gbraid")}::text[], ${col("wbraid")}::text[], ${col("fbclid")}::text[], ${col("msclkid")}::text[],
        ${col("landing")}::text[], ${col("referrer")}::text[], ${col("user_agent")}::text[], ${col("ip_hash")}::text[],
        ${requests.map((r) => r.nowMs)}::float8[], ${requests.map((r) => r.untilMs)}::float8[]
      ) with ordinality as r(pool_key, visitor, utm_source, utm_medium, utm_campaign, utm_term, utm_content,
                             gclid, gbraid, wbraid, fbclid, msclkid, landing, referrer, user_agent, ip_hash, now_ms, until_ms, i)
    ), visited as (
      insert into dni_visitors (pool_key, visitor, utm_source, utm_medium, utm_campaign, utm_term, utm_content,
                                gclid, gbraid, wbraid, fbclid, msclkid, landing, referrer, user_agent, ip_hash,
                                first_visit_at, last_visit_at)
      select pool_key, visitor, utm_source, utm_medium, utm_campaign, utm_term, utm_content, gclid, gbraid, wbraid,
             fbclid, msclkid, landing, referrer, user_agent, ip_hash, to_timestamp(now_ms / 1000), to_timestamp(now_ms / 1000)
      from visit_req order by pool_key, visitor
      on conflict (pool_key, visitor) do update set
        last_visit_at = greatest(dni_visitors.last_visit_at, excluded.last_visit_at),
        user_agent = case when excluded.last_visit_at >= dni_visitors.last_visit_at then excluded.user_agent else dni_visitors.user_agent end,
        ip_hash = case when excluded.last_visit_at >= dni_visitors.last_visit_at then excluded.ip_hash else dni_visitors.ip_hash end
      returning id, pool_key, visitor
    )`;
}

/**
 * Leases that missed the cache while their pool is exhausted, several visitors in one statement
 * (distinct pool and visitor pairs): records each visit (`recordVisits`) and renews the visitor's
 * active hold, if any. The renewal re-checks the hold on the row it locks, so it cannot extend a
 * hold that another visitor took a moment ago. (Renewals write only dni_holds: the history has a
 * hold's live expiry from there while the hold is current.) Holds are written one per visitor.
 */
export async function visitAndRenew(sql: Sql, requests: VisitRequest[]): Promise<VisitResult[]> {
  const rows = await sql<{ i: number; visitor_id: number; number: string | null; hold_id: number | null; expires_at: Date | null }[]>`
    with ${recordVisits(sql, requests)}, cur as (
      select r.i, v.id as visitor_id, h.number, h.hold_id, r.now_ms, r.until_ms
      from visit_req r join visited v on v.pool_key = r.pool_key and v.visitor = r.visitor
      left join lateral (
        select number, hold_id from dni_holds h
        where h.visitor_id = v.id and h.pool_key = r.pool_key and h.active and h.expires_at > to_timestamp(r.now_ms / 1000)
        order by h.expires_at desc limit 1
      ) h on true
    ), renewed as (
      update dni_holds h set expires_at = greatest(h.expires_at, to_timestamp(c.until_ms / 1000))
      from cur c
      where h.number = c.number and h.hold_id = c.hold_id and h.active and h.expires_at > to_timestamp(c.now_ms / 1000)
      returning h.number, h.hold_id, h.expires_at
    )
    select c.i::int as i, c.visitor_id, r.number, r.hold_id, r.expires_at
    from cur c left join renewed r on r.number = c.number and r.hold_id = c.hold_id`;
  return inInputOrder(rows, requests.length).map((row) => ({
    visitor_id: row.visitor_id,
    held: row.number === null ? null : { number: row.number, hold_id: row.hold_id!, expires_at: row.expires_at! },
  }));
}

/** A heartbeat that missed the cache: renews the visitor's active hold on an active number. */
export async function renewByVisitor(
  sql: Sql,
  pool: string,
  visitor: string,
  now: Date,
  until: Date,
): Promise<(Held & { visitor_id: number }) | null> {
  const [row] = await sql<(Held & { visitor_id: number })[]>`
    with cur as (
      select h.number, h.hold_id, v.id as visitor_id
      from dni_visitors v cross join lateral (
        select number, hold_id from dni_holds h
        where h.visitor_id = v.id and h.pool_key = v.pool_key and h.active and h.expires_at > ${now}
        order by h.expires_at desc limit 1
      ) h
      where v.pool_key = ${pool} and v.visitor = ${visitor}
    ), r as (
      update dni_holds h set expires_at = greatest(h.expires_at, ${until})
      from cur where h.number = cur.number and h.hold_id = cur.hold_id and h.active and h.expires_at > ${now}
      returning h.number, h.hold_id, h.expires_at
    )
    select r.number, r.hold_id, r.expires_at, cur.visitor_id from r join cur on true`;
  return row ?? null;
}

/** Distinct advisory-lock namespace (first key of the two-key form) for pool allocation. */
const POOL_LOCK_NS = 727_005;

/** The pool's allocation lock, held to the end of the transaction, waited for as long as a request may (src/db/deadline.ts). */
const poolLock = (tx: Tx, pool: string) => tx`${waitingForTurn(tx)}, pg_advisory_xact_lock(${POOL_LOCK_NS}, hashtext(${pool}))`;

/** Takes the pool's allocation lock: the first statement of an allocation that records no visits. */
export const lockPool = (tx: Tx, pool: string): postgres.PendingQuery<postgres.Row[]> => tx`select ${poolLock(tx, pool)}`;

/** A place in a pool's free-number index: expiry (PostgreSQL's text of it), then number. */
export interface FreePosition {
  expiresAt: string;
  number: string;
}

export type Allocation = { kind: "held"; held: Held } | { kind: "exhausted" } | { kind: "capped" } | { kind: "raced" };

/**
 * A new visitor's hold may be refused for their address (the holds cap): at most `maxPerHolder`
 * live holds per holder hash per pool. Holders are the request's, in `visitorIds` order.
 */
export interface HoldsCap {
  holders: string[];
  maxPerHolder: number;
}

export interface AllocationRow {
  visitor_id: number;
  /** The number picked for the visitor (null: none free). */
  picked: string | null;
  /**
   * For a number picked from the free ones: its expiry when picked, as PostgreSQL's text (never
   * held numbers expire at -infinity, which no Date holds); with the number, its place in the
   * free index.
   */
  picked_expires: string | null;
  /** The hold made (null: the picked row changed under the pick; pick again). */
  number: string | null;
  /** Refused a new hold: its address holds the cap's number of live holds in the pool already. */
  capped: boolean;
  hold_id: number | null;
  expires_at: Date | null;
}

/**
 * Gives each of `visitorIds` (distinct) a number, inside a transaction that holds the pool's
 * advisory lock, so that allocators of one pool never pick the same free number. Each visitor
 * gets their own last number when nobody has taken it since (their hold, and its span in the
 * history, simply go on), else one of the pool's least recently released free numbers (never-held
 * numbers first), taken in order from the head of the pool's free-number index whatever the
 * pool's size. A number is free when its hold expired by `now`, as re-checked on the locked row: a
 * renewal that landed meanwhile (a write-behind batch, which takes no lock) leaves that visitor's
 * row with `picked` but no `number`, and the caller picks again.
 *
 * `after` is where the previous allocation of the pool stopped in the free-number index: the scan
 * starts past it. Every number taken leaves a dead entry at the head of that index until vacuum,
 * and a scan from the head steps over all of them (measured: 7 ms a batch after 40,000 leases).
 * Past the position nothing free is missed but a number added to the pool since (its entry sorts
 * first) or one re-activated: the caller scans from the head when this finds too few, and now
 * and then anyway.
 */
export function allocate(
  tx: Tx,
  pool: string,
  visitorIds: number[],
  now: Date,
  until: Date,
  after: FreePosition | null,
  cap: HoldsCap,
): postgres.PendingQuery<AllocationRow[]> {
  return tx<AllocationRow[]>`
    with req as (
      select * from unnest(${visitorIds}::bigint[], ${cap.holders}::text[]) with ordinality as r(visitor_id, holder, i)
    ), ${allocation(tx, pool, now, until, after, cap.maxPerHolder)}`;
}

/**
 * The first statement of an allocation for leases that missed the cache (distinct visitors of one
 * pool): records their visits (`recordVisits`), then takes the pool's advisory lock. The visits
 * are written before the lock, so that the lock is held for the allocation only (another
 * instance's allocation of the pool runs while this one writes its visits: measured, two
 * instances on one pool went from about 0.8 of one instance's rate to about 0.85); the
 * allocation that follows in the transaction gets its snapshot once the lock is granted. The
 * visitors' ids, in request order, are left for `allocateVisitors` in a setting local to the
 * transaction, because the allocation is sent with this statement, before its answer is back
 * (and a lookup of the rows by name, tried instead, was planned as a scan of all the visitors
 * by a generic plan made while the table was small).
 */
export function visitsOf(tx: Tx, pool: string, requests: VisitRequest[]): postgres.PendingQuery<postgres.Row[]> {
  return tx`
    with ${recordVisits(tx, requests)}
    select ${poolLock(tx, pool)} from (
      -- Evaluated first (offset 0 keeps the subquery apart): the visits are written before the lock.
      select set_config(${VISITOR_IDS}, (
        select array_agg(v.id order by r.i)::text from visit_req r join visited v on v.pool_key = r.pool_key and v.visitor = r.visitor
      ), true)
      offset 0
    ) ids`;
}

const VISITOR_IDS = "leadline.dni_visitor_ids";

/**
 * `allocate` for the visitors whose visits `visitsOf` has just written in the same transaction
 * (under the lock it took): each keeps their own number (a returning visitor's hold is renewed)
 * or gets a free one.
 */
export function allocateVisitors(
  tx: Tx,
  pool: string,
  now: Date,
  until: Date,
  after: FreePosition | null,
  cap: HoldsCap,
): postgres.PendingQuery<AllocationRow[]> {
  return tx<AllocationRow[]>`
    with req as (
      select * from unnest(current_setting(${VISITOR_IDS})::bigint[], ${cap.holders}::text[]) with ordinality as r(visitor_id, holder, i)
    ), ${allocation(tx, pool, now, until, after, cap.maxPerHolder)}`;
}

/**
 * The allocation proper, after a `req` of (visitor_id, holder, i): see `allocate`. The holds cap
 * is checked here, under the pool's lock (so concurrent allocators cannot both take an address's
 * last place), and only for visitors who need a new number: a returning visitor keeping their own
 * number is never capped. Each new visitor's holder's live holds are counted by an index range
 * of at most `maxPerHolder` rows; several new visitors of one holder in a batch take places in
 * request order.
 */
function allocation(
  tx: Tx,
  pool: string,
  now: Date,
  until: Date,
  after: FreePosition | null,
  maxPerHolder: number,
): postgres.PendingQuery<AllocationRow[]> {
  const past = after ? tx`and (expires_at, number) > (${after.expiresAt}::text::timestamptz, ${after.number})` : tx``;
  return tx`mine as (
      select r.visitor_id, h.number, h.hold_id
      from req r cross join lateral (
        select number, hold_id from dni_holds h
        where h.visitor_id = r.visitor_id and h.pool_key = ${pool} and h.active
        order by h.expires_at desc limit 1
      ) h
    ), fresh as (
      -- New visitors (no number of their own), each with their place among the batch's new
      -- visitors of the same holder, and whether that place is past the cap: the holder's live
      -- holds, counted by one index range of at most the cap's rows (the holder_hash <> '' test,
      -- true of every holder counted, lets the planner use the partial index), plus that place.
      -- No count without a holder (no cap configured).
      select r.visitor_id, r.i, r.holder, r.holder <> '' and (
        row_number() over (partition by r.holder order by r.i) + (
          select count(*) from (
            select 1 from dni_holds h
            where h.pool_key = ${pool} and h.active and h.holder_hash <> '' and h.holder_hash = r.holder and h.expires_at > ${now}
            limit ${maxPerHolder}
          ) l
        ) > ${maxPerHolder}
      ) as capped
      from req r where not exists (select 1 from mine m where m.visitor_id = r.visitor_id)
    ), need as (
      select f.visitor_id, f.holder, row_number() over (order by f.i) as k
      from fresh f where not f.capped
    ), free as (
      select f.number, f.hold_id, f.expires_at, row_number() over (order by f.expires_at, f.number) as k
      from (
        select number, hold_id, expires_at from dni_holds
        where pool_key = ${pool} and active and expires_at <= ${now} ${past}
          and number not in (select number from mine)
        order by expires_at, number
        limit (select count(*) from need)
      ) f
    ), pick as (
      select visitor_id, number, hold_id as old_hold, null::timestamptz as old_expires, true as mine, '' as holder from mine
      union all
      select n.visitor_id, f.number, f.hold_id, f.expires_at, false, n.holder from need n join free f using (k)
    ), up as (
      update dni_holds h set
        hold_id = case when pick.mine then pick.old_hold else nextval('dni_hold_ids') end,
        visitor_id = pick.visitor_id,
        expires_at = greatest(${until}, case when pick.mine then h.expires_at end),
        holder_hash = case when pick.mine then h.holder_hash else pick.holder end
      from pick
      where h.number = pick.number and h.pool_key = ${pool} and h.active
        and (h.expires_at <= ${now} or (pick.mine and h.hold_id = pick.old_hold and h.visitor_id = pick.visitor_id))
      returning h.visitor_id, h.number, h.hold_id, h.expires_at
    ), hist as (
      -- One upsert on the primary key records the new holds, moves a continuing hold's expiry, and
      -- ends for good the hold a number was taken from (its row keeps the final expiry; that row
      -- always exists, so its values here are never inserted, and were it missing the row would
      -- span no time and no call would find it). An UPDATE joined to the history
      -- was planned, while the table was still small, as a scan of all of it, and the cached plan
      -- kept scanning as the table grew (measured: 3-6 ms a batch at 20,000 holds).
      insert into dni_hold_history (id, pool_key, number, visitor_id, started_at, expires_at)
      select hold_id, ${pool}, number, visitor_id, ${now}, expires_at from up
      union all
      select p.old_hold, ${pool}, p.number, p.visitor_id, p.old_expires, p.old_expires
      from pick p join up on up.number = p.number
      where not p.mine and p.old_hold <> 0
      on conflict (id) do update set expires_at = excluded.expires_at
    )
    select r.visitor_id, pick.number as picked, pick.old_expires::text as picked_expires, up.number, up.hold_id, up.expires_at,
           coalesce(f.capped, false) as capped
    from req r left join pick on pick.visitor_id = r.visitor_id left join up on up.visitor_id = r.visitor_id
    left join fresh f on f.visitor_id = r.visitor_id
    order by r.i`;
}

export interface Renewal {
  pool_key: string;
  hold_id: number;
  number: string;
  until_ms: number;
}

/** What a batch of renewals did: the holds extended (with their expiry now) and those passed over, locked elsewhere. */
export interface Renewed {
  extended: { hold_id: number; expires_at: Date }[];
  /** Rows another transaction held (an allocation of the pool): to be written again shortly. */
  busy: number[];
}

/**
 * A write-behind batch of renewals (dni_holds only): each extends its hold only while the hold is
 * still the one renewed (same hold_id: nobody took the number since) and its number is still active
 * in the hold's pool. A hold neither extended nor busy was lost (taken over after expiring, or its
 * number removed from the pool).
 *
 * In statements of RENEW_CHUNK holds, one after another, each skipping the rows another
 * transaction has locked (reported busy, for the next write) rather than waiting for them: a
 * statement holds its rows' locks until it ends, and an allocation of the same pool that met one
 * waited for all of it. 65,000 renewals written at once (a load that moved: every visitor's
 * renewals due in the same second) held them for 150 ms, and waiting in turn on allocations made
 * each chunk slower still: the new-visitor leases' p99 (bench/dni.ts). Rows are locked in number
 * order, chunk after chunk, so two instances never lock in opposite orders.
 */
export async function renewHolds(sql: Sql, renewals: Renewal[]): Promise<Renewed> {
  const done: Renewed = { extended: [], busy: [] };
  if (renewals.length === 0) return done;
  const sorted = [...renewals].sort((a, b) => (a.number < b.number ? -1 : a.number > b.number ? 1 : 0));
  for (let i = 0; i < sorted.length; i += RENEW_CHUNK) {
    for (const row of await renewChunk(sql, sorted.slice(i, i + RENEW_CHUNK))) {
      if (row.busy) done.busy.push(row.hold_id);
      else done.extended.push({ hold_id: row.hold_id, expires_at: row.expires_at! });
    }
  }
  return done;
}

/** Holds renewed per statement (renewHolds). */
export const RENEW_CHUNK = 2000;

function renewChunk(sql: Sql, sorted: Renewal[]) {
  return sql<{ hold_id: number; expires_at: Date | null; busy: boolean }[]>`
    with u as (
      select * from unnest(${sorted.map((r) => r.hold_id)}::bigint[], ${sorted.map((r) => r.number)}::text[],
                           ${sorted.map((r) => r.pool_key)}::text[], ${sorted.map((r) => r.until_ms)}::float8[])
        as u(hold_id, number, pool_key, until_ms)
    ), locked as (
      -- Rows locked in number order (the sort sits below the lock), whatever the join's plan.
      select h.number, u.hold_id, u.pool_key, u.until_ms
      from u join dni_holds h on h.number = u.number
      order by h.number for update of h skip locked
    ), r as (
      update dni_holds h set expires_at = greatest(h.expires_at, to_timestamp(l.until_ms / 1000))
      from locked l
      where h.number = l.number and h.hold_id = l.hold_id and h.pool_key = l.pool_key and h.active
      returning h.hold_id, h.expires_at
    )
    select hold_id, expires_at, false as busy from r
    union all
    -- Passed over, or no such number (lost: the next write finds it missing and says so).
    select u.hold_id, null, true from u where not exists (select 1 from locked l where l.number = u.number)
      and exists (select 1 from dni_holds h where h.number = u.number)`;
}

export interface VisitTouch {
  visitor_id: number;
  at_ms: number;
  user_agent: string | null;
  ip_hash: string;
}

/**
 * A write-behind batch of returning visits: visit time, user agent and address hash. A visit older
 * than the one recorded (batches of two instances, or a visit recorded through the database
 * meanwhile) moves nothing back.
 */
export async function touchVisitors(sql: Sql, touches: VisitTouch[]): Promise<void> {
  if (touches.length === 0) return;
  const sorted = [...touches].sort((a, b) => a.visitor_id - b.visitor_id);
  await sql`
    with w as (
      select * from unnest(${sorted.map((t) => t.visitor_id)}::bigint[], ${sorted.map((t) => t.at_ms)}::float8[],
                           ${sorted.map((t) => t.user_agent)}::text[], ${sorted.map((t) => t.ip_hash)}::text[])
        as w(id, at_ms, ua, ip)
    ), locked as (
      select x.id, to_timestamp(w.at_ms / 1000) as at, w.ua, w.ip
      from w join dni_visitors x on x.id = w.id order by x.id for update of x
    )
    update dni_visitors x set last_visit_at = greatest(x.last_visit_at, l.at),
                              user_agent = case when l.at >= x.last_visit_at then l.ua else x.user_agent end,
                              ip_hash = case when l.at >= x.last_visit_at then l.ip else x.ip_hash end
    from locked l
    where x.id = l.id`;
}

export interface EventRow extends BrowserEvent {
  pool_key: string;
  visitor: string;
  at_ms: number;
}

export async function insertEvents(sql: Sql, rows: EventRow[]): Promise<void> {
  if (rows.length === 0) return;
  await sql`
    insert into dni_events (pool_key, visitor, kind, name, value, meta, created_at)
    select pool_key, visitor, kind, name, value, meta::jsonb, to_timestamp(at_ms / 1000)
    from unnest(${rows.map((r) => r.pool_key)}::text[], ${rows.map((r) => r.visitor)}::text[],
                ${rows.map((r) => r.kind)}::text[], ${rows.map((r) => r.name)}::text[],
                ${rows.map((r) => r.value)}::float8[], ${rows.map((r) => r.meta)}::text[],
                ${rows.map((r) => r.at_ms)}::float8[])
      as e(pool_key, visitor, kind, name, value, meta, at_ms)`;
}
