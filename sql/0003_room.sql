-- Room for the features to come: the limiter's counters for address buckets and the job queue.

-- Hourly hit counts of buckets that are not API keys (src/limits): DNI's hashed client addresses
-- (written behind, once a second per instance) and booking writes per address (one upsert per
-- hit). Rows of past hours are pruned.
create table rate_counters (
  scope  text not null,                    -- the limit's name
  bucket text not null,
  hour   bigint not null,                  -- floor(unix seconds / 3600), from the service's clock
  n      bigint not null,
  primary key (scope, bucket, hour)
);
create index rate_counters_hour on rate_counters (hour);

-- Background work (src/jobs). A claim moves run_at forward by the claim's lease, so a job whose
-- worker died is due again when the lease ends; a finished job is deleted.
create table jobs (
  id         bigserial primary key,
  kind       text not null,
  ref        bigint,                       -- the row the job acts on, when it has one
  grp        text,                         -- a group bounded in concurrency (a webhook endpoint)
  payload    jsonb not null default '{}',
  run_at     timestamptz not null default now(),
  attempts   integer not null default 0,
  claimed_at timestamptz,
  last_error text,
  created_at timestamptz not null default now()
);
create index jobs_due on jobs (kind, run_at, id);
create unique index jobs_kind_ref on jobs (kind, ref) where ref is not null;
