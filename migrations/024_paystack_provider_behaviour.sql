-- Paystack as it really behaves (issue 31; docs/rails.md, "Paystack").

-- Fees passed to the customer: Paystack charges the payer what was asked plus its fee (verify's
-- amount = requested_amount + fees). The payment is judged on what was asked; the payer's fee is
-- kept here, apart: Paystack keeps it, so it is never the merchant's and never in the ledger.
alter table payment_attempts add column payer_fee_minor bigint;

-- Where the provider itself says a pending refund stands (Paystack: pending, processing,
-- needs-attention, processed, failed), for finance. A refund in Paystack's needs-attention waits for
-- the payer's bank account (POST /refund/retry_with_customer_details/{id}): it stays pending here,
-- its amount held, and is shown and alerted until Paystack pays or fails it.
alter table refunds add column provider_status text;

-- A signed charge.success that verify has not confirmed yet (verify failing, or lagging): kept, so
-- that plainpay re-verifies the attempt itself until verify confirms it, even once the attempt has
-- ended (a late success), without waiting for Paystack to send the event again. Cleared when the
-- success is recorded.
alter table payment_attempts add column unconfirmed_event_at timestamptz;
create index payment_attempts_unconfirmed_event on payment_attempts (unconfirmed_event_at)
  where unconfirmed_event_at is not null;
-- Events received before this migration that nothing confirmed since are kept the same way.
update payment_attempts a
   set unconfirmed_event_at = e.received_at
  from (select attempt_id, min(created_at) as received_at
          from rail_events
         where rail = 'paystack' and kind = 'callback' and verdict = 'received'
         group by attempt_id) e
 where e.attempt_id = a.id
   and a.outcome not in ('succeeded', 'flagged');
