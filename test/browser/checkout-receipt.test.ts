import { createServer } from 'node:net';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { artifactsDir, browserSkipReason, launchBrowser } from '../support/browser.ts';
import { createPayment } from '../support/payments.ts';
import { operatorCollects, PAYSTACK_TEST_KEY, type RailsWorld, railsWorld } from '../support/rails.ts';

/**
 * The payer's side of issue 35 in a real browser (docs/checkout.md): the paid page gives a receipt
 * (merchant, amount, time, references), and a payment provider that cannot be reached is said in
 * plain words, with what to do next, without marking the email the payer typed as wrong.
 */
const skip = browserSkipReason();
if (skip) console.warn(skip);

/** An address nothing listens on: Paystack "down", so a call to it fails as a network outage does. */
async function deadUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

describe.skipIf(skip)('the payer’s receipt and a provider outage, in a browser', () => {
  let w: RailsWorld;
  let browser: Browser;
  let context: BrowserContext;
  const shots = artifactsDir('checkout');

  beforeAll(async () => {
    const down = await deadUrl();
    w = await railsWorld({ merchantName: 'Ada Stores', paystackUrl: async () => down });
    await operatorCollects(w.runtime, 'paystack', { secret_key: PAYSTACK_TEST_KEY });
    browser = await launchBrowser();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
  });

  afterEach(async () => {
    await context?.close();
  });

  async function open(url: string): Promise<Page> {
    context = await browser.newContext({ viewport: { width: 360, height: 740 } });
    const page = await context.newPage();
    await page.goto(url);
    return page;
  }

  it('the paid page shows a receipt: merchant, amount, time and the references to quote', async () => {
    const payment = await createPayment(w.api, w.merchant.apiKey, {
      amount: 7500,
      currency: 'NGN',
      reference: 'order-7781',
      redirect_url: 'https://shop.example/thanks',
    });
    const page = await open(payment.checkout_url);
    await page.getByRole('button', { name: 'Pay ₦7,500.00', exact: true }).click();
    const receipt = page.getByRole('region', { name: 'Receipt' });
    await receipt.waitFor();
    await page.screenshot({ path: join(shots, '20-receipt.png'), fullPage: true });
    const text = (await receipt.textContent()) ?? '';
    expect(text).toContain('Ada Stores');
    expect(text).toContain('₦7,500.00 NGN');
    expect(await page.locator('#receipt-reference').textContent()).toBe('order-7781');
    expect(await page.locator('#receipt-payment').textContent()).toBe(payment.id);
    const paidAt = await receipt.locator('time').getAttribute('datetime');
    expect(Math.abs(Date.parse(paidAt!) - w.runtime.clock.now().getTime())).toBeLessThan(60_000);
    expect(text).toMatch(/Paid on\s*\d{1,2} \w{3} \d{4}, \d{2}:\d{2} UTC/);
  });

  it('Paystack unreachable: plain words and what to do next, the email not marked wrong', async () => {
    const payment = await createPayment(w.api, w.merchant.apiKey, { amount: 7500, currency: 'NGN' });
    const page = await open(payment.checkout_url);
    await page.getByLabel('Email for your receipt').fill('ada@example.com');
    await page.getByRole('button', { name: 'Pay ₦7,500.00 with Paystack' }).click();
    const message = page.locator('#paystack-error');
    await message.waitFor();
    await page.screenshot({ path: join(shots, '21-provider-unreachable.png'), fullPage: true });
    expect(await message.getAttribute('role')).toBe('alert');
    expect(await message.textContent()).toBe(
      "We couldn't reach the payment provider. Nothing was charged — try again in a minute or choose another method.",
    );
    const body = (await page.locator('main').textContent()) ?? '';
    expect(body).not.toMatch(/did not answer|fetch failed|paystack\b/);
    const email = page.getByLabel('Email for your receipt');
    expect(await email.getAttribute('aria-invalid')).toBeNull();
    // What the payer typed is kept, so trying again is one press.
    expect(await email.inputValue()).toBe('ada@example.com');
    // The other way to pay is still there.
    expect(await page.getByRole('button', { name: 'Pay ₦7,500.00', exact: true }).isVisible()).toBe(true);
  });
});
