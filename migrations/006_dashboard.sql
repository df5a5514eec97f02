-- Dashboard sign-in sessions (src/dashboard/sessions.ts). Server-side, so that any API instance
-- can serve any request and a session can be ended by revoking it here.
create table dashboard_sessions (
  -- SHA-256 (hex) of the session id in the cookie; the id itself is never stored.
  id_hash text primary key,
  account_id text not null references accounts (id),
  -- The API key the user signed in with: every request re-checks that it is still valid.
  key_id text not null references api_keys (id),
  livemode boolean not null,
  -- The synchronizer token every form of the session carries.
  csrf_token text not null,
  created_at timestamptz not null default now(),
  last_seen_at timestamptz not null,
  -- Absolute end of the session; the idle limit is checked against last_seen_at.
  expires_at timestamptz not null,
  revoked_at timestamptz
);
create index dashboard_sessions_key on dashboard_sessions (key_id);
