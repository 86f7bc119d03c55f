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
