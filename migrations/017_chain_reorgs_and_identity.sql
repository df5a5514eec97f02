-- Reorgs, nonce gaps and chain identity (docs/operations.md: "Reorgs", "Node serving another chain").

-- A confirmed batch records the block its transaction was mined in, by number AND hash: the
-- settlement stays final only while that hash is still the chain's at that height. The worker
-- re-checks confirmed batches until they are `finality depth` blocks deep (finalized_at), and puts
-- a batch whose transaction was reorganised away back in flight (reorg_count counts how often).
alter table settlement_batches add column block_hash text;
alter table settlement_batches add column finalized_at timestamptz;
alter table settlement_batches add column reorg_count integer not null default 0;
-- When the tracker first saw the batch's nonce used with no successful receipt of its own: from then
-- on it only waits for the finality depth before the batch is declared failed, and the stuck-batch
-- alarm gives it longer (docs/operations.md, "Stuck settlement batches").
alter table settlement_batches add column nonce_used_at timestamptz;
-- Batches confirmed before this migration carry no block hash to compare: they are old enough to
-- be past any finality window, so they count as final.
update settlement_batches set finalized_at = coalesce(finished_at, now()) where status = 'confirmed';
create index settlement_batches_watched on settlement_batches (chain_key, block_number)
  where status = 'confirmed' and finalized_at is null;

alter table chain_transactions add column block_hash text;

-- How many confirmations of this transfer were undone by a reorg. The ledger postings of a
-- transfer's n-th re-confirmation and n-th reversal carry it in their reference, so that
-- (kind, reference) stays unique while the ledger stays append-only.
alter table transfers add column reversals integer not null default 0;

-- Nonces refilled with a zero-value transfer to the relayer itself: a nonce this relayer handed out
-- whose own transaction must never land any more (its batch ended), after a reorg freed it again.
-- Later nonces cannot be mined behind a gap; refilling never skips a nonce and never pays anyone.
create table relayer_nonce_fills (
  chain_key text not null references chains (chain_key),
  relayer_address text not null,
  nonce bigint not null check (nonce >= 0),
  hash text not null,
  raw_transaction text not null,
  created_at timestamptz not null default now(),
  primary key (chain_key, hash)
);
create index relayer_nonce_fills_nonce on relayer_nonce_fills (chain_key, relayer_address, nonce);

-- The chain settlement signs for: one row. A worker that finds its node serving another chain
-- (another chain id or genesis hash) records it in observed_* and refuses to sign or broadcast
-- until an operator runs `plainpay chain adopt` (or the node serves the expected chain again).
create table settlement_chain (
  id text primary key check (id = 'current'),
  chain_key text not null references chains (chain_key),
  chain_id integer not null,
  genesis_hash text not null,
  adopted_at timestamptz not null default now(),
  -- How this chain became the expected one: 'first_use' or 'operator'.
  adopted_by text not null,
  observed_chain_key text,
  observed_chain_id integer,
  observed_genesis_hash text,
  observed_at timestamptz,
  updated_at timestamptz not null default now()
);
