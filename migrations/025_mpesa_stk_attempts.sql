-- M-Pesa STK attempts (docs/rails.md, "M-Pesa").
--
-- Daraja posts a push's result to the callback URL the push named. That URL no longer carries the
-- attempt id (a random id can spell a word Safaricom refuses in callback URLs, such as "sql"), only
-- the attempt's callback secret: the callback finds its attempt by the secret's hash.
create unique index payment_attempts_callback_token on payment_attempts (callback_token_hash)
  where callback_token_hash is not null;

-- An attempt whose provider answer was lost, timed out or came back 5xx (an M-Pesa push Daraja may
-- have put on the payer's phone) is open with its outcome unknown: plainpay asks the provider about
-- it until the provider says what happened, and the payer is not invited to pay again meanwhile.
alter table payment_attempts drop constraint payment_attempts_outcome_check;
alter table payment_attempts add constraint payment_attempts_outcome_check check (outcome in
  ('pending', 'unknown', 'succeeded', 'declined', 'abandoned', 'cancelled', 'timed_out', 'failed', 'flagged'));
-- The reconciler's scan of open attempts.
drop index payment_attempts_open;
create index payment_attempts_open on payment_attempts (created_at) where outcome in ('pending', 'unknown');
