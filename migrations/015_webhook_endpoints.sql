-- Account webhook endpoints (issue 14): a URL that receives the account's events of the types it
-- subscribes to, signed with its own secret. They share the payment webhooks' delivery machinery:
-- an event now has one event_deliveries row per target (the payment's webhook_url, and each
-- enabled endpoint that wants its type), all written with the event in the same transaction.

create table webhook_endpoints (
  id text primary key,
  account_id text not null references accounts (id),
  -- An endpoint belongs to one mode, like the key that made it: it receives that mode's events.
  livemode boolean not null,
  url text not null,
  -- Event types (src/webhooks/event-types.ts), or '{*}' for every type.
  enabled_events text[] not null check (cardinality(enabled_events) > 0),
  description text,
  disabled boolean not null default false,
  -- whsec_… sealed with the instance master key (SecretBox), as the account's secrets are.
  secret_ciphertext text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  -- Deleted endpoints stay as rows: their deliveries and attempts keep pointing at them.
  deleted_at timestamptz
);
create index webhook_endpoints_list on webhook_endpoints (account_id, livemode, created_at desc, id desc)
  where deleted_at is null;

-- A delivery is now per (event, target): its own id, and the endpoint it goes to (null: the
-- payment's webhook_url, as before). Existing rows keep their one-per-event shape; their id
-- reuses the event id's random part, which is unique because event_id was the primary key.
alter table event_deliveries add column id text;
update event_deliveries set id = 'evd_' || substr(event_id, 5);
alter table event_deliveries alter column id set not null;
alter table event_deliveries drop constraint event_deliveries_pkey;
alter table event_deliveries add primary key (id);
alter table event_deliveries add column endpoint_id text references webhook_endpoints (id);
create unique index event_deliveries_event_endpoint on event_deliveries (event_id, endpoint_id);
create unique index event_deliveries_event_url on event_deliveries (event_id) where endpoint_id is null;

-- Attempts belong to a delivery and are numbered within it.
alter table webhook_attempts add column delivery_id text references event_deliveries (id);
update webhook_attempts set delivery_id = 'evd_' || substr(event_id, 5);
alter table webhook_attempts alter column delivery_id set not null;
alter table webhook_attempts drop constraint webhook_attempts_event_id_attempt_number_key;
alter table webhook_attempts add constraint webhook_attempts_delivery_attempt unique (delivery_id, attempt_number);
create index webhook_attempts_event on webhook_attempts (event_id);

-- The confirmation expiry job (action.expired) looks for lapsed pending confirmations.
create index confirmations_due on confirmations (expires_at) where status = 'pending';
