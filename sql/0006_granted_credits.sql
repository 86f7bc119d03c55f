-- A provisioning file's `credits` is what the operator has granted an organization, not its
-- balance: applying the same file again must not hand back what sends have spent. The grant is
-- kept beside the balance; a file that raises (or lowers) it moves the balance by the difference,
-- with a ledger entry.
alter table org_billing add column granted numeric(14, 4) not null default 0;
update org_billing set granted = credits;

alter table credit_ledger drop constraint credit_ledger_kind_check;
alter table credit_ledger add constraint credit_ledger_kind_check check (kind in ('charge', 'refund', 'grant'));
