-- Outbound events: outbox fan-out, webhook deliveries and every attempt of them.

-- Fan-out claims undispatched events with `for update skip locked` and marks them in the same
-- statement that creates their deliveries, so each event is fanned out exactly once however many
-- instances run. A flag and not an id cursor: ids are taken at insert but committed in any
-- order, so a cursor would skip an event whose transaction commits after a higher id's.
-- Events written before this migration are left undispatched: they were promised to endpoints.
alter table outbox_events add column dispatched_at timestamptz;
create index outbox_events_undispatched on outbox_events (id) where dispatched_at is null;

-- A 410 Gone from an endpoint disables it until an operator enables it again (or provisioning
-- gives it a new URL); fan-out skips it and its pending deliveries fail.
alter table webhooks
  add column disabled_at     timestamptz,
  add column disabled_reason text;

create function webhooks_url_changed() returns trigger language plpgsql as $$
begin
  if new.url is distinct from old.url then
    new.disabled_at := null;
    new.disabled_reason := null;
  end if;
  return new;
end $$;
create trigger webhooks_url_changed before update on webhooks
  for each row execute function webhooks_url_changed();

-- `attempts` counts automatic attempts recorded (the position in the retry schedule); operator
-- replays are recorded in webhook_attempts without moving the schedule. Exclusivity of an attempt
-- comes from its job's lease (src/jobs), not from a claim here: a claim would cost every delivery
-- one more write, and a run whose lease ran out is found by its job's claim count instead.
alter table webhook_deliveries add column updated_at timestamptz;
create index webhook_deliveries_endpoint on webhook_deliveries (webhook_id, id desc);
create index webhook_deliveries_failed on webhook_deliveries (id desc) where status = 'failed';

-- One row per attempt, written when it ends (one insert, not an insert and an update: delivery
-- throughput is bounded by these statements). A run that stopped without recording its attempt
-- (its worker died) is recorded by the next run as abandoned, its start unknown.
create table webhook_attempts (
  id           bigserial primary key,
  delivery_id  bigint not null references webhook_deliveries (id) on delete cascade,
  trigger      text not null check (trigger in ('schedule', 'replay')),
  started_at   timestamptz,
  finished_at  timestamptz not null,
  duration_ms  integer,
  address      text,              -- the address connected to, after the check
  status       integer,           -- HTTP status; null when no response arrived
  error        text,              -- null on 2xx
  response     text               -- the start of the response body, at most 2 KB
);
create index webhook_attempts_delivery on webhook_attempts (delivery_id, id);

-- Deliveries are scheduled by the job queue, not found by polling this index; it only cost writes.
drop index webhook_deliveries_due;

-- Automations: the wait between a trigger and the send, and one run per (automation, lead).
alter table automations add column delay_seconds integer not null default 0 check (delay_seconds >= 0);

-- A trigger becomes one run per active automation of the lead's organization, in the statement
-- that marks the trigger processed (claimed with skip locked, as the outbox is). The unique key
-- and the send's operation_id (derived from automation and lead) make it once per lead however
-- often a run is retried. What to send is copied from the automation when the run is made, so a
-- retry after a crash sends the same thing even if the automation was edited meanwhile. The
-- outcome is the send path's answer: its gate result, the message it recorded, its deferral.
create table automation_runs (
  id            bigserial primary key,
  automation_id bigint not null references automations (id) on delete cascade,
  lead_id       bigint not null references leads (id) on delete cascade,
  trigger_id    bigint,
  channel       text not null,
  subject       text,
  body          text not null,
  due_at        timestamptz not null,
  status        text not null default 'pending'
                check (status in ('pending', 'sent', 'deferred', 'blocked', 'failed', 'skipped')),
  reason        text,              -- the gate's reason when not sent
  message_id    bigint,            -- the message the send recorded, if any
  defer_until   timestamptz,       -- quiet hours: when the message will go
  result        jsonb,             -- the send's answer, as the API gives it
  created_at    timestamptz not null,
  finished_at   timestamptz,
  unique (automation_id, lead_id)
);
create index automation_runs_lead on automation_runs (lead_id);
