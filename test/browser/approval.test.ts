import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { artifactsDir, browserSkipReason, launchBrowser } from '../support/browser.ts';
import { callApi, type RunningServer, startServer } from '../support/server.ts';

/**
 * The approval screen for a finance person (issue 14, point 4), in Debian's chromium against the
 * real `plainpay serve`: an agent payout held above the agent channel's limit, on a balance too
 * small for it. The screen says what is held in words, shows the balance and the shortfall, and
 * approve is disabled with the reason; after funding, a finance user (another key than the one
 * that asked) approves it, lands back on the confirmation's page, and the Actions screen shows the
 * action executed with its approver, once the payout settled with a tx hash.
 *
 * Screenshots of each step go to test-artifacts/approval/.
 */
const skip = browserSkipReason();
if (skip) console.warn(skip);

const RECIPIENT = '0x00000000000000000000000000000000000da5b1';
const DESKTOP = { width: 1280, height: 900 };

describe.skipIf(skip)('approval screen in a browser', () => {
  let server: RunningServer;
  let browser: Browser;
  const shots = artifactsDir('approval');

  beforeAll(async () => {
    [server, browser] = await Promise.all([startServer(), launchBrowser()]);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  const api = (method: string, path: string, key: string, body?: unknown) => callApi(server, method, path, key, body);

  async function createKey(name: string, scopes: string[]): Promise<{ id: string; secret: string }> {
    const res = await api('POST', '/keys', server.demoKey, { name, scopes });
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    return { id: res.json.id, secret: res.json.secret };
  }

  it('a held agent payout the balance cannot cover: words, balance, shortfall, approve disabled; after funding it is approved, runs and settles', async () => {
    // The admin (the demo key) made the agent's key and a finance key: two principals.
    const agent = await createKey('ops agent', ['agent', 'payouts:write', 'payments:read']);
    const finance = await createKey('finance', ['approvals', 'agent', 'payments:read']);
    expect((await api('POST', '/v1/test_helpers/balance/fund', server.demoKey, { amount: 500 })).status).toBe(200);

    // Above the agent channel's 1,000 USDC confirmation threshold, and more than the balance.
    const run = await api('POST', '/agent/settle', agent.secret, {
      instruction: `pay out 2500 USDC to ${RECIPIENT} for March invoice`,
    });
    expect(run.status, JSON.stringify(run.json)).toBe(200);
    expect(run.json.status).toBe('confirmation_required');
    const confirmationId: string = run.json.confirmations[0].id;
    const actionId: string = run.json.actions.find((a: { status: string }) => a.status === 'held').id;

    const context = await browser.newContext({ viewport: DESKTOP });
    const page = await context.newPage();
    const consoleErrors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    page.on('pageerror', (e) => consoleErrors.push(e.message));

    // The approve_url, as an assistant or the agent's reply hands it over: sign in, then the page.
    await page.goto(`${server.url}/dashboard/confirmations/${confirmationId}`);
    await page.getByLabel('API key').fill(finance.secret);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`**/dashboard/confirmations/${confirmationId}`);

    // 1. The held action in words, the numbers, and why approve is not available.
    expect(await page.locator('#confirmation-summary').innerText()).toBe(
      'Pay out 2,500.000000 USDC to 0x0000…a5b1 — memo: March invoice — asked by ops agent',
    );
    expect(await page.locator('#confirmation-summary .address').getAttribute('title')).toBe(RECIPIENT);
    expect(await page.locator('#confirmation-reasons').innerText()).toContain(
      "2,500 USDC is above the agent channel's confirmation threshold",
    );
    expect(await page.locator('#available-balance').innerText()).toBe('500.000000 USDC');
    expect(await page.locator('#needed-amount').innerText()).toBe('2,500.000000 USDC');
    expect(await page.locator('#shortfall').innerText()).toBe('2,000.000000 USDC');
    const approve = page.getByRole('button', { name: 'Approve and run' });
    expect(await approve.isDisabled()).toBe(true);
    expect(await page.locator('#approve-blocked').innerText()).toContain(
      'The balance is too low: it is 2,000.000000 USDC short.',
    );
    expect(await page.getByRole('button', { name: 'Reject' }).isEnabled()).toBe(true);
    const text = await page.locator('main').innerText();
    expect(text).not.toContain('GET /v1/balance');
    expect(await page.locator('main pre').count()).toBe(0);
    await page.screenshot({ path: join(shots, '01-held-short.png'), fullPage: true });

    // 2. The balance is topped up: approve is enabled, and approving lands back on the page.
    expect((await api('POST', '/v1/test_helpers/balance/fund', server.demoKey, { amount: 2000 })).status).toBe(200);
    await page.reload();
    expect(await page.locator('#shortfall').count()).toBe(0);
    expect(await approve.isEnabled()).toBe(true);
    await page.screenshot({ path: join(shots, '02-funded.png'), fullPage: true });
    await approve.click();
    await page.waitForURL(`**/dashboard/confirmations/${confirmationId}?done=approved`);
    expect(await page.locator('#confirmation-status').innerText()).toBe('executed');
    expect(await page.locator('#confirmation-decided-by').innerText()).toContain(finance.id);
    expect(await approve.isDisabled()).toBe(true);
    const payoutId = await page.locator('#confirmation-result li.linked').getAttribute('data-object-id');
    expect(payoutId).toMatch(/^po_\w+$/);
    await page.screenshot({ path: join(shots, '03-approved.png'), fullPage: true });

    // 3. The settlement worker pays it on chain: its tx hash appears on the page.
    await expect
      .poll(
        async () => {
          await page.reload();
          return (await page.locator('#confirmation-result .tx-hash').count()) > 0
            ? await page.locator('#confirmation-result .tx-hash').innerText()
            : '';
        },
        { timeout: 60_000, interval: 1000, message: 'the approved payout never showed a tx hash' },
      )
      .toMatch(/^0x[0-9a-f]{64}$/);
    const txHash = await page.locator('#confirmation-result .tx-hash').innerText();
    expect(await page.locator('#confirmation-result li.linked').innerText()).toContain('2,500.000000 USDC');

    // 4. The Actions screen: the action's one row, with what moved, who approved and the tx hash.
    await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Actions' }).click();
    await page.getByLabel('Action').selectOption('create_payout');
    await page.getByLabel('Channel').selectOption('agent');
    await page.getByRole('button', { name: 'Filter' }).click();
    const row = page.locator(`tr[data-action-id="${actionId}"]`);
    expect(await row.getAttribute('data-status')).toBe('executed');
    expect(await row.locator('.amount').innerText()).toBe('2,500.00 USDC');
    expect(await row.locator('.recipient').innerText()).toBe(RECIPIENT);
    expect(await row.locator('.decided-by .key-ref').getAttribute('title')).toBe(finance.id);
    expect(await row.locator('.tx-hash').innerText()).toBe(txHash);
    const viaApi = await api('GET', `/v1/payouts/${payoutId}`, server.demoKey);
    expect(viaApi.json).toMatchObject({ amount: 2500, to_address: RECIPIENT, memo: 'March invoice', tx_hash: txHash });
    await page.screenshot({ path: join(shots, '04-actions.png'), fullPage: true });

    expect(consoleErrors).toEqual([]);
    await context.close();
  }, 150_000);
});
