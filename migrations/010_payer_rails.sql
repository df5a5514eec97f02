-- Real payer rails (Paystack, M-Pesa STK Push) beside the sandbox rail (docs/rails.md).

-- A merchant's provider credentials, one row per (account, mode, rail). The secret part is sealed
-- with the instance master key like webhook secrets; `settings` holds what may be shown back
-- (the key's last four characters, the shortcode, the environment).
create table rail_credentials (
  account_id text not null references accounts (id),
  livemode boolean not null,
  rail text not null check (rail in ('paystack', 'mpesa')),
  settings json not null,
  secret_ciphertext text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (account_id, livemode, rail)
);

-- An attempt is now a conversation with a provider that can take minutes: it starts `pending`
-- and ends in one outcome. Rows written before this migration were synchronous sandbox attempts.
alter table payment_attempts drop constraint payment_attempts_outcome_check;
alter table payment_attempts add constraint payment_attempts_outcome_check check (outcome in
  ('pending', 'succeeded', 'declined', 'abandoned', 'cancelled', 'timed_out', 'failed', 'flagged'));
-- What was asked of the provider: the payment's amount and currency at the time of the attempt.
alter table payment_attempts add column amount_minor bigint;
alter table payment_attempts add column currency text;
-- The provider's handle on the attempt: Paystack's reference (our attempt id), M-Pesa's CheckoutRequestID.
alter table payment_attempts add column provider_reference text;
-- The provider's receipt once paid: Paystack's transaction id, M-Pesa's receipt number.
alter table payment_attempts add column provider_receipt text;
-- Where the payer continues (Paystack's authorization_url), so a second tap resumes the same attempt.
alter table payment_attempts add column payer_url text;
-- The payer's email or phone, masked: enough for finance to recognise it, not enough to reuse it.
alter table payment_attempts add column payer_hint text;
-- SHA-256 of the secret in an unsigned callback's URL (M-Pesa), compared in constant time.
alter table payment_attempts add column callback_token_hash text;
-- A success the payment could no longer take (expired, or paid by another attempt): see docs/rails.md.
alter table payment_attempts add column late boolean not null default false;
alter table payment_attempts add column refund_status text check (refund_status in ('due', 'refunded', 'manual'));
alter table payment_attempts add column checked_at timestamptz;
alter table payment_attempts add column completed_at timestamptz;
update payment_attempts set completed_at = created_at;
create unique index payment_attempts_provider_reference on payment_attempts (rail, provider_reference)
  where provider_reference is not null;
create index payment_attempts_open on payment_attempts (created_at) where outcome = 'pending';
create index payment_attempts_refund_due on payment_attempts (created_at) where refund_status = 'due';

-- Every callback, verification and refusal at the edge, for finance and for forensics. A refused
-- callback (bad signature, unknown attempt, amounts that do not match) is kept here and logged.
create table rail_events (
  id text primary key,
  rail text not null,
  attempt_id text references payment_attempts (id),
  payment_id text references payments (id),
  kind text not null check (kind in ('start', 'callback', 'verification', 'refund')),
  verdict text not null,
  detail text not null,
  created_at timestamptz not null default now()
);
create index rail_events_payment on rail_events (payment_id, created_at);
