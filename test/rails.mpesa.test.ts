import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/core/logger.ts';
import { findPaymentById } from '../src/db/repositories/payments.ts';
import { beginAttempt, checkAttempt } from '../src/payments/rails/attempts.ts';
import { findPaymentAttemptById } from '../src/db/repositories/payment-attempts.ts';
import { collectionsWithRefusedCallbacks } from '../src/payments/rails/mpesa.ts';
import type { Runtime } from '../src/runtime.ts';
import { bearer, testAccount, type TestAccount } from './support/harness.ts';
import { createPayment } from './support/payments.ts';
import { MPESA_APP, operatorCollects, type RailsWorld, railsWorld } from './support/rails.ts';

/**
 * M-Pesa in live mode against the fake's production Daraja (test/fakes/daraja.ts): plainpay's
 * PUBLIC_BASE_URL is an HTTPS name, as Daraja production requires, which the fake delivers to the
 * API host as DNS and a TLS proxy would. Each published result code ends its attempt as the table
 * in src/payments/rails/mpesa.ts says, with words the payer can act on.
 */
const PUBLIC_BASE_URL = 'https://pay.plainpay.example';
const METRICS_TOKEN = 'rails-mpesa-metrics-token-0123456789';
let w: RailsWorld;
let live: TestAccount;
const logs: Array<{ level: number; msg: string; rail?: string; alert?: string; attemptId?: string }> = [];

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) logs.push(JSON.parse(line));
      done();
    },
  });
  w = await railsWorld({
    publicBaseUrl: PUBLIC_BASE_URL,
    env: { METRICS_TOKEN },
    logger: createLogger('warn', sink),
  });
  live = await testAccount(w.runtime, { livemode: true, name: 'Duka la Mama' });
  await operatorCollects(w.runtime, 'mpesa', { ...MPESA_APP, environment: 'production' }, { livemode: true });
}, 60_000);

const form = (id: string, fields: Record<string, string>) =>
  w.checkout.inject({
    method: 'POST',
    url: `/pay/${id}`,
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: w.checkoutUrl },
    payload: new URLSearchParams(fields).toString(),
  });

const statusOf = async (id: string) =>
  (await w.api.inject({ method: 'GET', url: `/v1/payments/${id}`, headers: bearer(live.apiKey) })).json().status;

const attemptsOf = (paymentId: string) =>
  w.runtime.db.selectFrom('payment_attempts').selectAll().where('payment_id', '=', paymentId).execute();

async function alertsCounted(reason: string): Promise<number> {
  const res = await w.api.inject({ method: 'GET', url: '/metrics', headers: bearer(METRICS_TOKEN) });
  const line = res.body
    .split('\n')
    .find((l) => l.startsWith(`plainpay_payer_rail_alerts_total{rail="mpesa",reason="${reason}"}`));
  return Number(line?.split(' ').at(-1) ?? Number.NaN);
}

let phones = 0;
/** A live KES payment with a push on a phone of its own; returns the payment and the push. */
async function livePush(amount = 250) {
  const p = await createPayment(w.api, live.apiKey, { amount, currency: 'KES' });
  const local = `0713${String(++phones).padStart(6, '0')}`;
  const res = await form(p.id, { rail: 'mpesa', phone: local });
  expect(res.statusCode).toBe(303);
  return { payment: p, push: await w.daraja.waitForPush(`254${local.slice(1)}`), next: String(res.headers.location) };
}

describe('M-Pesa on Daraja production', () => {
  it('names, at start, the collection accounts whose callbacks Daraja would refuse on PUBLIC_BASE_URL', async () => {
    expect(await collectionsWithRefusedCallbacks(w.runtime.db, PUBLIC_BASE_URL)).toEqual([]);
    const problems = await collectionsWithRefusedCallbacks(w.runtime.db, 'http://pay.plainpay.example');
    expect(problems).toEqual([
      expect.stringMatching(
        /^PUBLIC_BASE_URL \(http:\/\/pay\.plainpay\.example\): M-Pesa's callback URL is not HTTPS.*: M-Pesa collection account col_\w+ cannot take payments/,
      ),
    ]);
  });

  it('a live push names an HTTPS callback URL production takes, and its one callback pays', async () => {
    const { payment, push } = await livePush(1000);
    expect(push.environment).toBe('production');
    expect(push.callbackUrl).toMatch(new RegExp(`^${PUBLIC_BASE_URL}/hooks/stk/[0-9a-f]{64}$`));
    await w.daraja.phone.accept(push.checkoutRequestId);
    expect(w.daraja.callbacks.at(-1)).toMatchObject({ url: push.callbackUrl, status: 200 });
    // The live callback's Balance item has no Value; the amount (1000.00) is what was pushed.
    expect(w.daraja.callbacks.at(-1)!.body).toContain('{"Name":"Balance"}');
    expect(await statusOf(payment.id)).toBe('paid');
    const [attempt] = await attemptsOf(payment.id);
    expect(attempt).toMatchObject({
      outcome: 'succeeded',
      provider_reference: push.checkoutRequestId,
      provider_receipt: w.daraja.pushes.get(push.checkoutRequestId)!.receipt,
    });
  });
});

/**
 * How each published result code ends an attempt, and what the payer then reads. Every row of the
 * fixture (the M-Pesa Express page's table, and the three codes integrators report) must be here.
 */
const EXPECTED: Record<string, { outcome: string; notice?: string; alert?: 'configuration' | 'collection_limit' }> = {
  '0': { outcome: 'succeeded' },
  '1': { outcome: 'declined', notice: 'Your M-Pesa balance was not enough for this payment' },
  '2': { outcome: 'declined', notice: 'M-Pesa refused this amount as below its minimum' },
  '3': { outcome: 'declined', notice: 'This amount is above what M-Pesa allows in one payment' },
  '4': { outcome: 'declined', notice: 'This payment would take you over your daily M-Pesa limit' },
  '8': {
    outcome: 'declined',
    notice: "The merchant's M-Pesa account cannot take this payment right now",
    alert: 'collection_limit',
  },
  '17': { outcome: 'declined', notice: 'Wait 2 minutes, then try again' },
  '1019': { outcome: 'timed_out', notice: 'The M-Pesa request expired before it was answered' },
  '1025': { outcome: 'declined', notice: 'M-Pesa could not show this request on your phone', alert: 'configuration' },
  '1032': { outcome: 'cancelled', notice: 'The M-Pesa request was cancelled on your phone' },
  '1037': { outcome: 'timed_out', notice: 'Your phone could not be reached in time' },
  '2001': { outcome: 'declined', notice: 'The M-Pesa PIN was wrong' },
  '2028': {
    outcome: 'declined',
    notice: 'M-Pesa is not set up correctly for this merchant',
    alert: 'configuration',
  },
  '8006': { outcome: 'declined', notice: 'Call Safaricom on 100 or 200 to unlock it' },
  SFC_IC0003: {
    outcome: 'declined',
    notice: 'M-Pesa is not set up correctly for this merchant',
    alert: 'configuration',
  },
  '1001': { outcome: 'failed', notice: 'Another M-Pesa request is open on your phone' },
  '26': { outcome: 'failed', notice: 'M-Pesa is busy. No money was taken. Please try again in a minute.' },
  '9999': { outcome: 'declined', notice: 'M-Pesa could not show this request on your phone', alert: 'configuration' },
};

const TABLE = JSON.parse(
  readFileSync(new URL('./fakes/fixtures/daraja/result_codes.json', import.meta.url), 'utf8'),
) as { codes: Array<{ code: string; description: string; _source: string }> };

describe('each published result code ends the attempt as it should', () => {
  it('covers every row of the published table', () => {
    expect(Object.keys(EXPECTED).sort()).toEqual(TABLE.codes.map((r) => r.code).sort());
  });

  it.each(TABLE.codes.map((row) => [row.code, row.description, row._source] as const))(
    'ResultCode %s (%s) [%s]',
    async (code) => {
      const expected = EXPECTED[code]!;
      const alertsBefore = expected.alert ? await alertsCounted(expected.alert) : 0;
      const { payment, push } = await livePush();
      await w.daraja.phone.answer(push.checkoutRequestId, code);

      const [attempt] = await attemptsOf(payment.id);
      expect(attempt!.outcome).toBe(expected.outcome);
      expect(await statusOf(payment.id)).toBe(code === '0' ? 'paid' : 'pending');
      if (code !== '0') {
        expect(attempt!.failure_reason).toMatch(new RegExp(`^M-Pesa ${code}: `));
        const page = await w.checkout.inject({ method: 'GET', url: `/pay/${payment.id}?attempt=${attempt!.id}` });
        // Back to payable, saying what happened in words the payer can act on.
        expect(page.body).toContain(expected.notice!.replace(/'/g, '&#39;'));
        expect(page.body).toContain('with M-Pesa</button>');
      }
      const alerts = logs.filter((l) => l.attemptId === attempt!.id && l.alert);
      if (expected.alert) {
        expect(alerts).toEqual([expect.objectContaining({ level: 50, rail: 'mpesa', alert: expected.alert })]);
        expect(alerts[0]!.msg).toMatch(new RegExp(`^M-Pesa result ${code}: `));
        expect(await alertsCounted(expected.alert)).toBe(alertsBefore + 1);
      } else {
        expect(alerts).toEqual([]);
      }
    },
  );
});

describe('Daraja tokens', () => {
  it.each(['invalid_access_token', 'invalid_access_token_401', 'invalid_access_token_400'] as const)(
    'a token Daraja refuses (%s) is replaced and the push made once more',
    async (answer) => {
      await livePush(); // A token in hand.
      w.daraja.answerInvalidTokensWith(answer);
      try {
        w.daraja.expireTokens();
        const issued = w.daraja.tokensIssued.production;
        const { payment, push } = await livePush();
        expect(push.state).toBe('pending');
        expect((await attemptsOf(payment.id))[0]).toMatchObject({
          outcome: 'pending',
          provider_reference: push.checkoutRequestId,
        });
        expect(w.daraja.tokensIssued.production).toBe(issued + 1);
      } finally {
        w.daraja.answerInvalidTokensWith('invalid_access_token');
      }
    },
  );

  it('processes sharing one Daraja app replace each other’s tokens without failing a push or looping', async () => {
    // Another process of this instance (its own token cache), on the same database and Daraja app.
    const other: Runtime = { ...w.runtime };
    const issued = () => w.daraja.tokensIssued.production;

    const first = await livePush(); // This process: token A.
    const before = issued();
    // The other process pushes: its token B makes A invalid ("each request invalidates the previous token").
    const p = await createPayment(w.api, live.apiKey, { amount: 300, currency: 'KES' });
    const started = await beginAttempt(
      other,
      (await findPaymentById(w.runtime.db, p.id))!,
      'mpesa',
      new URLSearchParams({ phone: '0713999001' }),
    );
    expect(await w.daraja.waitForPush('254713999001')).toMatchObject({ state: 'pending' });
    expect(issued()).toBe(before + 1);
    // This process: A is refused, C fetched, the push made once more.
    const second = await livePush();
    expect(second.push.state).toBe('pending');
    expect(issued()).toBe(before + 2);
    // The other process asks about its attempt: B is refused, D fetched, the query answers.
    const verdict = await checkAttempt(other, await findPaymentAttemptById(w.runtime.db, started.attemptId), {
      trigger: 'reconcile',
      mayPay: true,
      abandonIsFinal: false,
    });
    expect(verdict).toMatchObject({ outcome: 'pending', detail: expect.stringContaining('being processed') });
    expect(issued()).toBe(before + 3);
    // Calls side by side in one process share one fetch: a second would invalidate the first.
    w.daraja.expireTokens();
    const attempts = await Promise.all([first, second].map(async ({ payment }) => (await attemptsOf(payment.id))[0]!));
    const checks = await Promise.all(
      [...attempts, ...attempts].map((a) =>
        checkAttempt(w.runtime, a, { trigger: 'reconcile', mayPay: true, abandonIsFinal: false }),
      ),
    );
    expect(checks.map((c) => c?.outcome)).toEqual(['pending', 'pending', 'pending', 'pending']);
    expect(issued()).toBe(before + 4);
    for (const push of [first.push, second.push, await w.daraja.waitForPush('254713999001')]) {
      await w.daraja.phone.cancel(push.checkoutRequestId);
    }
  });
});
