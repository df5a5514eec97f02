-- Settlement: the double-entry ledger, the on-chain transfer queue, settlement batches, the
-- relayer's chains, leases, nonces and signed transactions (docs/settlement.md).

-- ---------------------------------------------------------------------------------------------
-- Ledger. One row per ledger account and asset, with its balance kept in the same transaction as
-- the entries that change it (checkLedgerInvariants proves balance = sum of entries).
create table ledger_accounts (
  -- e.g. 'merchant:acct_…:test:USDC', 'treasury:<chain key>:USDC', 'in_flight:USDC', 'fx:live:NGN'
  id text primary key,
  kind text not null check (kind in
    ('merchant', 'treasury', 'in_flight', 'fees', 'funding', 'rail_clearing', 'fx')),
  -- Currency or token code; amounts are integers in its minor units (USDC: 6 decimals).
  asset text not null,
  -- Debit-normal accounts hold value (treasury, rail clearing); credit-normal ones are what the
  -- service owes or earned (merchant balances, in-flight transfers, fees, funding).
  normal_side text not null check (normal_side in ('debit', 'credit')),
  account_id text references accounts (id),
  livemode boolean,
  chain_key text,
  -- In the account's normal side: credits minus debits for a credit-normal account.
  balance_minor bigint not null default 0,
  created_at timestamptz not null default now(),
  unique (id, asset),
  check ((kind in ('treasury', 'rail_clearing') and normal_side = 'debit')
      or (kind in ('merchant', 'in_flight', 'fees', 'funding', 'fx') and normal_side = 'credit')),
  check ((kind = 'merchant') = (account_id is not null)),
  -- Test-mode money never mixes with live money: merchant balances, fees and the rail/FX accounts
  -- exist per mode. The treasury, in-flight and funding are physical (one chain, one contract).
  check ((kind in ('merchant', 'fees', 'rail_clearing', 'fx')) = (livemode is not null)),
  check ((kind = 'treasury') = (chain_key is not null)),
  -- Only the accounts that stand for the outside world may go negative: the payer rail's clearing
  -- account and the FX trading accounts. A merchant balance, the treasury, in-flight money and fees
  -- never can, whatever the code above tries.
  constraint ledger_balance_not_negative check (kind in ('rail_clearing', 'fx') or balance_minor >= 0)
);
create index ledger_accounts_merchant on ledger_accounts (account_id, livemode) where account_id is not null;

create table ledger_postings (
  id bigint generated always as identity primary key,
  -- What happened: payment_received, transfer_enqueued, transfer_confirmed, transfer_failed,
  -- treasury_opening, … (names are the code's; see src/ledger/ledger.ts).
  kind text not null,
  -- The object it is about (pay_…, tx_…, a chain key, po_…).
  reference text not null,
  created_at timestamptz not null default now()
);
-- One posting of a kind per object: a second "payment_received" for one payment is refused by the
-- database, which makes the ledger side of settlement exactly-once by construction.
create unique index ledger_postings_once on ledger_postings (kind, reference);

create table ledger_entries (
  id bigint generated always as identity primary key,
  posting_id bigint not null references ledger_postings (id),
  account_id text not null,
  asset text not null,
  -- Signed: a debit is positive, a credit negative. Entries of a posting sum to zero per asset.
  amount_minor bigint not null check (amount_minor <> 0),
  foreign key (account_id, asset) references ledger_accounts (id, asset)
);
create index ledger_entries_posting on ledger_entries (posting_id);
create index ledger_entries_account on ledger_entries (account_id);

-- Every posting balances to zero per asset, checked by the database at commit (deferred, so the
-- entries of one posting can be inserted in any order).
create function ledger_posting_must_balance() returns trigger language plpgsql as $$
declare
  unbalanced text;
begin
  select asset into unbalanced from ledger_entries
    where posting_id = new.posting_id group by asset having sum(amount_minor) <> 0 limit 1;
  if unbalanced is not null then
    raise exception 'ledger posting % does not balance in %', new.posting_id, unbalanced
      using errcode = '23514';
  end if;
  return null;
end $$;
create constraint trigger ledger_entries_balanced after insert on ledger_entries
  deferrable initially deferred for each row execute function ledger_posting_must_balance();

-- Append-only: a mistake is corrected by a new posting, never by editing history.
create function ledger_is_append_only() returns trigger language plpgsql as $$
begin
  raise exception 'the ledger is append-only: % on % is not allowed', tg_op, tg_table_name
    using errcode = '42501';
end $$;
create trigger ledger_entries_append_only before update or delete on ledger_entries
  for each row execute function ledger_is_append_only();
create trigger ledger_postings_append_only before update or delete on ledger_postings
  for each row execute function ledger_is_append_only();

-- ---------------------------------------------------------------------------------------------
-- Chains the relayer has used. The key is chain id + genesis hash for a node reached over RPC, and
-- a fresh random key for each start of the in-process devnet: that chain lives in memory and is
-- gone when its process ends, while the database may persist (PGlite). Nonces are per chain key;
-- the treasury ledger account is per chain key and batch contract.
create table chains (
  chain_key text primary key,
  chain_id integer not null,
  genesis_hash text,
  -- True for the in-process devnet: its chain disappears with the process that ran it.
  ephemeral boolean not null,
  created_at timestamptz not null default now()
);

-- One relayer key is driven by one holder at a time; the nonce counter lives here.
create table relayer_leases (
  chain_key text not null references chains (chain_key),
  relayer_address text not null,
  holder text not null,
  expires_at timestamptz not null,
  -- Next nonce to hand out; allocation checks the lease in the same statement.
  next_nonce bigint not null check (next_nonce >= 0),
  updated_at timestamptz not null default now(),
  primary key (chain_key, relayer_address)
);

-- ---------------------------------------------------------------------------------------------
-- The transfer queue: every token movement out of the treasury is one row here, whatever asked for
-- it (a settled payment, a payout, a split leg, a refund). enqueueTransfer writes it in the caller's
-- transaction together with the ledger move into in-flight.
create table transfers (
  id text primary key,
  kind text not null check (kind in ('payment_settlement', 'payout', 'split_leg', 'refund')),
  -- The object that asked for it (pay_…, po_…, …).
  source_id text not null,
  account_id text not null references accounts (id),
  livemode boolean not null,
  asset text not null,
  recipient text not null check (recipient ~ '^0x[0-9a-fA-F]{40}$'),
  amount_minor bigint not null check (amount_minor > 0),
  -- Where the money sits in the ledger until confirmed, and where it returns if the transfer fails.
  from_ledger_account text not null references ledger_accounts (id),
  status text not null check (status in ('queued', 'batched', 'sent', 'confirmed', 'failed')),
  -- The batch it is in now (null while queued or after it failed).
  batch_id text,
  -- Batches that ended without paying (reverted or never minable) this transfer was released from.
  attempts integer not null default 0,
  last_error text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  confirmed_at timestamptz,
  -- A source asks for one transfer of a kind, ever: no payment can have two transfers.
  unique (kind, source_id)
);
create index transfers_queued on transfers (created_at, id) where status = 'queued';
create index transfers_batch on transfers (batch_id) where batch_id is not null;
create index transfers_open on transfers (status) where status in ('queued', 'batched', 'sent');

-- One call of BatchPayout.payout: netted lines, a batch id the contract accepts once.
create table settlement_batches (
  id text primary key,
  -- bytes32 batchId = keccak256(id): the contract refuses to pay it twice, on any nonce.
  batch_key text not null unique,
  asset text not null,
  status text not null check (status in ('planned', 'sent', 'confirmed', 'failed')),
  -- The chain its signed transactions are for (null while planned).
  chain_key text references chains (chain_key),
  -- [{ "recipient": "0x…", "amount": "123" }] in call order: one line per recipient (netted).
  lines json not null,
  total_minor bigint not null check (total_minor > 0),
  transfer_count integer not null check (transfer_count > 0),
  -- Filled on confirmation from the receipt of the transaction that paid.
  tx_hash text,
  block_number bigint,
  gas_used bigint,
  effective_gas_price bigint,
  gas_cost_wei numeric(78, 0),
  failure_reason text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  sent_at timestamptz,
  finished_at timestamptz
);
create index settlement_batches_open on settlement_batches (created_at) where status in ('planned', 'sent');

-- Which transfers a batch carried; a transfer released from a failed batch appears again later.
create table settlement_batch_transfers (
  batch_id text not null references settlement_batches (id),
  transfer_id text not null references transfers (id),
  primary key (batch_id, transfer_id)
);
create index settlement_batch_transfers_transfer on settlement_batch_transfers (transfer_id);

-- A nonce belongs to one batch, ever (fee bumps reuse it for the same batch only).
create table relayer_nonces (
  chain_key text not null references chains (chain_key),
  relayer_address text not null,
  nonce bigint not null check (nonce >= 0),
  batch_id text not null references settlement_batches (id),
  created_at timestamptz not null default now(),
  primary key (chain_key, relayer_address, nonce)
);

-- Every signed transaction, stored before it is broadcast. A hash names a transaction on one chain
-- only: two fresh devnets produce byte-identical transactions for the same batch.
create table chain_transactions (
  chain_key text not null,
  hash text not null,
  relayer_address text not null,
  nonce bigint not null,
  batch_id text not null references settlement_batches (id),
  raw_transaction text not null,
  gas_limit bigint not null,
  max_fee_per_gas bigint not null,
  max_priority_fee_per_gas bigint not null,
  -- signed: stored, not yet accepted by a node; broadcast: a node accepted it; mined / reverted:
  -- its receipt; replaced: a sibling with the same nonce was mined; dropped: can never be mined.
  status text not null check (status in ('signed', 'broadcast', 'mined', 'reverted', 'replaced', 'dropped')),
  broadcast_count integer not null default 0,
  last_broadcast_at timestamptz,
  last_error text,
  block_number bigint,
  gas_used bigint,
  effective_gas_price bigint,
  created_at timestamptz not null default now(),
  primary key (chain_key, hash),
  foreign key (chain_key, relayer_address, nonce) references relayer_nonces (chain_key, relayer_address, nonce)
);
create index chain_transactions_batch on chain_transactions (batch_id);
