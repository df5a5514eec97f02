-- Paystack as it really behaves (issue 31; docs/rails.md, "Paystack").

-- Fees passed to the customer: Paystack charges the payer what was asked plus its fee (verify's
-- amount = requested_amount + fees). The payment is judged on what was asked; the payer's fee is
-- kept here, apart: Paystack keeps it, so it is never the merchant's and never in the ledger.
alter table payment_attempts add column payer_fee_minor bigint;
