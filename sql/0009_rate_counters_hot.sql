-- Address buckets are written behind once a second per instance, each flush updating thousands of
-- rows in place: with room left on each page the update is HOT (only `n` changes, which no index
-- holds), so it neither adds index entries nor leaves them behind for vacuum.
alter table rate_counters set (fillfactor = 50);
