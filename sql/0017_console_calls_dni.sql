-- Fallback answers, kept for the console's pool page (src/dni/usage.ts): which visitor a pool had
-- no number for, in which hour, how often. The engine counts them in memory and writes them with
-- its once-a-second batch (src/dni/engine.ts), one row per pool, hour and visitor, so a stampede of
-- reloads by one refused visitor adds to one row, and the distinct visitors refused in an hour are
-- the rows of that hour: what the pool would have needed beside the holds it had. A visitor refused
-- because its address already holds its share of the pool (DNI_MAX_HOLDS_PER_ADDRESS) is not kept:
-- no pool size would have served it. Pruned with the hold history (visitor retention).
create table dni_fallbacks (
  pool_key text not null,
  hour     timestamptz not null,
  visitor  text not null,
  served   integer not null,
  primary key (pool_key, hour, visitor)
);

-- The console's call log (src/calls/log.ts) pages newest first, by (occurred_at, id).
create index calls_time on calls (occurred_at desc, id desc);
