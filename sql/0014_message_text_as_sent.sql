-- An outgoing message's body and subject are the text as sent (merge values in, the email's
-- subject as its header had it), so the conversation shows what the lead received; the
-- idempotency identity stays request_hash, a hash of the request's own fields (the template).
-- Messages recorded before this change hold the template: a `queued` one among them is merged
-- when its time comes (and its text replaced then), which `merged = false` marks. Adding a
-- column with a constant default rewrites nothing; the update touches only queued rows.
alter table messages add column merged boolean not null default true;
update messages set merged = false where status = 'queued' and channel in ('sms', 'email');
