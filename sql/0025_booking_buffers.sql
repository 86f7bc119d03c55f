-- Booking rules of issue 30 (docs/booking.md "Buffers" and "Notice to reschedule"): buffers
-- before and after an appointment, and the minimum notice to move one through its token.
-- Constant defaults: no table rewrite, and every calendar keeps its behaviour (no buffers, no notice).
alter table calendars
  add column buffer_before_minutes     integer not null default 0 check (buffer_before_minutes between 0 and 240),
  add column buffer_after_minutes      integer not null default 0 check (buffer_after_minutes between 0 and 240),
  add column min_cancel_notice_minutes integer not null default 0 check (min_cancel_notice_minutes between 0 and 43200);

-- The lock of a whole calendar's appointments, held to the end of the transaction. Taken instead
-- of the slot's lock (0004) when the calendar has buffers: a buffer makes neighbouring slots
-- exclude each other, so two bookings of different slots must queue as well.
create function appointment_calendar_lock(calendar bigint) returns void language sql as $$
  select pg_advisory_xact_lock(hashtextextended('appointment-calendar:' || calendar, 0))
$$;

-- Capacity with buffers, for every writer (the slot generator, src/booking/slots.ts, offers a slot
-- by the same rule). Appointments are slot_minutes long (the calendar's, as now) and each holds
-- [start - buffer_before, end + buffer_after]; two conflict when those overlap, that is when their
-- starts are less than slot_minutes + buffer_before + buffer_after apart (the "reach"). An
-- appointment may be written only while fewer than `capacity` live appointments conflict with it;
-- written that way, no instant is ever held by more than `capacity` of them, buffers included.
-- A calendar without buffers keeps 0004's rule: only the same start conflicts (the reach is one
-- second; on one grid that is the same thing, and appointments left off the grid by a change of
-- the rules keep counting per start as they always did), and the slot's lock suffices. A calendar
-- with buffers takes the calendar's lock.
-- Under read committed each statement here takes a fresh snapshot, so the count runs after the
-- lock is granted and sees every booking committed by the transactions it waited for.
create or replace function appointments_capacity() returns trigger language plpgsql as $$
declare
  cal   calendars%rowtype;
  reach bigint;
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
  -- The rules decide the lock, so they are read before it (a change of them committed meanwhile
  -- applies from the next write on); the appointments are counted after it.
  select * into cal from calendars where id = new.calendar_id;
  if cal.buffer_before_minutes + cal.buffer_after_minutes > 0 then
    perform appointment_calendar_lock(new.calendar_id);
  else
    perform appointment_slot_lock(new.calendar_id, new.slot_epoch);
  end if;
  if cal.buffer_before_minutes + cal.buffer_after_minutes > 0 then
    reach := (cal.slot_minutes::bigint + cal.buffer_before_minutes + cal.buffer_after_minutes) * 60;
  else
    reach := 1;
  end if;
  select count(*) into taken from appointments
   where calendar_id = new.calendar_id and status <> 'cancelled' and id <> new.id
     and slot_epoch > new.slot_epoch - reach and slot_epoch < new.slot_epoch + reach;
  if taken >= coalesce(cal.capacity, 0) then
    raise exception 'slot % of calendar % is full', new.slot_epoch, new.calendar_id
      using errcode = 'LB001';
  end if;
  return new;
end $$;
