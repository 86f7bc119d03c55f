-- The one-card-per-message inbox (sql/0018) is gone: conversations replaced it (sql/0023), and
-- nothing sets or reads messages.handled_at any more. Its partial index took in every inbound
-- message, for ever (no message is marked handled now), and was read by nothing: a write on every
-- inbound text for no reader. The column stays for the rows that hold it.
drop index if exists messages_unhandled;
