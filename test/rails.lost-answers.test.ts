import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { afterFile } from './support/after-file.ts';
import { bearer } from './support/harness.ts';
import { createPayment } from './support/payments.ts';
import { MPESA_APP, operatorCollects, type RailsWorld, railsWorld } from './support/rails.ts';

/**
 * Daraja takes the push and puts the prompt on the payer's phone, but its answer never reaches
 * plainpay (a dropped connection). The attempt must stay open: ending it as failed would tell the
 * payer to try again while the first prompt can still take their money.
 */
let w: RailsWorld;
let dropNextPushAnswer = false;

beforeAll(async () => {
  w = await railsWorld({
    darajaUrl: async (fakeUrl) => {
      // A proxy in front of the fake that forwards everything, and can lose the push's answer.
      const proxy = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', async () => {
          const answer = await fetch(`${fakeUrl}${req.url}`, {
            method: req.method,
            headers: Object.fromEntries(
              Object.entries(req.headers).filter(
                ([k, v]) => typeof v === 'string' && k !== 'host' && k !== 'content-length',
              ),
            ) as Record<string, string>,
            body: req.method === 'GET' ? undefined : Buffer.concat(chunks),
          });
          const body = await answer.text();
          if (dropNextPushAnswer && req.url?.startsWith('/mpesa/stkpush/')) {
            dropNextPushAnswer = false;
            req.socket.destroy();
            return;
          }
          res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
          res.end(body);
        });
      });
      await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
      afterFile(() => new Promise<void>((resolve) => proxy.close(() => resolve())));
      return `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    },
  });
  await operatorCollects(w.runtime, 'mpesa', MPESA_APP);
}, 60_000);

describe('an M-Pesa push whose answer was lost', () => {
  it('stays open on "check your phone", and the payer’s PIN still pays it, once', async () => {
    const p = await createPayment(w.api, w.merchant.apiKey, { amount: 700, currency: 'KES' });
    dropNextPushAnswer = true;
    const res = await w.checkout.inject({
      method: 'POST',
      url: `/pay/${p.id}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: w.checkoutUrl },
      payload: 'rail=mpesa&phone=0712345611',
    });
    expect(res.statusCode).toBe(303);
    const page = await w.checkout.inject({ method: 'GET', url: String(res.headers.location) });
    expect(page.body).toContain('Check your phone');
    const status = async () =>
      (await w.api.inject({ method: 'GET', url: `/v1/payments/${p.id}`, headers: bearer(w.merchant.apiKey) })).json()
        .status;
    expect(await status()).toBe('processing');
    const [attempt] = await w.runtime.db
      .selectFrom('payment_attempts')
      .selectAll()
      .where('payment_id', '=', p.id)
      .execute();
    expect(attempt).toMatchObject({ outcome: 'pending', provider_reference: null });

    // The prompt is on the phone all the same; the payer enters the PIN; the callback names the push.
    const push = await w.daraja.waitForPush('254712345611');
    await w.daraja.phone.accept(push.checkoutRequestId);
    expect(await status()).toBe('paid');
    const [after] = await w.runtime.db
      .selectFrom('payment_attempts')
      .selectAll()
      .where('payment_id', '=', p.id)
      .execute();
    expect(after).toMatchObject({ outcome: 'succeeded', provider_reference: push.checkoutRequestId });
    const paidEvents = await w.runtime.db
      .selectFrom('events')
      .select('id')
      .where('object_id', '=', p.id)
      .where('type', '=', 'payment.paid')
      .execute();
    expect(paidEvents).toHaveLength(1);
  });
});
