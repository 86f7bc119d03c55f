-- Keys at rest: no clear part of an operator-chosen key, and only `lk_` + 4 characters of a
-- generated one. Until now key_prefix held the first 10 characters of every key: for a chosen key
-- of 16 characters that left 6 unknown characters behind one unsalted SHA-256, found in seconds
-- from a dump.
--
-- Only `leadline keys create`/`rotate` write keys outside provisioning, and those are always
-- generated (`lk_` + 43 base64url characters), so their prefix is cut to 7 characters. A
-- provisioned key may have been chosen or generated and the row cannot tell which (a chosen key
-- may start with `lk_` too), so its prefix is cleared: the listing then shows none for it.
-- From now on '' is what a chosen key stores.
update api_keys
set key_prefix = case when not provisioned and key_prefix like 'lk\_%' then left(key_prefix, 7) else '' end
where key_prefix <> '';
