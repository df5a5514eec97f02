-- Payments (hosted checkout sessions), rail attempts, the event outbox and idempotency records.

create table payments (
  id text primary key,
  account_id text not null references accounts (id),
  livemode boolean not null,
  status text not null check (status in
    ('pending', 'processing', 'paid', 'settling', 'settled', 'expired', 'refunded', 'partially_refunded')),
  amount_minor bigint not null check (amount_minor > 0),
  currency text not null,
  redirect_url text not null,
  reference text,
  merchant_name text,
  description text,
  webhook_url text,
  payout_address text check (payout_address ~ '^0x[0-9a-fA-F]{40}$'),
  -- json, not jsonb: the text is kept as sent (key order included) so it echoes back unchanged.
  metadata json,
  -- Hash of the creation parameters: a repeated reference with the same parameters is the same payment.
  creation_hash text not null,
  expires_at timestamptz not null,
  -- The FX quote locked at creation: local amount -> settlement asset at `quote_rate`, minus the fee.
  quote_rate text not null,
  quote_source text not null,
  fee_bps integer not null check (fee_bps between 0 and 10000),
  settlement_asset text not null,
  gross_settlement_minor bigint not null check (gross_settlement_minor >= 0),
  fee_minor bigint not null check (fee_minor >= 0),
  settlement_minor bigint not null check (settlement_minor >= 0),
  -- Filled when the payment settles: where it went and what the service paid in gas.
  settlement_destination text check (settlement_destination in ('address', 'balance')),
  settlement_address text,
  settlement_tx_hash text,
  settlement_chain_id integer,
  settlement_gas_used bigint,
  settlement_gas_cost_wei numeric(78, 0),
  -- Local-currency amount refunded so far (refunds come in a later migration's table).
  refunded_minor bigint not null default 0 check (refunded_minor >= 0 and refunded_minor <= amount_minor),
  paid_at timestamptz,
  settled_at timestamptz,
  expired_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index payments_reference on payments (account_id, livemode, reference) where reference is not null;
create index payments_list on payments (account_id, livemode, created_at desc, id desc);
create index payments_due_expiry on payments (expires_at) where status = 'pending';
create index payments_paid on payments (paid_at) where status = 'paid';

-- Every try of the payer on a rail, successful or not.
create table payment_attempts (
  id text primary key,
  payment_id text not null references payments (id),
  rail text not null,
  outcome text not null check (outcome in ('succeeded', 'declined')),
  failure_reason text,
  created_at timestamptz not null default now()
);
create index payment_attempts_payment on payment_attempts (payment_id, created_at);

-- The outbox: an event row commits in the same transaction as the state change it announces.
create table events (
  id text primary key,
  account_id text not null references accounts (id),
  livemode boolean not null,
  type text not null,
  -- The object the event is about (payment, payout, …), for filtering.
  object_id text,
  data json not null,
  -- Where it is delivered (the payment's webhook_url at the time), or null: recorded only.
  webhook_url text,
  created_at timestamptz not null default now()
);
create index events_account on events (account_id, livemode, created_at desc, id desc);
create index events_object on events (object_id);

-- Idempotency-Key records: the first successful result of a (account, mode, key), replayed after.
create table idempotency_keys (
  account_id text not null references accounts (id),
  livemode boolean not null,
  key text not null,
  tool text not null,
  request_hash text not null,
  response json not null,
  created_at timestamptz not null default now(),
  primary key (account_id, livemode, key)
);
create index idempotency_keys_created on idempotency_keys (created_at);
