-- The Today page's three counts that were read by counting rows at request time become counters
-- kept where their rows are written (issue 30, bench/RESULTS.md "Reports": at 1,000,000 leads the
-- page spent 63% of its database time on "still waiting", probing 17,641 open asks for an earlier
-- one of their lead, and 26% on "conversations handled", a count(distinct) over 21,350 rows):
--
--   waiting        dim: ''       n: leads whose earliest open ask is on that day (the old query:
--                                   a day's asks with no earlier ask of their lead)
--   conversations  dim: ''       n: distinct leads a person replied to or spoke with that day
--   handled        dim: agent    n: the leads that agent replied to or spoke with that day
--
-- Each is a counter in report_daily (striped, so writers never wait for each other there).
-- `conversations` and `handled` are moved by a statement trigger on report_agent_leads, whatever
-- writes it. `waiting` is moved by the writers of report_asks: new leads (their first asks: +1
-- each, no lock needed), the messages' statement (once per statement, for the leads it made ask or
-- answered), an answered call (report_answer), and a lead's deletion. A statement trigger on
-- report_asks itself was tried first: it ran for every lead created, and 5,000 leads in one insert
-- took 5.6 s instead of 1.7 s.
-- report_rebuild recomputes all three.

-- Each waiting lead and the organization and day of its earliest open ask: what the lead is counted
-- under. A lead's row is also its writers' lock: see report_waiting_sync.
create table report_waiting (
  lead_id bigint primary key,
  org_id  bigint,
  day     date
);

-- The leads handled per organization and day, once each whoever handled them: a lead's first row
-- of a day is what adds 1 to that day's `conversations` (its primary key decides between racing
-- writers, as report_agent_leads' decides `handled`).
create table report_day_leads (
  org_id  bigint not null,
  day     date not null,
  lead_id bigint not null,
  primary key (org_id, day, lead_id)
);

-- Brings the `waiting` counters of these leads up to date with their open asks (the writers below
-- call it after changing them). Two transactions changing one lead's asks at once (an inbound text
-- while an unknown caller's answered call is given the lead) would each count from a snapshot
-- without the other's change, so the lead's report_waiting row is locked first (created when
-- absent), in lead order; the next statement takes a fresh snapshot (READ COMMITTED, a volatile
-- function), which holds every change of an earlier holder of the lock, and recounts the lead from
-- its asks as they are: the lead's row says what it was counted under, the counters move by the
-- difference. A row lock, not an advisory lock: a batch of thousands of leads in one transaction
-- must not fill the shared lock table.
create function report_waiting_sync(p_leads bigint[]) returns void language plpgsql as $$
declare
  f record;
begin
  if cardinality(p_leads) = 0 then
    return;
  end if;
  insert into report_waiting as w (lead_id)
  select distinct l from unnest(p_leads) l order by l
  on conflict (lead_id) do update set lead_id = w.lead_id;

  for f in
    with cur as (
      select w.lead_id, w.org_id as old_org, w.day as old_day, e.org_id as new_org, e.day as new_day
      from report_waiting w
      left join lateral (select a.org_id, a.day from report_asks a where a.lead_id = w.lead_id order by a.at limit 1) e on true
      where w.lead_id = any(p_leads)
    ), gone as (
      delete from report_waiting w using cur where w.lead_id = cur.lead_id and cur.new_day is null
    ), moved as (
      update report_waiting w set org_id = cur.new_org, day = cur.new_day
      from cur
      where w.lead_id = cur.lead_id and cur.new_day is not null
        and (cur.old_org, cur.old_day) is distinct from (cur.new_org, cur.new_day)
    ), delta as (
      select org_id, day, sum(n)::bigint as n from (
        select old_org as org_id, old_day as day, -1 as n from cur
        where old_day is not null and (old_org, old_day) is distinct from (new_org, new_day)
        union all
        select new_org, new_day, 1 from cur
        where new_day is not null and (old_org, old_day) is distinct from (new_org, new_day)
      ) d
      group by org_id, day
    )
    select org_id, day, n from delta where n <> 0 order by org_id, day
  loop
    perform report_add(f.org_id, f.day, 'waiting', '', f.n, 0);
  end loop;
end $$;

-- A new lead asks once, at its creation; nothing else of it can have asked before (the lead is
-- being inserted), so it is counted under its creation's day without the lock. Per statement over
-- its new leads (as sql/0031 does for messages), not per lead: `report_add` called once per lead
-- updated a day's counter row once per lead inside one transaction, and each update walks the
-- versions the transaction has already made of that row, so an import of n leads in one statement
-- took time growing as n² (2,500 leads of one day: 1.3 s; 10,000: 10.3 s). Now each counter is
-- added to once per statement.
drop trigger leads_report on leads;
drop function report_lead_created();

create function report_leads_created() returns trigger language plpgsql as $$
declare
  f record;
begin
  for f in
    with zones as (
      select o.id as org_id, report_zone(coalesce(o.timezone, 'UTC')) as tz
      from orgs o where o.id in (select distinct n.org_id from new_leads n)
    ), created as (
      select n.id, n.org_id, n.source, n.created_at, (n.created_at at time zone z.tz)::date as day
      from new_leads n join zones z on z.org_id = n.org_id
    ), asked as (
      insert into report_asks (lead_id, at, org_id, day)
      select id, created_at, org_id, day from created order by id
      on conflict do nothing
    ), waiting as (
      insert into report_waiting (lead_id, org_id, day)
      select id, org_id, day from created order by id
    )
    select org_id, day, 'lead' as fact, left(source, 200) as dim, count(*) as n from created group by org_id, day, left(source, 200)
    union all
    select org_id, day, 'waiting', '', count(*) from created group by org_id, day
    order by 1, 2, 3, 4
  loop
    perform report_add(f.org_id, f.day, f.fact, f.dim, f.n, 0);
  end loop;
  return null;
end $$;

create trigger leads_report after insert on leads
  referencing new table as new_leads
  for each statement execute function report_leads_created();

-- An answer (a reply through report_answer's callers, an answered call) ends asks: recount the lead.
create or replace function report_answer(p_org bigint, p_lead bigint, p_at timestamptz, p_agent text, p_via text) returns void
language plpgsql as $$
declare
  d date := report_day(p_org, p_at);
  asked timestamptz;
begin
  insert into report_agent_leads (org_id, day, agent, lead_id) values (p_org, d, left(p_agent, 200), p_lead) on conflict do nothing;
  with gone as (delete from report_asks where lead_id = p_lead and at <= p_at returning at)
  select min(at) into asked from gone;
  if asked is not null then
    insert into report_responses (org_id, day, lead_id, agent, via, asked_at, answered_at, seconds)
    values (p_org, d, p_lead, left(p_agent, 200), p_via, asked, p_at, extract(epoch from p_at - asked));
  end if;
  perform report_waiting_sync(array[p_lead]);
end $$;

-- The messages of a statement that asked (inbound) or answered (a person's reply): their leads
-- recounted once, after report_messages (sql/0031) applied every round; trigger names fire in
-- alphabetical order, and messages_report_waiting comes after messages_report_insert.
create function report_messages_waiting() returns trigger language plpgsql as $$
begin
  perform report_waiting_sync(array(
    select distinct m.lead_id from new_messages m
    where m.org_id is not null and m.channel <> 'note'
      and (m.direction = 'in' or report_person(m.actor_type, m.actor_id) is not null)));
  return null;
end $$;

create trigger messages_report_waiting after insert on messages
  referencing new table as new_messages
  for each statement execute function report_messages_waiting();

-- A deleted lead waits for nobody (its asks go with it: report_asks' foreign key cascades).
create function report_leads_deleted() returns trigger language plpgsql as $$
declare
  f record;
begin
  for f in
    with gone as (
      delete from report_waiting w using old_leads o where w.lead_id = o.id and w.day is not null returning w.org_id, w.day
    )
    select org_id, day, count(*) as n from gone group by org_id, day order by org_id, day
  loop
    perform report_add(f.org_id, f.day, 'waiting', '', -f.n, 0);
  end loop;
  return null;
end $$;

create trigger leads_report_waiting after delete on leads
  referencing old table as old_leads
  for each statement execute function report_leads_deleted();

-- A lead handled: +1 to its agent's `handled` for each new (day, agent, lead) row, and +1 to the
-- day's `conversations` for each lead the day did not have yet.
create function report_agent_leads_added() returns trigger language plpgsql as $$
declare
  f record;
begin
  if current_setting('leadline.report_rebuild', true) = 'on' then
    return null;
  end if;
  for f in
    select org_id, day, agent, count(*) as n from new_handled group by org_id, day, agent order by org_id, day, agent
  loop
    perform report_add(f.org_id, f.day, 'handled', f.agent, f.n, 0);
  end loop;
  for f in
    with added as (
      insert into report_day_leads (org_id, day, lead_id)
      select distinct org_id, day, lead_id from new_handled order by org_id, day, lead_id
      on conflict do nothing
      returning org_id, day
    )
    select org_id, day, count(*) as n from added group by org_id, day order by org_id, day
  loop
    perform report_add(f.org_id, f.day, 'conversations', '', f.n, 0);
  end loop;
  return null;
end $$;

create trigger report_agent_leads_insert after insert on report_agent_leads
  referencing new table as new_handled for each statement execute function report_agent_leads_added();

-- The three counters of one organization (null: all) recomputed from report_asks and
-- report_agent_leads as they are. A lead is counted under its earliest open ask, whichever
-- organization holds that ask (a lead moved between organizations keeps its asks'), as the old query
-- counted it.
create function report_today_rebuild(p_org bigint) returns void language plpgsql as $$
begin
  lock table report_asks, report_agent_leads in share mode;
  delete from report_daily where fact in ('waiting', 'conversations', 'handled') and (p_org is null or org_id = p_org);
  delete from report_waiting where p_org is null or org_id = p_org;
  delete from report_day_leads where p_org is null or org_id = p_org;

  insert into report_waiting (lead_id, org_id, day)
  select e.lead_id, e.org_id, e.day
  from (select distinct on (a.lead_id) a.lead_id, a.org_id, a.day from report_asks a
        where p_org is null or a.lead_id in (select lead_id from report_asks where org_id = p_org)
        order by a.lead_id, a.at) e
  where p_org is null or e.org_id = p_org
  on conflict (lead_id) do update set org_id = excluded.org_id, day = excluded.day;

  insert into report_day_leads (org_id, day, lead_id)
  select distinct org_id, day, lead_id from report_agent_leads where p_org is null or org_id = p_org;

  insert into report_daily (org_id, day, fact, dim, stripe, n, amount)
  select org_id, day, fact, dim, nextval('report_daily_stripe'), n, 0 from (
    select org_id, day, 'waiting' as fact, '' as dim, count(*) as n
    from report_waiting where p_org is null or org_id = p_org group by org_id, day
    union all
    select org_id, day, 'conversations', '', count(*)
    from report_day_leads where p_org is null or org_id = p_org group by org_id, day
    union all
    select org_id, day, 'handled', agent, count(*)
    from report_agent_leads where p_org is null or org_id = p_org group by org_id, day, agent
  ) f;
end $$;

-- The rebuild of Today's rollups (report_rebuild's first half) writes report_asks and
-- report_agent_leads afresh with the triggers above quiet (a flag local to the transaction), then
-- recounts the three counters from what it wrote.
alter function report_daily_rebuild(bigint) rename to report_facts_rebuild;
create function report_daily_rebuild(p_org bigint) returns void language plpgsql as $$
begin
  perform set_config('leadline.report_rebuild', 'on', true);
  perform report_facts_rebuild(p_org);
  perform set_config('leadline.report_rebuild', 'off', true);
  perform report_today_rebuild(p_org);
end $$;

select report_today_rebuild(null);

-- Nothing reads a day's asks any more (the old "still waiting" query did): one index fewer to
-- write per ask.
drop index report_asks_day_lead;
