-- Refunds of payments paid on a provider rail go back to the payer through that provider
-- (docs/rails.md, "Refunds"): recorded `pending` when plainpay commits to them, `succeeded` when
-- the provider has paid the payer, `failed` (and undone in the ledger) when it refuses.
alter table refunds drop constraint refunds_status_check;
alter table refunds add constraint refunds_status_check check (status in ('pending', 'succeeded', 'failed'));
-- The provider's id of the refund (Paystack's refund id), once it accepted it.
alter table refunds add column provider_reference text;
alter table refunds add column failure_reason text;
-- When plainpay last sent it to the provider: a refund sent whose answer was lost is looked up
-- (by its merchant_note) before it is ever sent again, so a payer is never refunded twice.
alter table refunds add column submitted_at timestamptz;
alter table refunds add column checked_at timestamptz;
alter table refunds add column completed_at timestamptz;
update refunds set completed_at = created_at;
create index refunds_pending on refunds (created_at) where status = 'pending';
