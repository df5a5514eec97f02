import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildCheckoutApp } from '../../src/checkout/app.ts';
import { artifactsDir, browserSkipReason, launchBrowser } from '../support/browser.ts';
import { bearer, testAccount, testApp, testRuntime, type TestAccount, type TestRuntime } from '../support/harness.ts';
import { createPayment } from '../support/payments.ts';
import { freePort } from '../support/server.ts';

/**
 * Expired and declined sessions in a real browser. The checkout host runs in-process on a real
 * port with the harness's manual clock, so a session can expire without waiting a minute.
 */
const skip = browserSkipReason();
if (skip) console.warn(skip);

describe.skipIf(skip)('checkout outcomes in a browser', () => {
  let runtime: TestRuntime;
  let api: FastifyInstance;
  let checkout: FastifyInstance;
  let merchant: TestAccount;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const shots = artifactsDir('checkout');

  beforeAll(async () => {
    const port = await freePort();
    runtime = await testRuntime({ CHECKOUT_PORT: String(port), CHECKOUT_BASE_URL: `http://127.0.0.1:${port}` });
    api = await testApp(runtime);
    checkout = await buildCheckoutApp(runtime);
    await checkout.listen({ port, host: '127.0.0.1' });
    merchant = await testAccount(runtime, { name: 'Kofi Electronics' });
    browser = await launchBrowser();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await checkout?.close();
  });

  const openPage = async (): Promise<Page> => {
    context = await browser.newContext({ viewport: { width: 360, height: 740 } });
    page = await context.newPage();
    return page;
  };
  afterEach(async () => {
    await context?.close();
  });

  const statusOf = async (id: string): Promise<string> =>
    (await api.inject({ method: 'GET', url: `/v1/payments/${id}`, headers: bearer(merchant.apiKey) })).json().status;

  it('an expired session shows an expired page and no pay button', async () => {
    const payment = await createPayment(api, merchant.apiKey, {
      currency: 'GHS',
      amount: 12.5,
      ttl_minutes: 1,
      redirect_url: 'https://shop.example/cart?id=7',
    });
    runtime.clock.advance(61_000);
    await openPage();
    await page.goto(payment.checkout_url);
    expect(await page.getByRole('heading', { level: 2 }).textContent()).toBe('This checkout session has expired');
    expect(await page.getByRole('button').count()).toBe(0);
    expect(await page.locator('form').count()).toBe(0);
    expect(await page.locator('#amount').textContent()).toBe('GH₵12.50');
    const back = page.getByRole('link', { name: 'Return to Kofi Electronics' });
    expect(await back.getAttribute('href')).toBe(
      `https://shop.example/cart?id=7&payment_id=${payment.id}&status=expired`,
    );
    await page.screenshot({ path: join(shots, '10-expired.png'), fullPage: true });
  });

  it('an open page notices when its session expires and shows the expired page', async () => {
    const payment = await createPayment(api, merchant.apiKey, { currency: 'KES', amount: 1000, ttl_minutes: 1 });
    await openPage();
    await page.goto(payment.checkout_url);
    expect(await page.locator('#amount').textContent()).toBe('KSh 1,000.00');
    expect(await page.getByRole('button', { name: 'Pay KSh 1,000.00' }).isVisible()).toBe(true);
    runtime.clock.advance(61_000);
    // The page follows the status stream and lets the server render the new state. No event says
    // "expired" here (no expiry worker runs), so the stream finds it on its periodic re-read (15 s).
    await expect
      .poll(() => page.locator('#state-heading').textContent(), { timeout: 45_000 })
      .toBe('This checkout session has expired');
    expect(await page.getByRole('button').count()).toBe(0);
  }, 60_000);

  it('a declined payment says so, keeps the session open, and can be retried', async () => {
    const payment = await createPayment(api, merchant.apiKey, { merchant_name: 'Kofi Electronics', amount: 250000 });
    await openPage();
    await page.goto(payment.checkout_url);
    await page.getByRole('button', { name: 'Simulate a declined payment' }).click();
    await page.waitForURL(/\?attempt=att_\w+$/);
    const alert = page.getByRole('alert');
    expect(await alert.textContent()).toBe('The payment was declined. No money was taken. You can try again.');
    expect(await statusOf(payment.id)).toBe('pending');
    const retry = page.getByRole('button', { name: 'Pay ₦250,000.00' });
    expect(await retry.isEnabled()).toBe(true);
    await page.screenshot({ path: join(shots, '11-declined.png'), fullPage: true });

    await retry.click();
    await expect.poll(() => page.locator('#state-heading').textContent()).toBe('Payment received');
    expect(await page.getByRole('alert').count()).toBe(0);
    expect(await statusOf(payment.id)).toBe('paid');
    await page.screenshot({ path: join(shots, '12-retried-and-paid.png'), fullPage: true });
  }, 30_000);

  it('works without JavaScript: the form pays and the page offers a plain link back', async () => {
    const payment = await createPayment(api, merchant.apiKey, { redirect_url: 'https://shop.example/done' });
    context = await browser.newContext({ viewport: { width: 360, height: 740 }, javaScriptEnabled: false });
    page = await context.newPage();
    await page.goto(payment.checkout_url);
    await page.getByRole('button', { name: 'Pay ₦5,000.00' }).click();
    await page.waitForURL(/\?attempt=att_\w+$/);
    expect(await page.locator('#state-heading').textContent()).toBe('Payment received');
    expect(await page.getByRole('link', { name: 'Return to Kofi Electronics' }).getAttribute('href')).toBe(
      `https://shop.example/done?payment_id=${payment.id}&status=paid`,
    );
    expect(await statusOf(payment.id)).toBe('paid');
    await page.screenshot({ path: join(shots, '13-paid-without-javascript.png'), fullPage: true });
  });
});
