-- The manager's day (issue 30, docs/reports.md): what the Today report reads instead of counting
-- leads, messages, calls and appointments at request time, and the KPI page's labels.
--
-- Kept by triggers, in the transaction that writes each fact: whatever writes a lead, a message, a
-- call or an appointment (intake, the send path, Twilio's callbacks, a dialer's report, booking, a
-- status change, and writers added later) moves the figures with it, as the capacity trigger of
-- sql/0004 holds for every writer of appointments. No lag, no worker.
--
-- A fact counts in its organization's day at the time it was written (the org's time zone then):
-- a lead moved to another organization, or deleted, leaves the figures of the days it counted in as
-- they were (what happened that day happened). report_rebuild() below recomputes an organization's
-- figures from the facts as they are now (after a time zone change); the migration runs it once.

-- Daily counters: (organization, its day, fact, dimension) → a count and an amount.
--   lead           dim: the lead's source            n: new leads
--   inbound        dim: channel                       n: inbound messages
--   reply          dim: the agent (a user id)         n: SMS and email sent by a person
--   call_answered  dim: the call's agent              n: calls with secs > 0, amount: their secs
--   call_missed    dim: the call's agent              n: calls with secs = 0
--   sent           dim: channel                       n: SMS and email sent, amount: their cost
--   booked         dim: ''                            n: appointments made that day
--   appointment    dim: status                        n: appointments whose slot starts that day
-- A fact's row is one of several `stripe`s: a writer adds to any stripe of its key that no other
-- transaction holds (`for update skip locked`) and makes a new one when all are held, so writers
-- never wait for each other here (intake of one organization at 2,000 a second would otherwise
-- queue on one row until each commit, and wait past lock_timeout behind a long import). A key has
-- about as many stripes as it ever had concurrent writers; readers sum them.
create table report_daily (
  org_id bigint not null,
  day    date not null,
  fact   text not null,
  dim    text not null default '',
  stripe bigint not null,
  n      bigint not null default 0,
  amount numeric not null default 0,
  primary key (org_id, day, fact, dim, stripe)
);
create sequence report_daily_stripe;

-- A lead's questions not yet answered by a person: its creation and each inbound message, one row
-- each, until a reply or an answered call at or after it (report_answer). What a lead waits since
-- is its earliest row. Deleted with the lead: a deleted lead waits for nobody.
create table report_asks (
  lead_id bigint not null references leads (id) on delete cascade,
  at      timestamptz not null,
  org_id  bigint not null,
  day     date not null,
  primary key (lead_id, at)
);
create index report_asks_day on report_asks (org_id, day);

-- One row per first response: a person's reply or an answered call that ended a lead's wait, in
-- the day it was given. Percentiles cannot be summed, so the day's are computed from its rows.
create table report_responses (
  id          bigserial primary key,
  org_id      bigint not null,
  day         date not null,
  lead_id     bigint not null,
  agent       text not null,
  via         text not null check (via in ('reply', 'call')),
  asked_at    timestamptz not null,
  answered_at timestamptz not null,
  seconds     double precision not null
);
create index report_responses_day on report_responses (org_id, day) include (agent, seconds);

-- The leads each agent replied to or spoke with on a day: "conversations handled" is their count.
create table report_agent_leads (
  org_id  bigint not null,
  day     date not null,
  agent   text not null,
  lead_id bigint not null,
  primary key (org_id, day, agent, lead_id)
);

-- A zone PostgreSQL knows, else UTC. Organizations' zones are checked against the runtime's
-- (Intl) when provisioned; one PostgreSQL lacks must not make every intake of that organization fail.
create function report_zone(tz text) returns text language plpgsql stable as $$
begin
  perform now() at time zone tz;
  return tz;
exception when others then
  return 'UTC';
end $$;

-- The organization's day at an instant.
create function report_day(p_org bigint, p_at timestamptz) returns date language plpgsql stable as $$
declare
  tz text;
begin
  select timezone into tz from orgs where id = p_org;
  return (p_at at time zone coalesce(tz, 'UTC'))::date;
exception when invalid_parameter_value then
  return (p_at at time zone 'UTC')::date;
end $$;

-- Adds to a counter without ever waiting for another writer (see report_daily).
create function report_add(p_org bigint, p_day date, p_fact text, p_dim text, p_n bigint, p_amount numeric) returns void
language plpgsql as $$
declare
  d text := left(coalesce(p_dim, ''), 200);
  free bigint;
begin
  if p_org is null or p_day is null or (p_n = 0 and p_amount = 0) then
    return;
  end if;
  -- Two statements, not an UPDATE … FROM (SELECT … SKIP LOCKED): as a join, the locking subquery
  -- may be scanned again per row of the target, and each scan can lock and match another stripe.
  select s.stripe into free from report_daily s
  where s.org_id = p_org and s.day = p_day and s.fact = p_fact and s.dim = d
  limit 1 for update skip locked;
  if found then
    update report_daily set n = n + p_n, amount = amount + p_amount
    where org_id = p_org and day = p_day and fact = p_fact and dim = d and stripe = free;
  else
    insert into report_daily (org_id, day, fact, dim, stripe, n, amount)
    values (p_org, p_day, p_fact, d, nextval('report_daily_stripe'), p_n, p_amount);
  end if;
end $$;

-- A lead asks (is created, or writes in) at `p_at`.
create function report_ask(p_org bigint, p_lead bigint, p_at timestamptz, p_day date) returns void language sql as $$
  insert into report_asks (lead_id, at, org_id, day) values (p_lead, p_at, p_org, p_day) on conflict do nothing;
$$;

-- A person answers a lead at `p_at` (a reply, or a call that was answered): the lead's asks at or
-- before it are answered, and the earliest of them makes one response. Asks after it (a call
-- reported after the lead wrote again) stay open.
create function report_answer(p_org bigint, p_lead bigint, p_at timestamptz, p_agent text, p_via text) returns void
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
end $$;

-- Who a message was sent by, when that was a person: a console user, or an API key bound to an
-- agent (a dialer's or CRM's user acting). Automations, unbound keys and the booking page are not.
create function report_person(p_type text, p_id text) returns text language sql stable as $$
  select case
    when p_type = 'user' and p_id <> '' then p_id
    when p_type = 'api_key' and p_id ~ '^[0-9]{1,18}$' then (select nullif(k.agent, '') from api_keys k where k.id = p_id::bigint)
  end
$$;

-- Whether a message counts as sent: an SMS or email handed to the provider and not failed (a
-- failure, undelivered included, is refunded). It counts when it was due to go: a deferred one at
-- its defer_until, others when recorded.
create function report_sent(p_direction text, p_channel text, p_status text) returns boolean language sql immutable as $$
  select p_direction = 'out' and p_channel in ('sms', 'email') and p_status in ('sending', 'sent', 'delivered', 'unknown')
$$;

create function report_lead_created() returns trigger language plpgsql as $$
declare
  d date := report_day(new.org_id, new.created_at);
begin
  perform report_add(new.org_id, d, 'lead', new.source, 1, 0);
  perform report_ask(new.org_id, new.id, new.created_at, d);
  return null;
end $$;

create trigger leads_report after insert on leads
  for each row when (new.org_id is not null) execute function report_lead_created();

create function report_message() returns trigger language plpgsql as $$
declare
  person text;
  d date;
begin
  if tg_op = 'INSERT' then
    if new.direction = 'in' then
      d := report_day(new.org_id, new.created_at);
      perform report_add(new.org_id, d, 'inbound', new.channel, 1, 0);
      perform report_ask(new.org_id, new.lead_id, new.created_at, d);
    else
      person := report_person(new.actor_type, new.actor_id);
      if person is not null then
        perform report_add(new.org_id, report_day(new.org_id, new.created_at), 'reply', person, 1, 0);
        perform report_answer(new.org_id, new.lead_id, new.created_at, person, 'reply');
      end if;
    end if;
  elsif report_sent(old.direction, old.channel, old.status) then
    if report_sent(new.direction, new.channel, new.status) and old.cost = new.cost
       and coalesce(old.defer_until, old.created_at) = coalesce(new.defer_until, new.created_at) then
      return null;  -- sending → sent → delivered: still the same sent message
    end if;
    perform report_add(old.org_id, report_day(old.org_id, coalesce(old.defer_until, old.created_at)), 'sent', old.channel, -1, -old.cost);
  end if;
  if report_sent(new.direction, new.channel, new.status) then
    perform report_add(new.org_id, report_day(new.org_id, coalesce(new.defer_until, new.created_at)), 'sent', new.channel, 1, new.cost);
  end if;
  return null;
end $$;

-- Notes are neither asked, answered nor sent. An update matters only when it moves what "sent" reads.
create trigger messages_report_insert after insert on messages
  for each row when (new.org_id is not null and new.channel <> 'note') execute function report_message();
create trigger messages_report_update after update of status, cost, defer_until on messages
  for each row when (new.org_id is not null and new.channel <> 'note'
                     and (old.status, old.cost, old.defer_until) is distinct from (new.status, new.cost, new.defer_until))
  execute function report_message();

-- A call's organization is its lead's, else its reporting key's (src/calls/log.ts).
create function report_call_org(p_lead bigint, p_key bigint) returns bigint language sql stable as $$
  select coalesce((select l.org_id from leads l where l.id = p_lead), (select k.org_id from api_keys k where k.id = p_key))
$$;

create function report_call() returns trigger language plpgsql as $$
declare
  org bigint;
begin
  if tg_op = 'UPDATE' then
    org := report_call_org(old.lead_id, old.key_id);
    perform report_add(org, report_day(org, old.occurred_at), case when old.secs > 0 then 'call_answered' else 'call_missed' end,
                       old.agent, -1, -old.secs);
  end if;
  org := report_call_org(new.lead_id, new.key_id);
  perform report_add(org, report_day(org, new.occurred_at), case when new.secs > 0 then 'call_answered' else 'call_missed' end,
                     new.agent, 1, new.secs);
  -- An answered call answers its lead, as of the call's start (the report comes when it ends); an
  -- unknown caller's call given a lead afterwards (a lead made from the call) answers it then.
  if new.secs > 0 and new.lead_id is not null and org is not null and new.agent <> ''
     and (tg_op = 'INSERT' or old.lead_id is null) then
    perform report_answer(org, new.lead_id, new.occurred_at, new.agent, 'call');
  end if;
  return null;
end $$;

create trigger calls_report_insert after insert on calls for each row execute function report_call();
create trigger calls_report_update after update of lead_id, key_id, secs, agent, occurred_at on calls
  for each row when ((old.lead_id, old.key_id, old.secs, old.agent, old.occurred_at)
                     is distinct from (new.lead_id, new.key_id, new.secs, new.agent, new.occurred_at))
  execute function report_call();

-- An appointment counts as booked on the day it was made, and by its status on its slot's day.
create function report_appointment() returns trigger language plpgsql as $$
declare
  org bigint;
begin
  if tg_op = 'UPDATE' then
    select c.org_id into org from calendars c where c.id = old.calendar_id;
    perform report_add(org, report_day(org, to_timestamp(old.slot_epoch)), 'appointment', old.status, -1, 0);
  end if;
  select c.org_id into org from calendars c where c.id = new.calendar_id;
  if tg_op = 'INSERT' then
    perform report_add(org, report_day(org, new.created_at), 'booked', '', 1, 0);
  end if;
  perform report_add(org, report_day(org, to_timestamp(new.slot_epoch)), 'appointment', new.status, 1, 0);
  return null;
end $$;

create trigger appointments_report_insert after insert on appointments for each row execute function report_appointment();
create trigger appointments_report_update after update of status, slot_epoch, calendar_id on appointments
  for each row when ((old.status, old.slot_epoch, old.calendar_id) is distinct from (new.status, new.slot_epoch, new.calendar_id))
  execute function report_appointment();

-- Every figure of one organization (null: all) recomputed from the facts as they are now, set by
-- set: the triggers' rules, applied to whole tables. First responses are found by ordering each
-- lead's asks and answers by time (an ask before an answer at the same instant): an answer ends
-- the asks since the previous answer. The tables it reads are locked against writes (SHARE) for
-- its duration, so no fact is counted twice or missed; at 1,000,000 leads, 5,000,000 messages and
-- 2,000,000 calls it takes about a minute (bench/RESULTS.md), and writers wait that long.
create function report_rebuild(p_org bigint) returns void language plpgsql as $$
begin
  lock table leads, messages, calls, appointments in share mode;
  delete from report_daily where p_org is null or org_id = p_org;
  delete from report_asks where p_org is null or org_id = p_org;
  delete from report_responses where p_org is null or org_id = p_org;
  delete from report_agent_leads where p_org is null or org_id = p_org;

  create temp table report_zones on commit drop as
    select id as org_id, report_zone(timezone) as tz from orgs where p_org is null or id = p_org;

  insert into report_daily (org_id, day, fact, dim, stripe, n, amount)
  select org_id, day, fact, dim, nextval('report_daily_stripe'), n, amount from (
    select l.org_id, (l.created_at at time zone z.tz)::date as day, 'lead' as fact, left(l.source, 200) as dim, count(*) as n, 0::numeric as amount
    from leads l join report_zones z on z.org_id = l.org_id
    group by 1, 2, 4
    union all
    select m.org_id, (m.created_at at time zone z.tz)::date, 'inbound', m.channel, count(*), 0
    from messages m join report_zones z on z.org_id = m.org_id
    where m.direction = 'in' and m.channel <> 'note'
    group by 1, 2, 4
    union all
    select m.org_id, (m.created_at at time zone z.tz)::date, 'reply', left(p.person, 200), count(*), 0
    from messages m join report_zones z on z.org_id = m.org_id
    cross join lateral (select report_person(m.actor_type, m.actor_id) as person) p
    where m.direction = 'out' and m.channel <> 'note' and p.person is not null
    group by 1, 2, 4
    union all
    select m.org_id, (coalesce(m.defer_until, m.created_at) at time zone z.tz)::date, 'sent', m.channel, count(*), sum(m.cost)
    from messages m join report_zones z on z.org_id = m.org_id
    where report_sent(m.direction, m.channel, m.status)
    group by 1, 2, 4
    union all
    select c.org_id, (c.occurred_at at time zone z.tz)::date, case when c.secs > 0 then 'call_answered' else 'call_missed' end,
           left(c.agent, 200), count(*), sum(c.secs)
    from (select report_call_org(lead_id, key_id) as org_id, occurred_at, secs, agent from calls) c
    join report_zones z on z.org_id = c.org_id
    group by 1, 2, 3, 4
    union all
    select c.org_id, (a.created_at at time zone z.tz)::date, 'booked', '', count(*), 0
    from appointments a join calendars c on c.id = a.calendar_id join report_zones z on z.org_id = c.org_id
    group by 1, 2
    union all
    select c.org_id, (to_timestamp(a.slot_epoch) at time zone z.tz)::date, 'appointment', a.status, count(*), 0
    from appointments a join calendars c on c.id = a.calendar_id join report_zones z on z.org_id = c.org_id
    group by 1, 2, 4
  ) f
  where n <> 0 or amount <> 0;

  -- Each lead's asks (kind 0) and answers (kind 1), in time order.
  create temp table report_events on commit drop as
    select l.id as lead_id, l.org_id, l.created_at as at, 0 as kind, 0::bigint as seq, null::text as agent, null::text as via
    from leads l join report_zones z on z.org_id = l.org_id
    union all
    select m.lead_id, m.org_id, m.created_at, 0, m.id, null, null
    from messages m join report_zones z on z.org_id = m.org_id
    where m.direction = 'in' and m.channel <> 'note'
    union all
    select m.lead_id, m.org_id, m.created_at, 1, m.id, left(p.person, 200), 'reply'
    from messages m join report_zones z on z.org_id = m.org_id
    cross join lateral (select report_person(m.actor_type, m.actor_id) as person) p
    where m.direction = 'out' and m.channel <> 'note' and p.person is not null
    union all
    select c.lead_id, c.org_id, c.occurred_at, 1, c.id, left(c.agent, 200), 'call'
    from (select id, lead_id, report_call_org(lead_id, key_id) as org_id, occurred_at, agent from calls
          where secs > 0 and lead_id is not null and agent <> '') c
    join report_zones z on z.org_id = c.org_id;

  -- `round`: how many answers came before the event; an answer closes the asks of its own round.
  create temp table report_rounds on commit drop as
    select e.*, count(*) filter (where kind = 1) over (partition by lead_id order by at, kind, seq
                                                       rows between unbounded preceding and 1 preceding) as round,
           count(*) filter (where kind = 1) over (partition by lead_id) as answers
    from report_events e;

  insert into report_agent_leads (org_id, day, agent, lead_id)
  select distinct r.org_id, (r.at at time zone z.tz)::date, r.agent, r.lead_id
  from report_rounds r join report_zones z on z.org_id = r.org_id
  where r.kind = 1;

  insert into report_responses (org_id, day, lead_id, agent, via, asked_at, answered_at, seconds)
  select a.org_id, (a.at at time zone z.tz)::date, a.lead_id, a.agent, a.via, q.asked, a.at, extract(epoch from a.at - q.asked)
  from report_rounds a
  join (select lead_id, round, min(at) as asked from report_rounds where kind = 0 group by lead_id, round) q
    on q.lead_id = a.lead_id and q.round = a.round
  join report_zones z on z.org_id = a.org_id
  where a.kind = 1
  order by a.at, a.kind, a.seq;

  -- The asks after a lead's last answer are still open.
  insert into report_asks (lead_id, at, org_id, day)
  select distinct on (r.lead_id, r.at) r.lead_id, r.at, r.org_id, (r.at at time zone z.tz)::date
  from report_rounds r join report_zones z on z.org_id = r.org_id
  where r.kind = 0 and r.round = r.answers
  order by r.lead_id, r.at;

  drop table report_rounds;
  drop table report_events;
  drop table report_zones;
end $$;

select report_rebuild(null);

-- KPI labels (the KPI page, provisioning `orgs[].kpi_labels`): what an organization calls a metric
-- key. Without one, the metric's own label (kpi_metrics.label: the key, or an admin's default).
create table kpi_labels (
  org_id     bigint not null references orgs (id) on delete cascade,
  metric_key text not null,
  label      text not null,
  updated_at timestamptz not null default now(),
  primary key (org_id, metric_key)
);
