-- The leads list's Source filter (docs/console-leads.md): an organization's leads of one intake
-- source, newest first, in keyset pages. Without it a rare source walked the organization's whole
-- created order (leads_org_created) to fill a page. Matches searchLeads' `l.org_id = … and
-- l.source = …` with its `order by created_at desc, id desc`.
create index leads_org_source_created on leads (org_id, source, created_at desc, id desc);
