-- Lead search by one name word (src/leads/search.ts, byName): the name indexes gain the page's
-- order as key columns. A prefix covers a few distinct names ("mar": mary, mark, martin…); for each,
-- the index now hands over its newest leads in order, so a page reads about 50 entries per name
-- instead of every lead the prefix matches and sorting them (22,000 for a prefix shared by one lead
-- in 45, at 1,000,000 leads). The included columns keep those reads index-only.
drop index leads_first_name;
drop index leads_last_name;
create index leads_first_name on leads (lower(first_name) text_pattern_ops, created_at desc, id desc) include (first_name, org_id);
create index leads_last_name on leads (lower(last_name) text_pattern_ops, created_at desc, id desc) include (last_name, org_id);
