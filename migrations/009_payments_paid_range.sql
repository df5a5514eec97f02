-- get_revenue (GET /v1/revenue, the agent's "yesterday's revenue") reads the payments of one account
-- and mode paid within a range, newest paid first. Without this index the range is a filter over
-- every payment of the account; with it, an index range scan that stays flat as the account grows.
create index payments_paid_range on payments (account_id, livemode, paid_at desc, id desc) where paid_at is not null;
