import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { encodeFunctionData, keccak256, type TypedDataDefinition, toHex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain, readTokenBalance } from '../../src/chain/chain.ts';
import { plainUsdAbi } from '../../src/chain/contracts/abis.ts';
import { DEV_ACCOUNTS } from '../../src/chain/devnet.ts';
import { sendAs } from '../../src/chain/testing.ts';
import { buildCheckoutApp } from '../../src/checkout/app.ts';
import { findPaymentById } from '../../src/db/repositories/payments.ts';
import type { Runtime } from '../../src/runtime.ts';
import { startSettlementWorker } from '../../src/settlement/worker.ts';
import { artifactsDir, browserSkipReason, launchBrowser } from '../support/browser.ts';
import { type TestAccount, testAccount, testApp } from '../support/harness.ts';
import { createPayment } from '../support/payments.ts';
import { freePort } from '../support/server.ts';
import { settlementRuntime } from '../support/settlement.ts';

/**
 * "Pay with USDC" on the hosted page, in chromium on a phone's viewport, against the embedded
 * devnet. The payer's wallet is a test double of an EIP-1193 provider injected before the page's
 * scripts run: its requests call back into Node, which answers them for a viem account funded on
 * the devnet, as a browser wallet would (connect, chain, one EIP-712 signature).
 */
const skip = browserSkipReason();
if (skip) console.warn(skip);

describe.skipIf(skip)('Pay with USDC on the checkout page, in a browser', () => {
  let chain: ChainConnection;
  let runtime: Runtime;
  let api: FastifyInstance;
  let checkout: FastifyInstance;
  let merchant: TestAccount;
  let browser: Browser;
  let context: BrowserContext;
  let stopSettlement: () => Promise<void>;
  const payer = privateKeyToAccount(keccak256(toHex('checkout usdc browser payer')));
  const shots = artifactsDir('checkout');

  beforeAll(async () => {
    const port = await freePort();
    chain = await connectChain({ confirmations: 1 });
    runtime = await settlementRuntime(chain, { CHECKOUT_BASE_URL: `http://127.0.0.1:${port}` });
    api = await testApp(runtime);
    checkout = await buildCheckoutApp(runtime);
    await checkout.listen({ port, host: '127.0.0.1' });
    merchant = await testAccount(runtime, { name: 'Kofi Electronics' });
    const mint = encodeFunctionData({ abi: plainUsdAbi, functionName: 'mint', args: [payer.address, 100_000_000n] });
    await sendAs(chain, DEV_ACCOUNTS.deployer.privateKey, { to: chain.tokenAddress, data: mint });
    const settlement = startSettlementWorker(runtime, { pollIntervalMs: 20 });
    stopSettlement = () => settlement.stop();
    browser = await launchBrowser();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await stopSettlement?.();
    await checkout?.close();
    await chain?.close();
  });

  afterEach(async () => {
    await context?.close();
  });

  /** A phone's page, with the test wallet injected when `wallet` is given (its requests are recorded there). */
  async function openPage(url: string, wallet?: string[]): Promise<Page> {
    context = await browser.newContext({ viewport: { width: 360, height: 740 } });
    if (wallet) {
      await context.exposeFunction('testWallet', (method: string, params: unknown[]) => {
        wallet.push(method);
        return answerWallet(method, params);
      });
      // Before the page's own scripts: the provider is there when checkout.js looks for one.
      await context.addInitScript({
        content: `window.ethereum = { request: async ({ method, params }) => {
          const answer = await window.testWallet(method, params ?? []);
          if (answer?.rejected) throw { code: answer.rejected, message: 'rejected' };
          return answer;
        } };`,
      });
    }
    const page = await context.newPage();
    await page.goto(url);
    return page;
  }

  /** The account the test wallet holds, and whether it declines the next signature (EIP-1193's 4001). */
  let wallet = { account: payer, decline: false };

  /** What the payer's wallet answers: its account, the devnet's chain, and a signature of the typed data. */
  async function answerWallet(method: string, params: unknown[]): Promise<unknown> {
    switch (method) {
      case 'eth_requestAccounts':
        return [wallet.account.address];
      case 'eth_chainId':
        return toHex(chain.chainId);
      case 'eth_signTypedData_v4': {
        if (wallet.decline) return { rejected: 4001 };
        const { types, domain, primaryType, message } = JSON.parse(params[1] as string) as TypedDataDefinition & {
          types: Record<string, unknown>;
        };
        const { EIP712Domain: _domainType, ...messageTypes } = types;
        return wallet.account.signTypedData({
          domain,
          types: messageTypes,
          primaryType,
          message,
        } as TypedDataDefinition);
      }
      default:
        throw new Error(`the test wallet does not answer ${method}`);
    }
  }

  it('pays the locked gross with one signature, shows it received, settles and sends the payer back', async () => {
    const payment = await createPayment(api, merchant.apiKey, { currency: 'GHS', amount: 12.5 });
    const gross = (await findPaymentById(runtime.db, payment.id))!.gross_settlement_minor;
    const before = await readTokenBalance(chain, payer.address);
    const calls: string[] = [];
    const page = await openPage(payment.checkout_url, calls);
    // The merchant's own page, where a settled payment sends the payer back.
    await page.route('https://shop.example/**', (route) =>
      route.fulfill({ body: 'Thank you', contentType: 'text/plain' }),
    );
    const pay = page.getByRole('button', { name: /^Pay [\d.]+ USDC$/ });
    await pay.waitFor();
    await page.screenshot({ path: join(shots, '30-usdc-offered.png'), fullPage: true });
    const attemptPage = page.waitForResponse((res) => /\?attempt=att_\w+$/.test(res.url()));
    await pay.click();
    // The form's answer: the page of the attempt the authorization made, paid.
    const paidPage = await (await attemptPage).text();
    expect(paidPage).toMatch(/<h2 id="state-heading">Payment (received|complete)<\/h2>/);
    expect(paidPage).toContain('id="receipt"');
    await page.waitForURL(`https://shop.example/thanks?payment_id=${payment.id}&status=settled`);
    expect(calls.filter((method) => method === 'eth_signTypedData_v4')).toHaveLength(1);
    expect(await readTokenBalance(chain, payer.address)).toBe(before - gross);
    expect((await findPaymentById(runtime.db, payment.id))?.status).toBe('settled');
  });

  it('says in plain words when the wallet declines and when it holds too little USDC; nothing moves', async () => {
    const payment = await createPayment(api, merchant.apiKey, { currency: 'GHS', amount: 12.5 });
    const broke = privateKeyToAccount(keccak256(toHex('checkout usdc payer without USDC')));
    wallet = { account: broke, decline: true };
    const page = await openPage(payment.checkout_url, []);
    const pay = page.getByRole('button', { name: /^Pay [\d.]+ USDC$/ });
    await pay.click();
    await page.getByRole('alert').filter({ hasText: 'You declined in your wallet. Nothing was paid.' }).waitFor();
    wallet = { account: broke, decline: false };
    await pay.click();
    await page
      .getByRole('alert')
      .filter({ hasText: /^Your wallet does not hold enough USDC: this payment needs [\d.]+ USDC\. Nothing was taken/ })
      .waitFor();
    await page.screenshot({ path: join(shots, '32-usdc-not-enough.png'), fullPage: true });
    // The refusal is the page itself again, at its own address, with "Pay with USDC" to try again.
    expect(page.url()).toBe(payment.checkout_url);
    await pay.waitFor();
    expect((await findPaymentById(runtime.db, payment.id))?.status).toBe('pending');
    wallet = { account: payer, decline: false };
  });

  it('offers no USDC button without a wallet', async () => {
    const payment = await createPayment(api, merchant.apiKey, { currency: 'GHS', amount: 12.5 });
    const page = await openPage(payment.checkout_url);
    await page.getByRole('button', { name: /^Pay GH₵12\.50$/ }).waitFor();
    expect(await page.locator('#usdc-pay').count()).toBe(0);
    expect(await page.getByRole('button', { name: /USDC/ }).count()).toBe(0);
  });
});
