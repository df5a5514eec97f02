import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { reconcileRailAttempts } from '../src/payments/rails/reconcile.ts';
import { DARAJA_ERRORS, darajaErrorBody } from './fakes/daraja.ts';
import { afterFile } from './support/after-file.ts';
import { bearer } from './support/harness.ts';
import { createPayment } from './support/payments.ts';
import { MPESA_APP, operatorCollects, type RailsWorld, railsWorld } from './support/rails.ts';

/**
 * Daraja breaking mid-call, played by a proxy in front of the fake: a push whose answer is lost or
 * comes back 5xx after Daraja has put the prompt on the phone, a push refused before it reached
 * M-Pesa, a status query that keeps failing. An answer that did not come is unknown, never "not
 * sent": the attempt stays open until Daraja says what happened, the payer is not invited to pay
 * again meanwhile, and a PIN entered while the query is down is recorded once it recovers.
 */
let w: RailsWorld;

/** A gateway's own 5xx: plain text, not Daraja's JSON. */
const gateway = (status: number) => ({ status, body: `${status} Service Unavailable`, contentType: 'text/plain' });
/** One of Daraja's documented error answers. */
const daraja = (name: keyof typeof DARAJA_ERRORS, fill: Record<string, string> = {}) => ({
  status: DARAJA_ERRORS[name].status,
  body: darajaErrorBody(name, fill),
  contentType: 'application/json',
});
type Answer = ReturnType<typeof gateway>;

/** What the proxy does to the next push (forwarded first when Daraja acted), and to every query while set. */
const faults: { push?: { acted: boolean; answer: Answer | 'drop' }; query?: Answer } = {};

beforeAll(async () => {
  w = await railsWorld({
    darajaUrl: async (fakeUrl) => {
      const proxy = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', async () => {
          const reply = (a: Answer) => res.writeHead(a.status, { 'content-type': a.contentType }).end(a.body);
          const push = req.url?.startsWith('/mpesa/stkpush/') ? faults.push : undefined;
          if (push) faults.push = undefined;
          if (req.url?.startsWith('/mpesa/stkpushquery/') && faults.query) return reply(faults.query);
          if (push && !push.acted && push.answer !== 'drop') return reply(push.answer);
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
          if (push?.answer === 'drop') return req.socket.destroy();
          if (push) return reply(push.answer);
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

const statusOf = async (id: string) =>
  (await w.api.inject({ method: 'GET', url: `/v1/payments/${id}`, headers: bearer(w.merchant.apiKey) })).json().status;
const attemptsOf = (paymentId: string) =>
  w.runtime.db
    .selectFrom('payment_attempts')
    .selectAll()
    .where('payment_id', '=', paymentId)
    .orderBy('created_at')
    .execute();
const paidEvents = (paymentId: string) =>
  w.runtime.db
    .selectFrom('events')
    .select('id')
    .where('object_id', '=', paymentId)
    .where('type', '=', 'payment.paid')
    .execute();
const pay = (id: string, phone: string) =>
  w.checkout.inject({
    method: 'POST',
    url: `/pay/${id}`,
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: w.checkoutUrl },
    payload: `rail=mpesa&phone=${phone}`,
  });
const page = async (id: string) => (await w.checkout.inject({ method: 'GET', url: `/pay/${id}` })).body;
const pageState = async (id: string) =>
  (await w.checkout.inject({ method: 'GET', url: `/pay/${id}/status` })).json().state;
/** The reconciler's next pass, the clock moved past its recheck interval first. */
async function reconcileAfter(ms: number) {
  w.runtime.clock.advance(ms);
  await reconcileRailAttempts(w.runtime);
}
const PUSHES = () => w.daraja.pushes.size;

/** The page while the answer is unknown: it says it is confirming, and offers no way to pay again. */
async function expectConfirming(id: string) {
  const body = await page(id);
  expect(body).toContain('Confirming your M-Pesa payment');
  expect(body).toContain('Please do not pay again');
  expect(body).not.toContain('Pay another way');
  expect(body).not.toContain('name="rail"');
  expect(await pageState(id)).toBe('confirming');
}

let phones = 0;
const nextPhone = () => `07123456${String(++phones).padStart(2, '0')}`;

describe('an M-Pesa push whose answer was lost', () => {
  it('stays open and unknown ("confirming"), and the payer’s PIN still pays it, once', async () => {
    const p = await createPayment(w.api, w.merchant.apiKey, { amount: 700, currency: 'KES' });
    const phone = nextPhone();
    faults.push = { acted: true, answer: 'drop' };
    const res = await pay(p.id, phone);
    expect(res.statusCode).toBe(303);
    await expectConfirming(p.id);
    expect(await statusOf(p.id)).toBe('processing');
    expect((await attemptsOf(p.id))[0]).toMatchObject({ outcome: 'unknown', provider_reference: null });

    // The prompt is on the phone all the same; the payer enters the PIN; the callback names the push.
    const push = await w.daraja.waitForPush(`254${phone.slice(1)}`);
    await w.daraja.phone.accept(push.checkoutRequestId);
    expect(await statusOf(p.id)).toBe('paid');
    expect((await attemptsOf(p.id))[0]).toMatchObject({
      outcome: 'succeeded',
      late: false,
      provider_reference: push.checkoutRequestId,
    });
    expect(await paidEvents(p.id)).toHaveLength(1);
  });
});

describe('a push answered 5xx after Daraja acted, the status query failing while the payer pays', () => {
  it.each([
    ['500.003.02 Spike Arrest Violation', daraja('spike_arrest')],
    ['500.003.02 System is busy', daraja('system_busy')],
    ['500.003.03 Quota Violation', daraja('quota_violation')],
    ['500.003.1001 Internal Server Error', daraja('internal_server_error')],
    ['a gateway 502', gateway(502)],
    ['a gateway 503', gateway(503)],
    ['a gateway 504', gateway(504)],
  ])('%s: one paid payment, no invitation to pay again, a retry refused', async (_, answer) => {
    const p = await createPayment(w.api, w.merchant.apiKey, { amount: 900, currency: 'KES' });
    const phone = nextPhone();
    faults.push = { acted: true, answer };
    faults.query = gateway(503);
    try {
      expect((await pay(p.id, phone)).statusCode).toBe(303);
      const [attempt] = await attemptsOf(p.id);
      expect(attempt).toMatchObject({ outcome: 'unknown', provider_reference: null });
      expect(attempt!.failure_reason).toMatch(/^M-Pesa did not confirm the push: /);
      await expectConfirming(p.id);

      // The payer, told nothing went wrong, tries again: refused, no second prompt.
      const before = PUSHES();
      expect((await pay(p.id, phone)).headers.location).toBe(`/pay/${p.id}`);
      expect((await pay(p.id, nextPhone())).headers.location).toBe(`/pay/${p.id}`);
      expect(PUSHES()).toBe(before);
      await expectConfirming(p.id);

      // The PIN is entered while the query is down: the callback names the push, the query cannot confirm it.
      const push = await w.daraja.waitForPush(`254${phone.slice(1)}`);
      await w.daraja.phone.accept(push.checkoutRequestId);
      expect(w.daraja.callbacks.at(-1)).toMatchObject({ url: push.callbackUrl, status: 200 });
      expect((await attemptsOf(p.id))[0]).toMatchObject({
        outcome: 'unknown',
        provider_reference: push.checkoutRequestId,
      });
      expect(await statusOf(p.id)).toBe('processing');

      // Long past the 5 minutes of a prompt, the query still failing: never written off.
      for (const wait of [31_000, 6 * 60_000, 60 * 60_000]) {
        await reconcileAfter(wait);
        expect((await attemptsOf(p.id))[0]!.outcome).toBe('unknown');
        await expectConfirming(p.id);
      }

      // The query recovers: the payment is paid, once.
      faults.query = undefined;
      await reconcileAfter(31_000);
      expect(await statusOf(p.id)).toBe('paid');
      expect(await attemptsOf(p.id)).toEqual([
        expect.objectContaining({ outcome: 'succeeded', late: false, provider_reference: push.checkoutRequestId }),
      ]);
      expect(await paidEvents(p.id)).toHaveLength(1);
      expect(await page(p.id)).toContain('Payment received');
    } finally {
      faults.query = undefined;
    }
  });
});

describe('a push refused before it reached M-Pesa, with a 5xx', () => {
  it('stays unknown while its prompt could be answered, then ends saying it could not be confirmed', async () => {
    const p = await createPayment(w.api, w.merchant.apiKey, { amount: 400, currency: 'KES' });
    const before = PUSHES();
    faults.push = { acted: false, answer: gateway(503) };
    expect((await pay(p.id, nextPhone())).statusCode).toBe(303);
    expect(PUSHES()).toBe(before);
    await expectConfirming(p.id);

    await reconcileAfter(4 * 60_000);
    expect((await attemptsOf(p.id))[0]!.outcome).toBe('unknown');
    // No CheckoutRequestID to ask about and no callback naming one: past the prompt's life, ended,
    // saying the outcome could not be confirmed (not that no money was taken).
    await reconcileAfter(2 * 60_000);
    const [attempt] = await attemptsOf(p.id);
    expect(attempt).toMatchObject({ outcome: 'timed_out', provider_reference: null });
    expect(attempt!.failure_reason).toMatch(
      /^unconfirmed: Daraja never acknowledged the push \(M-Pesa did not confirm/,
    );
    expect(await statusOf(p.id)).toBe('pending');
    const notice = (await w.checkout.inject({ method: 'GET', url: `/pay/${p.id}?attempt=${attempt!.id}` })).body;
    expect(notice).toContain('We could not confirm with M-Pesa whether this request reached your phone');
    expect(notice).not.toContain('No money was taken');
    expect(await paidEvents(p.id)).toHaveLength(0);
  });
});

describe('a push Daraja acknowledged, its status query failing past the prompt’s life', () => {
  it('turns unknown, never a write-off, and the PIN entered meanwhile is recorded when the query recovers', async () => {
    const p = await createPayment(w.api, w.merchant.apiKey, { amount: 650, currency: 'KES' });
    const phone = nextPhone();
    expect((await pay(p.id, phone)).statusCode).toBe(303);
    const push = await w.daraja.waitForPush(`254${phone.slice(1)}`);
    expect(await page(p.id)).toContain('Check your phone');
    faults.query = daraja('spike_arrest');
    try {
      // Paid, and Daraja's one callback lost on the way: only the query can tell.
      await w.daraja.phone.accept(push.checkoutRequestId, { callback: false });
      await reconcileAfter(31_000);
      expect((await attemptsOf(p.id))[0]!.outcome).toBe('pending');
      await reconcileAfter(6 * 60_000);
      expect((await attemptsOf(p.id))[0]).toMatchObject({
        outcome: 'unknown',
        failure_reason: expect.stringMatching(/status query did not answer/),
      });
      await expectConfirming(p.id);
      await reconcileAfter(2 * 60 * 60_000);
      expect(await statusOf(p.id)).toBe('processing');

      faults.query = undefined;
      await reconcileAfter(31_000);
      expect(await statusOf(p.id)).toBe('paid');
      expect(await paidEvents(p.id)).toHaveLength(1);
    } finally {
      faults.query = undefined;
    }
  });
});

describe('a push Daraja clearly refused', () => {
  it.each([
    [
      'Unable to lock subscriber',
      daraja('unable_to_lock_subscriber'),
      'Another M-Pesa request is open on your phone. No money was taken.',
    ],
    [
      'Invalid PhoneNumber',
      daraja('invalid_field', { field: 'PhoneNumber' }),
      'M-Pesa did not take this phone number. No money was taken.',
    ],
    ['Wrong credentials', daraja('wrong_credentials'), 'M-Pesa is not set up correctly for this merchant.'],
    ['Merchant does not exist', daraja('merchant_does_not_exist'), 'M-Pesa is not set up correctly for this merchant.'],
  ])('%s: ends the attempt at once and says what to do', async (_, answer, notice) => {
    const p = await createPayment(w.api, w.merchant.apiKey, { amount: 350, currency: 'KES' });
    faults.push = { acted: false, answer };
    const res = await pay(p.id, nextPhone());
    expect(res.statusCode).toBe(503);
    expect(res.body).toContain(notice);
    expect(res.body).toContain('with M-Pesa</button>');
    expect((await attemptsOf(p.id))[0]).toMatchObject({
      outcome: 'failed',
      failure_reason: expect.stringMatching(/^M-Pesa refused the push: /),
    });
    expect(await statusOf(p.id)).toBe('pending');
  });
});
