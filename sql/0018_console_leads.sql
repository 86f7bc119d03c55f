-- The console's inbox and lead search (README: Console).

-- An inbound message is handled once someone in the console marked it so (or replied to it);
-- the inbox lists the unhandled ones, newest first, and the navigation counts them. The partial
-- index holds only those rows, so the count and the first page read a few index pages however
-- many messages the organization has. Inbound texts older than a week when this migration runs
-- are taken as handled, so the first inbox an upgraded installation shows is today's, not its
-- whole history.
alter table messages add column handled_at timestamptz;
update messages set handled_at = created_at where direction = 'in' and created_at < now() - interval '7 days';
create index messages_unhandled on messages (org_id, id desc) where direction = 'in' and handled_at is null;

-- Lead search (src/leads/search.ts) pages by (created_at desc, id desc) within an organization
-- (or all of them, for admins), a campaign or a list, and finds names and emails by prefix. Each
-- filter that narrows the set most has its own index range, so a page reads about its own rows at
-- 1,000,000 leads (bench/console-plans.ts prints the plans). Phones use leads_phone (0001): exact
-- last 10 digits. Status has no index of its own: it is read along the others' ranges.
create index leads_created on leads (created_at desc, id desc);
create index leads_org_created on leads (org_id, created_at desc, id desc);
create index leads_campaign_created on leads (campaign_id, created_at desc, id desc);
create index leads_list_created on leads (list_id, created_at desc, id desc);
-- The name indexes carry what a page of one name's matches is chosen by, so the newest matches are
-- found from the index alone (src/leads/search.ts, byOneName).
create index leads_first_name on leads (lower(first_name) text_pattern_ops) include (first_name, org_id, created_at, id);
create index leads_last_name on leads (lower(last_name) text_pattern_ops) include (last_name, org_id, created_at, id);
create index leads_email on leads (email text_pattern_ops) where email <> '';
