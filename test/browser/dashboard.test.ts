import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { artifactsDir, browserSkipReason, launchBrowser } from '../support/browser.ts';
import { callApi, type RunningServer, startServer } from '../support/server.ts';

/**
 * The dashboard end to end, in Debian's chromium against the real `plainpay serve` (embedded
 * database, devnet and settlement worker):
 *
 * - Acceptance 3: the agent is told to pay out 5000 USDC, the policy holds it; a finance user
 *   signs in with a separate approvals key, finds the held action, approves it, sees it executed
 *   and then settled with its tx hash, and downloads the actions CSV that contains it.
 * - Acceptance 5: a key created on the developer screen works on the API; revoked there, it gets 401.
 *
 * Screenshots of each step go to test-artifacts/dashboard/.
 */
const skip = browserSkipReason();
if (skip) console.warn(skip);

const RECIPIENT = '0x00000000000000000000000000000000000da5b0';
const DESKTOP = { width: 1280, height: 900 };

describe.skipIf(skip)('dashboard in a browser', () => {
  let server: RunningServer;
  let browser: Browser;
  const shots = artifactsDir('dashboard');

  beforeAll(async () => {
    [server, browser] = await Promise.all([startServer(), launchBrowser()]);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  const api = (method: string, path: string, key: string, body?: unknown) => callApi(server, method, path, key, body);

  async function signIn(page: Page, key: string, path = '/dashboard'): Promise<void> {
    await page.goto(`${server.url}${path}`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Sign in to the dashboard');
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForSelector('#signed-in-key');
  }

  function watchConsole(page: Page): string[] {
    const errors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    page.on('pageerror', (e) => errors.push(e.message));
    return errors;
  }

  it('acceptance 3: a held agent action is approved with an approvals key, executes, settles with a tx hash, and is in the CSV', async () => {
    // The set-up a developer would do through the API.
    const funded = await api('POST', '/v1/test_helpers/balance/fund', server.demoKey, { amount: 20000 });
    expect(funded.status, JSON.stringify(funded.json)).toBe(200);
    // The agent runs on a key of its own; the finance key below is its sibling, not its child, so it may approve.
    const agent = await api('POST', '/keys', server.demoKey, {
      name: 'ops agent',
      scopes: ['agent', 'payouts:write', 'payments:read'],
    });
    expect(agent.status).toBe(200);
    const run = await api('POST', '/agent/settle', agent.json.secret, {
      instruction: `pay out 5000 USDC to ${RECIPIENT}`,
    });
    expect(run.status, JSON.stringify(run.json)).toBe(200);
    expect(run.json.status).toBe('confirmation_required');
    const runId: string = run.json.run_id;
    const confirmationId: string = run.json.confirmations[0].id;
    const actionId: string = run.json.actions.find((a: { status: string }) => a.status === 'held').id;
    expect(run.json.confirmations[0].approve_url).toBe(`${server.url}/dashboard/confirmations/${confirmationId}`);
    const finance = await api('POST', '/keys', server.demoKey, {
      name: 'finance approvals',
      scopes: ['approvals', 'agent', 'payments:read'],
    });
    expect(finance.status).toBe(200);
    const approvalsKey: string = finance.json.secret;

    const context = await browser.newContext({ viewport: DESKTOP, acceptDownloads: true });
    const page = await context.newPage();
    const consoleErrors = watchConsole(page);

    // 1. Sign in with the approvals key: the overview counts one held action.
    await signIn(page, approvalsKey);
    expect(await page.locator('#pending-count').textContent()).toBe('1');
    await page.screenshot({ path: join(shots, '01-overview.png'), fullPage: true });

    // 2. Find the held action among the actions, then open its confirmation from Approvals.
    const nav = page.getByRole('navigation', { name: 'Dashboard' });
    await nav.getByRole('link', { name: 'Actions' }).click();
    await page.getByLabel('Status').selectOption('held');
    await page.getByRole('button', { name: 'Filter' }).click();
    const heldRow = page.locator(`tr[data-action-id="${actionId}"]`);
    expect(await heldRow.getAttribute('data-status')).toBe('held');
    await page.screenshot({ path: join(shots, '02-held-action.png'), fullPage: true });
    await nav.getByRole('link', { name: 'Approvals' }).click();
    await page.locator(`tr[data-confirmation-id="${confirmationId}"] a`).click();
    await page.waitForURL(`**/dashboard/confirmations/${confirmationId}`);
    expect(await page.locator('#confirmation-summary').textContent()).toContain('Pay out 5,000.000000 USDC');
    expect(await page.locator('#confirmation-status').textContent()).toBe('pending');
    await page.screenshot({ path: join(shots, '03-confirmation.png'), fullPage: true });

    // 3. Approve: it runs and the page says executed, decided by the approvals key.
    await page.getByRole('button', { name: 'Approve and run' }).click();
    await page.waitForURL(`**/dashboard/confirmations/${confirmationId}?done=approved`);
    expect(await page.locator('#confirmation-status').textContent()).toBe('executed');
    expect(await page.locator('#confirmation-decided-by').textContent()).toContain(finance.json.id);
    const payoutId = await page.locator('#confirmation-result li.linked').getAttribute('data-object-id');
    expect(payoutId).toMatch(/^po_\w+$/);
    await page.screenshot({ path: join(shots, '04-approved.png'), fullPage: true });

    // 4. The settlement worker confirms the payout on chain: the tx hash appears on reload.
    await expect
      .poll(
        async () => {
          await page.reload();
          return (
            (await page
              .locator('#confirmation-result .tx-hash')
              .textContent({ timeout: 1000 })
              .catch(() => null)) ?? ''
          );
        },
        {
          timeout: 60_000,
          interval: 1000,
          message:
            'the payout never showed a tx hash: the settlement worker must settle payouts (payoutTransferHandler in TRANSFER_HANDLERS)',
        },
      )
      .toMatch(/^0x[0-9a-f]{64}$/);
    const txHash = await page.locator('#confirmation-result .tx-hash').textContent();
    await page.screenshot({ path: join(shots, '05-settled.png'), fullPage: true });

    // The run shows the instruction, the step, its decision and reasons, the approver and the tx hash.
    await page.goto(`${server.url}/dashboard/runs/${runId}`);
    expect(await page.locator('#run-instruction').textContent()).toBe(`pay out 5000 USDC to ${RECIPIENT}`);
    const step = page.locator(`li.step[data-action-id="${actionId}"]`);
    expect(await step.getAttribute('data-status')).toBe('executed');
    expect(await step.locator('.reasons').textContent()).toContain('confirm_above');
    expect(await step.locator('.approver').textContent()).toContain(finance.json.id);
    expect(await step.locator('.tx-hash').textContent()).toBe(txHash);
    await page.screenshot({ path: join(shots, '06-run.png'), fullPage: true });

    // The payout page too, and the API agrees.
    await page.goto(`${server.url}/dashboard/payouts/${payoutId}`);
    expect(await page.locator('#payout-status').textContent()).toBe('settled');
    expect(await page.locator('#payout-tx-hash').textContent()).toBe(txHash);
    const viaApi = await api('GET', `/v1/payouts/${payoutId}`, server.demoKey);
    expect(viaApi.json.tx_hash).toBe(txHash);
    await page.screenshot({ path: join(shots, '07-payout.png'), fullPage: true });

    // 5. Export CSV from the actions page: a download that contains the action, now executed.
    await page.goto(`${server.url}/dashboard/actions`);
    const [download] = await Promise.all([page.waitForEvent('download'), page.locator('#export-csv').click()]);
    expect(download.suggestedFilename()).toMatch(/^agent-actions-test-\d{4}-\d{2}-\d{2}\.csv$/);
    const csvPath = join(shots, 'agent-actions.csv');
    await download.saveAs(csvPath);
    const csv = readFileSync(csvPath, 'utf8');
    const line = csv.split('\r\n').find((l) => l.startsWith(`${actionId},`));
    expect(line).toBeDefined();
    expect(line).toContain(',executed,');
    expect(line).toContain(confirmationId);
    expect(line).toContain(finance.json.id);

    expect(consoleErrors).toEqual([]);
    await context.close();
  }, 120_000);

  it('acceptance 5: a key created on the developer screen works on the API; revoked there, it gets 401', async () => {
    const context = await browser.newContext({ viewport: DESKTOP });
    const page = await context.newPage();
    const consoleErrors = watchConsole(page);
    await signIn(page, server.demoKey, '/dashboard/developers');
    expect(new URL(page.url()).pathname).toBe('/dashboard/developers');
    // No secret on the screen.
    expect(await page.content()).not.toMatch(/sk_test_[0-9A-Za-z]{38}/);

    await page.getByLabel('Name').fill('billing server');
    await page.getByRole('checkbox', { name: 'payments:read' }).check();
    await page.getByRole('checkbox', { name: 'payments:write' }).check();
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = (await page.locator('#new-key-secret').textContent())!;
    const keyId = (await page.locator('#new-key-id').textContent())!;
    expect(secret).toMatch(/^sk_test_[0-9A-Za-z]{38}$/);
    await page.screenshot({ path: join(shots, '10-key-created.png'), fullPage: true });

    const ping = await fetch(`${server.url}/v1/ping`, { headers: { authorization: `Bearer ${secret}` } });
    expect(ping.status).toBe(200);
    const payments = await fetch(`${server.url}/v1/payments`, { headers: { authorization: `Bearer ${secret}` } });
    expect(payments.status).toBe(200);

    // Shown once: back on the screen, only its redacted form.
    await page.getByRole('link', { name: 'Back to the developer screen' }).click();
    expect(await page.content()).not.toContain(secret);
    await page.locator(`tr[data-key-id="${keyId}"] a`, { hasText: 'Manage' }).click();
    await page.screenshot({ path: join(shots, '11-key-manage.png'), fullPage: true });
    await page.getByRole('button', { name: 'Revoke key' }).click();
    await page.waitForURL('**/dashboard/developers?done=revoked');
    expect(await page.locator(`tr[data-key-id="${keyId}"]`).textContent()).toContain('revoked');
    await page.screenshot({ path: join(shots, '12-key-revoked.png'), fullPage: true });

    const after = await fetch(`${server.url}/v1/ping`, { headers: { authorization: `Bearer ${secret}` } });
    expect(after.status).toBe(401);
    expect(consoleErrors).toEqual([]);
    await context.close();
  }, 60_000);
});
