-- The agents' workspace (issue 29, docs/workspace.md): one conversation per lead with a status and
-- an assignee, callbacks, and the live change feed that open console tabs read.

-- A conversation is one row per lead, all channels. Rows are made lazily, by the first fact that
-- concerns the lead (a message, a call, an action or a callback), not for every lead: a lead
-- nobody has written to or called is in no inbox view, and intake writes nothing here.
-- `org_id` is the lead's organization, copied (like leads.org_id, sql/0002) so that every view is
-- one index range of one table; a trigger below keeps it in step when a lead moves.
-- A snoozed conversation whose time has come is opened by a worker (src/workspace/jobs.ts), not
-- read as open by the queries: the reopening is then a change like any other (it reaches the feed,
-- and open tabs move it and their counts), and each view stays one index range.
create table conversations (
  id               bigserial primary key,
  lead_id          bigint not null unique references leads (id) on delete cascade,
  org_id           bigint,
  status           text not null default 'open' check (status in ('open', 'snoozed', 'closed')),
  snoozed_until    timestamptz,
  -- A console user of the lead's organization, or nobody (checked by the writers, src/workspace/).
  assignee         text references users (id) on delete set null,
  last_activity_at timestamptz not null,
  -- The newest message: what the list shows of it.
  last_message_id  bigint,
  last_channel     text,
  last_direction   text,
  snippet          text not null default '',
  -- The first inbound message since the lead was last answered (an SMS or email out by a person or
  -- a key, not an automation) or the conversation closed: how long the lead has been waiting.
  waiting_since    timestamptz,
  created_at       timestamptz not null,
  updated_at       timestamptz not null,
  check ((status = 'snoozed') = (snoozed_until is not null))
);
-- The views, newest activity first, keyset by (last_activity_at, id): All open, Snoozed, Closed
-- and their capped counts read one range of the first; Mine and the assignee filter the second;
-- Unassigned the third (an open conversation is usually assigned, so a filter over the first
-- would read past them); an admin's views (every organization) the fourth.
create index conversations_org_view on conversations (org_id, status, last_activity_at desc, id desc);
create index conversations_assignee_view on conversations (assignee, status, last_activity_at desc, id desc) where assignee is not null;
create index conversations_unassigned on conversations (org_id, last_activity_at desc, id desc) where status = 'open' and assignee is null;
create index conversations_all_view on conversations (status, last_activity_at desc, id desc);
create index conversations_snooze_due on conversations (snoozed_until) where status = 'snoozed';

-- The one-line snippet of a message: an email's subject (its body is HTML as sent), else the text
-- with its whitespace folded; at most 140 characters, read from the first 2,000 only.
create function workspace_snippet(channel text, subject text, body text) returns text
language sql immutable as $$
  select left(btrim(regexp_replace(
    case when channel = 'email' and subject <> '' then subject
         when channel = 'email' then regexp_replace(left(body, 2000), '<[^>]*>', ' ', 'g')
         else left(body, 2000) end,
    '\s+', ' ', 'g')), 140)
$$;

-- Callbacks: a time to call the lead back, for an assignee, optionally with a dial queued for them
-- then. Due through the job queue (src/workspace/callbacks.ts): the job marks the callback `due`,
-- reopens the conversation at the top and queues the dial in one statement, only while the
-- callback is `scheduled`, so it happens once however many instances run the job.
create table callbacks (
  id              bigserial primary key,
  conversation_id bigint not null references conversations (id) on delete cascade,
  lead_id         bigint not null references leads (id) on delete cascade,
  assignee        text references users (id) on delete set null,
  due_at          timestamptz not null,
  note            text not null default '',
  dial            boolean not null default false,
  dial_id         bigint references dials (id) on delete set null,
  status          text not null default 'scheduled' check (status in ('scheduled', 'due', 'done', 'cancelled')),
  created_by      text not null default '',
  created_at      timestamptz not null,
  fired_at        timestamptz,
  closed_at       timestamptz
);
create index callbacks_lead on callbacks (lead_id, id desc);
create index callbacks_conversation on callbacks (conversation_id) where status in ('scheduled', 'due');
create index callbacks_assignee on callbacks (assignee, status, due_at) where status in ('scheduled', 'due');

-- The live change feed. Every change a workspace shows (a message in or out, an assignment, a
-- status, an activity that reorders the list, a callback, a lead's fields or consent) writes a row
-- of workspace_pending in the transaction that makes the change: the triggers below, so that no
-- writer (the send path, Twilio's callbacks, call reports, the workspace's actions, lead edits
-- written later) can forget it. The sequencer (src/feed/sequencer.ts) then moves pending rows into
-- workspace_changes, numbering them in one statement under an advisory lock, one sequencer at a
-- time across instances: ids are therefore committed in increasing order, and a reader that has
-- seen id N has seen every change up to N. (Numbered at insert, a change whose transaction
-- commits after a higher id's would be skipped by a reader that had already passed it.)
create table workspace_pending (
  id              bigserial primary key,
  org_id          bigint,
  kind            text not null,
  conversation_id bigint,
  lead_id         bigint,
  data            jsonb not null default '{}',
  at              timestamptz not null       -- when the change happened (the writer's clock)
);

create sequence workspace_changes_id;
create table workspace_changes (
  id              bigint primary key,
  org_id          bigint,
  kind            text not null check (kind in ('message', 'assignment', 'status', 'activity', 'callback', 'lead')),
  conversation_id bigint,
  lead_id         bigint,
  data            jsonb not null,
  at              timestamptz not null,
  -- When the sequencer numbered it (its clock): retention counts from here, so a change whose own
  -- time is old (a call reported late) is still kept as long as any other.
  created_at      timestamptz not null
);
-- A tab reads its organization's changes after the id it has (changesSince); an admin's, every one.
create index workspace_changes_org on workspace_changes (org_id, id);

-- The feed rows of a conversation's change: what changed, with the row's state after it.
create function workspace_conversation_feed() returns trigger language plpgsql as $$
declare
  snap jsonb := jsonb_build_object('status', new.status, 'snoozed_until', new.snoozed_until, 'assignee', new.assignee,
                                   'last_activity_at', new.last_activity_at, 'waiting_since', new.waiting_since);
  fresh boolean := tg_op = 'INSERT';
  moved boolean := false;
begin
  if not fresh then
    moved := new.org_id is distinct from old.org_id;
  end if;
  if moved then
    -- The lead moved to another organization: gone from the old one's views.
    insert into workspace_pending (org_id, kind, conversation_id, lead_id, data, at)
    values (old.org_id, 'status', new.id, new.lead_id, jsonb_build_object('removed', true, 'was', old.status), new.updated_at);
  end if;
  if fresh or moved or new.status is distinct from old.status or new.snoozed_until is distinct from old.snoozed_until then
    insert into workspace_pending (org_id, kind, conversation_id, lead_id, data, at)
    values (new.org_id, 'status', new.id, new.lead_id,
            snap || jsonb_build_object('was', case when fresh or moved then null else old.status end), new.updated_at);
  end if;
  if (fresh and new.assignee is not null) or (not fresh and new.assignee is distinct from old.assignee) then
    insert into workspace_pending (org_id, kind, conversation_id, lead_id, data, at)
    values (new.org_id, 'assignment', new.id, new.lead_id,
            snap || jsonb_build_object('was', case when fresh then null else old.assignee end), new.updated_at);
  end if;
  if (fresh and new.last_message_id is not null) or (not fresh and new.last_message_id is distinct from old.last_message_id) then
    insert into workspace_pending (org_id, kind, conversation_id, lead_id, data, at)
    values (new.org_id, 'message', new.id, new.lead_id,
            snap || jsonb_build_object('message_id', new.last_message_id, 'channel', new.last_channel, 'direction', new.last_direction),
            new.updated_at);
  elsif not fresh and new.last_activity_at is distinct from old.last_activity_at then
    insert into workspace_pending (org_id, kind, conversation_id, lead_id, data, at)
    values (new.org_id, 'activity', new.id, new.lead_id, snap, new.updated_at);
  end if;
  return null;
end $$;

-- Existing installations: the conversations the old inbox showed (leads with an inbound message
-- nobody handled, sql/0018) are made open now, read through the partial index messages_unhandled
-- (only those rows, however many messages there are). Every other lead gets its conversation at
-- its next message, call or action: a backfill of every lead with history would read every
-- message of a large installation inside this migration. Made before the feed trigger exists,
-- so the backfill writes no feed rows.
insert into conversations (lead_id, org_id, status, last_activity_at, last_message_id, last_channel, last_direction,
                           snippet, waiting_since, created_at, updated_at)
select l.id, l.org_id, 'open', greatest(lm.created_at, u.first_in), lm.id, lm.channel, lm.direction,
       workspace_snippet(lm.channel, lm.subject, lm.body), u.first_in, now(), now()
from (select m.lead_id, min(m.created_at) as first_in from messages m
      where m.direction = 'in' and m.handled_at is null group by m.lead_id) u
join leads l on l.id = u.lead_id
cross join lateral (select m.id, m.created_at, m.channel, m.direction, m.subject, m.body
                    from messages m where m.lead_id = l.id order by m.id desc limit 1) lm;

create trigger conversations_feed after insert or update on conversations
  for each row execute function workspace_conversation_feed();

-- A message is a fact of its lead's conversation, recorded in the statement that inserts it,
-- whoever inserts it (the send path for the API, automations and the console; Twilio's inbound
-- callback; an inbound email, should one come):
-- - it becomes the conversation's last message and activity (never moving either back);
-- - an inbound SMS or email reopens the conversation (snoozed or closed) and starts the lead's
--   wait if none is running;
-- - an SMS or email out by a person or a key (not an automation) answers the lead: the wait ends;
--   by a console user of the lead's organization (actor_type `user`), it also assigns an
--   unassigned conversation to that user;
-- - a new conversation starts open, except one an automation's send makes: nobody has anything
--   to do for a lead an automation wrote to until the lead answers.
create function conversations_message() returns trigger language plpgsql as $$
declare
  inbound boolean := new.direction = 'in' and new.channel in ('sms', 'email');
  answered boolean := new.direction = 'out' and new.channel in ('sms', 'email') and new.actor_type <> 'automation';
  org bigint;
  replier text;
begin
  select l.org_id into org from leads l where l.id = new.lead_id;
  if answered and new.actor_type = 'user' then
    select u.id into replier from users u where u.id = new.actor_id and u.org_id = org and u.role is not null;
  end if;
  insert into conversations as c (lead_id, org_id, status, assignee, last_activity_at, last_message_id, last_channel,
                                  last_direction, snippet, waiting_since, created_at, updated_at)
  values (new.lead_id, org, case when new.actor_type = 'automation' and not inbound then 'closed' else 'open' end, replier,
          new.created_at, new.id, new.channel, new.direction, workspace_snippet(new.channel, new.subject, new.body),
          case when inbound then new.created_at end, new.created_at, new.created_at)
  on conflict (lead_id) do update set
    last_activity_at = greatest(c.last_activity_at, excluded.last_activity_at),
    last_message_id = case when new.id > coalesce(c.last_message_id, 0) then new.id else c.last_message_id end,
    last_channel = case when new.id > coalesce(c.last_message_id, 0) then new.channel else c.last_channel end,
    last_direction = case when new.id > coalesce(c.last_message_id, 0) then new.direction else c.last_direction end,
    snippet = case when new.id > coalesce(c.last_message_id, 0) then excluded.snippet else c.snippet end,
    status = case when inbound then 'open' else c.status end,
    snoozed_until = case when inbound then null else c.snoozed_until end,
    waiting_since = case when inbound then coalesce(c.waiting_since, new.created_at) when answered then null else c.waiting_since end,
    assignee = coalesce(c.assignee, replier),
    updated_at = greatest(c.updated_at, new.created_at);
  return null;
end $$;

create trigger messages_conversation after insert on messages
  for each row execute function conversations_message();

-- A reported call is activity of its lead's conversation (at the call's time, never moving it
-- back). A missed call (secs 0) reopens it; a conversation an answered call makes starts closed
-- (the call was the answer), one a missed call makes starts open.
create function conversations_call() returns trigger language plpgsql as $$
begin
  if new.lead_id is null then
    return null;
  end if;
  insert into conversations as c (lead_id, org_id, status, last_activity_at, created_at, updated_at)
  select l.id, l.org_id, case when new.secs = 0 then 'open' else 'closed' end, new.occurred_at, new.occurred_at, new.occurred_at
  from leads l where l.id = new.lead_id
  on conflict (lead_id) do update set
    last_activity_at = greatest(c.last_activity_at, excluded.last_activity_at),
    status = case when new.secs = 0 then 'open' else c.status end,
    snoozed_until = case when new.secs = 0 then null else c.snoozed_until end,
    updated_at = greatest(c.updated_at, new.occurred_at);
  return null;
end $$;

create trigger calls_conversation after insert on calls
  for each row execute function conversations_call();

-- A lead moved to another organization (its campaign or list moved: sql/0002) takes its
-- conversation along; an assignee who is not a user of the new organization is dropped.
create function conversations_follow_lead() returns trigger language plpgsql as $$
begin
  update conversations c
  set org_id = new.org_id,
      assignee = case when exists (select 1 from users u where u.id = c.assignee and u.org_id = new.org_id) then c.assignee end,
      updated_at = greatest(c.updated_at, now())
  where c.lead_id = new.id;
  return null;
end $$;

create trigger leads_conversation_org after update of org_id on leads
  for each row when (old.org_id is distinct from new.org_id)
  execute function conversations_follow_lead();

-- A lead's fields the lists and the open conversation show changed (names, phone, email, state,
-- status), or its consent on a channel (the opted-out badges): a `lead` change for its organization,
-- at the transaction's time (writers of leads and consent do not all keep updated_at).
create function workspace_lead_changed(of_lead bigint, what text) returns void language sql as $$
  insert into workspace_pending (org_id, kind, conversation_id, lead_id, data, at)
  select l.org_id, 'lead', c.id, l.id, jsonb_build_object('what', what), now()
  from leads l left join conversations c on c.lead_id = l.id where l.id = of_lead
$$;

create function workspace_lead_feed() returns trigger language plpgsql as $$
begin
  perform workspace_lead_changed(new.id, 'fields');
  return null;
end $$;

create function workspace_consent_feed() returns trigger language plpgsql as $$
begin
  perform workspace_lead_changed(new.lead_id, 'consent');
  return null;
end $$;

create trigger leads_feed after update of first_name, last_name, phone, email, state, status on leads
  for each row when (old.first_name is distinct from new.first_name or old.last_name is distinct from new.last_name
                     or old.phone is distinct from new.phone or old.email is distinct from new.email
                     or old.state is distinct from new.state or old.status is distinct from new.status)
  execute function workspace_lead_feed();
-- Intake inserts channels with consent none or in: only an opt-out or a change reaches the feed.
create trigger lead_channels_feed_insert after insert on lead_channels
  for each row when (new.consent = 'out') execute function workspace_consent_feed();
create trigger lead_channels_feed_update after update of consent on lead_channels
  for each row when (old.consent is distinct from new.consent) execute function workspace_consent_feed();

-- A callback scheduled, come due, done or cancelled: a `callback` change of its conversation.
create function workspace_callback_feed() returns trigger language plpgsql as $$
begin
  insert into workspace_pending (org_id, kind, conversation_id, lead_id, data, at)
  select c.org_id, 'callback', new.conversation_id, new.lead_id,
         jsonb_build_object('callback_id', new.id, 'state', new.status, 'due_at', new.due_at, 'assignee', new.assignee),
         coalesce(new.closed_at, new.fired_at, new.created_at)
  from conversations c where c.id = new.conversation_id;
  return null;
end $$;

create trigger callbacks_feed after insert or update of status on callbacks
  for each row execute function workspace_callback_feed();
