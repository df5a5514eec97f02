-- M-Pesa STK attempts (docs/rails.md, "M-Pesa").
--
-- Daraja posts a push's result to the callback URL the push named. That URL no longer carries the
-- attempt id (a random id can spell a word Safaricom refuses in callback URLs, such as "sql"), only
-- the attempt's callback secret: the callback finds its attempt by the secret's hash.
create unique index payment_attempts_callback_token on payment_attempts (callback_token_hash)
  where callback_token_hash is not null;
