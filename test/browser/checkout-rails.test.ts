import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeDaraja, startFakeDaraja } from '../fakes/daraja.ts';
import { type FakePaystack, startFakePaystack } from '../fakes/paystack.ts';
import { artifactsDir, browserSkipReason, launchBrowser } from '../support/browser.ts';
import { MPESA_APP, PAYSTACK_TEST_KEY } from '../support/rails.ts';
import { CLI, childEnv, type RunningServer, startServer } from '../support/server.ts';
import { eventually, startReceiver, type TestReceiver } from '../support/webhooks.ts';

/**
 * A payer on a phone pays through Paystack and M-Pesa against the real `plainpay serve` (embedded
 * database, devnet, workers), with the providers played by their fakes (test/fakes/): success,
 * decline and abandonment on Paystack's page; success, a cancel and a timeout on the M-Pesa phone.
 * A success settles on the devnet and payment.settled reaches the merchant. Screenshots go to
 * test-artifacts/rails/.
 */
const run = promisify(execFile);
const skip = browserSkipReason();
if (skip) console.warn(skip);

const PHONE = { width: 360, height: 740 };
const PAYOUT_ADDRESS = '0x00000000000000000000000000000000000b0b0b';

describe.skipIf(skip)('Paystack and M-Pesa on the checkout page, in a browser', () => {
  let server: RunningServer;
  let browser: Browser;
  let paystack: FakePaystack;
  let daraja: FakeDaraja;
  let merchant: TestReceiver;
  const shots = artifactsDir('rails');

  beforeAll(async () => {
    paystack = await startFakePaystack({
      integrations: [{ secretKey: PAYSTACK_TEST_KEY, currencies: ['NGN', 'GHS', 'KES', 'ZAR'] }],
    });
    daraja = await startFakeDaraja({
      apps: [
        {
          consumerKey: MPESA_APP.consumer_key,
          consumerSecret: MPESA_APP.consumer_secret,
          shortcode: MPESA_APP.shortcode,
          passkey: MPESA_APP.passkey,
        },
      ],
    });
    merchant = await startReceiver();
    [server, browser] = await Promise.all([
      startServer({
        PAYSTACK_BASE_URL: paystack.baseUrl,
        PAYSTACK_CHECKOUT_ORIGIN: paystack.checkoutOrigin,
        MPESA_SANDBOX_BASE_URL: daraja.baseUrl,
        WEBHOOK_ALLOW_PRIVATE: 'true',
      }),
      launchBrowser(),
    ]);
    // What the operator sets on Paystack's dashboard, and sets with the CLI: `plainpay collection
    // set` beside the running serve, which holds the embedded database (the command runs inside it).
    paystack.setWebhookUrl(PAYSTACK_TEST_KEY, `${server.url}/hooks/paystack`);
    const secrets = mkdtempSync(join(tmpdir(), 'plainpay-collection-'));
    for (const [rail, body] of [
      ['paystack', { secret_key: PAYSTACK_TEST_KEY }],
      ['mpesa', MPESA_APP],
    ] as const) {
      writeFileSync(join(secrets, `${rail}.json`), JSON.stringify(body));
      // A relative path: the CLI makes it absolute before the command runs inside serve.
      const { stdout } = await run(
        process.execPath,
        [CLI, 'collection', 'set', rail, '--credentials', `${rail}.json`],
        {
          cwd: secrets,
          env: childEnv(server.dataDir),
        },
      );
      expect(stdout).toMatch(new RegExp(`^Set col_\\w+  ${rail}  test  every account  operator  collecting`));
    }
    rmSync(secrets, { recursive: true, force: true });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await paystack?.close();
    await daraja?.close();
    await merchant?.close();
  });

  async function createPayment(body: Record<string, unknown>): Promise<{ id: string; checkout_url: string }> {
    const res = await fetch(`${server.url}/v1/payments`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.demoKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_url: 'https://shop.example/thanks', merchant_name: 'Wanjiku Fabrics', ...body }),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as { id: string; checkout_url: string };
  }

  const statusOf = async (id: string): Promise<string> =>
    ((await (await fetch(`${server.url}/checkout/${id}`)).json()) as { status: string }).status;

  async function open(url: string): Promise<Page> {
    const context = await browser.newContext({ viewport: PHONE });
    const page = await context.newPage();
    await page.goto(url);
    return page;
  }

  const settledEventFor = (id: string) =>
    eventually(
      async () => merchant.received.find((r) => r.body.includes('"payment.settled"') && r.body.includes(id)),
      60_000,
    );

  it('Paystack: pays on Paystack’s page, comes back, settles on-chain and payment.settled reaches the merchant', async () => {
    const payment = await createPayment({
      amount: 7500,
      currency: 'NGN',
      webhook_url: merchant.url,
      payout_address: PAYOUT_ADDRESS,
    });
    const page = await open(payment.checkout_url);
    await page.getByLabel('Email for your receipt').fill('ada@example.com');
    await page.screenshot({ path: join(shots, '01-paystack-form.png'), fullPage: true });
    await page.getByRole('button', { name: 'Pay ₦7,500.00 with Paystack' }).click();
    await page.waitForURL(`${paystack.checkoutOrigin}/**`);
    await page.getByRole('button', { name: 'Pay', exact: true }).click();
    await page.waitForURL(`${server.checkoutUrl}/pay/${payment.id}**`);
    await page.getByRole('heading', { name: /Payment (received|complete)/ }).waitFor();
    await page.screenshot({ path: join(shots, '02-paystack-paid.png'), fullPage: true });
    const settled = JSON.parse((await settledEventFor(payment.id)).body);
    expect(settled.data).toMatchObject({ object: { id: payment.id, status: 'settled' } });
    expect(settled.data.object.settlement.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
    await page.context().close();
  });

  it('Paystack: a declined card and a cancelled page end back on a payable page, nothing paid', async () => {
    for (const [button, notice] of [
      ['Decline', 'The payment was declined. No money was taken.'],
      ['Cancel', 'The payment was not completed. No money was taken.'],
    ] as const) {
      const payment = await createPayment({ amount: 1500, currency: 'GHS' });
      const page = await open(payment.checkout_url);
      await page.getByLabel('Email for your receipt').fill('kofi@example.com');
      await page.getByRole('button', { name: 'Pay GH₵1,500.00 with Paystack' }).click();
      await page.waitForURL(`${paystack.checkoutOrigin}/**`);
      await page.getByRole('button', { name: button, exact: true }).click();
      await page.waitForURL(`${server.checkoutUrl}/pay/${payment.id}**`);
      await page.getByText(notice).waitFor();
      expect(await page.getByRole('button', { name: 'Pay GH₵1,500.00 with Paystack' }).isVisible()).toBe(true);
      expect(await statusOf(payment.id)).toBe('pending');
      await page.screenshot({ path: join(shots, `03-paystack-${button.toLowerCase()}.png`), fullPage: true });
      await page.context().close();
    }
  });

  it('M-Pesa: "check your phone", the PIN is entered, the page follows it live to settled', async () => {
    const payment = await createPayment({
      amount: 1000,
      currency: 'KES',
      webhook_url: merchant.url,
      payout_address: PAYOUT_ADDRESS,
    });
    const page = await open(payment.checkout_url);
    await page.getByLabel('M-Pesa phone number').fill('0712 345 670');
    await page.getByRole('button', { name: 'Pay KSh 1,000.00 with M-Pesa' }).click();
    await page.getByRole('heading', { name: 'Check your phone' }).waitFor();
    await page.screenshot({ path: join(shots, '04-mpesa-check-phone.png'), fullPage: true });
    const push = await daraja.waitForPush('254712345670');
    expect(push.amount).toBe(1000);
    await daraja.phone.accept(push.checkoutRequestId);
    // No reload by the payer: the page's script follows the status.
    await page.getByRole('heading', { name: /Payment (received|complete)/ }).waitFor({ timeout: 30_000 });
    await page.screenshot({ path: join(shots, '05-mpesa-paid.png'), fullPage: true });
    const settled = JSON.parse((await settledEventFor(payment.id)).body);
    expect(settled.data.object.status).toBe('settled');
    await page.context().close();
  });

  it('M-Pesa: a cancel on the phone and a timeout each bring the page back to payable', async () => {
    for (const [action, notice, phone] of [
      ['cancel', 'The M-Pesa request was cancelled on your phone. No money was taken.', '254712345671'],
      ['timeout', 'Your phone could not be reached in time. No money was taken.', '254712345672'],
    ] as const) {
      const payment = await createPayment({ amount: 250, currency: 'KES' });
      const page = await open(payment.checkout_url);
      await page.getByLabel('M-Pesa phone number').fill(`0${phone.slice(3)}`);
      await page.getByRole('button', { name: 'Pay KSh 250.00 with M-Pesa' }).click();
      await page.getByRole('heading', { name: 'Check your phone' }).waitFor();
      const push = await daraja.waitForPush(phone);
      await daraja.phone[action](push.checkoutRequestId);
      await page.getByText(notice).waitFor({ timeout: 30_000 });
      expect(await statusOf(payment.id)).toBe('pending');
      await page.screenshot({ path: join(shots, `06-mpesa-${action}.png`), fullPage: true });
      await page.context().close();
    }
  });
});
