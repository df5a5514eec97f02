-- Webhook delivery (issue 5). The events table (002) is the outbox; every event with a
-- webhook_url gets one delivery row here, written by insertEvent in the same transaction as the
-- event itself, so an event that committed can never be forgotten by the delivery worker.
-- Each POST is one webhook_attempts row.

create table event_deliveries (
  event_id text primary key references events (id),
  account_id text not null references accounts (id),
  livemode boolean not null,
  status text not null default 'pending' check (status in ('pending', 'delivered', 'failed')),
  -- Attempts ever made (numbers the attempt rows), and attempts in the current round: a
  -- redelivery starts a new round, and the round count picks the backoff step.
  attempt_count integer not null default 0 check (attempt_count >= 0),
  round_attempts integer not null default 0 check (round_attempts >= 0),
  -- When a worker may take the row next. While an attempt is in flight it is the lease expiry:
  -- a worker killed mid-attempt leaves the row to be taken again once it passes.
  next_attempt_at timestamptz not null,
  -- The webhook_attempts row that holds the lease; null when no attempt is in flight.
  leased_attempt_id text,
  -- Set by POST /v1/events/:id/redeliver until the next attempt starts (marks its trigger).
  redelivery_requested boolean not null default false,
  last_attempt_at timestamptz,
  delivered_at timestamptz,
  failed_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
-- What the workers poll: due, undelivered rows.
create index event_deliveries_due on event_deliveries (next_attempt_at) where status = 'pending';
create index event_deliveries_account on event_deliveries (account_id, livemode, status);

create table webhook_attempts (
  id text primary key,
  event_id text not null references events (id),
  attempt_number integer not null check (attempt_number >= 1),
  trigger text not null check (trigger in ('automatic', 'redelivery')),
  url text not null,
  started_at timestamptz not null,
  -- Null while in flight, and for good when the worker died mid-attempt (outcome unknown: the
  -- event is sent again, receivers dedupe by id).
  finished_at timestamptz,
  outcome text check (outcome in ('succeeded', 'failed')),
  response_status integer,
  latency_ms integer,
  -- At most 1 KB of the response body, for the merchant's debugging.
  response_excerpt text,
  -- Why it failed: timeout, network, refused_target, redirect, http_status, … and a message.
  error_code text,
  error_message text,
  unique (event_id, attempt_number)
);

-- Events written before this migration that name a target are delivered too (at least once).
insert into event_deliveries (event_id, account_id, livemode, next_attempt_at, created_at)
select id, account_id, livemode, created_at, created_at from events where webhook_url is not null;
