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

-- `attempts` counts automatic attempts (the position in the retry schedule); operator replays are
-- recorded in webhook_attempts without moving the schedule. `claimed_until`: an attempt is in
-- flight until then, and no other worker or replay sends this delivery before it passes (a
-- worker that died mid-attempt is thus retried once its claim ends, never run twice at once).
-- A claim found still set by the next one is an attempt whose worker stopped: `abandoned_*`
-- carry it into that claim's statement, which records it.
alter table webhook_deliveries
  add column claimed_until timestamptz,
  add column claimed_at    timestamptz,
  add column claimed_by    text,
  add column abandoned_at  timestamptz,
  add column abandoned_by  text,
  add column updated_at    timestamptz;
create index webhook_deliveries_endpoint on webhook_deliveries (webhook_id, id desc);
create index webhook_deliveries_failed on webhook_deliveries (id desc) where status = 'failed';

-- One row per attempt, written when it ends (one insert, not an insert and an update: delivery
-- throughput is bounded by these statements). An attempt in flight shows as the delivery's claim.
create table webhook_attempts (
  id           bigserial primary key,
  delivery_id  bigint not null references webhook_deliveries (id) on delete cascade,
  trigger      text not null check (trigger in ('schedule', 'replay')),
  started_at   timestamptz not null,
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
