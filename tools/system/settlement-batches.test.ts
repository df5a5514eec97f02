// How a settlement batch ends, as the settlement worker's system tools record it: paid on chain
// (confirm_settlement_batch), undone by a reorg (revert_settlement_batch), never payable
// (fail_settlement_batch), and transfers that must never be signed (fail_queued_transfers). Batches
// are made by the real planner and signed by the real relayer on the in-process devnet; the tools
// are then called as the worker calls them. Each run is in the action log of every merchant whose
// money it moved, with only that merchant's transfers; a repeat changes nothing.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../../src/chain/chain.ts';
import type { AnyTool } from '../../src/core/tool.ts';
import type { PaymentRow } from '../../src/db/database.ts';
import { findPaymentById } from '../../src/db/repositories/payments.ts';
import { getLedgerBalance, ledgerAccount } from '../../src/ledger/ledger.ts';
import { runSystemTool } from '../../src/pipeline/system-runs.ts';
import type { Runtime } from '../../src/runtime.ts';
import { type BatchReceiptFacts, receiptInput } from '../../src/domain/batch-receipts.ts';
import { chainFacts, planBatches } from '../../src/settlement/batches.ts';
import { type ChainSession, openChainSession } from '../../src/settlement/chain-session.ts';
import { defaultSettlementOptions, newHolderId, type SettlementContext } from '../../src/settlement/context.ts';
import { settlePaidPayments } from '../../src/settlement/payment-settlement.ts';
import { acquireRelayerLease } from '../../src/settlement/relayer-lease.ts';
import { receiptOf, sendPlannedBatches, toBatchReceipt } from '../../src/settlement/relayer.ts';
import { testAccount } from '../../test/support/harness.ts';
import { expectLedgerBalanced } from '../../test/support/money.ts';
import { expectSettlementInvariants, payoutAddresses, settlementRuntime } from '../../test/support/settlement.ts';
import { createPaidPayments } from '../../test/support/settlement-fixtures.ts';
import { eventTypes, expectRefusedOffSystem, testMode } from '../../test/support/system-tools.ts';
import {
  confirmSettlementBatch,
  failQueuedTransfers,
  failSettlementBatch,
  revertSettlementBatch,
} from './settlement-batches.ts';

let chain: ChainConnection;
let runtime: Runtime;
let session: ChainSession;
let ctx: SettlementContext;

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await settlementRuntime(chain);
  session = await openChainSession(runtime, chain);
  ctx = {
    toolEnvironment: runtime,
    db: runtime.db,
    config: runtime.config,
    logger: runtime.logger,
    clock: runtime.clock,
    // No batch window: the planner batches what is queued at once, so each test plans when it says.
    options: { ...defaultSettlementOptions(runtime.config), batchWindowMs: 0 },
    holder: newHolderId(),
    broadcastHere: new Set(),
  };
});

afterAll(async () => {
  await chain?.close();
});

// Tests run in order and each leaves nothing queued or planned, so the planner only ever sees the
// transfers of the test that calls it.

/** Paid test-mode payments with payout addresses, taken by the intake: each has a queued transfer. */
async function queued(accountId: string, count: number): Promise<PaymentRow[]> {
  const addresses = payoutAddresses(count);
  const paid = await createPaidPayments(
    runtime,
    accountId,
    addresses.map((address) => ({ amount: 5000, currency: 'NGN', payoutAddress: address })),
  );
  while ((await settlePaidPayments(runtime, { chunk: 100, testModeOnChain: async () => true })) > 0);
  return paid;
}

async function transfersOf(payments: readonly PaymentRow[]) {
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
async function planOne(): Promise<string> {
  expect(await planBatches(ctx, session)).toBe(1);
  const batch = await runtime.db
    .selectFrom('settlement_batches')
    .select('id')
    .where('status', '=', 'planned')
    .executeTakeFirstOrThrow();
  return batch.id;
}

/** Signs and broadcasts the planned batch (the devnet mines it at once); returns its receipt. */
async function sendAndMine(batchId: string): Promise<BatchReceiptFacts> {
  expect(await acquireRelayerLease(ctx, session)).toBe(true);
  expect(await sendPlannedBatches(ctx, session)).toBe(1);
  const tx = await runtime.db
    .selectFrom('chain_transactions')
    .select('hash')
    .where('batch_id', '=', batchId)
    .executeTakeFirstOrThrow();
  const receipt = await receiptOf(session, tx.hash as `0x${string}`);
  if (!receipt) throw new Error(`batch ${batchId}'s transaction was not mined`);
  expect(receipt.status).toBe('success');
  return receiptInput(toBatchReceipt(session, receipt));
}

async function batchRow(id: string) {
  return runtime.db.selectFrom('settlement_batches').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

async function postings(kind: string, references: readonly string[]): Promise<string[]> {
  if (references.length === 0) return [];
  const rows = await runtime.db
    .selectFrom('ledger_postings')
    .select('reference')
    .where('kind', '=', kind)
    .where('reference', 'in', references)
    .orderBy('reference')
    .execute();
  return rows.map((r) => r.reference);
}

async function actionsOf(accountId: string, tool: string) {
  return runtime.db
    .selectFrom('agent_actions')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('tool', '=', tool)
    .orderBy('created_at')
    .execute();
}

type LoggedTransfers = { transfers: { transfer_id: string; account_id: string }[] };
const loggedTransferIds = (row: { result: unknown }) =>
  (row.result as LoggedTransfers).transfers.map((t) => t.transfer_id).sort();

const sortedIds = (rows: readonly { id: string }[]) => rows.map((r) => r.id).sort();

describe('settlement batch tools', () => {
  it('are refused on every channel but system', async () => {
    const merchant = await testAccount(runtime);
    const receipt: BatchReceiptFacts = {
      chain_key: session.key,
      hash: `0x${'1'.repeat(64)}`,
      block_number: '1',
      block_hash: `0x${'2'.repeat(64)}`,
      gas_used: '21000',
      effective_gas_price: '1',
    };
    const calls: [AnyTool, unknown][] = [
      [confirmSettlementBatch, { batch_id: 'batch_x', chain: chainFacts(session), receipt }],
      [revertSettlementBatch, { batch_id: 'batch_x', chain: chainFacts(session), holder: ctx.holder, reason: 'reorg' }],
      [failSettlementBatch, { batch_id: 'batch_x', expected: 'sent', reason: 'reverted', max_transfer_attempts: 1 }],
      [failQueuedTransfers, { transfer_ids: ['tr_x'], reason: 'never' }],
    ];
    for (const [tool, input] of calls) {
      await expectRefusedOffSystem(runtime, tool, input, testMode(merchant.accountId));
    }
  });

  it('confirm: a mined batch confirms its transfers and settles each payment, one action per merchant with its own', async () => {
    const a = await testAccount(runtime);
    const b = await testAccount(runtime);
    const paidA = await queued(a.accountId, 2);
    const paidB = await queued(b.accountId, 1);
    const transfers = await transfersOf([...paidA, ...paidB]);
    expect(transfers.map((t) => t.status)).toEqual(['queued', 'queued', 'queued']);
    const batchId = await planOne();
    const receipt = await sendAndMine(batchId);
    expect((await batchRow(batchId)).status).toBe('sent');
    const treasuryBefore = await getLedgerBalance(runtime.db, session.treasury);

    const input = { batch_id: batchId, chain: chainFacts(session), receipt };
    const output = await runSystemTool(runtime, confirmSettlementBatch, input);
    expect(output).toMatchObject({ batch_id: batchId, confirmed: true, tx_hash: receipt.hash });
    expect(output.transfers.map((t) => t.transfer_id).sort()).toEqual(sortedIds(transfers));

    const batch = await batchRow(batchId);
    expect(batch).toMatchObject({ status: 'confirmed', tx_hash: receipt.hash });
    // The in-process devnet never reorganises: final at once.
    expect(batch.finalized_at).not.toBeNull();
    expect((await transfersOf([...paidA, ...paidB])).map((t) => t.status)).toEqual([
      'confirmed',
      'confirmed',
      'confirmed',
    ]);
    expect(await postings('transfer_confirmed', sortedIds(transfers))).toEqual(sortedIds(transfers));
    // The treasury is the contract's token balance: the paid tokens have left it.
    const total = transfers.reduce((sum, t) => sum + t.amount_minor, 0n);
    expect(await getLedgerBalance(runtime.db, session.treasury)).toBe(treasuryBefore - total);
    for (const p of [...paidA, ...paidB]) {
      const row = await findPaymentById(runtime.db, p.id);
      expect(row).toMatchObject({
        status: 'settled',
        settlement_destination: 'address',
        settlement_tx_hash: receipt.hash,
      });
      expect(await eventTypes(runtime, p.id)).toContain('payment.settled');
    }

    const byMerchant = (accountId: string) => transfers.filter((t) => t.account_id === accountId);
    const [actionA, ...moreA] = await actionsOf(a.accountId, 'confirm_settlement_batch');
    const [actionB, ...moreB] = await actionsOf(b.accountId, 'confirm_settlement_batch');
    expect([moreA, moreB]).toEqual([[], []]);
    expect(actionA).toMatchObject({ channel: 'system', status: 'executed', key_id: null });
    expect(loggedTransferIds(actionA!)).toEqual(sortedIds(byMerchant(a.accountId)));
    expect(loggedTransferIds(actionB!)).toEqual(sortedIds(byMerchant(b.accountId)));
    expect(actionA!.amount_settlement_minor).toBe(byMerchant(a.accountId).reduce((s, t) => s + t.amount_minor, 0n));

    // Recorded already (another worker, or this one again): nothing changes.
    const again = await runSystemTool(runtime, confirmSettlementBatch, input);
    expect(again).toEqual({ batch_id: batchId, confirmed: false, tx_hash: null, transfers: [] });
    expect(await postings('transfer_confirmed', sortedIds(transfers))).toHaveLength(3);
    expect(await getLedgerBalance(runtime.db, session.treasury)).toBe(treasuryBefore - total);
    expect(await actionsOf(a.accountId, 'confirm_settlement_batch')).toHaveLength(1);

    // A final batch is never reverted.
    const revert = await runSystemTool(runtime, revertSettlementBatch, {
      batch_id: batchId,
      chain: chainFacts(session),
      holder: ctx.holder,
      reason: 'reorg',
    });
    expect(revert.reverted).toBe(false);
    expect((await batchRow(batchId)).status).toBe('confirmed');
    await expectSettlementInvariants(runtime, chain);
  });

  it('revert: a confirmation a reorg undid is reversed by its own posting, the payment settling again; only the lease holder may', async () => {
    const merchant = await testAccount(runtime);
    const paid = await queued(merchant.accountId, 1);
    const [transfer] = await transfersOf(paid);
    const batchId = await planOne();
    const receipt = await sendAndMine(batchId);
    // As on a chain that can reorganise: the confirmation waits for finality.
    const reorgable = { ...chainFacts(session), ephemeral: false };
    await runSystemTool(runtime, confirmSettlementBatch, { batch_id: batchId, chain: reorgable, receipt });
    expect((await batchRow(batchId)).finalized_at).toBeNull();
    const treasuryConfirmed = await getLedgerBalance(runtime.db, session.treasury);

    const revertInput = { batch_id: batchId, chain: reorgable, holder: ctx.holder, reason: 'block replaced' };
    // A worker whose lease lapsed (or never had one) changes nothing.
    const fenced = await runSystemTool(runtime, revertSettlementBatch, { ...revertInput, holder: 'other:1:worker' });
    expect(fenced.reverted).toBe(false);
    expect((await batchRow(batchId)).status).toBe('confirmed');

    expect(await acquireRelayerLease(ctx, session)).toBe(true);
    const reverted = await runSystemTool(runtime, revertSettlementBatch, revertInput);
    expect(reverted).toMatchObject({ batch_id: batchId, reverted: true, tx_hash: receipt.hash });
    expect(reverted.transfers.map((t) => t.transfer_id)).toEqual([transfer!.id]);
    expect(await postings('transfer_confirmation_reversed', [`${transfer!.id}:1`])).toEqual([`${transfer!.id}:1`]);
    expect(await getLedgerBalance(runtime.db, session.treasury)).toBe(treasuryConfirmed + transfer!.amount_minor);
    expect((await batchRow(batchId)).status).toBe('sent');
    expect((await transfersOf(paid))[0]).toMatchObject({ status: 'sent', reversals: 1 });
    expect((await findPaymentById(runtime.db, paid[0]!.id))?.status).toBe('settling');
    expect(await eventTypes(runtime, paid[0]!.id)).toContain('payment.settlement_reverted');
    const [action] = await actionsOf(merchant.accountId, 'revert_settlement_batch');
    expect(loggedTransferIds(action!)).toEqual([transfer!.id]);

    // No longer confirmed: a second revert changes nothing.
    const again = await runSystemTool(runtime, revertSettlementBatch, revertInput);
    expect(again.reverted).toBe(false);
    expect(await postings('transfer_confirmation_reversed', [`${transfer!.id}:1`])).toHaveLength(1);
    expect(await actionsOf(merchant.accountId, 'revert_settlement_batch')).toHaveLength(1);

    // It lands again: a new confirmation posting, never the first one reused.
    const reconfirmed = await runSystemTool(runtime, confirmSettlementBatch, {
      batch_id: batchId,
      chain: chainFacts(session),
      receipt,
    });
    expect(reconfirmed.confirmed).toBe(true);
    expect(await postings('transfer_confirmed', [transfer!.id, `${transfer!.id}:1`])).toEqual([
      transfer!.id,
      `${transfer!.id}:1`,
    ]);
    expect((await findPaymentById(runtime.db, paid[0]!.id))?.status).toBe('settled');
    await expectSettlementInvariants(runtime, chain);
  });

  it('fail: a batch that cannot pay sends its transfers back to the queue, then fails them for good with the money back', async () => {
    const a = await testAccount(runtime);
    const b = await testAccount(runtime);
    const paidA = await queued(a.accountId, 1);
    const paidB = await queued(b.accountId, 1);
    const transfers = await transfersOf([...paidA, ...paidB]);
    const firstBatch = await planOne();

    // The worker saw it `sent`; it is `planned`: nothing changes.
    const stale = await runSystemTool(runtime, failSettlementBatch, {
      batch_id: firstBatch,
      expected: 'sent',
      reason: 'reverted',
      max_transfer_attempts: 4,
    });
    expect(stale).toEqual({ batch_id: firstBatch, failed: false, released: [], transfers: [] });
    expect((await batchRow(firstBatch)).status).toBe('planned');

    // Attempts left: back in the queue for a new batch, no money moves, nothing to log for anyone.
    const released = await runSystemTool(runtime, failSettlementBatch, {
      batch_id: firstBatch,
      expected: 'planned',
      reason: 'would revert',
      max_transfer_attempts: 4,
    });
    expect(released).toMatchObject({ failed: true, transfers: [] });
    expect(released.released.sort()).toEqual(sortedIds(transfers));
    expect((await batchRow(firstBatch)).status).toBe('failed');
    for (const t of await transfersOf([...paidA, ...paidB])) {
      expect(t).toMatchObject({ status: 'queued', batch_id: null, attempts: 1, last_error: 'would revert' });
    }
    expect(await postings('transfer_failed', sortedIds(transfers))).toEqual([]);
    expect(await actionsOf(a.accountId, 'fail_settlement_batch')).toEqual([]);

    // The last attempt: failed for good, the money back in each merchant's balance, each payment settled there.
    const secondBatch = await planOne();
    expect(secondBatch).not.toBe(firstBatch);
    const balanceBefore = await getLedgerBalance(runtime.db, ledgerAccount.merchant(a.accountId, false, 'USDC'));
    const input = { batch_id: secondBatch, expected: 'planned', reason: 'would revert', max_transfer_attempts: 2 };
    const failed = await runSystemTool(runtime, failSettlementBatch, input);
    expect(failed.released).toEqual([]);
    expect(failed.transfers.map((t) => t.transfer_id).sort()).toEqual(sortedIds(transfers));
    expect(await postings('transfer_failed', sortedIds(transfers))).toEqual(sortedIds(transfers));
    expect((await transfersOf([...paidA, ...paidB])).map((t) => t.status)).toEqual(['failed', 'failed']);
    expect(await getLedgerBalance(runtime.db, ledgerAccount.merchant(a.accountId, false, 'USDC'))).toBe(
      balanceBefore + paidA[0]!.settlement_minor,
    );
    for (const p of [...paidA, ...paidB]) {
      expect(await findPaymentById(runtime.db, p.id)).toMatchObject({
        status: 'settled',
        settlement_destination: 'balance',
      });
      expect(await eventTypes(runtime, p.id)).toContain('payment.settled');
    }
    const [actionA, ...moreA] = await actionsOf(a.accountId, 'fail_settlement_batch');
    const [actionB] = await actionsOf(b.accountId, 'fail_settlement_batch');
    expect(moreA).toEqual([]);
    expect(loggedTransferIds(actionA!)).toEqual(sortedIds(transfers.filter((t) => t.account_id === a.accountId)));
    expect(loggedTransferIds(actionB!)).toEqual(sortedIds(transfers.filter((t) => t.account_id === b.accountId)));

    // Failed already: a repeat changes nothing.
    const again = await runSystemTool(runtime, failSettlementBatch, input);
    expect(again.failed).toBe(false);
    expect(await postings('transfer_failed', sortedIds(transfers))).toHaveLength(2);
    expect(await actionsOf(a.accountId, 'fail_settlement_batch')).toHaveLength(1);
    await expectLedgerBalanced(runtime);
  });

  it('fail_queued_transfers: transfers that must never be signed fail for good, each merchant logging only its own', async () => {
    const a = await testAccount(runtime);
    const b = await testAccount(runtime);
    const paidA = await queued(a.accountId, 2);
    const paidB = await queued(b.accountId, 1);
    const transfers = await transfersOf([...paidA, ...paidB]);
    const ids = sortedIds(transfers);
    const input = { transfer_ids: ids, reason: 'recipient is a contract of the settlement service' };

    const output = await runSystemTool(runtime, failQueuedTransfers, input);
    expect(output.transfers.map((t) => t.transfer_id).sort()).toEqual(ids);
    expect(await postings('transfer_failed', ids)).toEqual(ids);
    for (const t of await transfersOf([...paidA, ...paidB])) {
      expect(t).toMatchObject({ status: 'failed', last_error: input.reason });
    }
    const sumA = paidA.reduce((s, p) => s + p.settlement_minor, 0n);
    expect(await getLedgerBalance(runtime.db, ledgerAccount.merchant(a.accountId, false, 'USDC'))).toBe(sumA);
    for (const p of [...paidA, ...paidB]) {
      expect((await findPaymentById(runtime.db, p.id))?.status).toBe('settled');
    }

    const [actionA, ...moreA] = await actionsOf(a.accountId, 'fail_queued_transfers');
    const [actionB] = await actionsOf(b.accountId, 'fail_queued_transfers');
    expect(moreA).toEqual([]);
    const idsOf = (accountId: string) => sortedIds(transfers.filter((t) => t.account_id === accountId));
    // A transfer id names a merchant's payout: another's never appears in this one's input or result.
    expect((actionA!.input as unknown as { transfer_ids: string[] }).transfer_ids.sort()).toEqual(idsOf(a.accountId));
    expect((actionB!.input as unknown as { transfer_ids: string[] }).transfer_ids).toEqual(idsOf(b.accountId));
    expect(loggedTransferIds(actionA!)).toEqual(idsOf(a.accountId));
    expect(actionA!.amount_settlement_minor).toBe(sumA);

    // No longer queued: a repeat (a second planner refusing the same transfers) changes nothing.
    const again = await runSystemTool(runtime, failQueuedTransfers, input);
    expect(again.transfers).toEqual([]);
    expect(await postings('transfer_failed', ids)).toHaveLength(3);
    expect(await actionsOf(a.accountId, 'fail_queued_transfers')).toHaveLength(1);
    expect(await actionsOf(b.accountId, 'fail_queued_transfers')).toHaveLength(1);
    await expectSettlementInvariants(runtime, chain);
  });
});
