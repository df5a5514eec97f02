-- The amount each logged money action moves, in settlement minor units (USDC, 6 decimals), as the
-- policy judged it when the action was recorded. The money actions of one agent run count together
-- against the confirmation threshold (DESIGN.md §8); a later action of the run reads its earlier
-- ones' amounts from here. Recomputing them from the stored input is not the same number: a
-- refund's amount depends on what was already refunded, a conversion on the rate of the moment.
-- Null for actions that move no money, failed attempts, and rows written before this migration.
alter table agent_actions
  add column amount_settlement_minor bigint check (amount_settlement_minor >= 0);
