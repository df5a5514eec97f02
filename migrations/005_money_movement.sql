-- Money movement by tools (payouts, revenue shares, refunds), the policy that governs it, the
-- confirmations a human gives, and the append-only, hash-chained action log.

-- A payout from the custodial balance to an address; a revenue-share leg is a payout too.
create table payouts (
  id text primary key,
  account_id text not null references accounts (id),
  livemode boolean not null,
  revenue_share_id text,
  amount_minor bigint not null check (amount_minor > 0),
  asset text not null,
  to_address text not null check (to_address ~ '^0x[0-9a-fA-F]{40}$'),
  reference text,
  memo text,
  -- queued: the transfer is in the settlement queue; settled: confirmed on chain; failed: money
  -- returned to the balance.
  status text not null check (status in ('queued', 'settled', 'failed')),
  transfer_id text,
  channel text not null,
  chain_id integer,
  tx_hash text,
  gas_used bigint,
  gas_cost_wei numeric(78, 0),
  failure_reason text,
  created_at timestamptz not null default now(),
  settled_at timestamptz,
  failed_at timestamptz
);
create index payouts_account on payouts (account_id, livemode, created_at desc, id desc);
create index payouts_recipient on payouts (account_id, livemode, lower(to_address));
create index payouts_share on payouts (revenue_share_id) where revenue_share_id is not null;

create table revenue_shares (
  id text primary key,
  account_id text not null references accounts (id),
  livemode boolean not null,
  -- The payment whose settlement is shared, or null for a plain amount from the balance.
  payment_id text references payments (id),
  amount_minor bigint not null check (amount_minor > 0),
  asset text not null,
  reference text,
  channel text not null,
  created_at timestamptz not null default now()
);
-- A payment's proceeds are shared once.
create unique index revenue_shares_payment on revenue_shares (payment_id) where payment_id is not null;

create table refunds (
  id text primary key,
  account_id text not null references accounts (id),
  livemode boolean not null,
  payment_id text not null references payments (id),
  -- In the payment's currency.
  amount_minor bigint not null check (amount_minor > 0),
  currency text not null,
  -- What it took from the merchant's balance and the fee account, in the settlement asset.
  merchant_debit_minor bigint not null check (merchant_debit_minor >= 0),
  fee_return_minor bigint not null check (fee_return_minor >= 0),
  reason text,
  rail text not null,
  status text not null check (status in ('succeeded')),
  channel text not null,
  created_at timestamptz not null default now()
);
create index refunds_payment on refunds (payment_id, created_at);

-- Money the policy let through, per channel, for the rolling 24-hour caps.
create table policy_spend (
  id bigint generated always as identity primary key,
  account_id text not null references accounts (id),
  livemode boolean not null,
  channel text not null,
  tool text not null,
  object_id text not null,
  amount_settlement_minor bigint not null check (amount_settlement_minor >= 0),
  created_at timestamptz not null default now()
);
create index policy_spend_window on policy_spend (account_id, livemode, channel, created_at);

-- The account's policy, versioned: the newest version is in force; older ones stay for audit.
create table policies (
  account_id text not null references accounts (id),
  version integer not null check (version >= 1),
  policy json not null,
  updated_by_key text,
  created_at timestamptz not null default now(),
  primary key (account_id, version)
);

-- An action the policy held for a human. Bound to its exact canonical input by hash; single-use.
create table confirmations (
  id text primary key,
  account_id text not null references accounts (id),
  livemode boolean not null,
  tool text not null,
  channel text not null,
  input json not null,
  input_hash text not null,
  summary text not null,
  -- The decision that held it: { outcome, reasons[] }.
  decision json not null,
  requested_by_key text,
  run_id text,
  status text not null check (status in ('pending', 'executed', 'rejected', 'expired')),
  expires_at timestamptz not null,
  decided_by_key text,
  decided_at timestamptz,
  -- The tool's output once executed.
  result json,
  created_at timestamptz not null default now()
);
create index confirmations_pending on confirmations (account_id, livemode, status, created_at desc);

-- Agent runs (POST /agent/settle): the instruction and how it ended. Written once at the end of
-- the run; its actions reference it.
create table agent_runs (
  id text primary key,
  account_id text not null references accounts (id),
  livemode boolean not null,
  channel text not null,
  key_id text,
  instruction text not null,
  model text not null,
  dry_run boolean not null default false,
  idempotency_key text,
  -- running while the model works; the row claims the idempotency key so a repeat waits for it.
  status text not null check (status in ('running', 'completed', 'confirmation_required', 'rejected', 'failed')),
  reply text not null,
  steps integer not null default 0,
  usage json,
  created_at timestamptz not null default now(),
  finished_at timestamptz
);
create index agent_runs_account on agent_runs (account_id, livemode, created_at desc, id desc);
create unique index agent_runs_idempotency on agent_runs (account_id, livemode, idempotency_key)
  where idempotency_key is not null;

-- Every money tool call, from any channel, and every agent tool call: the queryable view of the
-- action log. Its rows change as an action moves on (held → executed); the chained log below is
-- the immutable record of each step.
create table agent_actions (
  id text primary key,
  account_id text not null references accounts (id),
  livemode boolean not null,
  run_id text references agent_runs (id),
  channel text not null,
  key_id text,
  tool text not null,
  input json not null,
  decision text not null check (decision in ('allow', 'require_confirmation', 'deny', 'not_checked')),
  reasons json not null,
  status text not null check (status in ('executed', 'held', 'denied', 'failed', 'rejected', 'planned')),
  result json,
  error json,
  confirmation_id text,
  approved_by_key text,
  object_id text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index agent_actions_account on agent_actions (account_id, livemode, created_at desc, id desc);
create index agent_actions_run on agent_actions (run_id);

-- The action log: append-only, each row carrying the hash of the account's previous row, so an
-- edited or deleted row breaks the chain (`plainpay audit verify` names the first broken row).
create table action_log (
  seq bigint generated always as identity primary key,
  account_id text not null references accounts (id),
  livemode boolean not null,
  entry_type text not null,
  run_id text,
  action_id text,
  payload json not null,
  prev_hash text not null,
  hash text not null unique,
  created_at timestamptz not null default now()
);
create index action_log_account on action_log (account_id, seq);

-- The last hash of each account's chain; locking this row orders an account's log appends.
create table action_log_heads (
  account_id text primary key references accounts (id),
  last_seq bigint not null,
  last_hash text not null
);

create function action_log_is_append_only() returns trigger language plpgsql as $$
begin
  raise exception 'the action log is append-only: % is not allowed', tg_op using errcode = '42501';
end $$;
create trigger action_log_append_only before update or delete on action_log
  for each row execute function action_log_is_append_only();
