-- The client address (its bucket's salted hash: an IPv4 address, an IPv6 /64) that made each
-- hold, so that allocation can refuse an address a new hold once it has DNI_MAX_HOLDS_PER_ADDRESS
-- live ones in the pool (src/dni/queries.ts). Written only when a number is handed to a new
-- holder; renewals never change it. Holds made before this migration have none and count for
-- nobody. The index serves that count as one range of live holds. Renewals rewrite expires_at,
-- which dni_holds_free already indexes, so they were never HOT updates: this index adds one entry
-- per renewal, the same whether or not it holds expires_at, and with it the expired holds an
-- address made are not read.
alter table dni_holds add column holder_hash text not null default '';
create index dni_holds_holder on dni_holds (pool_key, holder_hash, expires_at) where active and holder_hash <> '';
