-- The money policy and the webhook signing secret belong to one mode, like every other object:
-- a test key (often handed to developers, CI and assistants) must not loosen the live policy,
-- read the secret that signs live events (and so forge them) or rotate it.
-- Existing rows become test mode; live mode starts with a copy of each, so nothing changes for
-- a running integration until the live policy is changed or the live secret rotated.

alter table policies add column livemode boolean;
update policies set livemode = false;
alter table policies drop constraint policies_pkey;
insert into policies (account_id, livemode, version, policy, updated_by_key, created_at)
  select account_id, true, version, policy, updated_by_key, created_at from policies where livemode = false;
alter table policies alter column livemode set not null;
alter table policies add primary key (account_id, livemode, version);

alter table webhook_secrets add column livemode boolean;
update webhook_secrets set livemode = false;
insert into webhook_secrets (id, account_id, livemode, secret_ciphertext, created_at, expires_at)
  select id || '_live', account_id, true, secret_ciphertext, created_at, expires_at
    from webhook_secrets where livemode = false;
alter table webhook_secrets alter column livemode set not null;
drop index webhook_secrets_account;
create index webhook_secrets_account on webhook_secrets (account_id, livemode, created_at desc);
