-- Leadline schema, version 1. Forward-only: never edit once landed; add 0002_… instead.

create table settings (
  key        text primary key,
  value      jsonb not null,
  updated_at timestamptz not null default now()
);

-- Operator-chosen identifiers (as in a dialer installation): org and list ids are integers,
-- campaign and user ids are strings. A null org_id elsewhere means house (platform) scope.
create table orgs (
  id          bigint primary key,
  name        text not null,
  company     text not null default '',
  timezone    text not null default 'America/New_York',
  quiet_start text,                       -- 'HH:MM' local; null or start = end means none
  quiet_end   text,
  consent     text not null default 'implied' check (consent in ('implied', 'explicit')),
  sms         jsonb,                      -- {base_url, account_sid, auth_token, from}
  email       jsonb,                      -- {smtp_url, from}
  created_at  timestamptz not null default now(),
  updated_at  timestamptz not null default now()
);

-- No row: billing not configured, so sends are blocked with billing_not_configured.
create table org_billing (
  org_id       bigint primary key references orgs (id) on delete cascade,
  status       text not null check (status in ('active', 'frozen')),
  subscription text not null check (subscription in ('active', 'none')),
  credits      numeric(14, 4) not null default 0,
  sms_cost     numeric(10, 4) not null default 0,
  email_cost   numeric(10, 4) not null default 0,
  updated_at   timestamptz not null default now()
);

create table campaigns (
  id         text primary key,
  org_id     bigint references orgs (id),
  name       text not null default '',
  created_at timestamptz not null default now()
);
create index campaigns_org on campaigns (org_id);

create table lists (
  id          bigint primary key,
  campaign_id text not null references campaigns (id),
  name        text not null default '',
  created_at  timestamptz not null default now()
);
create index lists_campaign on lists (campaign_id);

create table users (
  id         text primary key,
  org_id     bigint references orgs (id),
  name       text not null default '',
  created_at timestamptz not null default now()
);

create table api_keys (
  id           bigserial primary key,
  key_hash     bytea not null unique,      -- sha256 of the plaintext; the plaintext is never stored
  key_prefix   text not null,              -- first characters, to recognise a key in listings
  name         text not null default '',
  org_id       bigint references orgs (id),-- null: platform-global
  scopes       text[] not null default '{}',
  agent        text references users (id),
  active       boolean not null default true,
  provisioned  boolean not null default false,
  created_at   timestamptz not null default now(),
  revoked_at   timestamptz,
  last_used_at timestamptz
);

-- The shared per-key hourly counter. Every hit takes the next value of its key's sequence
-- (`rate_seq_<key id>`, created with the key); the hit's position in the hour is that value minus
-- the hour's base, stored once per key and hour. nextval() needs no transaction id and writes no
-- row version, so counting costs almost nothing on the database, and every instance draws from
-- the same sequence, so they count exactly together.
create table rate_windows (
  key_id bigint not null,
  hour   bigint not null,                  -- floor(unix seconds / 3600)
  base   bigint not null,                  -- the sequence's last value when the window was opened
  primary key (key_id, hour)
);

create function create_rate_sequence() returns trigger language plpgsql as $$
begin
  execute format('create sequence if not exists %I', 'rate_seq_' || new.id);
  return new;
end $$;

create trigger api_keys_rate_sequence after insert on api_keys
  for each row execute function create_rate_sequence();

create table leads (
  id          bigserial primary key,
  list_id     bigint not null references lists (id),
  phone       text not null,               -- last 10 digits
  first_name  text not null default '',
  last_name   text not null default '',
  email       text not null default '',
  address1    text not null default '',
  city        text not null default '',
  state       text not null default '',
  postal_code text not null default '',
  status      text not null default 'NEW',
  source      text not null default '',
  source_meta jsonb not null default '{}',
  created_at  timestamptz not null default now(),
  updated_at  timestamptz not null default now()
);
-- Dedup (same list, same phone, newest) and CTI suffix match (newest by phone).
create index leads_list_phone on leads (list_id, phone, id desc);
create index leads_phone on leads (phone, id desc);

-- Contact channels and their consent state, one row per lead and channel.
create table lead_channels (
  lead_id    bigint not null references leads (id) on delete cascade,
  channel    text not null check (channel in ('sms', 'email')),
  address    text not null,
  consent    text not null default 'none' check (consent in ('none', 'in', 'out')),
  consent_at timestamptz,
  consent_source text,
  updated_at timestamptz not null default now(),
  primary key (lead_id, channel)
);
create index lead_channels_address on lead_channels (channel, address);

create table hopper (
  id          bigserial primary key,
  campaign_id text not null references campaigns (id),
  lead_id     bigint not null references leads (id) on delete cascade,
  created_at  timestamptz not null default now(),
  unique (campaign_id, lead_id)
);

create table automations (
  id         bigint primary key,
  org_id     bigint references orgs (id),
  trigger    text not null,
  channel    text not null check (channel in ('sms', 'email', 'note')),
  subject    text,
  body       text not null,
  active     boolean not null default true,
  updated_at timestamptz not null default now()
);

-- Automation triggers recorded in the transaction that caused them; a worker runs them.
create table automation_triggers (
  id           bigserial primary key,
  org_id       bigint,
  trigger      text not null,
  lead_id      bigint references leads (id) on delete cascade,
  created_at   timestamptz not null default now(),
  processed_at timestamptz
);
create index automation_triggers_pending on automation_triggers (id) where processed_at is null;

create table messages (
  id           bigserial primary key,
  lead_id      bigint not null references leads (id) on delete cascade,
  org_id       bigint,
  channel      text not null check (channel in ('sms', 'email', 'note')),
  direction    text not null check (direction in ('out', 'in')),
  actor_type   text not null default '',
  actor_id     text not null default '',
  subject      text not null default '',
  body         text not null default '',
  status       text not null default '',
  error        text not null default '',
  meta         jsonb,
  operation_id text,
  request_hash text,                        -- what the operation_id was first used for
  provider_id  text,
  cost         numeric(10, 4) not null default 0,
  defer_until  timestamptz,
  created_at   timestamptz not null default now(),
  updated_at   timestamptz not null default now()
);
create index messages_lead on messages (lead_id, id desc);
create unique index messages_operation on messages (coalesce(org_id, -1), operation_id)
  where operation_id is not null;
create index messages_deferred on messages (defer_until) where status = 'queued';
create index messages_provider on messages (provider_id) where provider_id is not null;

-- Conversation `event` entries (appointment events and the like).
create table lead_events (
  id         bigserial primary key,
  lead_id    bigint not null references leads (id) on delete cascade,
  event      text not null,
  label      text not null default '',
  actor      text not null default '',
  actor_role text not null default '',
  note       text not null default '',
  created_at timestamptz not null default now()
);
create index lead_events_lead on lead_events (lead_id, id desc);

create table dials (
  id         bigserial primary key,
  agent      text not null references users (id),
  key_id     bigint references api_keys (id),
  lead_id    bigint references leads (id) on delete set null,
  phone      text not null,
  status     text not null default 'pending',
  created_at timestamptz not null default now(),
  claimed_at timestamptz,
  ended_at   timestamptz
);
create index dials_pending on dials (agent, id) where status = 'pending';

create table calls (
  id           bigserial primary key,
  lead_id      bigint references leads (id) on delete cascade,
  dial_id      bigint references dials (id),
  key_id       bigint references api_keys (id),
  phone        text not null default '',
  to_number    text not null default '',
  status       text not null default '',
  secs         integer not null default 0,
  agent        text not null default '',
  recording_id bigint,
  ai_summary   text,
  visit_id     bigint,                      -- DNI attribution
  occurred_at  timestamptz not null default now(),
  created_at   timestamptz not null default now()
);
create index calls_lead on calls (lead_id, id desc);
create index calls_to_number on calls (to_number, occurred_at);

create table kpi_metrics (
  key         text primary key,
  label       text not null,
  aggregation text not null default 'sum',
  created_at  timestamptz not null default now()
);

create table kpi_points (
  id         bigserial primary key,
  org_id     bigint,                        -- null: house scope
  metric_key text not null,
  day        text not null,                 -- 'YYYY-MM-DD'; only the shape is checked
  dim_key    text not null default '',
  value      double precision not null,
  updated_at timestamptz not null default now()
);
create unique index kpi_points_identity on kpi_points (coalesce(org_id, -1), metric_key, day, dim_key);

-- Transactional outbox: written in the transaction of the change that caused the event.
create table outbox_events (
  id         bigserial primary key,
  org_id     bigint,
  type       text not null,
  payload    jsonb not null,
  created_at timestamptz not null default now()
);

create table webhooks (
  id         bigint primary key,
  org_id     bigint references orgs (id),
  url        text not null,
  secret     text not null,
  events     text[] not null default '{}',
  active     boolean not null default true,
  updated_at timestamptz not null default now()
);

create table webhook_deliveries (
  id              bigserial primary key,
  event_id        bigint not null references outbox_events (id) on delete cascade,
  webhook_id      bigint not null references webhooks (id) on delete cascade,
  status          text not null default 'pending',
  attempts        integer not null default 0,
  next_attempt_at timestamptz not null default now(),
  last_status     integer,
  last_error      text,
  delivered_at    timestamptz,
  created_at      timestamptz not null default now(),
  unique (event_id, webhook_id)
);
create index webhook_deliveries_due on webhook_deliveries (next_attempt_at) where status = 'pending';

create table dni_pools (
  key         text primary key,
  org_id      bigint references orgs (id),
  name        text not null default '',
  fallback    text not null default '',
  placeholder text not null default '',
  ttl_seconds integer not null default 1800,
  updated_at  timestamptz not null default now()
);

create table dni_numbers (
  pool_key text not null references dni_pools (key) on delete cascade,
  number   text not null,
  active   boolean not null default true,
  primary key (pool_key, number)
);
create unique index dni_numbers_number on dni_numbers (number) where active;

create table calendars (
  id                 bigint primary key,
  org_id             bigint references orgs (id),
  name               text not null default '',
  timezone           text not null,
  slot_minutes       integer not null default 30,
  capacity           integer not null default 1,
  min_notice_minutes integer not null default 0,
  horizon_days       integer not null default 14,
  hours              jsonb not null default '{}',
  updated_at         timestamptz not null default now()
);

create table calendar_links (
  slug        text primary key,
  calendar_id bigint not null references calendars (id) on delete cascade,
  updated_at  timestamptz not null default now()
);
