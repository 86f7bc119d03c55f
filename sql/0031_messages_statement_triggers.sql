-- The `after insert on messages` triggers of sql/0023 (the lead's conversation) and sql/0027 (the
-- report's figures) run once per statement over all its rows instead of once per row (issue 31,
-- bench/RESULTS.md "Reminder scheduler"): the reminder batch inserts 200 messages in one
-- statement, and an EXPLAIN ANALYZE of it put 318 of 428 ms in 200 single-row conversation upserts
-- and 55 ms in 200 report trigger calls. The rules are unchanged, rule for rule: a one-row insert
-- (the API's send, an inbound text) does exactly what it did, and several rows end exactly as if
-- they had been inserted one by one in id order (the order their per-row triggers fired in):
--
-- - A statement's messages are applied in rounds: round r is the r-th message (by id) of each lead
--   in the statement, one set-based statement per round. Rows of different leads never touch the
--   same conversation or the same asks, so a round is the per-row rule applied to each of its rows;
--   the rounds in order are the rows of each lead in order. (One upsert could not take two rows of
--   one lead anyway: ON CONFLICT DO UPDATE refuses to affect a row twice in one command.) A batch
--   of sends has one message per lead, so one round; an empty statement (a replayed send: ON
--   CONFLICT DO NOTHING inserts nothing) has none, and a statement trigger fires for it too.
-- - Each round updates a conversation once per message, as before, so `conversations_feed` (per
--   row on conversations) still writes one feed row per message and change, with the state after
--   it. Only the order of feed rows of *different* conversations within one statement can differ
--   from the one-by-one order (it is round by round, leads in id order): the feed's promises are
--   per conversation (a reader that has seen id N has seen every change up to N).
-- - Within a round, conversations are upserted in lead id order, so two concurrent statements lock
--   the conversations they share in the same order (the per-row triggers took them in message
--   order, which two batches could cross).
-- - Counters add per (organization, day, fact, dimension) once per statement: the sums are those
--   of one-by-one adds (report_add takes the same stripe again within a transaction).
--
-- Transition tables are allowed here: `messages` is a plain table (not partitioned, no inheritance),
-- and these triggers have no column list (PostgreSQL 15, CREATE TRIGGER, "Notes").

drop trigger messages_conversation on messages;
drop function conversations_message();

-- One round's rows are the per-row rule of sql/0023 over a set. In DO UPDATE the message is read
-- back from `excluded`, the row it would have made: its last_* columns are the message's, its
-- last_activity_at its time, and its status says who sent it: an outbound message proposes
-- `closed` exactly when an automation sent it. So `inbound` (an SMS or email in) is
-- excluded.last_direction 'in' on sms/email, and `answered` (an SMS or email out, not by an
-- automation) is excluded.last_direction 'out' on sms/email with a proposed status `open`.
create function conversations_messages() returns trigger language plpgsql as $$
declare
  rounds bigint;
begin
  select max(n) into rounds from (select count(*) as n from new_messages group by lead_id) per_lead;
  for nth in 1 .. coalesce(rounds, 0) loop
    insert into conversations as c (lead_id, org_id, status, assignee, last_activity_at, last_message_id, last_channel,
                                    last_direction, snippet, waiting_since, created_at, updated_at)
    select m.lead_id, l.org_id, case when m.actor_type = 'automation' and not m.inbound then 'closed' else 'open' end, u.id,
           m.created_at, m.id, m.channel, m.direction, workspace_snippet(m.channel, m.subject, m.body),
           case when m.inbound then m.created_at end, m.created_at, m.created_at
    from (select n.*, n.direction = 'in' and n.channel in ('sms', 'email') as inbound,
                 n.direction = 'out' and n.channel in ('sms', 'email') and n.actor_type <> 'automation' as answered,
                 row_number() over (partition by n.lead_id order by n.id) as r
          from new_messages n) m
    join leads l on l.id = m.lead_id
    left join users u on m.answered and m.actor_type = 'user' and u.id = m.actor_id and u.org_id = l.org_id and u.role is not null
    where m.r = nth
    order by m.lead_id
    on conflict (lead_id) do update set
      last_activity_at = greatest(c.last_activity_at, excluded.last_activity_at),
      last_message_id = case when excluded.last_message_id > coalesce(c.last_message_id, 0) then excluded.last_message_id else c.last_message_id end,
      last_channel = case when excluded.last_message_id > coalesce(c.last_message_id, 0) then excluded.last_channel else c.last_channel end,
      last_direction = case when excluded.last_message_id > coalesce(c.last_message_id, 0) then excluded.last_direction else c.last_direction end,
      snippet = case when excluded.last_message_id > coalesce(c.last_message_id, 0) then excluded.snippet else c.snippet end,
      status = case when excluded.last_direction = 'in' and excluded.last_channel in ('sms', 'email') then 'open' else c.status end,
      snoozed_until = case when excluded.last_direction = 'in' and excluded.last_channel in ('sms', 'email') then null else c.snoozed_until end,
      waiting_since = case when excluded.last_direction = 'in' and excluded.last_channel in ('sms', 'email')
                             then coalesce(c.waiting_since, excluded.last_activity_at)
                           when excluded.last_direction = 'out' and excluded.last_channel in ('sms', 'email') and excluded.status = 'open'
                             then null
                           else c.waiting_since end,
      assignee = coalesce(c.assignee, excluded.assignee),
      updated_at = greatest(c.updated_at, excluded.updated_at);
  end loop;
  return null;
end $$;

create trigger messages_conversation after insert on messages
  referencing new table as new_messages
  for each statement execute function conversations_messages();

-- The report (sql/0027): report_message() keeps serving messages_report_update (status, cost and
-- defer_until changes, one row at a time); inserts are counted here. What a message counts as is
-- report_message's insert branch: inbound → `inbound` counter and an ask; out by a person
-- (report_person) → `reply` counter and an answer; handed to the provider (report_sent) → `sent`
-- counter at its due time. Notes and messages of no organization count nothing.
drop trigger messages_report_insert on messages;

create function report_messages() returns trigger language plpgsql as $$
declare
  f record;
  rounds bigint;
begin
  -- Counters: one report_add per key (in key order) with the statement's sum; the day of each
  -- distinct (organization, instant) computed once (a batch's rows share both).
  for f in
    with facts as (
      select m.org_id, m.created_at as at, case when m.direction = 'in' then 'inbound' else 'reply' end as fact,
             case when m.direction = 'in' then m.channel else p.person end as dim, 0::numeric as amount
      from new_messages m
      cross join lateral (select case when m.direction = 'out' then report_person(m.actor_type, m.actor_id) end as person) p
      where m.org_id is not null and m.channel <> 'note' and (m.direction = 'in' or p.person is not null)
      union all
      select m.org_id, coalesce(m.defer_until, m.created_at), 'sent', m.channel, m.cost
      from new_messages m
      where m.org_id is not null and m.channel <> 'note' and report_sent(m.direction, m.channel, m.status)
    ), days as (
      select x.org_id, x.at, report_day(x.org_id, x.at) as day from (select distinct org_id, at from facts) x
    )
    select a.org_id, d.day, a.fact, a.dim, count(*) as n, sum(a.amount) as amount
    from facts a join days d on d.org_id = a.org_id and d.at = a.at
    group by a.org_id, d.day, a.fact, a.dim
    order by a.org_id, d.day, a.fact, a.dim
  loop
    perform report_add(f.org_id, f.day, f.fact, f.dim, f.n, f.amount);
  end loop;

  -- Asks and answers, in rounds (above): only inbound messages and a person's replies take part,
  -- so a batch of automation sends has no round at all.
  select max(n) into rounds from (
    select count(*) as n from new_messages m
    where m.org_id is not null and m.channel <> 'note'
      and (m.direction = 'in' or report_person(m.actor_type, m.actor_id) is not null)
    group by m.lead_id) per_lead;
  for nth in 1 .. coalesce(rounds, 0) loop
    -- report_ask: the lead asks at the message's time.
    insert into report_asks (lead_id, at, org_id, day)
    select e.lead_id, e.at, e.org_id, report_day(e.org_id, e.at)
    from (select m.lead_id, m.org_id, m.created_at as at, m.direction, m.actor_type, m.actor_id,
                 row_number() over (partition by m.lead_id order by m.id) as r
          from new_messages m
          where m.org_id is not null and m.channel <> 'note'
            and (m.direction = 'in' or report_person(m.actor_type, m.actor_id) is not null)) e
    where e.r = nth and e.direction = 'in'
    order by e.lead_id
    on conflict do nothing;
    -- report_answer: the leads handled, and each answered lead's asks at or before the reply
    -- gone, the earliest of them making one response.
    with ans as (
      select e.id, e.lead_id, e.org_id, e.at, left(e.person, 200) as agent, report_day(e.org_id, e.at) as day
      from (select m.id, m.lead_id, m.org_id, m.created_at as at, m.direction, p.person,
                   row_number() over (partition by m.lead_id order by m.id) as r
            from new_messages m
            cross join lateral (select case when m.direction = 'out' then report_person(m.actor_type, m.actor_id) end as person) p
            where m.org_id is not null and m.channel <> 'note' and (m.direction = 'in' or p.person is not null)) e
      where e.r = nth and e.direction = 'out'
    ), handled as (
      insert into report_agent_leads (org_id, day, agent, lead_id)
      select org_id, day, agent, lead_id from ans order by lead_id
      on conflict do nothing
    ), gone as (
      delete from report_asks a using ans
      where a.lead_id = ans.lead_id and a.at <= ans.at
      returning a.lead_id, a.at
    )
    insert into report_responses (org_id, day, lead_id, agent, via, asked_at, answered_at, seconds)
    select ans.org_id, ans.day, ans.lead_id, ans.agent, 'reply', g.asked, ans.at, extract(epoch from ans.at - g.asked)
    from ans join (select lead_id, min(at) as asked from gone group by lead_id) g on g.lead_id = ans.lead_id
    order by ans.lead_id;
  end loop;
  return null;
end $$;

create trigger messages_report_insert after insert on messages
  referencing new table as new_messages
  for each statement execute function report_messages();
