-- Rows rewritten all day by write-behind batches are updated in place (HOT): no column such an
-- update changes is indexed, and each page keeps room for the new row version, so an update adds
-- no index entries and leaves none behind for vacuum.

-- Address buckets: every instance's flush, once a second, updates `n` of thousands of rows.
alter table rate_counters set (fillfactor = 50);

-- Returning visitors: every renewal written behind moves last_visit_at, user_agent and ip_hash.
-- Only the operator's report filtered by last visit, and it reads the pool's visitors anyway.
drop index dni_visitors_last_visit;
alter table dni_visitors set (fillfactor = 70);
