// Test-mode money never becomes real tokens. On a chain that is not a test network (here a node
// over RPC that says it is Base, chain 8453) test-mode payments settle into the test balance, and
// test-mode payouts, revenue shares and test funding are refused before anything is written; a
// test-mode transfer queued behind the tools' back is refused by the worker before signing. Live
// money on the same chain moves as usual, so the refusals are about the mode, not a broken chain.

import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain, readTokenBalance } from '../src/chain/chain.ts';
import { DEV_ACCOUNTS, type DevnetRpcServer, startDevnetRpcServer } from '../src/chain/devnet.ts';
import { credit, debit, getLedgerBalance, ledgerAccount } from '../src/ledger/ledger.ts';
import { postLedger } from '../src/db/money-writes/ledger.ts';
import { createPayoutRecord } from '../src/db/money-writes/payouts.ts';
import type { Runtime } from '../src/runtime.ts';
import { type SettlementWorker, startSettlementWorker } from '../src/settlement/worker.ts';
import { bearer, type TestAccount, testAccount, testApp } from './support/harness.ts';
import { post } from './support/money.ts';
import { createPayment, payPayment } from './support/payments.ts';
import { expectSettlementInvariants, payoutAddresses, settlementRuntime, waitUntil } from './support/settlement.ts';

const BASE_MAINNET = 8453;

let devnet: DevnetRpcServer;
let chain: ChainConnection;
let runtime: Runtime;
let app: FastifyInstance;
let worker: SettlementWorker;
let testMerchant: TestAccount;
let liveMerchant: TestAccount;

beforeAll(async () => {
  devnet = await startDevnetRpcServer({ chainId: BASE_MAINNET });
  chain = await connectChain({
    rpcUrl: devnet.url,
    chainId: BASE_MAINNET,
    tokenAddress: devnet.tokenAddress,
    batchAddress: devnet.batchAddress,
    relayerPrivateKey: DEV_ACCOUNTS.relayer.privateKey,
    confirmations: 1,
  });
  runtime = await settlementRuntime(chain);
  app = await testApp(runtime);
  worker = startSettlementWorker(runtime);
  testMerchant = await testAccount(runtime);
  liveMerchant = await testAccount(runtime, { livemode: true });
});

afterAll(async () => {
  await worker?.stop();
  await chain?.close();
  await devnet?.close();
});

/** Puts `amount` USDC minor units into a balance by a ledger posting (test funding is refused here). */
async function credited(merchant: TestAccount, livemode: boolean, amount: bigint) {
  const balance = ledgerAccount.merchant(merchant.accountId, livemode, 'USDC');
  await runtime.db.transaction().execute((trx) =>
    postLedger(trx, {
      kind: 'test_funding',
      reference: `fund_${Math.random().toString(36).slice(2)}`,
      entries: [debit(ledgerAccount.fx(livemode, 'USDC'), amount), credit(balance, amount)],
    }),
  );
  return balance;
}

const payoutCount = async (accountId: string) =>
  Number(
    (
      await runtime.db
        .selectFrom('payouts')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('account_id', '=', accountId)
        .executeTakeFirstOrThrow()
    ).n,
  );

describe('test-mode money on a chain that is not a test network', () => {
  it('payouts, revenue shares and test funding are refused with a 400 naming the chain; nothing moves', async () => {
    const balance = await credited(testMerchant, false, 50_000_000n);
    const [to, other] = payoutAddresses(2);
    const attempts = [
      await post(app, testMerchant.apiKey, '/v1/payouts', { amount: 10, to_address: to }),
      await post(app, testMerchant.apiKey, '/v1/revenue_shares', {
        amount: 10,
        splits: [
          { to_address: to, share_bps: 7000 },
          { to_address: other, share_bps: 3000 },
        ],
      }),
      await post(app, testMerchant.apiKey, '/v1/test_helpers/balance/fund', { amount: 10 }),
    ];
    for (const res of attempts) {
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().error.type).toBe('invalid_request_error');
      expect(res.json().error.message).toContain(`chain ${BASE_MAINNET} is not one`);
    }
    expect(await getLedgerBalance(runtime.db, balance)).toBe(50_000_000n);
    expect(await payoutCount(testMerchant.accountId)).toBe(0);
  });

  it('a test-mode payment with a payout address settles into the test balance, not on chain', async () => {
    const [to] = payoutAddresses(1);
    const created = await createPayment(app, testMerchant.apiKey, {
      amount: 10_000,
      currency: 'NGN',
      payout_address: to,
    });
    expect((await payPayment(app, testMerchant.apiKey, created.id)).statusCode).toBe(200);
    const read = () =>
      app.inject({ method: 'GET', url: `/v1/payments/${created.id}`, headers: bearer(testMerchant.apiKey) });
    await waitUntil('the payment to settle', async () => (await read()).json().status === 'settled');
    expect((await read()).json().settlement).toMatchObject({ destination: 'balance' });
    expect(await readTokenBalance(chain, to!)).toBe(0n);
  });

  it('a test-mode transfer queued behind the tools is failed by the worker before signing; the money is back', async () => {
    const balance = await credited(testMerchant, false, 7_000_000n);
    const before = await getLedgerBalance(runtime.db, balance);
    const [to] = payoutAddresses(1);
    const payout = await runtime.db.transaction().execute((trx) =>
      createPayoutRecord(trx, {
        accountId: testMerchant.accountId,
        livemode: false,
        amountMinor: 7_000_000n,
        toAddress: to!,
        channel: 'api',
        at: new Date(),
      }),
    );
    expect(await getLedgerBalance(runtime.db, balance)).toBe(before - 7_000_000n);
    const status = async () =>
      (await runtime.db.selectFrom('payouts').select('status').where('id', '=', payout.id).executeTakeFirstOrThrow())
        .status;
    await waitUntil('the worker to refuse the transfer', async () => (await status()) === 'failed');
    const transfer = await runtime.db
      .selectFrom('transfers')
      .select(['status', 'last_error', 'batch_id'])
      .where('source_id', '=', payout.id)
      .executeTakeFirstOrThrow();
    expect(transfer.status).toBe('failed');
    expect(transfer.last_error).toContain(`chain ${BASE_MAINNET} is not one`);
    expect(await getLedgerBalance(runtime.db, balance)).toBe(before);
    expect(await readTokenBalance(chain, to!)).toBe(0n);
  });

  it('live-mode money on the same chain is paid out as usual', async () => {
    await credited(liveMerchant, true, 25_000_000n);
    const [to] = payoutAddresses(1);
    const res = await post(app, liveMerchant.apiKey, '/v1/payouts', { amount: 25, to_address: to });
    expect(res.statusCode, res.body).toBe(200);
    // Settled is after the worker has recorded the confirmation: the ledger and the chain then agree.
    const read = () =>
      app.inject({ method: 'GET', url: `/v1/payouts/${res.json().id}`, headers: bearer(liveMerchant.apiKey) });
    await waitUntil('the live payout to settle', async () => (await read()).json().status === 'settled');
    expect(await readTokenBalance(chain, to!)).toBe(25_000_000n);
    await expectSettlementInvariants(runtime, chain);
  });
});
