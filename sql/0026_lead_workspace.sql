-- The lead side of the agents' workspace (issue 29, docs/leads.md): statuses, tags, saved replies,
-- and search that finds names without their accents, phones by their last digits and message text.

-- Folding for search: letters without their diacritics, lowercased ("José Núñez" → "jose nunez"):
-- the canonical decomposition (NFD) with its combining marks (U+0300–U+036F) dropped, then the
-- Latin letters that do not decompose (Ł, Ø, Đ, Ħ, ı, Ŧ) mapped by hand, then lower(). Built-in
-- functions only, so it is the same on every PostgreSQL 13+ and on the embedded database (PGlite),
-- with no extension to install or to bundle into the executable (unaccent and pg_trgm both need
-- one); normalize() needs a UTF-8 database, which is PostgreSQL's default and what initdb gives
-- PGlite. Immutable, so expression indexes use it: every write path of a name (intake, booking,
-- an edit, provisioning, an import) is covered without the application keeping a copy. Search
-- folds what is typed with this same function, in SQL, so both sides always agree. (A translate()
-- over a 600-letter table did the same 35 times slower: 0.3 ms a message, bench/search.ts.)
-- Letters outside Latin keep lower()'s rules; ß, æ and œ stay as they are.
create function leadline_fold(text) returns text language sql immutable strict parallel safe as $$
  select lower(translate(regexp_replace(normalize($1, NFD), '[\u0300-\u036f]', '', 'g'), 'ŁłØøĐđĦħıŦŧ', 'llooddhhitt'))
$$;

-- The name indexes of sql/0019, on the folded name instead of lower(): the same shape (the page's
-- order as key columns, the name and org included so a walk reads the index alone), so the
-- console's search keeps its plans and "jose" finds José.
drop index leads_first_name;
drop index leads_last_name;
create index leads_first_name on leads (leadline_fold(first_name) text_pattern_ops, created_at desc, id desc) include (first_name, org_id);
create index leads_last_name on leads (leadline_fold(last_name) text_pattern_ops, created_at desc, id desc) include (last_name, org_id);

-- Phones by their last digits (4, 7, any from 4 to 9): the stored last 10 reversed, so a suffix
-- is an index prefix. The page's order and the org included, as for names.
create index leads_phone_reversed on leads (reverse(phone) text_pattern_ops, created_at desc, id desc) include (phone, org_id);

-- Message text and notes, full-text: every word of subject and body, folded, with the 'simple'
-- configuration (no stemming, no stop words: call-center text is names, places, numbers and
-- several languages). Built in, so the embedded database has it too; bench/search.ts measured it
-- against a trigram index (bench/RESULTS.md). Stored, not only indexed: a common word's newest
-- matches are found by walking the newest messages, which then checks each message's words
-- instead of parsing its text again (1-2 µs a message instead of 22). Adding it rewrites the
-- table once (about as long as building the index alone would take: every message is parsed
-- either way). More lexemes in the statistics, so the planner knows a word in 1% from one in 0.01%.
alter table messages add column search tsvector
  generated always as (to_tsvector('simple', leadline_fold(subject || ' ' || body))) stored;
alter table messages alter column search set statistics 1000;
create index messages_search on messages using gin (search);

-- An organization's lead statuses (dispositions), in order: [{code, label}]. Null: the default
-- list (src/leads/statuses.ts). A lead's status is a code of its organization's list; NEW, the
-- status every lead starts with, is in every list.
alter table orgs add column lead_statuses jsonb;

-- Tags: free text per organization; on a lead, unique by their lowercase form (tag_key, made by
-- the application, which also makes the key of what is typed). org_id is the lead's, kept by the
-- trigger below when a lead changes organization (as leads.org_id is, sql/0002).
create table lead_tags (
  lead_id    bigint not null references leads (id) on delete cascade,
  org_id     bigint,
  tag        text not null check (tag <> ''),
  tag_key    text not null check (tag_key <> ''),
  created_at timestamptz not null default now(),
  primary key (lead_id, tag_key)
);
-- The leads of an organization carrying a tag (a filter of the lead list).
create index lead_tags_org on lead_tags (org_id, tag_key, lead_id);

-- How many leads of an organization carry each tag, for the suggestions (most used first) without
-- counting every tagged lead on each keystroke. Kept by triggers on lead_tags, so every way a tag
-- comes or goes (an edit, a lead deleted, a lead moved to another organization) counts.
-- Concurrent edits adding one tag serialize on its row here for the instant of the update.
create table org_tags (
  org_key bigint not null,           -- coalesce(org_id, -1): the house is an organization here
  tag_key text not null,
  tag     text not null,             -- the spelling of its first use
  uses    integer not null default 0 check (uses >= 0),
  primary key (org_key, tag_key)
);

create function lead_tags_count() returns trigger language plpgsql as $$
begin
  if tg_op in ('DELETE', 'UPDATE') then
    update org_tags set uses = uses - 1 where org_key = coalesce(old.org_id, -1) and tag_key = old.tag_key;
  end if;
  if tg_op in ('INSERT', 'UPDATE') then
    insert into org_tags as o (org_key, tag_key, tag, uses) values (coalesce(new.org_id, -1), new.tag_key, new.tag, 1)
    on conflict (org_key, tag_key) do update set uses = o.uses + 1, tag = case when o.uses = 0 then excluded.tag else o.tag end;
  end if;
  return null;
end $$;

create trigger lead_tags_count after insert or delete or update of org_id on lead_tags
  for each row execute function lead_tags_count();

create function leads_tags_org() returns trigger language plpgsql as $$
begin
  update lead_tags set org_id = new.org_id where lead_id = new.id;
  return null;
end $$;

create trigger leads_tags_org after update of org_id on leads
  for each row when (old.org_id is distinct from new.org_id) execute function leads_tags_org();

-- Saved replies (canned responses): per organization, picked in the composer by typing / and the
-- start of the name. `channels`: where it may be used. Ids given in a provisioning file are kept;
-- ones made by the CLI or the console are drawn from the identity after the highest.
create table saved_replies (
  id         bigint generated by default as identity primary key,
  org_id     bigint not null references orgs (id) on delete cascade,
  name       text not null check (name <> ''),
  body       text not null check (body <> ''),
  subject    text not null default '',
  channels   text[] not null default '{sms,email,note}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index saved_replies_name on saved_replies (org_id, lower(name) text_pattern_ops);
