import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCheckoutApp, checkoutCsp } from '../src/checkout/app.ts';
import { bearer, testAccount, testApp, testRuntime, type TestAccount, type TestRuntime } from './support/harness.ts';
import { createPayment } from './support/payments.ts';

let runtime: TestRuntime;
let api: FastifyInstance;
let checkout: FastifyInstance;
let merchant: TestAccount;

const ORIGIN = 'http://localhost:3001'; // the default CHECKOUT_BASE_URL of the test config

beforeAll(async () => {
  runtime = await testRuntime();
  api = await testApp(runtime);
  checkout = await buildCheckoutApp(runtime);
  merchant = await testAccount(runtime, { name: 'Account Name Ltd' });
});
afterAll(() => checkout.close());

const page = (id: string, query = '') => checkout.inject({ method: 'GET', url: `/pay/${id}${query}` });
const status = (id: string) => checkout.inject({ method: 'GET', url: `/pay/${id}/status` });
const pay = (id: string, outcome: string, headers: Record<string, string> = { 'sec-fetch-site': 'same-origin' }) =>
  checkout.inject({
    method: 'POST',
    url: `/pay/${id}`,
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: `outcome=${outcome}`,
  });
const apiStatus = async (id: string): Promise<string> =>
  (await api.inject({ method: 'GET', url: `/v1/payments/${id}`, headers: bearer(merchant.apiKey) })).json().status;

/** The page without its tags: what a reader sees, roughly. */
function text(html: string): string {
  return html
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

describe('the checkout page', () => {
  it('shows merchant, description, the amount in local currency, time left and the sandbox buttons', async () => {
    const p = await createPayment(api, merchant.apiKey, {
      merchant_name: 'Mama Put',
      description: 'Two plates of jollof',
    });
    const res = await page(p.id);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    const body = res.body;
    expect(body).toMatch(/^<!doctype html>\n<html lang="en">/);
    expect(body).toContain('<span id="amount">₦5,000.00</span>');
    expect(body).toContain('<strong id="merchant-name">Mama Put</strong>');
    expect(body).toContain('Two plates of jollof');
    // The runtime's clock runs on in real time, so a second may have passed.
    expect(body).toMatch(/<span id="time-left" data-seconds="(3600|3599)">(60:00|59:59)<\/span>/);
    expect(body).toContain('Test mode');
    expect(body).toMatch(/<form id="pay-form" class="pay-form" method="post" action="\/pay\/pay_\w+">/);
    expect(body).toContain('name="outcome" value="succeeded"');
    expect(body).toContain('name="outcome" value="declined"');
    expect(text(body)).toContain('Pay ₦5,000.00');
    expect(body).toContain('role="status" aria-live="polite"');
    // No inline script or style, and nothing from another origin.
    expect(body).not.toMatch(/<script>|<style|\sstyle="|\son\w+="/);
    expect(body).not.toMatch(/(src|href)="(https?:)?\/\//);
  });

  it.each([
    ['GHS', 12.5, 'GH₵12.50'],
    ['KES', 1000, 'KSh 1,000.00'],
    ['UGX', 25000, 'USh 25,000'],
  ])('formats %s %s as %s', async (currency, amount, shown) => {
    const p = await createPayment(api, merchant.apiKey, { currency, amount });
    expect((await page(p.id)).body).toContain(`<span id="amount">${shown}</span>`);
  });

  it('falls back to the account name when the payment has no merchant_name', async () => {
    const p = await createPayment(api, merchant.apiKey);
    expect((await page(p.id)).body).toContain('<strong id="merchant-name">Account Name Ltd</strong>');
  });

  it('escapes merchant-controlled text everywhere it appears', async () => {
    const evil = `<script>alert(1)</script>"'&`;
    const p = await createPayment(api, merchant.apiKey, {
      merchant_name: evil,
      description: `"><img src=x onerror=alert(2)>`,
    });
    const body = (await page(p.id)).body;
    expect(body).not.toContain('<script>alert(1)');
    expect(body).not.toContain('<img src=x');
    expect(body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;');
    expect(body).toContain('&quot;&gt;&lt;img src=x onerror=alert(2)&gt;');
    // The title carries it too, escaped.
    expect(body).toMatch(/<title>Pay ₦5,000\.00 to &lt;script&gt;/);
  });

  it('sends a strict CSP and the other security headers, and is never cached', async () => {
    const p = await createPayment(api, merchant.apiKey);
    const res = await page(p.id);
    const CHECKOUT_CSP = checkoutCsp(runtime.config);
    expect(res.headers['content-security-policy']).toBe(CHECKOUT_CSP);
    expect(CHECKOUT_CSP).toContain("default-src 'none'");
    expect(CHECKOUT_CSP).toContain("script-src 'self'");
    expect(CHECKOUT_CSP).not.toContain('unsafe');
    expect(CHECKOUT_CSP).toContain("frame-ancestors 'none'");
    // The forms post here, and the Paystack form's answer may send the payer to Paystack's pages only.
    expect(CHECKOUT_CSP).toContain("form-action 'self' https://checkout.paystack.com;");
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['referrer-policy']).toBe('same-origin');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('serves its stylesheet and script from this host, content-hashed and cacheable', async () => {
    const p = await createPayment(api, merchant.apiKey);
    const body = (await page(p.id)).body;
    const css = /href="(\/assets\/checkout\.[0-9a-f]{10}\.css)"/.exec(body)?.[1];
    const js = /src="(\/assets\/checkout\.[0-9a-f]{10}\.js)"/.exec(body)?.[1];
    expect(css && js).toBeTruthy();
    const cssRes = await checkout.inject({ method: 'GET', url: css! });
    expect(cssRes.statusCode).toBe(200);
    expect(cssRes.headers['content-type']).toBe('text/css; charset=utf-8');
    expect(cssRes.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    const jsRes = await checkout.inject({ method: 'GET', url: js! });
    expect(jsRes.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(jsRes.headers['content-security-policy']).toBe(checkoutCsp(runtime.config));
    // The budget (30 KB for the whole page) with room to spare, before any compression.
    expect(Buffer.byteLength(body) + cssRes.rawPayload.length + jsRes.rawPayload.length).toBeLessThan(20_000);
  });
});

describe('paying without JavaScript (form post)', () => {
  it('a succeeded payment moves the payment to paid, as the test helper does, and the page says so', async () => {
    const p = await createPayment(api, merchant.apiKey, {
      merchant_name: 'Mama Put',
      redirect_url: 'https://shop.example/thanks?order=42&note=a%20b#done',
    });
    const res = await pay(p.id, 'succeeded');
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toMatch(new RegExp(`^/pay/${p.id}\\?attempt=att_\\w{22}$`));
    expect(await apiStatus(p.id)).toBe('paid');
    const events = await runtime.db.selectFrom('events').select('type').where('object_id', '=', p.id).execute();
    expect(events.map((e) => e.type)).toEqual(['payment.paid']);

    const after = await checkout.inject({ method: 'GET', url: res.headers.location as string });
    expect(after.statusCode).toBe(200);
    expect(after.body).toContain('<h2 id="state-heading">Payment received</h2>');
    expect(after.body).toContain('data-auto-return="1"');
    expect(after.body).not.toContain('<form');
    // A plain link back, with the merchant's query kept byte for byte and ours appended.
    expect(after.body).toContain(
      `href="https://shop.example/thanks?order=42&amp;note=a%20b&amp;payment_id=${p.id}&amp;status=paid#done"`,
    );
    expect(text(after.body)).toContain('Return to Mama Put');
  });

  it('a declined payment leaves it pending, says so, and can be retried', async () => {
    const p = await createPayment(api, merchant.apiKey);
    const declined = await pay(p.id, 'declined');
    expect(declined.statusCode).toBe(303);
    expect(await apiStatus(p.id)).toBe('pending');
    const shown = await checkout.inject({ method: 'GET', url: declined.headers.location as string });
    expect(shown.body).toContain('role="alert"');
    expect(text(shown.body)).toContain('The payment was declined. No money was taken. You can try again.');
    expect(shown.body).toContain('value="succeeded"');

    const retried = await pay(p.id, 'succeeded');
    expect(retried.statusCode).toBe(303);
    expect(await apiStatus(p.id)).toBe('paid');
    const attempts = await runtime.db
      .selectFrom('payment_attempts')
      .select('outcome')
      .where('payment_id', '=', p.id)
      .orderBy('created_at')
      .execute();
    expect(attempts.map((a) => a.outcome).sort()).toEqual(['declined', 'succeeded']);
  });

  it('paying twice does not pay twice: the second post lands on the paid page', async () => {
    const p = await createPayment(api, merchant.apiKey);
    expect((await pay(p.id, 'succeeded')).statusCode).toBe(303);
    const again = await pay(p.id, 'succeeded');
    expect(again.statusCode).toBe(303);
    expect(again.headers.location).toBe(`/pay/${p.id}`);
    const shown = await page(p.id);
    expect(shown.body).toContain('This payment has already been paid');
    expect(shown.body).not.toContain('data-auto-return');
  });

  it('refuses a form posted from another site (CSRF) and pays nothing', async () => {
    const p = await createPayment(api, merchant.apiKey);
    const forged: Record<string, string>[] = [
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site' },
      { origin: 'https://evil.example' },
      { origin: 'null' },
    ];
    for (const headers of forged) {
      const res = await pay(p.id, 'succeeded', headers);
      expect(res.statusCode, JSON.stringify(headers)).toBe(403);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.body).toContain('sent from another site');
    }
    expect(await apiStatus(p.id)).toBe('pending');
    // The checkout host's own origin is accepted when Sec-Fetch-Site is absent.
    expect((await pay(p.id, 'succeeded', { origin: ORIGIN })).statusCode).toBe(303);
    expect(await apiStatus(p.id)).toBe('paid');
  });

  it('rejects a post without a valid outcome, or in another media type', async () => {
    const p = await createPayment(api, merchant.apiKey);
    const bad = await pay(p.id, 'maybe');
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('Please choose how to pay');
    const json = await checkout.inject({
      method: 'POST',
      url: `/pay/${p.id}`,
      headers: { 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' },
      payload: '{"outcome":"succeeded"}',
    });
    expect(json.statusCode).toBe(415);
    expect(json.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(await apiStatus(p.id)).toBe('pending');
  });
});

describe('honest pages', () => {
  it('an expired session shows an expired page with no pay button, and cannot be paid', async () => {
    const p = await createPayment(api, merchant.apiKey, { ttl_minutes: 1, redirect_url: 'https://shop.example/r' });
    runtime.clock.advance(61_000);
    const res = await page(p.id);
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('This checkout session has expired');
    expect(res.body).not.toContain('<form');
    expect(res.body).not.toContain('<button');
    expect(res.body).toContain(`href="https://shop.example/r?payment_id=${p.id}&amp;status=expired"`);
    const post = await pay(p.id, 'succeeded');
    expect(post.statusCode).toBe(303);
    expect(post.headers.location).toBe(`/pay/${p.id}`);
    expect((await status(p.id)).json()).toMatchObject({ status: 'expired', state: 'expired' });
  });

  it('a settled payment shows the settlement transaction and no button', async () => {
    const p = await createPayment(api, merchant.apiKey, { redirect_url: 'https://shop.example/r' });
    await pay(p.id, 'succeeded');
    const txHash = `0x${'ab'.repeat(32)}`;
    await runtime.db
      .updateTable('payments')
      .set({
        status: 'settled',
        settled_at: runtime.clock.now(),
        settlement_tx_hash: txHash,
        settlement_chain_id: 31337,
        settlement_destination: 'address',
      })
      .where('id', '=', p.id)
      .execute();
    const res = await page(p.id);
    expect(res.body).toContain('This payment has already been paid');
    expect(res.body).toContain(`<code id="tx-hash">${txHash}</code>`);
    expect(res.body).toContain('<dl id="settlement" class="tx">');
    expect(res.body).not.toContain('<button');
    expect((await status(p.id)).json()).toEqual({
      id: p.id,
      object: 'checkout_status',
      status: 'settled',
      state: 'settled',
      expires_in_seconds: 0,
      settlement: { tx_hash: txHash, chain_id: 31337 },
      return_url: `https://shop.example/r?payment_id=${p.id}&status=settled`,
    });
  });

  it('a live-mode payment says the payment method is not available yet, without fake buttons', async () => {
    const live = await testAccount(runtime, { livemode: true });
    const p = await createPayment(api, live.apiKey, { merchant_name: 'Live Shop' });
    const res = await page(p.id);
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('This payment method is not available yet');
    expect(res.body).not.toContain('<button');
    expect(res.body).not.toContain('Test mode');
    const post = await pay(p.id, 'succeeded');
    expect(post.statusCode).toBe(303);
    const row = await runtime.db.selectFrom('payments').select('status').where('id', '=', p.id).executeTakeFirst();
    expect(row?.status).toBe('pending');
  });

  it('an unknown or malformed session is a 404 page; the status read answers with the error object', async () => {
    for (const id of ['pay_0000000000000000000000', 'nope', '%3Cscript%3E']) {
      const res = await page(id);
      expect(res.statusCode).toBe(404);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.headers['content-security-policy']).toBe(checkoutCsp(runtime.config));
      expect(res.body).toContain('We could not find this checkout');
      expect(res.body).not.toContain('<script');
    }
    const json = await status('pay_0000000000000000000000');
    expect(json.statusCode).toBe(404);
    expect(json.json()).toEqual({
      error: {
        type: 'invalid_request_error',
        message: "No such checkout session: 'pay_0000000000000000000000'.",
        param: 'id',
        code: 'not_found',
      },
    });
    const root = await checkout.inject({ method: 'GET', url: '/' });
    expect(root.statusCode).toBe(404);
    expect(root.body).toContain('There is no page here');
    expect((await pay('nope', 'succeeded')).statusCode).toBe(404);
  });
});

describe('the status read for the polling script', () => {
  it('follows pending → paid, with the time left and the return target once the payer is done', async () => {
    const p = await createPayment(api, merchant.apiKey, { redirect_url: 'https://shop.example/r?x=1' });
    expect((await status(p.id)).json()).toEqual({
      id: p.id,
      object: 'checkout_status',
      status: 'pending',
      state: 'payable',
      expires_in_seconds: expect.toSatisfy((s: number) => s === 3600 || s === 3599),
      settlement: null,
      return_url: null,
    });
    await pay(p.id, 'succeeded');
    const res = await status(p.id);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.json()).toMatchObject({
      status: 'paid',
      state: 'received',
      return_url: `https://shop.example/r?x=1&payment_id=${p.id}&status=paid`,
    });
  });
});
