// x402 settle under faults, in the style of the settlement crash tests (test/settlement.relayer.test.ts):
// the worker dies between storing the signed transferWithAuthorization and its confirmation, and the
// node loses the transaction; the next worker broadcasts the stored bytes again (never re-signing),
// and the payment is credited once.

import type { Hex } from 'viem';
import { encodeFunctionData, keccak256, toHex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type ChainConnection, connectChain, readTokenBalance, readTreasuryBalance } from '../src/chain/chain.ts';
import { plainUsdAbi } from '../src/chain/contracts/abis.ts';
import { DEV_ACCOUNTS } from '../src/chain/devnet.ts';
import { sendAs } from '../src/chain/testing.ts';
import type { Runtime } from '../src/runtime.ts';
import { type SettlementWorker, startSettlementWorker } from '../src/settlement/worker.ts';
import { caip2, type PaymentPayload, type PaymentRequirements } from '../src/x402/messages.ts';
import { settleAuthorization } from '../src/x402/settle.ts';
import { TRANSFER_WITH_AUTHORIZATION_TYPES, x402Target } from '../src/x402/verify-exact.ts';
import { type TestAccount, testAccount } from './support/harness.ts';
import { expectSettlementInvariants, settlementRuntime, waitUntil } from './support/settlement.ts';

let chain: ChainConnection;
let runtime: Runtime;
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

function worker(): SettlementWorker {
  const w = startSettlementWorker(runtime, { pollIntervalMs: 20 });
  workers.push(w);
  return w;
}

/** A payment of `value` as @x402/evm's client signs it, to plainpay's treasury. */
async function payment(value: bigint): Promise<{ payload: PaymentPayload; requirements: PaymentRequirements }> {
  const target = await x402Target(chain);
  const now = BigInt(Math.floor(Date.now() / 1000));
  const authorization = {
    from: payer.address,
    to: target.payTo,
    value,
    validAfter: now - 600n,
    validBefore: now + 3600n,
    nonce: keccak256(toHex(`faults ${Math.random()}`)),
  };
  const signature = await payer.signTypedData({
    domain: { name: target.name, version: target.version, chainId: chain.chainId, verifyingContract: target.asset },
    types: TRANSFER_WITH_AUTHORIZATION_TYPES,
    primaryType: 'TransferWithAuthorization',
    message: authorization,
  });
  const requirements = {
    scheme: 'exact',
    network: caip2(chain.chainId),
    amount: value.toString(),
    asset: target.asset,
    payTo: target.payTo,
    maxTimeoutSeconds: 60,
    extra: { name: target.name, version: target.version },
  };
  const wire = Object.fromEntries(Object.entries(authorization).map(([k, v]) => [k, v.toString()]));
  return {
    requirements,
    payload: { x402Version: 2, accepted: requirements, payload: { signature, authorization: wire } },
  };
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
  const paid = await payment(400_000n);
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
