-- The lists of GET /v1/payouts, /v1/refunds and /v1/revenue_shares, and the status filters of
-- every list, as index scans scoped to one account and mode in both page directions
-- (db/pagination.ts: (created_at, id) after or before a cursor), however many rows the table holds.
create index refunds_account on refunds (account_id, livemode, created_at desc, id desc);
create index revenue_shares_account on revenue_shares (account_id, livemode, created_at desc, id desc);
create index payments_list_status on payments (account_id, livemode, status, created_at desc, id desc);
create index payouts_status on payouts (account_id, livemode, status, created_at desc, id desc);
drop index confirmations_pending;
create index confirmations_pending on confirmations (account_id, livemode, status, created_at desc, id desc);
-- What waits for a human, across accounts (the metrics scrape and the expiry job).
create index confirmations_waiting on confirmations (expires_at) where status = 'pending';
