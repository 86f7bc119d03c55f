-- An organization's do-not-contact list (issue 31; src/leads/dnc.ts): phones as their last 10
-- digits (src/leads/phone.ts) and emails lowercased, each with where it came from (`console:<user>`,
-- `cli`, `provision`, `unsubscribe_link`), when and why. The send path refuses a listed address
-- (reason do_not_contact), the hopper never takes a listed phone, and cti_queue.php hands out a
-- dial of one marked `dnc: true`. Every addition and removal is audited (audit_log) by whoever
-- made it. The primary key is the lookup each of those makes: (organization, kind, address).
create table do_not_contact (
  org_id   bigint not null references orgs (id) on delete cascade,
  kind     text not null check (kind in ('phone', 'email')),
  address  text not null check (address <> ''),
  source   text not null,
  note     text not null default '',
  added_at timestamptz not null,
  primary key (org_id, kind, address)
);
