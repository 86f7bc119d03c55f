-- Attribution outward (operations.md §5, §6, §8): the click ids besides gclid, the first touch
-- kept with calls and leads as events carry it, and the Google Ads conversion feeds.

-- Written by a visitor's first lease only, like gclid (first touch). Fast defaults: no rewrite.
alter table dni_visitors
  add column gbraid  text not null default '',
  add column wbraid  text not null default '',
  add column fbclid  text not null default '',
  add column msclkid text not null default '';

-- The first touch of the visitor behind a call (its own, from the hold of its to_number) and the
-- one a lead was first given (an intake's dni_visitor, else its first attributed call), as the
-- events' `attribution` object: copies, because visitors are pruned (0012) and a lead keeps its
-- first attribution for good. A lead's is written once (coalesce), never replaced.
alter table calls add column attribution jsonb;
alter table leads add column attribution jsonb;

-- Calls attributed before this migration get their visitor's first touch (the visitor is kept as
-- long as a call of the retention period names it), and their leads the first of those from a pool
-- of the lead's organization, as calls.php now gives them (src/calls/queries.ts). Both walk only
-- attributed calls (calls_visit, 0012).
update calls c set attribution = jsonb_build_object(
  'pool', v.pool_key, 'visitor', v.visitor,
  'source', nullif(v.utm_source, ''), 'medium', nullif(v.utm_medium, ''), 'campaign', nullif(v.utm_campaign, ''),
  'term', nullif(v.utm_term, ''), 'content', nullif(v.utm_content, ''),
  'gclid', nullif(v.gclid, ''), 'gbraid', null, 'wbraid', null, 'fbclid', null, 'msclkid', null,
  'landing', nullif(v.landing, ''), 'referrer', nullif(v.referrer, ''),
  'first_seen_at', to_char(v.first_visit_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
from dni_visitors v
where c.visit_id is not null and v.id = c.visit_id;

update leads l set attribution = f.attribution
from (
  select distinct on (c.lead_id) c.lead_id, c.attribution
  from calls c join leads cl on cl.id = c.lead_id join dni_pools p on p.key = c.dni_pool
  where c.visit_id is not null and c.attribution is not null and p.org_id is not distinct from cl.org_id
  order by c.lead_id, c.occurred_at, c.id
) f
where l.id = f.lead_id;

-- A Google Ads offline click-conversion feed of one organization (src/conversions/): fetched over
-- HTTPS with Basic auth (user: id, password: the secret). The secret is kept only as its SHA-256,
-- compared in constant time. `actions`: [{name, on, min_secs, value, currency}], as provisioned.
create table conversion_feeds (
  id          text primary key,
  org_id      bigint not null references orgs (id),
  secret_hash bytea not null,
  actions     jsonb not null,
  created_at  timestamptz not null default now(),
  updated_at  timestamptz not null default now()
);

-- The feed reads each kind of conversion by spans of time (src/conversions/queries.ts): new leads
-- with a gclid by organization and time; bookings by time. Calls read calls_time (0017).
create index leads_gclid on leads (org_id, created_at, id) where (attribution->>'gclid') is not null;
create index appointments_created on appointments (created_at, id);
