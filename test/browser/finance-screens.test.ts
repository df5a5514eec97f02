import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../../src/chain/chain.ts';
import type { Runtime } from '../../src/runtime.ts';
import { startSettlementWorker } from '../../src/settlement/worker.ts';
import { artifactsDir, browserSkipReason, launchBrowser } from '../support/browser.ts';
import { extraKey, testAccount, testApp } from '../support/harness.ts';
import { ADDRESS_A, ADDRESS_B, editPolicy, fund, post } from '../support/money.ts';
import { createPayment, payPayment } from '../support/payments.ts';
import { freePort } from '../support/server.ts';
import { settlementRuntime, waitUntil } from '../support/settlement.ts';

/**
 * Finance's screens on a laptop (issue 35): at 1280 × 800 the Actions and Payouts tables show the
 * decision, the approver and the status without scrolling sideways; the Actions screen reads in
 * finance's words with grouped amounts and hides the service's own steps until asked; Payouts shows
 * a held payout, who approved the others, and filters by day. Screenshots: test-artifacts/finance/.
 */
const skip = browserSkipReason();
if (skip) console.warn(skip);

const LAPTOP = { width: 1280, height: 800 };

describe.skipIf(skip)('finance screens at 1280 × 800', () => {
  let chain: ChainConnection;
  let runtime: Runtime;
  let app: FastifyInstance;
  let url: string;
  let browser: Browser;
  let stopWorker: () => Promise<void>;
  let financeKey: string;
  const shots = artifactsDir('finance');

  beforeAll(async () => {
    chain = await connectChain({ confirmations: 1 });
    runtime = await settlementRuntime(chain);
    app = await testApp(runtime);
    const port = await freePort();
    await app.listen({ port, host: '127.0.0.1' });
    url = `http://127.0.0.1:${port}`;
    const worker = startSettlementWorker(runtime, { pollIntervalMs: 20 });
    stopWorker = () => worker.stop();

    // A day: funding, a payer's payment, a large payout approved, a split, and one payout still held.
    const merchant = await testAccount(runtime, { name: 'Ada Stores' });
    financeKey = await extraKey(runtime, merchant.accountId, { scopes: ['approvals', 'agent', 'payments:read'] });
    await fund(app, merchant.apiKey, 1_000_000_000);
    await fund(app, merchant.apiKey, 1000);
    const payment = await createPayment(app, merchant.apiKey, {
      amount: 25_000,
      currency: 'NGN',
      reference: 'order-1',
    });
    await payPayment(app, merchant.apiKey, payment.id);
    const policy = await editPolicy(app, merchant.apiKey, (p) => {
      p.channels.api.confirm_above = '100';
      p.channels.api.deny_above = null;
    });
    expect(policy.statusCode, policy.body).toBe(200);
    const big = await post(app, merchant.apiKey, '/v1/payouts', {
      amount: 1_000_000_000,
      asset: 'USDC',
      to_address: ADDRESS_A,
      reference: 'treasury-move',
      memo: 'Quarter-end treasury move to cold storage',
    });
    expect(big.statusCode, big.body).toBe(202);
    const approved = await post(app, financeKey, `/v1/confirmations/${big.json().confirmation_id}/approve`);
    expect(approved.statusCode, approved.body).toBe(200);
    await post(app, merchant.apiKey, '/v1/revenue_shares', {
      amount: 90,
      asset: 'USDC',
      reference: 'split-1',
      splits: [
        { to_address: ADDRESS_A, share_bps: 7000 },
        { to_address: ADDRESS_B, share_bps: 3000 },
      ],
    });
    const held = await post(app, merchant.apiKey, '/v1/payouts', {
      amount: 500,
      asset: 'USDC',
      to_address: ADDRESS_B,
      reference: 'inv-77',
    });
    expect(held.statusCode, held.body).toBe(202);
    await waitUntil('payouts settled', async () => {
      const rows = await runtime.db
        .selectFrom('payouts')
        .select('status')
        .where('account_id', '=', merchant.accountId)
        .execute();
      return rows.length === 3 && rows.every((r) => r.status === 'settled');
    });
    browser = await launchBrowser();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await stopWorker?.();
    await chain?.close();
  });

  async function signedIn(path: string): Promise<Page> {
    const context = await browser.newContext({ viewport: LAPTOP });
    const page = await context.newPage();
    await page.goto(`${url}/dashboard/sign-in`);
    await page.getByLabel('API key').fill(financeKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForSelector('#signed-in-key');
    await page.goto(`${url}${path}`);
    return page;
  }

  /** The page does not scroll sideways, and each header named is wholly inside the viewport. */
  async function expectFits(page: Page, table: Locator, headers: readonly string[]): Promise<void> {
    const widths = {
      doc: await page.evaluate<number>('document.documentElement.scrollWidth'),
      view: await page.evaluate<number>('document.documentElement.clientWidth'),
    };
    expect(widths.doc).toBeLessThanOrEqual(widths.view);
    const scroller = table.locator('xpath=..');
    const inner = await scroller.evaluate((el) => ({ scroll: el.scrollWidth, client: el.clientWidth }));
    expect(inner.scroll, 'the table scrolls sideways').toBeLessThanOrEqual(inner.client);
    for (const name of headers) {
      const box = await table.getByRole('columnheader', { name, exact: true }).boundingBox();
      expect(box, name).not.toBeNull();
      expect(box!.x).toBeGreaterThanOrEqual(0);
      expect(box!.x + box!.width, `${name} ends inside 1280 px`).toBeLessThanOrEqual(LAPTOP.width);
    }
  }

  it('Actions: finance words, grouped amounts, decision and status in view, system steps behind a toggle', async () => {
    const page = await signedIn('/dashboard/actions');
    const table = page.locator('#actions');
    await page.screenshot({ path: join(shots, '01-actions.png') });
    await expectFits(page, table, ['Decision', 'Status', 'Transaction']);

    const payout = table.locator('tr[data-tool="create_payout"]', { hasText: '1,000,000,000.00 USDC' });
    await expect_(payout);
    expect(await payout.locator('td.what').textContent()).toContain('Payout');
    expect(await payout.locator('td.status .badge').textContent()).toBe('Done');
    // The payout it created, linked.
    expect(await payout.locator('td.status a').getAttribute('href')).toMatch(/^\/dashboard\/payouts\/po_/);
    expect(await payout.locator('td.decision').textContent()).toMatch(
      /^Needs approval.*the API’s confirmation threshold.*Approved by/s,
    );
    expect(await payout.locator('td.requested-by').textContent()).toMatch(/^API/);
    // The decision and status cells themselves are on screen.
    for (const cell of ['td.decision', 'td.status']) {
      const box = await payout.locator(cell).boundingBox();
      expect(box!.x + box!.width).toBeLessThanOrEqual(LAPTOP.width);
    }
    expect(await table.textContent()).not.toMatch(/create_payout|api channel|1000000000\.000000/);
    // System steps are hidden until asked for.
    expect(await table.locator('tr[data-tool="confirm_settlement_batch"]').count()).toBe(0);
    await page.getByLabel('Show system steps').check();
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/system=1/);
    expect(await page.locator('#actions tr[data-tool="confirm_settlement_batch"]').count()).toBeGreaterThan(0);
    expect(await page.locator('#actions').textContent()).toContain('Settled on chain');
    const batch = page.locator('#actions tr[data-tool="confirm_settlement_batch"]').first();
    expect(await batch.locator('.tx-hash').textContent()).toMatch(/^0x[0-9a-f]{64}$/);
    await expectFits(page, page.locator('#actions'), ['Decision', 'Status', 'Transaction']);
    await page.screenshot({ path: join(shots, '02-actions-with-system.png') });
    // The banner describes the log as it is on load, without pressing Verify now.
    expect(await page.locator('#log-verification').textContent()).toMatch(/^Log verified through #\d+/);
  });

  it('Payouts: held ones, approver, day filter and export, decision and status in view', async () => {
    const page = await signedIn('/dashboard/payouts');
    const table = page.locator('#payouts');
    await page.screenshot({ path: join(shots, '03-payouts.png') });
    await expectFits(page, table, ['Approved by', 'Status', 'Transaction']);
    const held = table.locator('tr[data-status="held"]');
    expect(await held.count()).toBe(1);
    expect(await held.textContent()).toContain('500.00 USDC');
    expect(await held.textContent()).toContain('Waiting for approval');
    const big = table.locator('tr', { hasText: '1,000,000,000.00 USDC' });
    expect(await big.locator('td.decided-by').textContent()).toMatch(/^sk_test_/);
    const leg = table.locator('tr', { hasText: '63.00 USDC' });
    expect(await leg.locator('td.decided-by').textContent()).toBe('Not needed');

    // A day filter: today shows them, yesterday none.
    const today = new Date().toISOString().slice(0, 10);
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    await page.getByLabel('From').fill(yesterday);
    await page.getByLabel('To').fill(yesterday);
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/to=/);
    expect(await page.getByText('No payouts match.').isVisible()).toBe(true);
    await page.goto(`${url}/dashboard/payouts?from=${today}&to=${today}`);
    expect(await page.locator('#payouts tbody tr').count()).toBe(4);

    // The export has the same rows.
    const csv = await page.request.get(`${url}/dashboard/payouts.csv?from=${today}`);
    expect(csv.status()).toBe(200);
    const text = await csv.text();
    expect(text.split('\r\n')[0]).toMatch(/^\uFEFFid,created,status,amount,asset,to_address,reference/);
    expect(text).toContain('treasury-move');
    expect(text).toContain(',held,500.000000,USDC,');
  });

  it('a run approved reads as it is now, not "confirmation required"', async () => {
    const merchant = await testAccount(runtime, { name: 'Kofi Electronics' });
    const agent = await extraKey(runtime, merchant.accountId, { scopes: ['agent', 'payouts:write', 'payments:read'] });
    const finance = await extraKey(runtime, merchant.accountId, { scopes: ['approvals', 'agent', 'payments:read'] });
    await fund(app, merchant.apiKey, 10_000);
    const run = await post(app, agent, '/agent/settle', { instruction: `pay out 5000 USDC to ${ADDRESS_B}` });
    expect(run.statusCode, run.body).toBe(200);
    expect(run.json().status).toBe('confirmation_required');
    const runId: string = run.json().run_id ?? run.json().id;
    const approved = await post(app, finance, `/v1/confirmations/${run.json().confirmations[0].id}/approve`);
    expect(approved.statusCode, approved.body).toBe(200);

    financeKey = finance;
    const page = await signedIn('/dashboard/runs');
    expect(await page.locator(`tr[data-run-id="${runId}"] .badge`).first().textContent()).toBe('completed');
    await page.goto(`${url}/dashboard/runs/${runId}`);
    expect(await page.locator('#run-status .badge').first().textContent()).toBe('completed');
    await page.goto(`${url}/dashboard/actions`);
    const row = page.locator('#actions tr[data-tool="create_payout"]').first();
    expect(await row.locator('td.status .badge').textContent()).toBe('Done');
    expect(await row.locator('td.decision').textContent()).toContain('Approved by');
  });
});

async function expect_(locator: Locator): Promise<void> {
  expect(await locator.count(), 'row present').toBe(1);
}
