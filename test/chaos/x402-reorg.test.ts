// Chaos: a reorg takes a confirmed x402 transfer off the chain, as chain-reorg.test.ts does for a
// settlement batch. On an out-of-process devnet with CONFIRMATIONS=1: evm_snapshot before the
// transferWithAuthorization is mined, evm_revert once it is confirmed and credited, then empty
// blocks so the new chain is longer. The credit is reversed by a posting of its own, the same
// signed transaction is broadcast again and lands, the payer pays once, the ledger balances against
// the chain, and a second settle of the payload answers the transfer that stands.

import { encodeFunctionData, keccak256, toHex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { expect, it } from 'vitest';
import { readTokenBalance, readTreasuryBalance } from '../../src/chain/chain.ts';
import { plainUsdAbi } from '../../src/chain/contracts/abis.ts';
import { DEV_ACCOUNTS } from '../../src/chain/devnet.ts';
import { sendAs } from '../../src/chain/testing.ts';
import { settleAuthorization } from '../../src/x402/settle.ts';
import { testAccount } from '../support/harness.ts';
import { expectSettlementInvariants } from '../support/settlement.ts';
import { signExactPayment } from '../support/x402.ts';
import { chaosRuntime, chaosWorker, connectNode, devnetNode, waitFor } from './support/chain.ts';

it('depth 1: the credit is reversed, the same signed transaction lands again, the payer pays once', async () => {
  const node = await devnetNode();
  const chain = await connectNode(node.url, node, { confirmations: 1 });
  const { runtime } = await chaosRuntime(chain);
  const merchant = await testAccount(runtime);
  const payer = privateKeyToAccount(keccak256(toHex('x402 reorg payer')));
  const mint = encodeFunctionData({ abi: plainUsdAbi, functionName: 'mint', args: [payer.address, 5_000_000n] });
  await sendAs(chain, DEV_ACCOUNTS.deployer.privateKey, { to: chain.tokenAddress, data: mint });
  chaosWorker(runtime);
  const [payerBefore, treasuryBefore] = [
    await readTokenBalance(chain, payer.address),
    await readTreasuryBalance(chain),
  ];

  const snapshot = await node.rpc('evm_snapshot');
  const input = { accountId: merchant.accountId, livemode: false, ...(await signExactPayment(chain, payer, 300_000n)) };
  const first = await settleAuthorization(runtime, input, { waitMs: 20_000 });
  expect(first).toMatchObject({ status: 'settled' });
  const row = () => runtime.db.selectFrom('x402_authorizations').selectAll().executeTakeFirstOrThrow();
  const confirmed = await row();

  expect(await node.rpc('evm_revert', [snapshot])).toBe(true);
  await node.mine(2);
  await waitFor('reversed', async () => (await row()).reversals === 1);
  await waitFor('confirmed again', async () => (await row()).status === 'confirmed');

  const again = await row();
  expect(again.tx_hash).toBe(confirmed.tx_hash); // the same bytes, broadcast again
  const receipt = await chain.publicClient.getTransactionReceipt({ hash: again.tx_hash as `0x${string}` });
  expect(again.block_hash).toBe(receipt.blockHash);
  const postings = await runtime.db
    .selectFrom('ledger_postings')
    .select(['kind', 'reference'])
    .where('reference', 'like', `${confirmed.id}%`)
    .orderBy('id')
    .execute();
  expect(postings).toEqual([
    { kind: 'usdc_received', reference: confirmed.id },
    { kind: 'usdc_reverted', reference: `${confirmed.id}:0` },
    { kind: 'usdc_received', reference: `${confirmed.id}:1` },
  ]);
  const txs = await runtime.db
    .selectFrom('chain_transactions')
    .select(['hash', 'status'])
    .where('authorization_id', '=', confirmed.id)
    .execute();
  expect(txs).toEqual([{ hash: confirmed.tx_hash, status: 'mined' }]);
  expect(await readTokenBalance(chain, payer.address)).toBe(payerBefore - 300_000n);
  expect(await readTreasuryBalance(chain)).toBe(treasuryBefore + 300_000n);
  const payment = await runtime.db
    .selectFrom('payments')
    .select('status')
    .where('id', '=', confirmed.payment_id)
    .executeTakeFirstOrThrow();
  expect(payment.status).toBe('settled');
  expect(await settleAuthorization(runtime, input, { waitMs: 0 })).toEqual(first);
  await expectSettlementInvariants(runtime, chain);
});
