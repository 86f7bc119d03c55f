-- DNI retention (src/dni/prune.ts): a visitor is kept while a call of its retention period names
-- it as its attribution (calls.visit_id has no foreign key), which the prune asks for each visitor
-- it considers. Partial: most calls have no DNI attribution.
create index calls_visit on calls (visit_id) where visit_id is not null;
