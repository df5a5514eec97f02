-- The views finance reads (actions, their CSV, runs) are verified against the action log: every
-- entry about an action now records the action as those views show it (src/audit/action-snapshot.ts),
-- and `plainpay audit verify` compares the tables with the newest such entry of each action. An
-- action's detail lists its entries (its approval attempts among them) by action id.
create index action_log_action on action_log (action_id, seq) where action_id is not null;
-- Verifying one account pages its actions and finished runs by id (src/audit/view-check.ts).
create index agent_actions_account_id on agent_actions (account_id, id);
create index agent_runs_account_id on agent_runs (account_id, id);

-- The last verification of each account's action log, from the API or the dashboard: what the
-- Actions screen's "Log verified through #N at T" line shows. A record of a check, not evidence:
-- the evidence is the chain, which any verification recomputes.
create table audit_verifications (
  account_id text primary key references accounts (id),
  verified_at timestamptz not null,
  -- The newest action-log entry of the account that the verification reached.
  through_seq bigint not null,
  ok boolean not null,
  -- The report as GET /v1/audit/verify answers it.
  report json not null
);
