-- Messaging (issue 7): what the one send path needs beyond sql/0001's `messages`, `org_billing` and
-- `lead_channels`.
--
-- Message statuses: `stored` (a note); `queued` (deferred by quiet hours, `defer_until` set);
-- `sending` (charged and handed to the provider: set in the transaction that charges, before the
-- provider is called, so a process killed during the call never sends it again); `sent` (the
-- provider accepted it); `delivered`, `undelivered`, `failed` (final); `unknown` (the process
-- stopped during the provider call, so nobody knows; found by the lease below); `received` (inbound).

-- Idempotency is scoped to the *sender's* organization (platform keys share the house scope), which
-- is not always the lead's (`org_id`): a platform key may message any org's lead. The unique index
-- of 0001, keyed on the lead's org, gives way to one on the sender's scope.
alter table messages
  add column op_scope bigint,            -- the sending actor's org; null: house (platform) scope
  add column result text,                -- the Message result as first answered, replayed byte for byte
  add column sending_until timestamptz;  -- lease of a `sending` row; past it, the sender is presumed dead

drop index messages_operation;
create unique index messages_operation on messages (coalesce(op_scope, -1), operation_id)
  where operation_id is not null;

-- Interrupted sends, found by their lapsed lease.
create index messages_sending on messages (sending_until) where status = 'sending';

-- Status callbacks find their message by the provider's id (MessageSid) within a channel.
drop index messages_provider;
create index messages_provider on messages (provider_id, channel) where provider_id is not null;

-- Credits move only with a ledger entry, in the transaction that records the send (charge) or its
-- failure (refund). One charge and at most one refund per message.
create table credit_ledger (
  id         bigserial primary key,
  org_id     bigint not null references orgs (id) on delete cascade,
  message_id bigint references messages (id) on delete set null,
  kind       text not null check (kind in ('charge', 'refund')),
  amount     numeric(14, 4) not null,      -- signed: a charge is negative
  balance    numeric(14, 4) not null,      -- org_billing.credits after this entry
  created_at timestamptz not null default now()
);
create unique index credit_ledger_once on credit_ledger (message_id, kind) where message_id is not null;
create index credit_ledger_org on credit_ledger (org_id, id);

-- The balance never goes below zero: the send path checks under the row lock; this makes a bug
-- that forgot to an error instead of a debt. NOT VALID: rows written before it are not rechecked.
alter table org_billing add constraint org_billing_credits_nonnegative check (credits >= 0) not valid;
