// A merchant's own API protected by the ecosystem's middleware (@x402/express, its
// HTTPFacilitatorClient pointed at plainpay's /x402 with the merchant's API key), paid by an agent
// with the ecosystem's client (@x402/fetch with a viem account), on the embedded devnet.
//
// Today plainpay verifies but does not settle (POST /x402/settle is the next step, docs/x402.md): the
// middleware builds its requirements from plainpay's GET /x402/supported, the agent signs, plainpay
// verifies, and the flow stops at settlement with the resource withheld and nothing moved. When
// settle lands, the last test turns into the acceptance test: paid once, credited once.

import type { AddressInfo } from 'node:net';
import { HTTPFacilitatorClient } from '@x402/core/http';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import type { Network } from '@x402/core/types';
import { ExactEvmScheme as ExactEvmClient } from '@x402/evm/exact/client';
import { ExactEvmScheme as ExactEvmServer } from '@x402/evm/exact/server';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import { wrapFetchWithPayment, x402Client } from '@x402/fetch';
import express from 'express';
import type { FastifyInstance } from 'fastify';
import { encodeFunctionData, keccak256, toHex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain, readTokenBalance, readTreasuryBalance } from '../src/chain/chain.ts';
import { plainUsdAbi } from '../src/chain/contracts/abis.ts';
import { DEV_ACCOUNTS } from '../src/chain/devnet.ts';
import { sendAs } from '../src/chain/testing.ts';
import type { Runtime } from '../src/runtime.ts';
import type { SupportedResponse, VerifyResponse } from '../src/x402/messages.ts';
import { bearer, type TestAccount, testAccount, testApp } from './support/harness.ts';
import { settlementRuntime } from './support/settlement.ts';

let chain: ChainConnection;
let runtime: Runtime;
let app: FastifyInstance;
let merchant: TestAccount;
let merchantUrl: string;
let closeMerchant: () => Promise<void>;
const verified: VerifyResponse[] = [];
const agent = privateKeyToAccount(keccak256(toHex('x402 middleware agent')));
let kind: SupportedResponse['kinds'][number];

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await settlementRuntime(chain);
  app = await testApp(runtime);
  merchant = await testAccount(runtime);
  const plainpay = await app.listen({ host: '127.0.0.1', port: 0 });
  const mint = encodeFunctionData({ abi: plainUsdAbi, functionName: 'mint', args: [agent.address, 10_000_000n] });
  await sendAs(chain, DEV_ACCOUNTS.deployer.privateKey, { to: chain.tokenAddress, data: mint });
  kind = ((await app.inject({ url: '/x402/supported', headers: bearer(merchant.apiKey) })).json() as SupportedResponse)
    .kinds[0]!;

  // The merchant's side, as docs/x402.md tells a merchant to write it.
  const auth = { Authorization: `Bearer ${merchant.apiKey}` };
  const facilitator = new HTTPFacilitatorClient({
    url: `${plainpay}/x402`,
    createAuthHeaders: async () => ({ verify: auth, settle: auth, supported: auth }),
  });
  const verify = facilitator.verify.bind(facilitator);
  facilitator.verify = async (payload, requirements) => {
    const answer = await verify(payload, requirements);
    verified.push(answer);
    return answer;
  };
  const network = kind.network as Network;
  const server = new x402ResourceServer(facilitator).register(network, new ExactEvmServer());
  const merchantApp = express();
  merchantApp.use(
    paymentMiddleware(
      {
        'GET /report': {
          accepts: {
            scheme: 'exact',
            network,
            payTo: kind.extra.payTo,
            price: {
              amount: '250000',
              asset: kind.extra.asset,
              extra: { name: kind.extra.name, version: kind.extra.version },
            },
          },
          description: 'The weekly report',
          mimeType: 'application/json',
        },
      },
      server,
    ),
  );
  merchantApp.get('/report', (_req, res) => {
    res.json({ report: 'the numbers' });
  });
  const listening = merchantApp.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => listening.once('listening', () => resolve()));
  merchantUrl = `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
  closeMerchant = () => new Promise((resolve) => listening.close(() => resolve()));
});
afterAll(async () => {
  await closeMerchant?.();
  await chain?.close();
});

describe('@x402/express pointed at plainpay, paid by @x402/fetch', () => {
  it("answers an unpaid request with 402 and requirements built from plainpay's /x402/supported", async () => {
    const answer = await fetch(`${merchantUrl}/report`);
    expect(answer.status).toBe(402);
    const required = decodePaymentRequiredHeader(answer.headers.get('payment-required')!);
    expect(required.x402Version).toBe(2);
    expect(required.accepts).toEqual([
      {
        scheme: 'exact',
        network: `eip155:${chain.chainId}`,
        amount: '250000',
        asset: chain.tokenAddress,
        payTo: chain.batchAddress,
        maxTimeoutSeconds: expect.any(Number),
        extra: { name: 'Plain USD', version: '2' },
      },
    ]);
  });

  it("verifies the agent's payment at plainpay; with no settle yet, the resource is withheld and nothing moves", async () => {
    const client = x402Client.fromConfig({
      schemes: [{ network: 'eip155:*', client: new ExactEvmClient(agent) }],
      spendControls: { allowedAssets: [{ network: kind.network as Network, asset: kind.extra.asset }] },
    });
    const pay = wrapFetchWithPayment(fetch, client);
    const [agentBefore, treasuryBefore] = [
      await readTokenBalance(chain, agent.address),
      await readTreasuryBalance(chain),
    ];
    const answer = await pay(`${merchantUrl}/report`);
    expect(verified).toEqual([{ isValid: true, payer: agent.address }]);
    expect(answer.status).toBe(402);
    expect(await answer.text()).not.toContain('the numbers');
    expect(await readTokenBalance(chain, agent.address)).toBe(agentBefore);
    expect(await readTreasuryBalance(chain)).toBe(treasuryBefore);
  });
});
