// Set-up shared by the tests beside the settlement batch's step tools (tools/system/): a runtime on
// the in-process devnet, a settlement context as the worker makes it, and batches made by the real
// intake, planner and relayer, so each tool is run on rows the worker would hand it.

import { afterAll, beforeAll } from 'vitest';
import { type ChainConnection, connectChain } from '../../src/chain/chain.ts';
import type { PaymentRow } from '../../src/db/database.ts';
import type { Runtime } from '../../src/runtime.ts';
import { planBatches } from '../../src/settlement/batches.ts';
import { type ChainSession, openChainSession } from '../../src/settlement/chain-session.ts';
import { defaultSettlementOptions, newHolderId, type SettlementContext } from '../../src/settlement/context.ts';
import { settlePaidPayments } from '../../src/settlement/payment-settlement.ts';
import { acquireRelayerLease } from '../../src/settlement/relayer-lease.ts';
import { sendPlannedBatches } from '../../src/settlement/relayer.ts';
import { payoutAddresses, settlementRuntime } from './settlement.ts';
import { createPaidPayments } from './settlement-fixtures.ts';

export interface BatchSteps {
  runtime: Runtime;
  session: ChainSession;
  ctx: SettlementContext;
}

/** Opens the devnet and the runtime before the file's tests, and closes the devnet after. */
export function batchStepsHarness(): BatchSteps {
  const steps = {} as BatchSteps;
  let chain: ChainConnection | undefined;
  beforeAll(async () => {
    chain = await connectChain({ confirmations: 1 });
    steps.runtime = await settlementRuntime(chain);
    steps.session = await openChainSession(steps.runtime, chain);
    steps.ctx = {
      toolEnvironment: steps.runtime,
      db: steps.runtime.db,
      config: steps.runtime.config,
      logger: steps.runtime.logger,
      clock: steps.runtime.clock,
      // No batch window: the planner batches what is queued at once, so each test plans when it says.
      options: { ...defaultSettlementOptions(steps.runtime.config), batchWindowMs: 0 },
      holder: newHolderId(),
      broadcastHere: new Set(),
    };
  });
  afterAll(async () => {
    await chain?.close();
  });
  return steps;
}

/** Paid test-mode payments with payout addresses, taken by the intake: each has a queued transfer. */
export async function queuedPayments(runtime: Runtime, accountId: string, count: number): Promise<PaymentRow[]> {
  const paid = await createPaidPayments(
    runtime,
    accountId,
    payoutAddresses(count).map((address) => ({ amount: 5000, currency: 'NGN', payoutAddress: address })),
  );
  while ((await settlePaidPayments(runtime, { chunk: 100, testModeOnChain: async () => true })) > 0);
  return paid;
}

/** The transfers of these payments, by id. */
export async function transfersOf(runtime: Runtime, payments: readonly PaymentRow[]) {
  return runtime.db
    .selectFrom('transfers')
    .selectAll()
    .where(
      'source_id',
      'in',
      payments.map((p) => p.id),
    )
    .orderBy('id')
    .execute();
}

/** The planner's one batch of what is queued now. */
export async function planOneBatch({ ctx, session, runtime }: BatchSteps): Promise<string> {
  if ((await planBatches(ctx, session)) !== 1) throw new Error('the planner did not plan one batch');
  const batch = await runtime.db
    .selectFrom('settlement_batches')
    .select('id')
    .where('status', '=', 'planned')
    .executeTakeFirstOrThrow();
  return batch.id;
}

/** The relayer signs, stores and broadcasts the planned batch (the devnet mines it at once). */
export async function sendPlannedBatch({ ctx, session }: BatchSteps): Promise<void> {
  if (!(await acquireRelayerLease(ctx, session))) throw new Error('the relayer lease is not ours');
  if ((await sendPlannedBatches(ctx, session)) !== 1) throw new Error('the relayer did not send one batch');
}

export async function batchRow(runtime: Runtime, id: string) {
  return runtime.db.selectFrom('settlement_batches').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

/** How many action-log rows a tool wrote, for any account. */
export async function actionsOfTool(runtime: Runtime, tool: string): Promise<number> {
  const rows = await runtime.db.selectFrom('agent_actions').select('id').where('tool', '=', tool).execute();
  return rows.length;
}
