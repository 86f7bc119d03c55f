-- Automations that work the lead (operations.md §3): the triggers missed_call, appointment_booked
-- and appointment_reminder beside new_lead, new_lead's `sources`, and each organization's daily
-- cap on automation sends.

-- The cap (src/messages/gates.ts capGate): automation sends recorded in the organization's day.
-- Null: the default (src/messages/gates.ts AUTOMATION_DAILY_CAP). 0 stops every automation send.
alter table orgs add column automation_daily_cap integer check (automation_daily_cap >= 0);

-- appointment_reminder: how long before the start. new_lead: the lead sources it applies to;
-- null means every source but `booking` (the anonymous booking API never causes an unasked text).
alter table automations
  add column offset_minutes integer check (offset_minutes between 5 and 10080),
  add column sources text[];

-- What a trigger is about besides its lead: a missed_call's call. Null: the lead itself (new_lead).
alter table automation_triggers
  add column subject_kind text,
  add column subject_id bigint;

-- A run is once per (automation, subject, occurrence): new_lead's subject is the lead, a
-- missed_call's the call, an appointment automation's the appointment; a reminder's occurrence is
-- the start it reminds of (Unix seconds), so a moved appointment gets a reminder for its new start
-- while one already sent for a start is never sent again for that start. The send's operation_id
-- is derived from the same three (src/automations/service.ts). `merge`: values known only when the
-- run was made ({appointment_time}, {reschedule_url}); cleared when the run finishes.
-- `send_before`: a reminder never goes at or after its appointment's start.
alter table automation_runs
  add column subject_kind text not null default 'lead',
  add column subject_id bigint,
  add column occurrence bigint not null default 0,
  add column merge jsonb,
  add column send_before timestamptz;
update automation_runs set subject_id = lead_id;
alter table automation_runs alter column subject_id set not null;
alter table automation_runs drop constraint automation_runs_automation_id_lead_id_key;
create unique index automation_runs_once on automation_runs (automation_id, subject_kind, subject_id, occurrence);
-- A reschedule or cancellation finds its appointment's pending runs.
create index automation_runs_pending_subject on automation_runs (subject_kind, subject_id) where status = 'pending';

-- A message that must go before a time (a reminder: its appointment's start). Queued by quiet
-- hours, it is refused `expired` if its time comes only at or after that.
alter table messages add column send_before timestamptz;

-- The cap's count: an organization's automation sends recorded in each of its days, moved in the
-- send's transaction under the org's billing row lock (every send of the org takes it first), so
-- exact across instances and read in one row however many were sent (a count of `messages` each
-- time grew with the day's sends).
create table automation_daily_sends (
  org_id bigint not null,
  day    date not null,
  sends  integer not null,
  primary key (org_id, day)
);

-- The cap's warning is logged once per organization and day, across instances: the instance
-- whose insert lands logs it.
create table automation_cap_warnings (
  org_id    bigint not null,
  day       date not null,
  logged_at timestamptz not null,
  primary key (org_id, day)
);
