-- Tamper evidence over the money rows themselves (issue 33): every write to a payment, payout (and
-- revenue-share leg), refund, revenue share, ledger entry, transfer or settlement batch records the row's
-- digest here, in the transaction of the write, with whether plainpay's own session made it.
-- `plainpay audit verify` recomputes each current row's digest and compares it with the newest one
-- recorded (src/audit/money-rows.ts): an edit with this trigger disabled differs, a deleted row is
-- missing, an added one unrecorded; an edit with the trigger on is recorded as made outside
-- plainpay. The table is append-only, like the action log.

-- The row's digest: sha256 of its JSON text (the columns in their table's order), with the
-- settings that change how values print pinned, so that the same row always gives the same digest.
-- JSON, not jsonb: a json column (payment metadata) may hold a \u0000 escape that jsonb refuses.
create function money_row_digest(r anyelement) returns text language sql stable
  set timezone to 'UTC' set bytea_output to 'hex'
as $$ select encode(sha256(convert_to(row_to_json(r)::text, 'UTF8')), 'hex') $$;

create table money_row_digests (
  seq bigint generated always as identity primary key,
  table_name text not null,
  row_id text not null,
  -- The merchant whose money it is (null: the service's own, a settlement batch) and its mode.
  account_id text,
  livemode boolean,
  -- null: the row was deleted.
  digest text,
  -- Made by a plainpay session (src/db/connect.ts sets plainpay.session on each connection):
  -- false is a write from any other session, such as an operator's psql.
  by_service boolean not null,
  recorded_at timestamptz not null default now()
);
-- No index but the key: each money write adds a row here, and only verification reads them, all at
-- once (a scan is what it needs).

create function money_row_digests_are_append_only() returns trigger language plpgsql as $$
begin
  raise exception 'money row digests are append-only: % is not allowed', tg_op using errcode = '42501';
end $$;
create trigger money_row_digests_append_only before update or delete on money_row_digests
  for each row execute function money_row_digests_are_append_only();

-- The settings of money_row_digest, here too.
create function money_row_recorded() returns trigger language plpgsql
  set timezone to 'UTC' set bytea_output to 'hex'
as $$
declare
  r record;
  merchant text;
  mode boolean;
begin
  if tg_op = 'DELETE' then r := old; else r := new; end if;
  -- The row's own fields, not the JSON's: reading a field of the JSON parses all of it, and a json
  -- column holding \u0000 (payment metadata may) cannot be read as text.
  if tg_table_name = 'ledger_entries' then
    select la.account_id, la.livemode into merchant, mode
      from ledger_accounts la where la.id = r.account_id;
  elsif tg_table_name <> 'settlement_batches' then
    merchant := r.account_id;
    mode := r.livemode;
  end if;
  insert into money_row_digests (table_name, row_id, account_id, livemode, digest, by_service)
  values (
    tg_table_name, r.id::text, merchant, mode,
    case when tg_op = 'DELETE' then null
      else encode(sha256(convert_to(row_to_json(r)::text, 'UTF8')), 'hex') end,
    coalesce(current_setting('plainpay.session', true), '') = 'service'
  );
  return null;
end $$;

-- TRUNCATE fires no row trigger: refused on the digests and on every table they cover, so that
-- emptying a table (or the digests, to record new ones for edited rows) is never silent.
create function money_rows_are_not_truncated() returns trigger language plpgsql as $$
begin
  raise exception 'TRUNCATE of % is not allowed: money rows and their digests are kept', tg_table_name
    using errcode = '42501';
end $$;
create trigger money_row_digests_not_truncated before truncate on money_row_digests
  for each statement execute function money_rows_are_not_truncated();

-- The money tables (MONEY_TABLES in src/audit/money-rows.ts), each with both triggers. The transfer
-- queue is one: a queued transfer's recipient or amount edited in place would be paid by plainpay's
-- own batch, every other row unchanged.
do $$
declare
  money_table text;
begin
  foreach money_table in array array['payments', 'payouts', 'refunds', 'revenue_shares', 'ledger_entries',
                                     'transfers', 'settlement_batches'] loop
    execute format('create trigger %I after insert or update or delete on %I '
                   'for each row execute function money_row_recorded()', money_table || '_recorded', money_table);
    execute format('create trigger %I before truncate on %I '
                   'for each statement execute function money_rows_are_not_truncated()',
                   money_table || '_not_truncated', money_table);
  end loop;
end $$;

-- The rows already there, as plainpay wrote them.
insert into money_row_digests (table_name, row_id, account_id, livemode, digest, by_service)
select 'payments', id, account_id, livemode, money_row_digest(t), true from payments t;
insert into money_row_digests (table_name, row_id, account_id, livemode, digest, by_service)
select 'payouts', id, account_id, livemode, money_row_digest(t), true from payouts t;
insert into money_row_digests (table_name, row_id, account_id, livemode, digest, by_service)
select 'refunds', id, account_id, livemode, money_row_digest(t), true from refunds t;
insert into money_row_digests (table_name, row_id, account_id, livemode, digest, by_service)
select 'revenue_shares', id, account_id, livemode, money_row_digest(t), true from revenue_shares t;
insert into money_row_digests (table_name, row_id, account_id, livemode, digest, by_service)
select 'ledger_entries', t.id::text, la.account_id, la.livemode, money_row_digest(t), true
  from ledger_entries t join ledger_accounts la on la.id = t.account_id;
insert into money_row_digests (table_name, row_id, account_id, livemode, digest, by_service)
select 'settlement_batches', id, null, null, money_row_digest(t), true from settlement_batches t;
insert into money_row_digests (table_name, row_id, account_id, livemode, digest, by_service)
select 'transfers', id, account_id, livemode, money_row_digest(t), true from transfers t;

-- The newest head (seq and hash) of each account's chain that an intact verification saw (the
-- API's, the dashboard's, the CLI's, the worker's). A later chain that ends before it, or no longer
-- holds that row, was cut back or rewritten.
create table audit_heads_seen (
  account_id text primary key references accounts (id),
  seq bigint not null,
  hash text not null,
  seen_at timestamptz not null
);
