-- Every list and every filter of the API, the dashboard and the agent answered by one index scan
-- scoped to the account and mode, in list order: (account_id, livemode, [filter,] created_at desc,
-- id desc). The scan starts at the page's cursor (db/pagination.ts, a row comparison) and stops
-- after limit + 1 rows, so a page costs the same at 1k rows as at 100k, however rare the value
-- filtered for. 002 and 013 covered the unfiltered lists (the approvals screen's "all" aside) and
-- the payment, payout and confirmation statuses; these are the filters they left to a scan of the
-- whole account (or of the whole table).
-- test/lists.plans.test.ts checks each list's plan; bench/lists.ts measures them.

-- GET /v1/refunds?status=… and ?payment_id=…
create index if not exists refunds_list_status on refunds (account_id, livemode, status, created_at desc, id desc);
create index if not exists refunds_list_payment on refunds (account_id, livemode, payment_id, created_at desc, id desc);

-- GET /v1/revenue_shares?reference=… (references are not unique: several shares may carry one).
create index if not exists revenue_shares_list_reference on revenue_shares (account_id, livemode, reference, created_at desc, id desc)
  where reference is not null;

-- GET /v1/payouts?reference=… and ?revenue_share=…. The reference index replaces 012's
-- (account_id, livemode, reference): same leading columns and predicate, so it serves every lookup
-- the narrower one did. payouts_share (revenue_share_id alone) stays: a share's legs are read by id.
create index if not exists payouts_list_reference on payouts (account_id, livemode, reference, created_at desc, id desc)
  where reference is not null;
drop index if exists payouts_reference;
create index if not exists payouts_list_share on payouts (account_id, livemode, revenue_share_id, created_at desc, id desc)
  where revenue_share_id is not null;

-- GET /v1/events?type=… and ?object_id=… (the dashboard's webhooks screen reads the same list).
create index if not exists events_list_type on events (account_id, livemode, type, created_at desc, id desc);
create index if not exists events_list_object on events (account_id, livemode, object_id, created_at desc, id desc)
  where object_id is not null;

-- The dashboard's runs screen, ?status=….
create index if not exists agent_runs_list_status on agent_runs (account_id, livemode, status, created_at desc, id desc);

-- GET /agent/actions (and the dashboard's actions screen and CSV) ?status, ?tool, ?decision, ?channel.
create index if not exists agent_actions_list_status on agent_actions (account_id, livemode, status, created_at desc, id desc);
create index if not exists agent_actions_list_tool on agent_actions (account_id, livemode, tool, created_at desc, id desc);
create index if not exists agent_actions_list_decision on agent_actions (account_id, livemode, decision, created_at desc, id desc);
create index if not exists agent_actions_list_channel on agent_actions (account_id, livemode, channel, created_at desc, id desc);

-- GET /keys and the dashboard's developers screen: one mode's keys in keyset order. Replaces 001's
-- (account_id, created_at desc), which had neither the mode nor the id tie-break; the operator's
-- all-modes listing still starts from account_id.
create index if not exists api_keys_list on api_keys (account_id, livemode, created_at desc, id desc);
drop index if exists api_keys_account;

-- The dashboard's approvals screen, status "all": 013's confirmations_pending leads with the status.
create index if not exists confirmations_list on confirmations (account_id, livemode, created_at desc, id desc);

-- 015 and 013 both made this same index (pending confirmations by expiry); one is enough.
drop index if exists confirmations_due;
