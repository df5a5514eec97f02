-- USDC paid in by EIP-3009 authorizations (x402's exact scheme, docs/x402.md "Settle"): each
-- authorization plainpay is asked to settle is recorded here before anything is submitted, and the
-- relayer's nonces and signed transactions can now belong to an authorization as well as to a batch.

create table x402_authorizations (
  id text primary key,
  -- The token's own key for an authorization: (chain, token, from, nonce). The token lets it be used
  -- once; this row lets plainpay act on it once, whoever asks again, for whichever merchant.
  chain_id integer not null,
  token text not null check (token ~ '^0x[0-9a-f]{40}$'),
  payer text not null check (payer ~ '^0x[0-9a-f]{40}$'),
  nonce text not null check (nonce ~ '^0x[0-9a-f]{64}$'),
  account_id text not null references accounts (id),
  livemode boolean not null,
  -- The payment this authorization pays: a new facilitator payment, or a checkout session's.
  payment_id text not null references payments (id),
  attempt_id text not null references payment_attempts (id),
  pay_to text not null check (pay_to ~ '^0x[0-9a-f]{40}$'),
  value_minor bigint not null check (value_minor > 0),
  valid_after bigint not null,
  valid_before bigint not null,
  signature text not null,
  -- SHA-256 of the canonical (payload, requirements): the same request again is recognised as such.
  request_hash text not null,
  -- x402 ResourceInfo of what was paid for, as sent.
  resource json,
  -- recorded: accepted, nothing signed yet; submitted: a signed transaction exists and may land;
  -- confirmed: the transfer is on chain at depth and the payment paid; failed: it can never land.
  status text not null check (status in ('recorded', 'submitted', 'confirmed', 'failed')),
  chain_key text,
  tx_hash text,
  block_number bigint,
  block_hash text,
  gas_used bigint,
  effective_gas_price bigint,
  -- Why it failed, as the specification's reason code and in words.
  failure_reason text,
  failure_message text,
  -- How often a reorg took its confirmed transfer off the chain (each undone credit is its own posting).
  reversals integer not null default 0,
  submitted_at timestamptz,
  confirmed_at timestamptz,
  finalized_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (chain_id, token, payer, nonce)
);
create index x402_authorizations_in_flight on x402_authorizations (created_at) where status in ('recorded', 'submitted');
create index x402_authorizations_watched on x402_authorizations (block_number)
  where status = 'confirmed' and finalized_at is null;
create index x402_authorizations_payment on x402_authorizations (payment_id);

-- A relayer nonce, and every transaction signed at it, belong to one batch or one authorization.
alter table relayer_nonces alter column batch_id drop not null;
alter table relayer_nonces add column authorization_id text references x402_authorizations (id);
alter table relayer_nonces add constraint relayer_nonces_one_owner
  check ((batch_id is null) <> (authorization_id is null));
alter table chain_transactions alter column batch_id drop not null;
alter table chain_transactions add column authorization_id text references x402_authorizations (id);
alter table chain_transactions add constraint chain_transactions_one_owner
  check ((batch_id is null) <> (authorization_id is null));
create index chain_transactions_authorization on chain_transactions (authorization_id) where authorization_id is not null;

-- The payer rail `usdc`: the payer's own wallet, no provider and no collection account behind it.
alter table payment_attempts drop constraint payment_attempts_provider_collection;
alter table payment_attempts add constraint payment_attempts_provider_collection
  check (rail in ('sandbox', 'usdc') or collection_id is not null) not valid;

-- An authorization to submit wakes the settlement worker, as a queued transfer does (migration 022).
create trigger x402_authorizations_notify after insert on x402_authorizations
  for each statement execute function plainpay_notify_settlement();
