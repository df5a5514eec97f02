// Acceptance 4: the chain RPC fails or times out on 20% of calls (a proxy between the worker and
// the node refuses, cuts the connection after the node executed the call, times out, or answers
// late) and every payment still settles exactly once. In-process worker, so it runs on PGlite too.

import { afterAll, beforeAll, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { type DevnetRpcServer, startDevnetRpcServer } from '../src/chain/devnet.ts';
import { testAccount } from './support/harness.ts';
import { expectSettledExactlyOnce, payoutAddresses, settlementRuntime, waitUntil } from './support/settlement.ts';
import { type FaultProxy, startFaultProxy } from './support/settlement-fault-proxy.ts';
import { createPaidPayments, spreadOver } from './support/settlement-fixtures.ts';
import { startSettlementWorker } from '../src/settlement/worker.ts';

let devnet: DevnetRpcServer;
let proxy: FaultProxy;
let direct: ChainConnection;

beforeAll(async () => {
  devnet = await startDevnetRpcServer({ blockIntervalMs: 100 });
  proxy = await startFaultProxy(devnet.url, { rate: 0.2, maxDelayMs: 800 });
  direct = await connectChain(chainConfig(devnet.url));
});

afterAll(async () => {
  await proxy?.close();
  await devnet?.close();
});

function chainConfig(rpcUrl: string) {
  return {
    rpcUrl,
    tokenAddress: devnet.tokenAddress,
    batchAddress: devnet.batchAddress,
    relayerPrivateKey: devnet.relayer.privateKey,
    confirmations: 2,
  };
}

/** Connecting goes through the proxy as well, so it may take a few tries. */
async function connectThroughProxy(): Promise<ChainConnection> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await connectChain(chainConfig(proxy.url));
    } catch (error) {
      if (attempt >= 20) throw error;
    }
  }
}

it('20% of RPC calls fail or time out: every payment still settles exactly once (acceptance 4)', async () => {
  const started = performance.now();
  const flaky = await connectThroughProxy();
  const runtime = await settlementRuntime(flaky);
  const merchant = await testAccount(runtime);
  const options = { pollIntervalMs: 20, batchMax: 3, batchMaxTransfers: 3, batchWindowMs: 30, rebroadcastAfterMs: 500 };
  const payments = await createPaidPayments(runtime, merchant.accountId, spreadOver(payoutAddresses(12), 60));

  // A restart in the middle, under the same faults.
  const first = startSettlementWorker(runtime, options);
  try {
    await waitUntil(
      'some settlements',
      async () => {
        const settled = await runtime.db
          .selectFrom('payments')
          .select('id')
          .where('account_id', '=', merchant.accountId)
          .where('status', '=', 'settled')
          .execute();
        return settled.length >= 20;
      },
      60_000,
    );
  } finally {
    await first.stop();
  }
  payments.push(...(await createPaidPayments(runtime, merchant.accountId, spreadOver(payoutAddresses(6), 40))));
  const second = startSettlementWorker(runtime, options);
  try {
    await waitUntil(
      '100 settlements through the flaky RPC',
      async () => {
        const open = await runtime.db
          .selectFrom('payments')
          .select('id')
          .where('account_id', '=', merchant.accountId)
          .where('status', '!=', 'settled')
          .execute();
        return open.length === 0;
      },
      90_000,
    );
  } finally {
    await second.stop();
  }
  console.log(
    `acceptance 4: ${proxy.stats.calls} RPC calls, ${proxy.stats.faulted} spoiled ` +
      `(${JSON.stringify(proxy.stats.byFault)}), by method ${JSON.stringify(proxy.stats.byMethod)}; ` +
      `${Math.round((performance.now() - started) / 1000)} s`,
  );
  expect(proxy.stats.faulted / proxy.stats.calls).toBeGreaterThan(0.19);
  expect(proxy.stats.byMethod.eth_sendRawTransaction ?? 0).toBeGreaterThan(0);
  await expectSettledExactlyOnce(runtime, direct, payments);
}, 150_000);
