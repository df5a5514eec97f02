// The relayer's exactly-once machinery, each on a devnet of its own (in-process, so PGlite too):
// fee bump (same nonce, same calldata), re-broadcast of the stored bytes after a restart, a reverted
// transaction releasing its transfers into a new batch, a devnet that is gone, two workers on one
// database and chain, and the guardrails at the side effect.

import { encodeFunctionData, type Hex, parseTransaction } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterEach, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain, estimateFees, readTokenBalance } from '../src/chain/chain.ts';
import { batchPayoutAbi } from '../src/chain/contracts/abis.ts';
import { DEV_ACCOUNTS } from '../src/chain/devnet.ts';
import { findPaymentById } from '../src/db/repositories/payments.ts';
import { getLedgerBalance, ledgerAccount } from '../src/ledger/ledger.ts';
import type { Runtime } from '../src/runtime.ts';
import { enqueueTransfer } from '../src/db/money-writes/transfers.ts';
import {
  type SettlementWorker,
  type SettlementWorkerOptions,
  startSettlementWorker,
} from '../src/settlement/worker.ts';
import { testAccount } from './support/harness.ts';
import {
  expectSettledExactlyOnce,
  expectSettlementInvariants,
  payoutAddresses,
  settlementRuntime,
  waitUntil,
} from './support/settlement.ts';
import { createPaidPayments, spreadOver } from './support/settlement-fixtures.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function devnet(): Promise<ChainConnection> {
  const chain = await connectChain({ confirmations: 1 });
  cleanups.push(() => chain.close());
  return chain;
}

function worker(runtime: Runtime, options: SettlementWorkerOptions = {}): SettlementWorker {
  const w = startSettlementWorker(runtime, { pollIntervalMs: 20, batchWindowMs: 50, ...options });
  cleanups.push(() => w.stop());
  return w;
}

async function batchTransactions(runtime: Runtime, batchId: string) {
  return runtime.db
    .selectFrom('chain_transactions')
    .selectAll()
    .where('batch_id', '=', batchId)
    .orderBy('max_fee_per_gas')
    .execute();
}

async function waitForPendingTx(runtime: Runtime) {
  let row: Awaited<ReturnType<typeof batchTransactions>>[number] | undefined;
  await waitUntil('a broadcast transaction', async () => {
    row = await runtime.db
      .selectFrom('chain_transactions')
      .selectAll()
      .where('status', '=', 'broadcast')
      .orderBy('created_at', 'desc')
      .executeTakeFirst();
    return row !== undefined;
  });
  return row!;
}

/** Signs a call from a dev key with an explicit nonce and tip, and hands it to the node (no waiting). */
async function sendRaw(chain: ChainConnection, privateKey: Hex, data: Hex, nonce: number, tip: bigint): Promise<Hex> {
  const account = privateKeyToAccount(privateKey);
  const fees = await estimateFees(chain);
  const raw = await account.signTransaction({
    type: 'eip1559',
    chainId: chain.chainId,
    nonce,
    to: chain.batchAddress,
    data,
    gas: 100_000n,
    maxFeePerGas: fees.maxFeePerGas + tip,
    maxPriorityFeePerGas: tip,
  });
  return await chain.publicClient.sendRawTransaction({ serializedTransaction: raw });
}

describe('relayer', () => {
  it('fee bump: replaces a stuck transaction with the same nonce and calldata at a higher fee', async () => {
    const chain = await devnet();
    await chain.setAutomine!(false);
    const runtime = await settlementRuntime(chain);
    const merchant = await testAccount(runtime);
    const [address] = payoutAddresses(1);
    const [payment] = await createPaidPayments(runtime, merchant.accountId, [
      { amount: 5000, currency: 'NGN', payoutAddress: address! },
    ]);
    worker(runtime, { feeBumpAfterMs: 300, rebroadcastAfterMs: 200 });

    const first = await waitForPendingTx(runtime);
    await waitUntil('a fee bump', async () => (await batchTransactions(runtime, first.batch_id!)).length >= 2);
    await chain.mine!(1);
    await chain.setAutomine!(true);
    await waitUntil('settlement', async () => (await findPaymentById(runtime.db, payment!.id))?.status === 'settled');

    const txs = await batchTransactions(runtime, first.batch_id!);
    expect(new Set(txs.map((t) => t.nonce)).size).toBe(1);
    const calldata = txs.map((t) => parseTransaction(t.raw_transaction as Hex).data);
    expect(new Set(calldata).size).toBe(1);
    expect(txs[1]!.max_fee_per_gas).toBeGreaterThan(txs[0]!.max_fee_per_gas);
    expect(txs[1]!.max_priority_fee_per_gas).toBeGreaterThan(txs[0]!.max_priority_fee_per_gas);
    const mined = txs.filter((t) => t.status === 'mined');
    expect(mined).toHaveLength(1);
    expect(txs.filter((t) => t.status !== 'mined').every((t) => t.status === 'replaced')).toBe(true);
    const row = await findPaymentById(runtime.db, payment!.id);
    expect(row?.settlement_tx_hash).toBe(mined[0]!.hash);
    await expectSettledExactlyOnce(runtime, chain, [payment!]);
  });

  it('after a restart, re-broadcasts the stored raw transaction byte for byte, never re-signing', async () => {
    const chain = await devnet();
    await chain.setAutomine!(false);
    const runtime = await settlementRuntime(chain);
    const merchant = await testAccount(runtime);
    const [payment] = await createPaidPayments(runtime, merchant.accountId, [
      { amount: 7000, currency: 'NGN', payoutAddress: payoutAddresses(1)[0]! },
    ]);
    const first = worker(runtime);
    const stored = await waitForPendingTx(runtime);
    // The process dies and the node loses the transaction (as if the broadcast never arrived).
    await first.stop();
    await chain.publicClient.request({ method: 'hardhat_dropTransaction', params: [stored.hash] } as never);
    expect(await chain.publicClient.getTransaction({ hash: stored.hash as Hex }).catch(() => null)).toBeNull();

    await chain.setAutomine!(true);
    worker(runtime);
    await waitUntil('settlement', async () => (await findPaymentById(runtime.db, payment!.id))?.status === 'settled');
    const txs = await batchTransactions(runtime, stored.batch_id!);
    expect(txs).toHaveLength(1);
    expect(txs[0]!.hash).toBe(stored.hash);
    expect(txs[0]!.raw_transaction).toBe(stored.raw_transaction);
    expect(txs[0]!.broadcast_count).toBeGreaterThanOrEqual(2);
    expect((await findPaymentById(runtime.db, payment!.id))?.settlement_tx_hash).toBe(stored.hash);
    await expectSettledExactlyOnce(runtime, chain, [payment!]);
  });

  it('a reverted transaction is recorded and its transfers go out again in a new batch', async () => {
    const chain = await devnet();
    await chain.setAutomine!(false);
    const runtime = await settlementRuntime(chain);
    const merchant = await testAccount(runtime);
    const payments = await createPaidPayments(runtime, merchant.accountId, spreadOver(payoutAddresses(2), 3));
    worker(runtime);
    const doomed = await waitForPendingTx(runtime);

    // In the same block: the owner moves the relayer role away (high tip, first), our batch (reverts
    // with NotRelayer), then the owner gives the role back (lowest tip, last).
    const deployer = DEV_ACCOUNTS.deployer;
    const nonce = await chain.publicClient.getTransactionCount({ address: deployer.address, blockTag: 'pending' });
    const setRelayer = (to: Hex): Hex =>
      encodeFunctionData({ abi: batchPayoutAbi, functionName: 'setRelayer', args: [to] });
    await sendRaw(chain, deployer.privateKey, setRelayer(DEV_ACCOUNTS.outsider.address), nonce, 50_000_000_000n);
    await sendRaw(chain, deployer.privateKey, setRelayer(chain.relayer.address), nonce + 1, 1n);
    await chain.mine!(1);
    await chain.setAutomine!(true);
    const receipt = await chain.publicClient.getTransactionReceipt({ hash: doomed.hash as Hex });
    expect(receipt.status).toBe('reverted');

    await waitUntil('settlement after the revert', async () => {
      const rows = await runtime.db
        .selectFrom('payments')
        .select('status')
        .where('account_id', '=', merchant.accountId)
        .execute();
      return rows.every((r) => r.status === 'settled');
    });
    const failed = await runtime.db
      .selectFrom('settlement_batches')
      .selectAll()
      .where('id', '=', doomed.batch_id)
      .executeTakeFirstOrThrow();
    expect(failed.status).toBe('failed');
    expect(failed.failure_reason).toContain('reverted');
    expect(failed.tx_hash).toBe(doomed.hash);
    expect(failed.gas_used).toBe(receipt.gasUsed);
    expect((await batchTransactions(runtime, doomed.batch_id!))[0]?.status).toBe('reverted');
    const transfers = await runtime.db
      .selectFrom('transfers')
      .selectAll()
      .where(
        'source_id',
        'in',
        payments.map((p) => p.id),
      )
      .execute();
    expect(transfers.every((t) => t.attempts === 1 && t.batch_id !== doomed.batch_id)).toBe(true);
    await expectSettledExactlyOnce(runtime, chain, payments);
  });

  it('batches sent on an in-process devnet that is gone are sent again on the new one (same batch id)', async () => {
    const oldChain = await connectChain({ confirmations: 1 });
    await oldChain.setAutomine!(false);
    const runtime = await settlementRuntime(oldChain);
    const merchant = await testAccount(runtime);
    const [address] = payoutAddresses(1);
    const [payment] = await createPaidPayments(runtime, merchant.accountId, [
      { amount: 9000, currency: 'NGN', payoutAddress: address! },
    ]);
    const first = worker(runtime);
    const stored = await waitForPendingTx(runtime);
    await first.stop();
    await oldChain.close(); // the process that ran it ended: that chain is gone, unmined transaction and all

    const newChain = await devnet();
    const restarted = await settlementRuntime(newChain);
    worker(restarted);
    await waitUntil(
      'settlement on the new devnet',
      async () => (await findPaymentById(runtime.db, payment!.id))?.status === 'settled',
    );
    const batch = await runtime.db
      .selectFrom('settlement_batches')
      .selectAll()
      .where('id', '=', stored.batch_id)
      .executeTakeFirstOrThrow();
    expect(batch.status).toBe('confirmed');
    expect(batch.chain_key).not.toBe(null);
    const txs = await batchTransactions(runtime, stored.batch_id!);
    // By chain and hash: re-signing the same transfer at the same nonce and fee on the new devnet
    // gives the same hash (signatures are deterministic), so the two chains' rows may share it and
    // their order (by fee) is not fixed.
    const onChain = (t: { chain_key: string; hash: string }): boolean =>
      t.chain_key === stored.chain_key && t.hash === stored.hash;
    expect(txs.find(onChain)?.status).toBe('dropped');
    const mined = txs.filter((t) => t.status === 'mined');
    expect(mined).toHaveLength(1);
    expect(mined[0]!.chain_key).not.toBe(stored.chain_key);
    expect(await readTokenBalance(newChain, address!)).toBe(payment!.settlement_minor);
    await expectSettlementInvariants(restarted, newChain);
  });

  it('two workers on one database and chain: one relayer lease, every payment settled once', async () => {
    const chain = await devnet();
    const runtime = await settlementRuntime(chain);
    const merchant = await testAccount(runtime);
    worker(runtime, { batchMax: 5 });
    worker(runtime, { batchMax: 5 });
    const payments = await createPaidPayments(runtime, merchant.accountId, spreadOver(payoutAddresses(6), 40));
    await waitUntil('40 settlements', async () => {
      const rows = await runtime.db
        .selectFrom('payments')
        .select('status')
        .where('account_id', '=', merchant.accountId)
        .execute();
      return rows.every((r) => r.status === 'settled');
    });
    const leases = await runtime.db.selectFrom('relayer_leases').selectAll().execute();
    expect(new Set(leases.map((l) => `${l.chain_key}/${l.relayer_address}`)).size).toBe(leases.length);
    await expectSettledExactlyOnce(runtime, chain, payments);
  });

  it('refuses to pay the token or batch contract: the transfer fails for good and the money returns', async () => {
    const chain = await devnet();
    const runtime = await settlementRuntime(chain);
    const merchant = await testAccount(runtime);
    // Credit the merchant through a settled payment without an address (custodial balance).
    const [credited] = await createPaidPayments(runtime, merchant.accountId, [{ amount: 50_000, currency: 'NGN' }]);
    worker(runtime);
    await waitUntil(
      'balance settlement',
      async () => (await findPaymentById(runtime.db, credited!.id))?.status === 'settled',
    );
    const balance = ledgerAccount.merchant(merchant.accountId, false, 'USDC');
    const before = await getLedgerBalance(runtime.db, balance);
    const transfer = await runtime.db.transaction().execute((trx) =>
      enqueueTransfer(trx, {
        kind: 'payout',
        sourceId: 'po_guardrail_test_0000000',
        accountId: merchant.accountId,
        livemode: false,
        recipient: chain.tokenAddress,
        amountMinor: 1_000_000n,
      }),
    );
    expect(await getLedgerBalance(runtime.db, balance)).toBe(before - 1_000_000n);
    await waitUntil('the refused transfer to fail', async () => {
      const row = await runtime.db
        .selectFrom('transfers')
        .select('status')
        .where('id', '=', transfer.id)
        .executeTakeFirst();
      return row?.status === 'failed';
    });
    expect(await getLedgerBalance(runtime.db, balance)).toBe(before);
    expect(await readTokenBalance(chain, chain.tokenAddress)).toBe(0n);
    await expectSettlementInvariants(runtime, chain);
  });
});
