-- Dynamic number insertion: visitors with their first-touch attribution, holds of pool numbers,
-- the history of every hold (so a call at time T finds who held the number then), browser events,
-- and the attribution kept with each call. Pools and their numbers are 0001's dni_pools and
-- dni_numbers; a number removed from a pool is deactivated there, never deleted, so old holds and
-- calls keep pointing at something real.

-- One row per visitor id per pool (the id lives in a cookie on the customer's site). The UTM,
-- click, landing and referrer columns are written by the first lease only (first touch); later
-- leases move last_visit_at, user_agent and ip_hash. ip_hash is SHA-1 of the salt and the address:
-- raw addresses are never stored.
create table dni_visitors (
  id             bigserial primary key,
  pool_key       text not null references dni_pools (key),
  visitor        text not null,
  utm_source     text not null default '',
  utm_medium     text not null default '',
  utm_campaign   text not null default '',
  utm_term       text not null default '',
  utm_content    text not null default '',
  gclid          text not null default '',
  landing        text not null default '',
  referrer       text not null default '',
  user_agent     text not null default '',
  ip_hash        text not null default '',
  first_visit_at timestamptz not null,
  last_visit_at  timestamptz not null,
  unique (pool_key, visitor)
);
create index dni_visitors_last_visit on dni_visitors (last_visit_at);

-- Every hold ever made: its id is the hold's identity (dni_holds.hold_id). While a hold is its
-- number's current one, its live expiry is dni_holds.expires_at (renewals write only there);
-- expires_at here is its expiry when it was made, and its final one once another visitor takes the
-- number (the allocation writes it). dni_hold_spans (below) gives every hold's span either way.
-- Call attribution reads the spans, so a call still finds its visitor after the hold has expired
-- or the number has moved on. visitor_id has no foreign key: allocation takes it from the visitor
-- row it has just written (visitors are never deleted), and the check's key-share lock on that row,
-- which the visit batches are writing at the same time, cut new-visitor allocation to a third
-- (measured: 1,900 → 4,100 allocations/s at 32 concurrent leases, 1,100 → 6,000 at 128).
create sequence dni_hold_ids;
create table dni_hold_history (
  id         bigint primary key default nextval('dni_hold_ids'),
  pool_key   text not null,
  number     text not null,
  visitor_id bigint not null,
  started_at timestamptz not null,
  expires_at timestamptz not null
);
create index dni_hold_history_number on dni_hold_history (number, started_at desc);

-- One row per pool number: its current (or last) hold. A number is free when its expires_at has
-- passed; the row of an expired hold is kept, because its expires_at is the time the number was
-- released, and allocation takes the least recently released free number first (a recycled number
-- is then the one least likely to receive a late call meant for its previous visitor). A number
-- never held has hold_id 0, no visitor and expires_at -infinity, so it comes first of all. (No
-- visitor is null, not a 0: with a placeholder id the statistics took `visitor_id = $1` to match
-- every never-held row, and generic plans scanned the whole pool for one visitor's hold.)
-- Keyed by number alone, across pools: a number moved to another pool stays busy until the hold
-- made in its old pool ends. `pool_key` and `active` mirror the number's active dni_numbers row
-- (the trigger below), so the free numbers of a pool are one index range and the hot statements
-- need no join.
-- Only two kinds of statement write holds: allocation under the pool's advisory lock, which takes
-- a row only while `expires_at <= now`, and renewal, which touches a row only while `hold_id` is
-- still the renewer's; both are conditional updates that PostgreSQL re-checks on the row it locks,
-- so neither can overwrite the other's outcome. (hold_id has no foreign key: the history row is
-- written from this row's RETURNING in the same statement.)
create table dni_holds (
  number     text primary key,
  pool_key   text not null,
  active     boolean not null,
  hold_id    bigint not null default 0,
  visitor_id bigint,
  expires_at timestamptz not null default '-infinity'
);
create index dni_holds_free on dni_holds (pool_key, expires_at, number) where active;
create index dni_holds_visitor on dni_holds (visitor_id);

-- Provisioning inserts, (re)activates and deactivates numbers; their hold rows follow. A number
-- moves between pools by a deactivation in one and an activation in the other (provisioning runs
-- them in that order): the row then belongs to the new pool, and a hold still running from the
-- old pool keeps it busy until it expires (its visitor's renewals fail: wrong pool).
create function dni_numbers_follow() returns trigger language plpgsql as $$
begin
  if new.active then
    insert into dni_holds (number, pool_key, active) values (new.number, new.pool_key, true)
    on conflict (number) do update set pool_key = excluded.pool_key, active = true
    where (dni_holds.pool_key, dni_holds.active) is distinct from (excluded.pool_key, true);
  else
    update dni_holds set active = false where number = new.number and pool_key = new.pool_key and active;
  end if;
  return null;
end $$;

create trigger dni_numbers_follow after insert or update of active, pool_key on dni_numbers
  for each row execute function dni_numbers_follow();

insert into dni_holds (number, pool_key, active)
select number, pool_key, true from dni_numbers where active
on conflict (number) do nothing;

-- Each hold's span [started_at, ends_at): the live expiry for a current hold, the recorded one
-- for a past hold.
create view dni_hold_spans as
select x.id, x.pool_key, x.number, x.visitor_id, x.started_at,
       case when h.hold_id = x.id then h.expires_at else x.expires_at end as ends_at
from dni_hold_history x left join dni_holds h on h.number = x.number;

-- Browser events (dni.php action=event). Joined to visitors by (pool_key, visitor), so an event
-- that arrives before its visitor's first lease still counts in the report.
create table dni_events (
  id         bigserial primary key,
  pool_key   text not null,
  visitor    text not null,
  kind       text not null check (kind in ('pageview', 'form', 'custom')),
  name       text not null default '',
  value      double precision not null default 0,
  meta       jsonb,
  created_at timestamptz not null
);
create index dni_events_pool_time on dni_events (pool_key, created_at);

-- Attribution kept with a call whose to_number was a pool number: copies, so the call reads the
-- same however the visitor row changes later. visit_id (0001) is the dni_visitors id.
alter table calls
  add column dni_pool     text,
  add column dni_visitor  text,
  add column utm_source   text,
  add column utm_medium   text,
  add column utm_campaign text,
  add column utm_term     text,
  add column utm_content  text,
  add column gclid        text,
  add column landing      text;
create index calls_dni_pool on calls (dni_pool, occurred_at) where dni_pool is not null;
