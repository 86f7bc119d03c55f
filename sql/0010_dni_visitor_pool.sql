-- A new visitor's row is written inside the allocation statement, under the pool's advisory lock,
-- and the foreign key from dni_visitors.pool_key checked each one there: a lookup and a row lock
-- (FOR KEY SHARE) on the pool's row per visitor, shared by every concurrent allocator of the pool
-- (a MultiXact across transactions): a seventh of the statement's time per visitor, measured. It
-- guarded nothing that can happen: visitors are written only for a pool just read from
-- dni_pools, and pools are never deleted (provisioning upserts them).
alter table dni_visitors drop constraint dni_visitors_pool_key_fkey;
