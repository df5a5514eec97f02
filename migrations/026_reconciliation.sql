-- The daily three-way reconciliation (docs/reconciliation.md): what the providers say they
-- collected, what the ledger booked, what the chain paid out, and the treasury against what it owes.
-- A run only reads; these rows record what it read and found. None of them is money.

-- One row per run, kept as history: the scheduled run of each day (once, however many workers),
-- and every run the operator asked for (CLI, operator API).
create table reconciliation_runs (
  id text primary key,
  -- The UTC day reconciled, YYYY-MM-DD (text: both drivers would read a date as local midnight).
  day text not null check (day ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'),
  trigger text not null check (trigger in ('schedule', 'cli', 'api')),
  status text not null check (status in ('running', 'completed', 'failed')),
  -- The process running it, and until when it holds it: a scheduled run whose holder died (or
  -- that failed) is taken up by another worker once this has passed.
  claimed_by text not null,
  lease_until timestamptz not null,
  started_at timestamptz not null,
  finished_at timestamptz,
  error text,
  -- The totals of each side, per mode, currency and rail, and the treasury's cover (json).
  summary json,
  differences integer not null default 0,
  -- The treasury against what it owes, for /metrics and the alert: held / owed (null: owes nothing
  -- or was not read), and how much is missing (0 when covered).
  treasury_cover_ratio double precision,
  treasury_shortfall_minor bigint,
  created_at timestamptz not null default now()
);
create unique index reconciliation_runs_scheduled_day on reconciliation_runs (day) where trigger = 'schedule';
create index reconciliation_runs_latest on reconciliation_runs (day desc, started_at desc);

-- One row per difference found: a named kind, and the payment, transfer or provider row it is about.
create table reconciliation_lines (
  run_id text not null references reconciliation_runs (id),
  line_no integer not null,
  kind text not null,
  -- null: not one mode's (the treasury holds both).
  livemode boolean,
  currency text not null,
  -- The merchant whose payment or transfer it is: that merchant's finance sees the line on the
  -- dashboard. null: the operator's alone (the treasury, a provider row plainpay cannot place).
  account_id text,
  payment_id text,
  rail text,
  collection_id text,
  -- The provider's reference or receipt, or the settlement batch and its transaction.
  reference text,
  -- What the provider (or the chain) says, and what plainpay booked, in `currency`'s minor units.
  source_amount_minor bigint,
  ledger_amount_minor bigint,
  detail text not null,
  primary key (run_id, line_no)
);
create index reconciliation_lines_account on reconciliation_lines (account_id, livemode, run_id)
  where account_id is not null;

-- The day's rows, read once a day: payments by the day they were paid, transfers by the day they
-- were confirmed (the existing indexes start with the account, or keep only open transfers).
create index payments_paid_day on payments (paid_at) where paid_at is not null;
create index transfers_confirmed_day on transfers (confirmed_at) where status = 'confirmed';
