// x402 settle under faults, in the style of the settlement crash tests (test/settlement.relayer.test.ts):
// the worker dies between storing the signed transferWithAuthorization and its confirmation, and the
// node loses the transaction; the next worker broadcasts the stored bytes again (never re-signing),
// and the payment is credited once. And a payload signed a minute ago settles on an idle devnet
// whose newest block is older than its validAfter; and two settles of one new payload at once pay
// once; an unmined transfer is fee-bumped at the same nonce, to the token, with the same calldata.
// (The reorg case: test/chaos/x402-reorg.test.ts.)

import { type Hex, parseTransaction } from 'viem';
import { encodeFunctionData, keccak256, toHex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type ChainConnection, connectChain, readTokenBalance, readTreasuryBalance } from '../src/chain/chain.ts';
import { plainUsdAbi } from '../src/chain/contracts/abis.ts';
import { DEV_ACCOUNTS } from '../src/chain/devnet.ts';
import { sendAs } from '../src/chain/testing.ts';
import { type SettlementWorker, startSettlementWorker } from '../src/settlement/worker.ts';
import { caip2 } from '../src/x402/messages.ts';
import { settleAuthorization } from '../src/x402/settle.ts';
import { signExactPayment } from './support/x402.ts';
import { type TestAccount, testAccount } from './support/harness.ts';
import { expectSettlementInvariants, settlementRuntime, waitUntil } from './support/settlement.ts';

let chain: ChainConnection;
let runtime: Awaited<ReturnType<typeof settlementRuntime>>;
let merchant: TestAccount;
const workers: SettlementWorker[] = [];
const payer = privateKeyToAccount(keccak256(toHex('x402 faults payer')));

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await settlementRuntime(chain);
  merchant = await testAccount(runtime);
  const mint = encodeFunctionData({ abi: plainUsdAbi, functionName: 'mint', args: [payer.address, 10_000_000n] });
  await sendAs(chain, DEV_ACCOUNTS.deployer.privateKey, { to: chain.tokenAddress, data: mint });
});
afterAll(async () => {
  for (const w of workers) await w.stop();
  await chain?.close();
});

function worker(options: Parameters<typeof startSettlementWorker>[1] = {}): SettlementWorker {
  const w = startSettlementWorker(runtime, { pollIntervalMs: 20, ...options });
  workers.push(w);
  return w;
}

async function authorizationTransactions(id: string) {
  return await runtime.db
    .selectFrom('chain_transactions')
    .selectAll()
    .where('authorization_id', '=', id)
    .orderBy('created_at')
    .execute();
}

it('after a crash between submit and confirm, broadcasts the stored transaction again and credits once', async () => {
  await chain.setAutomine!(false);
  const paid = await signExactPayment(chain, payer, 400_000n);
  const input = { accountId: merchant.accountId, livemode: false, ...paid };
  const [payerBefore, treasuryBefore] = [
    await readTokenBalance(chain, payer.address),
    await readTreasuryBalance(chain),
  ];
  const first = worker();
  // Unknown while the transfer is in flight: the caller is told "pending", never "failed".
  const pending = await settleAuthorization(runtime, input, { waitMs: 0 });
  expect(pending).toMatchObject({ status: 'pending', payer: payer.address });
  const authorization = await runtime.db.selectFrom('x402_authorizations').selectAll().executeTakeFirstOrThrow();
  await waitUntil('a stored transaction', async () => (await authorizationTransactions(authorization.id)).length > 0);
  const [stored] = await authorizationTransactions(authorization.id);

  // The process dies and the node loses the transaction (as if the broadcast never arrived).
  await first.stop();
  await chain.publicClient.request({ method: 'hardhat_dropTransaction', params: [stored!.hash] } as never);
  expect(await chain.publicClient.getTransaction({ hash: stored!.hash as Hex }).catch(() => null)).toBeNull();
  expect(await settleAuthorization(runtime, input, { waitMs: 0 })).toEqual(pending);

  await chain.setAutomine!(true);
  worker();
  const outcome = await settleAuthorization(runtime, input, { waitMs: 20_000 });
  expect(outcome).toEqual({
    status: 'settled',
    transaction: stored!.hash,
    network: caip2(chain.chainId),
    payer: payer.address,
    paymentId: authorization.payment_id,
  });
  const txs = await authorizationTransactions(authorization.id);
  expect(txs).toHaveLength(1);
  expect(txs[0]).toMatchObject({ hash: stored!.hash, raw_transaction: stored!.raw_transaction, status: 'mined' });
  expect(txs[0]!.broadcast_count).toBeGreaterThanOrEqual(2);
  expect(await readTokenBalance(chain, payer.address)).toBe(payerBefore - 400_000n);
  expect(await readTreasuryBalance(chain)).toBe(treasuryBefore + 400_000n);
  await waitUntil('settled', async () => {
    const row = await runtime.db
      .selectFrom('payments')
      .select('status')
      .where('id', '=', authorization.payment_id)
      .executeTakeFirstOrThrow();
    return row.status === 'settled';
  });
  const received = await runtime.db
    .selectFrom('ledger_postings')
    .select('kind')
    .where('reference', '=', authorization.id)
    .execute();
  expect(received).toEqual([{ kind: 'usdc_received' }]);
  await expectSettlementInvariants(runtime, chain);
});

it('settles a fresh payload on an idle devnet whose newest block is old (validAfter after that block)', async () => {
  // The node's clock runs 20 minutes past its newest block, as on a devnet idle that long; the
  // service's clock agrees with the node's. A client signs validAfter = now - 10 min, after that block.
  await chain.publicClient.request({ method: 'evm_increaseTime', params: [1200] } as never);
  runtime.clock.advance(1_200_000);
  const now = BigInt(Math.floor(runtime.clock.now().getTime() / 1000));
  const newest = (await chain.publicClient.getBlock({ blockTag: 'latest' })).timestamp;
  expect(newest).toBeLessThan(now - 600n);
  const fresh = await signExactPayment(chain, payer, 150_000n, { validAfter: now - 600n, validBefore: now + 90n });
  const outcome = await settleAuthorization(
    runtime,
    { accountId: merchant.accountId, livemode: false, ...fresh },
    { waitMs: 20_000 },
  );
  expect(outcome).toMatchObject({ status: 'settled', payer: payer.address });
});

it('two settles of one new payload at once: one records, the other waits for it; one transfer, one payment', async () => {
  const input = { accountId: merchant.accountId, livemode: false, ...(await signExactPayment(chain, payer, 50_000n)) };
  const count = async (table: 'payments' | 'x402_authorizations') =>
    Number(
      (
        await runtime.db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const before = { payer: await readTokenBalance(chain, payer.address), payments: await count('payments') };
  const [a, b] = await Promise.all([
    settleAuthorization(runtime, input, { waitMs: 20_000 }),
    settleAuthorization(runtime, input, { waitMs: 20_000 }),
  ]);
  expect(a).toMatchObject({ status: 'settled' });
  expect(b).toEqual(a);
  expect(await readTokenBalance(chain, payer.address)).toBe(before.payer - 50_000n);
  expect(await count('payments')).toBe(before.payments + 1);
});

it('an unmined transfer is replaced at the same nonce, to the token, with the same calldata and a higher fee', async () => {
  // The workers before give the relayer lease up: the one that bumps soon must hold it.
  for (const w of workers) await w.stop();
  await chain.setAutomine!(false);
  const input = { accountId: merchant.accountId, livemode: false, ...(await signExactPayment(chain, payer, 70_000n)) };
  const bumping = worker({ feeBumpAfterMs: 300, rebroadcastAfterMs: 200 });
  expect(await settleAuthorization(runtime, input, { waitMs: 0 })).toMatchObject({ status: 'pending' });
  const row = await runtime.db
    .selectFrom('x402_authorizations')
    .select('id')
    .orderBy('created_at', 'desc')
    .executeTakeFirstOrThrow();
  await waitUntil('a fee bump', async () => (await authorizationTransactions(row.id)).length >= 2);
  await chain.mine!(1);
  await chain.setAutomine!(true);
  const outcome = await settleAuthorization(runtime, input, { waitMs: 20_000 });
  expect(outcome).toMatchObject({ status: 'settled' });
  await bumping.stop();
  const txs = await authorizationTransactions(row.id);
  const parsed = txs.map((t) => parseTransaction(t.raw_transaction as Hex));
  expect(new Set(parsed.map((t) => t.nonce)).size).toBe(1);
  expect(new Set(parsed.map((t) => t.data)).size).toBe(1);
  expect(parsed.every((t) => t.to?.toLowerCase() === chain.tokenAddress.toLowerCase())).toBe(true);
  expect(txs.filter((t) => t.status === 'mined').map((t) => t.hash)).toEqual([
    (outcome as { transaction: string }).transaction,
  ]);
});
