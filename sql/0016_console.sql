-- The operator console (README: Console): people who sign in are rows of `users` (the CTI agents
-- the keys are bound to) with an email and a role; a row without a role cannot sign in.
alter table users
  add column email text,
  add column role text check (role in ('admin', 'manager', 'agent')),
  -- Argon2id (PHC string), null until the user sets one through an invite link or `users passwd`.
  add column password_hash text,
  add column password_changed_at timestamptz,
  add column disabled_at timestamptz,
  -- Two-step sign-in (src/console/totp.ts): the secret, sealed under LEADLINE_SECRET_KEY like other
  -- stored secrets; one being set up until its first code confirms it; the last step used.
  add column totp_secret text,
  add column totp_pending text,
  add column totp_step bigint not null default 0;
-- Emails are compared lowercased; stored lowercased by every writer.
create unique index users_email on users (email) where email is not null;
-- An admin acts for every organization; managers and agents for one.
alter table users add constraint users_role_org check (role is null or role = 'admin' or org_id is not null);

-- Server-side sessions: the cookie holds 32 random bytes, the row only their SHA-256.
create table console_sessions (
  token_hash bytea primary key,
  user_id    text not null references users (id) on delete cascade,
  -- The session's CSRF token, sent back by forms (_csrf) and scripts (X-CSRF-Token).
  csrf       text not null,
  address    text not null default '',     -- the salted hash of the client address at sign-in
  created_at timestamptz not null,
  seen_at    timestamptz not null,
  revoked_at timestamptz
);
create index console_sessions_user on console_sessions (user_id) where revoked_at is null;

-- One-time links that set a password (`leadline users invite`): hashed like sessions.
create table console_invites (
  token_hash bytea primary key,
  user_id    text not null references users (id) on delete cascade,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  used_at    timestamptz
);

-- Who changed what, when, from where (a hashed address): written in the transaction of the change.
create table audit_log (
  id         bigserial primary key,
  org_id     bigint,
  actor_type text not null,
  actor_id   text not null,
  action     text not null,
  target     text not null default '',
  details    jsonb not null default '{}',
  address    text not null default '',
  created_at timestamptz not null default now()
);
create index audit_log_org on audit_log (org_id, id desc);
