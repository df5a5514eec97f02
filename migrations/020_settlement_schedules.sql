-- Settlement schedules (docs/settlement.md, "Schedules"): when a paid payment's on-chain transfer
-- goes out. `instant` (the default) sends it with the next batch; `hourly` and `daily` hold it to
-- the next UTC window boundary and `threshold` until what waits for its address reaches an amount
-- (at the latest the next daily boundary), so that everything owed to one address nets into one
-- transfer.

-- The account's schedule per mode (like the policy: a test key must not change how live money moves).
-- No row: instant.
create table settlement_schedules (
  account_id text not null references accounts (id),
  livemode boolean not null,
  schedule text not null check (schedule in ('instant', 'hourly', 'daily', 'threshold')),
  -- USDC minor units; only for `threshold`.
  threshold_minor bigint check (threshold_minor > 0),
  updated_by_key text,
  updated_at timestamptz not null default now(),
  primary key (account_id, livemode),
  check ((schedule = 'threshold') = (threshold_minor is not null))
);

-- A payment keeps the schedule it was created with: the one given in POST /v1/payments, else the
-- account's at that moment (filled in by the trigger below, so the insert stays one statement).
-- Existing payments are instant, as they were.
alter table payments add column settlement_schedule text not null default 'instant'
  check (settlement_schedule in ('instant', 'hourly', 'daily', 'threshold'));
-- Without a default, an insert that names none leaves it null for the trigger (NOT NULL is checked
-- after BEFORE triggers).
alter table payments alter column settlement_schedule drop default;
alter table payments add column settlement_threshold_minor bigint;
-- When its transfer was due, written when the worker takes the paid payment (reads of a paid payment
-- not yet taken compute it from paid_at and the schedule: src/settlement/schedules.ts).
alter table payments add column settlement_due_at timestamptz;

create function payments_settlement_schedule() returns trigger language plpgsql as $$
begin
  select s.schedule, s.threshold_minor into new.settlement_schedule, new.settlement_threshold_minor
    from settlement_schedules s where s.account_id = new.account_id and s.livemode = new.livemode;
  new.settlement_schedule := coalesce(new.settlement_schedule, 'instant');
  return new;
end $$;
create trigger payments_settlement_schedule before insert on payments
  for each row when (new.settlement_schedule is null) execute function payments_settlement_schedule();

-- A queued transfer waits until due_at (null: instant, sent by the batch window). threshold_minor:
-- due at once when the transfers waiting for its recipient add up to it.
alter table transfers add column due_at timestamptz;
alter table transfers add column threshold_minor bigint check (threshold_minor > 0);
create index transfers_instant on transfers (created_at, id) where status = 'queued' and due_at is null;
create index transfers_waiting on transfers (due_at) where status = 'queued' and due_at is not null;
create index transfers_threshold on transfers (recipient) where status = 'queued' and threshold_minor is not null;
