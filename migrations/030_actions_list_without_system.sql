-- The dashboard's Actions screen lists people's and the agent's actions with the service's own
-- steps (channel 'system': a payment received, a batch settled) hidden by default, newest first.
-- System steps outnumber the rest (several per payment), so without an index of its own that page
-- would read past every system row of the account to fill a page; this partial index holds exactly
-- the rows it lists, in list order (test/lists.plans.test.ts).
create index if not exists agent_actions_list_without_system
  on agent_actions (account_id, livemode, created_at desc, id desc)
  where channel <> 'system';
