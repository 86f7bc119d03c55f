-- The attribution report's rollup (issue 30, docs/reports.md "Attribution"): what the report reads
-- instead of joining visitors, calls, leads and appointments at request time (683 ms for 30 days at
-- 200,000 leads, growing with the period and the organization; bench/RESULTS.md "Reports").
--
-- Kept by triggers in the transaction that writes each fact, as report_daily (sql/0027) is, but
-- with the report's own semantics, which read the facts as they are now: a lead given its first
-- touch later, moved to another organization or deleted moves its lead, its calls and its
-- appointments with it; a pruned visitor leaves the figures. The one thing that does not move by
-- itself is the day of a fact: it is the organization's day in its zone when the fact was counted
-- (a zone change is followed by report_rebuild(org), as for Today).

-- (organization, its day, fact, first touch, secs_from) → n, in stripes as report_daily's (a writer
-- adds to a stripe no other transaction holds, so concurrent writers never wait on one row).
--   fact       visitor | call | lead | appointment
--   touch      the first touch's key: the SHA-256 of its four texts, named in report_touches (a
--              narrow key: the report hashes 32 bytes a row, not four texts, and landing pages can
--              be longer than a btree entry)
--   secs_from  calls only: the largest of the organization's marks (report_touch_marks) at or
--              below the call's secs, so that "calls of at least min_secs" (a conversion action's
--              value) and "answered" (secs >= 1) are sums of rows; -1 below 0; 0 for other facts.
create table report_touch_daily (
  org_id    bigint not null,
  day       date not null,
  fact      text not null,
  touch     bytea not null,
  secs_from integer not null default 0,
  stripe    bigint not null,
  n         bigint not null default 0,
  primary key (org_id, day, fact, touch, secs_from, stripe)
);
create sequence report_touch_stripe;

-- Each first touch's texts, by its key (the same texts make the same key in every organization;
-- the counts are per organization). Written once, the first time a touch is counted: a writer
-- counting a touch that another transaction is writing here for the first time waits for it.
create table report_touches (
  touch    bytea primary key,
  source   text not null,
  medium   text not null,
  campaign text not null,
  landing  text not null
);

-- What each call and appointment was counted as. Their touch and organization come from another
-- row (the lead's, the calendar's), which can change in the same statement as the call (intake of
-- a call gives its lead the first touch in one statement, src/calls/queries.ts): taking back
-- exactly what was added, whatever order the triggers run in, needs the record of what that was.
create table report_touch_facts (
  kind      text not null check (kind in ('call', 'appointment')),
  id        bigint not null,
  org_id    bigint not null,
  day       date not null,
  touch     bytea not null,
  secs_from integer not null,
  primary key (kind, id)
);
create index report_touch_facts_org on report_touch_facts (org_id, kind);

-- An organization's call marks: 0, 1 and the min_secs of its conversion feeds' call actions. A
-- change of marks (a feed written with a new min_secs) recounts the organization's calls.
create table report_touch_marks (
  org_id bigint primary key,
  marks  integer[] not null
);

create function report_touch_key(p_source text, p_medium text, p_campaign text, p_landing text) returns bytea
language sql immutable as $$
  select sha256(convert_to(jsonb_build_array(p_source, p_medium, p_campaign, p_landing)::text, 'UTF8'))
$$;

-- A first touch's key, its texts recorded in report_touches.
create function report_touch_name(p_source text, p_medium text, p_campaign text, p_landing text) returns bytea
language plpgsql as $$
declare
  k bytea := report_touch_key(p_source, p_medium, p_campaign, p_landing);
begin
  perform 1 from report_touches where touch = k;
  if not found then
    insert into report_touches (touch, source, medium, campaign, landing)
    values (k, p_source, p_medium, p_campaign, p_landing) on conflict do nothing;
  end if;
  return k;
end $$;

create function report_secs_from(p_marks integer[], p_secs integer) returns integer language sql immutable as $$
  select coalesce(max(m), -1) from unnest(p_marks) m where m <= p_secs
$$;

create function report_touch_marks_now(p_org bigint) returns integer[] language sql stable as $$
  select array_agg(distinct m order by m) from (
    select 0 union all select 1
    union all
    select coalesce((a->>'min_secs')::int, 0)
    from conversion_feeds f cross join lateral jsonb_array_elements(f.actions) a
    where f.org_id = p_org and a->>'on' = 'call'
  ) x(m)
$$;

create function report_touch_marks_of(p_org bigint) returns integer[] language sql stable as $$
  select coalesce((select marks from report_touch_marks where org_id = p_org), '{0,1}')
$$;

-- Adds to a counter without ever waiting for another writer (report_add's way, sql/0027).
create function report_touch_add(p_org bigint, p_day date, p_fact text, p_touch bytea, p_secs_from integer, p_n bigint) returns void
language plpgsql as $$
declare
  free bigint;
begin
  if p_org is null or p_day is null or p_n = 0 then
    return;
  end if;
  select s.stripe into free from report_touch_daily s
  where s.org_id = p_org and s.day = p_day and s.fact = p_fact and s.touch = p_touch and s.secs_from = p_secs_from
  limit 1 for update skip locked;
  if found then
    update report_touch_daily set n = n + p_n
    where org_id = p_org and day = p_day and fact = p_fact and touch = p_touch and secs_from = p_secs_from and stripe = free;
  else
    insert into report_touch_daily (org_id, day, fact, touch, secs_from, stripe, n)
    values (p_org, p_day, p_fact, p_touch, p_secs_from, nextval('report_touch_stripe'), p_n);
  end if;
end $$;

-- A call or an appointment counted anew: what it was counted as is taken back, and it is counted
-- as it is now (nothing when it is gone or has no touch). The lead it reads is locked FOR SHARE:
-- a transaction giving that lead its first touch, or moving it, waits for this one (and then
-- recounts the lead's calls, this one included), or this one waits for it and reads the lead as it
-- left it; without the lock, each could count the other's lead or call as it was before.
create function report_touch_fact(p_kind text, p_id bigint) returns void language plpgsql as $$
declare
  was report_touch_facts;
  v_lead bigint;
  v_org bigint;
  v_at timestamptz;
  v_touch jsonb;
  v_secs integer;
  v_from integer := 0;
begin
  delete from report_touch_facts where kind = p_kind and id = p_id returning * into was;
  if found then
    perform report_touch_add(was.org_id, was.day, p_kind, was.touch, was.secs_from, -1);
  end if;
  if p_kind = 'call' then
    select c.lead_id into v_lead from calls c where c.id = p_id;
    if v_lead is not null then
      perform 1 from leads where id = v_lead for share;
    end if;
    select coalesce(l.org_id, k.org_id), c.occurred_at, case when c.lead_id is null then c.attribution else l.attribution end, c.secs
      into v_org, v_at, v_touch, v_secs
    from calls c left join leads l on l.id = c.lead_id left join api_keys k on k.id = c.key_id
    where c.id = p_id;
    if v_org is not null then
      v_from := report_secs_from(report_touch_marks_of(v_org), v_secs);
    end if;
  else
    select ap.lead_id into v_lead from appointments ap where ap.id = p_id;
    if v_lead is not null then
      perform 1 from leads where id = v_lead for share;
    end if;
    select cal.org_id, ap.created_at, l.attribution into v_org, v_at, v_touch
    from appointments ap join calendars cal on cal.id = ap.calendar_id join leads l on l.id = ap.lead_id
    where ap.id = p_id and l.org_id = cal.org_id;
  end if;
  if v_org is null or v_touch is null then
    return;
  end if;
  insert into report_touch_facts (kind, id, org_id, day, touch, secs_from)
  values (p_kind, p_id, v_org, report_day(v_org, v_at),
          report_touch_name(coalesce(v_touch->>'source', ''), coalesce(v_touch->>'medium', ''),
                            coalesce(v_touch->>'campaign', ''), coalesce(v_touch->>'landing', '')), v_from)
  returning * into was;
  perform report_touch_add(was.org_id, was.day, p_kind, was.touch, was.secs_from, 1);
end $$;

create function report_touch_call() returns trigger language plpgsql as $$
begin
  perform report_touch_fact('call', case when tg_op = 'DELETE' then old.id else new.id end);
  return null;
end $$;

create trigger calls_touch_insert after insert on calls for each row execute function report_touch_call();
create trigger calls_touch_update after update of lead_id, key_id, secs, occurred_at, attribution on calls
  for each row when ((old.lead_id, old.key_id, old.secs, old.occurred_at, old.attribution)
                     is distinct from (new.lead_id, new.key_id, new.secs, new.occurred_at, new.attribution))
  execute function report_touch_call();
create trigger calls_touch_delete after delete on calls for each row execute function report_touch_call();

create function report_touch_appointment() returns trigger language plpgsql as $$
begin
  perform report_touch_fact('appointment', case when tg_op = 'DELETE' then old.id else new.id end);
  return null;
end $$;

create trigger appointments_touch_insert after insert on appointments
  for each row when (new.lead_id is not null) execute function report_touch_appointment();
create trigger appointments_touch_update after update of lead_id, calendar_id, created_at on appointments
  for each row when ((old.lead_id, old.calendar_id, old.created_at) is distinct from (new.lead_id, new.calendar_id, new.created_at))
  execute function report_touch_appointment();
create trigger appointments_touch_delete after delete on appointments for each row execute function report_touch_appointment();

-- A lead counts by its own row; its calls and appointments follow its touch and organization.
-- Deleted, its calls go with it (calls.lead_id cascades: their delete triggers take them back)
-- and its appointments lose it (set null: their update triggers take them back).
create function report_touch_lead() returns trigger language plpgsql as $$
begin
  if tg_op <> 'INSERT' and old.org_id is not null and old.attribution is not null then
    perform report_touch_add(old.org_id, report_day(old.org_id, old.created_at), 'lead',
                             report_touch_key(coalesce(old.attribution->>'source', ''), coalesce(old.attribution->>'medium', ''),
                                              coalesce(old.attribution->>'campaign', ''), coalesce(old.attribution->>'landing', '')), 0, -1);
  end if;
  if tg_op <> 'DELETE' and new.org_id is not null and new.attribution is not null then
    perform report_touch_add(new.org_id, report_day(new.org_id, new.created_at), 'lead',
                             report_touch_name(coalesce(new.attribution->>'source', ''), coalesce(new.attribution->>'medium', ''),
                                               coalesce(new.attribution->>'campaign', ''), coalesce(new.attribution->>'landing', '')), 0, 1);
  end if;
  if tg_op = 'UPDATE' and (old.org_id, old.attribution) is distinct from (new.org_id, new.attribution) then
    perform report_touch_fact('call', c.id) from calls c where c.lead_id = new.id;
    perform report_touch_fact('appointment', a.id) from appointments a where a.lead_id = new.id;
  end if;
  return null;
end $$;

create trigger leads_touch_insert after insert on leads
  for each row when (new.org_id is not null and new.attribution is not null) execute function report_touch_lead();
create trigger leads_touch_update after update of org_id, attribution, created_at on leads
  for each row when ((old.org_id, old.attribution, old.created_at) is distinct from (new.org_id, new.attribution, new.created_at))
  execute function report_touch_lead();
create trigger leads_touch_delete after delete on leads
  for each row when (old.org_id is not null and old.attribution is not null) execute function report_touch_lead();

-- A visitor counts in its pool's organization, by its own UTM and landing page.
create function report_touch_visitor() returns trigger language plpgsql as $$
declare
  org bigint;
begin
  if tg_op <> 'INSERT' then
    select p.org_id into org from dni_pools p where p.key = old.pool_key;
    perform report_touch_add(org, report_day(org, old.first_visit_at), 'visitor',
                             report_touch_key(old.utm_source, old.utm_medium, old.utm_campaign, old.landing), 0, -1);
  end if;
  if tg_op <> 'DELETE' then
    select p.org_id into org from dni_pools p where p.key = new.pool_key;
    perform report_touch_add(org, report_day(org, new.first_visit_at), 'visitor',
                             report_touch_name(new.utm_source, new.utm_medium, new.utm_campaign, new.landing), 0, 1);
  end if;
  return null;
end $$;

create trigger dni_visitors_touch_insert after insert on dni_visitors for each row execute function report_touch_visitor();
create trigger dni_visitors_touch_update after update of pool_key, first_visit_at, utm_source, utm_medium, utm_campaign, landing
  on dni_visitors
  for each row when ((old.pool_key, old.first_visit_at, old.utm_source, old.utm_medium, old.utm_campaign, old.landing)
                     is distinct from (new.pool_key, new.first_visit_at, new.utm_source, new.utm_medium, new.utm_campaign, new.landing))
  execute function report_touch_visitor();
create trigger dni_visitors_touch_delete after delete on dni_visitors for each row execute function report_touch_visitor();

-- A pool, a calendar or an API key given to another organization takes its visitors, appointments
-- or lead-less calls with it (rare: provisioning; each recounts that one row's facts).
create function report_touch_pool() returns trigger language plpgsql as $$
declare
  r record;
begin
  for r in select first_visit_at, utm_source, utm_medium, utm_campaign, landing from dni_visitors where pool_key = new.key loop
    perform report_touch_add(old.org_id, report_day(old.org_id, r.first_visit_at), 'visitor',
                             report_touch_key(r.utm_source, r.utm_medium, r.utm_campaign, r.landing), 0, -1);
    perform report_touch_add(new.org_id, report_day(new.org_id, r.first_visit_at), 'visitor',
                             report_touch_name(r.utm_source, r.utm_medium, r.utm_campaign, r.landing), 0, 1);
  end loop;
  return null;
end $$;

create trigger dni_pools_touch_update after update of org_id on dni_pools
  for each row when (old.org_id is distinct from new.org_id) execute function report_touch_pool();

create function report_touch_calendar() returns trigger language plpgsql as $$
begin
  perform report_touch_fact('appointment', a.id) from appointments a where a.calendar_id = new.id and a.lead_id is not null;
  return null;
end $$;

create trigger calendars_touch_update after update of org_id on calendars
  for each row when (old.org_id is distinct from new.org_id) execute function report_touch_calendar();

create function report_touch_key_org() returns trigger language plpgsql as $$
begin
  perform report_touch_fact('call', c.id) from calls c where c.key_id = new.id;
  return null;
end $$;

create trigger api_keys_touch_update after update of org_id on api_keys
  for each row when (old.org_id is distinct from new.org_id) execute function report_touch_key_org();

-- Every count of one organization's (null: all) rollup, recomputed set by set from the facts as
-- they are now, in its zone now. The fact tables are locked against writes (SHARE) meanwhile.
create function report_touch_rebuild(p_org bigint) returns void language plpgsql as $$
begin
  lock table leads, calls, appointments, dni_visitors, dni_pools, calendars, api_keys, conversion_feeds in share mode;
  delete from report_touch_daily where p_org is null or org_id = p_org;
  delete from report_touch_facts where p_org is null or org_id = p_org;
  delete from report_touch_marks where p_org is null or org_id = p_org;

  create temp table report_touch_zones on commit drop as
    select id as org_id, report_zone(timezone) as tz from orgs where p_org is null or id = p_org;
  insert into report_touch_marks (org_id, marks)
  select z.org_id, report_touch_marks_now(z.org_id) from report_touch_zones z
  where report_touch_marks_now(z.org_id) <> '{0,1}';

  -- Every fact counted, with its touch's texts.
  create temp table report_touch_all on commit drop as
    select 'call'::text as kind, c.id, c.org_id, (c.occurred_at at time zone z.tz)::date as day,
           coalesce(c.a->>'source', '') as source, coalesce(c.a->>'medium', '') as medium,
           coalesce(c.a->>'campaign', '') as campaign, coalesce(c.a->>'landing', '') as landing,
           report_secs_from(coalesce(m.marks, '{0,1}'), c.secs) as secs_from
    from (select c.id, coalesce(l.org_id, k.org_id) as org_id, c.occurred_at, c.secs,
                 case when c.lead_id is null then c.attribution else l.attribution end as a
          from calls c left join leads l on l.id = c.lead_id left join api_keys k on k.id = c.key_id) c
    join report_touch_zones z on z.org_id = c.org_id
    left join report_touch_marks m on m.org_id = c.org_id
    where c.a is not null
    union all
    select 'appointment', ap.id, cal.org_id, (ap.created_at at time zone z.tz)::date, coalesce(l.attribution->>'source', ''),
           coalesce(l.attribution->>'medium', ''), coalesce(l.attribution->>'campaign', ''), coalesce(l.attribution->>'landing', ''), 0
    from appointments ap join calendars cal on cal.id = ap.calendar_id join leads l on l.id = ap.lead_id
    join report_touch_zones z on z.org_id = cal.org_id
    where l.org_id = cal.org_id and l.attribution is not null
    union all
    select 'visitor', v.id, p.org_id, (v.first_visit_at at time zone z.tz)::date, v.utm_source, v.utm_medium, v.utm_campaign, v.landing, 0
    from dni_visitors v join dni_pools p on p.key = v.pool_key join report_touch_zones z on z.org_id = p.org_id
    union all
    select 'lead', l.id, l.org_id, (l.created_at at time zone z.tz)::date, coalesce(l.attribution->>'source', ''),
           coalesce(l.attribution->>'medium', ''), coalesce(l.attribution->>'campaign', ''), coalesce(l.attribution->>'landing', ''), 0
    from leads l join report_touch_zones z on z.org_id = l.org_id
    where l.attribution is not null;

  create temp table report_touch_names on commit drop as
    select d.source, d.medium, d.campaign, d.landing, report_touch_key(d.source, d.medium, d.campaign, d.landing) as touch
    from (select distinct source, medium, campaign, landing from report_touch_all) d;
  insert into report_touches (touch, source, medium, campaign, landing)
  select touch, source, medium, campaign, landing from report_touch_names
  on conflict do nothing;

  insert into report_touch_facts (kind, id, org_id, day, touch, secs_from)
  select a.kind, a.id, a.org_id, a.day, t.touch, a.secs_from
  from report_touch_all a join report_touch_names t using (source, medium, campaign, landing)
  where a.kind in ('call', 'appointment');

  insert into report_touch_daily (org_id, day, fact, touch, secs_from, stripe, n)
  select x.org_id, x.day, x.kind, x.touch, x.secs_from, nextval('report_touch_stripe'), x.n
  from (select a.org_id, a.day, a.kind, t.touch, a.secs_from, count(*) as n
        from report_touch_all a join report_touch_names t using (source, medium, campaign, landing)
        group by 1, 2, 3, 4, 5) x;

  drop table report_touch_names;
  drop table report_touch_all;
  drop table report_touch_zones;
end $$;

-- A feed written with other call marks recounts its organization's calls (by the rebuild: the
-- calls' secs are needed again). Rare (provisioning), and it holds the fact tables meanwhile.
create function report_touch_feeds() returns trigger language plpgsql as $$
declare
  org bigint;
begin
  for org in select distinct x from unnest(array[case when tg_op <> 'INSERT' then old.org_id end,
                                                  case when tg_op <> 'DELETE' then new.org_id end]) x where x is not null loop
    if report_touch_marks_now(org) is distinct from report_touch_marks_of(org) then
      perform report_touch_rebuild(org);
    end if;
  end loop;
  return null;
end $$;

create trigger conversion_feeds_touch after insert or update of org_id, actions or delete on conversion_feeds
  for each row execute function report_touch_feeds();

-- One rebuild for every report: Today's rollups (sql/0027, renamed) and this one.
alter function report_rebuild(bigint) rename to report_daily_rebuild;
create function report_rebuild(p_org bigint) returns void language plpgsql as $$
begin
  perform report_daily_rebuild(p_org);
  perform report_touch_rebuild(p_org);
end $$;

select report_touch_rebuild(null);

-- The Today page's "still waiting" count (src/reports/queries.ts waitingByDay) read the day's open
-- asks through report_asks_day and fetched each row from the heap for its lead and time, then
-- probed the primary key for an earlier ask of the lead: 67% of the page's database time at
-- 200,000 leads (bench/RESULTS.md). With lead_id and at in the index, the day's asks are read from
-- the index alone (an index-only scan where the visibility map allows), and the index replaces
-- report_asks_day (same leading columns), so what an ask costs its writer stays one index entry.
create index report_asks_day_lead on report_asks (org_id, day, lead_id, at);
drop index report_asks_day;
