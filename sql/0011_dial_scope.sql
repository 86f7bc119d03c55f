-- A dial records the tenant scope of the key that queued it: the key's organization, or null when
-- a platform key queued it. Reach (src/cti/reach.ts): a tenant key reaches a dial whose lead is in
-- its organization, a dial without a lead queued by its organization, or a dial a platform key
-- queued for the agent the key is bound to. Without this column a dial queued by org 2's key for a
-- house agent was reachable by org 1's key bound to that same agent.
alter table dials add column queued_org_id bigint references orgs (id);

-- Existing rows: the queuing key (`key_id`) is still in api_keys (keys are revoked, never
-- deleted), so its organization is the scope it queued in (null for a platform key, which is
-- exactly the "queued by the platform" case). A dial with no key recorded was not queued through
-- the API; it takes its lead's organization, else stays null (house).
update dials d
set queued_org_id = case when d.key_id is not null
                         then (select k.org_id from api_keys k where k.id = d.key_id)
                         else (select l.org_id from leads l where l.id = d.lead_id) end
where d.key_id is not null or d.lead_id is not null;
