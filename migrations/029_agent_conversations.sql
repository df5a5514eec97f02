-- Asking back inside the conversation (docs/agent.md, "The conversation"; issue 32 item 2).
-- A run that cannot act asks the merchant and waits (`needs_input`) until the merchant answers
-- in the same run, cancels it (`cancelled`), or lets it lapse (`expired`). Nothing moves while it
-- waits; a restart keeps a waiting run, since all of it is here.
alter table agent_runs drop constraint agent_runs_status_check;
alter table agent_runs add constraint agent_runs_status_check check (status in
  ('running', 'completed', 'confirmation_required', 'rejected', 'failed', 'needs_input', 'cancelled', 'expired'));
-- While a run waits: when it lapses unanswered. Null otherwise.
alter table agent_runs add column answer_by timestamptz;

-- The turns after the run's first instruction (agent_runs.instruction): the agent's question, the
-- merchant's reply, and so on, in order. A question may carry the actions it proposes (held:
-- shown, never run until the merchant answers them). A reply carries the Idempotency-Key it was
-- sent with, so a replayed reply is the same reply.
create table agent_run_messages (
  run_id text not null references agent_runs (id),
  seq integer not null check (seq >= 1),
  account_id text not null references accounts (id),
  livemode boolean not null,
  role text not null check (role in ('agent', 'merchant')),
  text text not null,
  -- An agent question's proposed calls: [{ tool, input }]. Null for a merchant reply.
  proposed json,
  idempotency_key text,
  created_at timestamptz not null default now(),
  primary key (run_id, seq)
);
create unique index agent_run_messages_idempotency on agent_run_messages (run_id, idempotency_key)
  where idempotency_key is not null;
create index agent_runs_waiting on agent_runs (account_id, livemode, answer_by) where status = 'needs_input';
