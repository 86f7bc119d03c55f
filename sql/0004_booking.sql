-- Public booking: appointments taken through calendar links, and the rule that no slot ever holds
-- more than its calendar's capacity.

create table appointments (
  id             bigserial primary key,
  -- No cascade: appointments outlive nothing silently. Provisioning never deletes a calendar.
  calendar_id    bigint not null references calendars (id),
  link_slug      text not null,               -- the link it came through (a slug can later move)
  slot_epoch     bigint not null,             -- the slot's start, Unix seconds
  lead_id        bigint references leads (id) on delete set null,
  name           text not null,
  phone          text not null,               -- last 10 digits
  email          text not null default '',
  status         text not null default 'pending'
                 check (status in ('pending', 'confirmed', 'cancelled', 'completed', 'no_show')),
  -- The reschedule token (32 random bytes) is stored only as hashes: the SHA-256 of its first 16
  -- bytes finds the row, the SHA-256 of the whole token is compared in constant time by the service.
  token_selector bytea not null unique,
  token_hash     bytea not null,
  created_at     timestamptz not null default now(),
  updated_at     timestamptz not null default now()
);
-- Every status but `cancelled` holds its seat. Slots reads count these per slot start.
create index appointments_seats on appointments (calendar_id, slot_epoch) where status <> 'cancelled';
create index appointments_lead on appointments (lead_id) where lead_id is not null;

-- The lock on one slot of one calendar, held to the end of the transaction.
create function appointment_slot_lock(calendar bigint, epoch bigint) returns void language sql as $$
  select pg_advisory_xact_lock(hashtextextended('appointment-slot:' || calendar || ':' || epoch, 0))
$$;

-- Capacity, enforced by the database for every writer: whatever puts an appointment into a slot
-- (a booking, a reschedule, a cancelled appointment restored) takes that slot's lock, then counts
-- the seats taken. Under read committed each statement of a volatile function takes a fresh
-- snapshot, so the count runs after the lock is granted and sees every booking committed by the
-- transactions it waited for: two writers can never both see the last seat free. (Repeatable read
-- would count from the transaction's first snapshot; it is refused rather than overbooking.)
-- A full slot fails the statement with SQLSTATE LB001, which the service answers slot_unavailable.
create function appointments_capacity() returns trigger language plpgsql as $$
declare
  cap   integer;
  taken integer;
begin
  if new.status = 'cancelled' then
    return new;
  end if;
  if tg_op = 'UPDATE' and old.status <> 'cancelled'
     and old.calendar_id = new.calendar_id and old.slot_epoch = new.slot_epoch then
    return new;  -- it keeps the seat it has
  end if;
  if current_setting('transaction_isolation') = 'repeatable read' then
    raise exception 'appointments are written under read committed or serializable isolation'
      using errcode = 'LB002';
  end if;
  perform appointment_slot_lock(new.calendar_id, new.slot_epoch);
  select capacity into cap from calendars where id = new.calendar_id;
  select count(*) into taken from appointments
   where calendar_id = new.calendar_id and slot_epoch = new.slot_epoch
     and status <> 'cancelled' and id <> new.id;
  if taken >= coalesce(cap, 0) then
    raise exception 'slot % of calendar % is full', new.slot_epoch, new.calendar_id
      using errcode = 'LB001';
  end if;
  return new;
end $$;

create trigger appointments_capacity before insert or update of calendar_id, slot_epoch, status on appointments
  for each row execute function appointments_capacity();
