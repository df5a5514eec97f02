-- Accounts and API keys (issue: foundation).
-- Secrets are never stored: an API key is kept as its SHA-256 hash, a display prefix and
-- its last four characters. Webhook signing secrets are stored encrypted (see secret-box).

create table accounts (
  id text primary key,
  name text not null check (length(name) between 1 and 200),
  -- Fee the service keeps on settlement, in basis points of the settled amount.
  fee_bps integer not null default 100 check (fee_bps between 0 and 10000),
  default_payout_address text check (default_payout_address ~ '^0x[0-9a-fA-F]{40}$'),
  created_at timestamptz not null default now()
);

create table api_keys (
  id text primary key,
  account_id text not null references accounts (id),
  name text,
  livemode boolean not null,
  -- e.g. 'sk_test_4f9Q': enough to recognise a key in a list, far too little to use it.
  display_prefix text not null,
  last4 text not null,
  secret_hash text not null unique,
  scopes text[] not null,
  created_at timestamptz not null default now(),
  last_used_at timestamptz,
  expires_at timestamptz,
  revoked_at timestamptz,
  -- Set on the new key when it replaced another by rotation.
  rotated_from text references api_keys (id)
);
create index api_keys_account on api_keys (account_id, created_at desc);

create table webhook_secrets (
  id text primary key,
  account_id text not null references accounts (id),
  -- AES-256-GCM ciphertext of the whsec_ secret under the instance master key.
  secret_ciphertext text not null,
  created_at timestamptz not null default now(),
  -- null while current; set when rotated out: deliveries sign with it until then.
  expires_at timestamptz
);
create index webhook_secrets_account on webhook_secrets (account_id, created_at desc);
