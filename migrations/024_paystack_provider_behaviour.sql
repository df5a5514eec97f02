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
