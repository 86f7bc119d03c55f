-- Who may export leads and calls as CSV in the console (src/console/exports.ts): managers and
-- admins always; an organization's agents only when it grants them the right here (provisioning
-- file: orgs[].agents_export). Off by default: an export is every matching row at once.
alter table orgs add column agents_export boolean not null default false;
