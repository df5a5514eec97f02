-- Collection belongs to the operator (docs/rails.md, "Who collects"). Until now a merchant's API
-- key could connect the merchant's own Paystack key or M-Pesa paybill: the payer's money then
-- landed in the merchant's own provider account while settlement also credited the merchant the
-- stablecoin equivalent from the operator's treasury, paying it twice. From here on, provider
-- collection credentials are set by the operator only (`plainpay collection set`), one
-- instance-wide integration per rail and mode collecting for every merchant, with per-account ones
-- only where the operator sets them.

create table collection_accounts (
  id text primary key,
  rail text not null check (rail in ('paystack', 'mpesa')),
  livemode boolean not null,
  -- null: collects for every merchant of this mode that has no collection account of its own.
  account_id text references accounts (id),
  -- operator: set by whoever runs the instance; money collected here is the operator's, and only
  -- such money is credited to merchants. merchant: a credential a merchant connected before this
  -- migration; it collects nothing until the operator adopts it or removes it.
  owner text not null check (owner in ('operator', 'merchant')),
  settings json not null,
  secret_ciphertext text not null,
  -- Currencies the provider refused for this integration ("Currency not supported by merchant"):
  -- the rail is no longer offered to payers in them.
  refused_currencies json not null default '[]',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  -- Set when the operator replaces or removes it: no new attempt uses it, but the attempts and
  -- refunds that went through it are still followed up with its own credentials.
  retired_at timestamptz
);
create unique index collection_accounts_one_per_scope
  on collection_accounts (rail, livemode, coalesce(account_id, '*')) where retired_at is null;

-- Every credential merchants connected becomes a merchant-owned collection account: kept (open
-- attempts and refunds may still need it to be followed up), never offered to payers again.
insert into collection_accounts (id, rail, livemode, account_id, owner, settings, secret_ciphertext, created_at, updated_at)
  select 'col_' || substr(md5(account_id || ':' || livemode::text || ':' || rail), 1, 22),
         rail, livemode, account_id, 'merchant', settings, secret_ciphertext, created_at, updated_at
    from rail_credentials;

-- Which collection account an attempt's money went to: its verification, its refunds and the
-- reconciliation use that one, whatever the operator sets later.
alter table payment_attempts add column collection_id text references collection_accounts (id);
update payment_attempts a
   set collection_id = c.id
  from payments p, collection_accounts c
 where a.payment_id = p.id
   and a.rail in ('paystack', 'mpesa')
   and c.rail = a.rail and c.livemode = p.livemode and c.account_id = p.account_id;
-- A provider attempt names its collection account from now on (older ones may not: NOT VALID).
alter table payment_attempts add constraint payment_attempts_provider_collection
  check (rail = 'sandbox' or collection_id is not null) not valid;
create index payment_attempts_collection on payment_attempts (collection_id, created_at)
  where collection_id is not null;

drop table rail_credentials;
