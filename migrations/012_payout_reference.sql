-- A payout's reference names one payout for good (create_payout's `existing`): looked up on
-- every payout that carries one, under the account's lock. Not unique in the index: the legs of a
-- revenue share carry the share's reference too.
create index payouts_reference on payouts (account_id, livemode, reference) where reference is not null;
