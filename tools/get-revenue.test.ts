import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.ts';
import { AppError } from '../src/core/errors.ts';
import { executedOutput, executeTool } from '../src/pipeline/execute-tool.ts';
import type { Actor } from '../src/core/tool.ts';
import { minorToNumber, parseMajorAmount, SETTLEMENT_CURRENCY } from '../src/domain/money.ts';
import { expireDuePayments } from '../src/payments/expiry.ts';
import { paySandbox } from '../src/payments/sandbox-rail.ts';
import { paystackReference } from '../src/domain/provider-references.ts';
import { runSystemTool } from '../src/pipeline/system-runs.ts';
import { settlePaidPayments } from '../src/settlement/payment-settlement.ts';
import { bearer, testAccount, testApp, testRuntime, type TestRuntime } from '../test/support/harness.ts';
import { firstKeyAuth } from '../test/support/money.ts';
import { operatorCollection } from '../test/support/system-tools.ts';
import { createPayment } from './create-payment.ts';
import { getRevenue } from './get-revenue.ts';
import { refundPayment } from './refund-payment.ts';
import { recordPaymentAttempt } from './system/record-payment-attempt.ts';
import { startPaymentAttempt } from './system/start-payment-attempt.ts';

// A fixed clock: paid_at is whatever the clock reads when the sandbox rail confirms, so each
// payment is paid exactly where the test puts it relative to the range's edges.
let runtime: TestRuntime;
let app: FastifyInstance;

beforeAll(async () => {
  runtime = await testRuntime({}, { clock: new ManualClock(new Date('2026-03-01T00:00:00Z')) });
  app = await testApp(runtime);
});

function clockAt(iso: string): void {
  runtime.clock.advance(Date.parse(iso) - runtime.clock.now().getTime());
}

async function merchant(): Promise<{ actor: Actor; apiKey: string }> {
  const account = await testAccount(runtime);
  return { actor: { ...(await firstKeyAuth(runtime, account.accountId)), channel: 'api' }, apiKey: account.apiKey };
}

/** USDC minor units of an amount the API returned (0 allowed, unlike an amount the API takes). */
function usdcMinor(amount: number): bigint {
  if (amount === 0) return 0n;
  const parsed = parseMajorAmount(amount, SETTLEMENT_CURRENCY);
  if (!parsed.ok) throw new Error(`not a USDC amount: ${amount}`);
  return parsed.minor;
}

interface Created {
  id: string;
  settlementMinor: bigint;
}

async function created(
  actor: Actor,
  at: string,
  body: { amount: number; currency: string } & Record<string, unknown>,
): Promise<Created> {
  clockAt(at);
  const payment = executedOutput(
    await executeTool(createPayment, { redirect_url: 'https://shop.example/thanks', ...body }, { runtime, actor }),
  );
  return { id: payment.id, settlementMinor: usdcMinor(payment.quote.settlement_amount) };
}

/** Created at `createdAt`, paid by the payer on the sandbox rail at `paidAt`. */
async function paid(
  actor: Actor,
  createdAt: string,
  paidAt: string,
  body: { amount: number; currency: string } & Record<string, unknown>,
): Promise<Created> {
  const payment = await created(actor, createdAt, body);
  clockAt(paidAt);
  await paySandbox(runtime, actor, payment.id, 'succeeded');
  return payment;
}

/** The settlement worker's intake: every paid payment settles into its account's balance. */
async function settleAll(): Promise<void> {
  while (
    (await settlePaidPayments(runtime, {
      chunk: 50,
      testModeOnChain: async () => false,
    })) > 0
  );
}

/** Refunds `amount` (all that remains when omitted); returns the USDC the balance gave back. */
async function refunded(actor: Actor, paymentId: string, amount?: number): Promise<bigint> {
  const refund = executedOutput(
    await executeTool(
      refundPayment,
      { payment_id: paymentId, ...(amount === undefined ? {} : { amount }) },
      { runtime, actor },
    ),
  );
  return usdcMinor(refund.balance_debit.amount);
}

async function revenue(actor: Actor, input: Record<string, unknown>) {
  return executedOutput(await executeTool(getRevenue, input, { runtime, actor }));
}

async function refusal(actor: Actor, input: Record<string, unknown>): Promise<AppError> {
  const error = await executeTool(getRevenue, input, { runtime, actor }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

const usdc = (minor: bigint): number => minorToNumber(minor, SETTLEMENT_CURRENCY);

const DAY = { from: '2026-03-10T00:00:00Z', to: '2026-03-11T00:00:00Z' };

describe('get_revenue', () => {
  let m: { actor: Actor; apiKey: string };
  const expected = { ngnSettlement: 0n, kesSettlement: 0n };
  const ids: Record<string, string> = {};
  let expiredId = '';
  let pendingId = '';

  beforeAll(async () => {
    m = await merchant();
    const other = await merchant();

    // Paid exactly at `from` (inclusive), created the evening before: paid_at decides, not created_at.
    const a = await paid(m.actor, '2026-03-09T23:30:00Z', DAY.from, {
      amount: 5000,
      currency: 'NGN',
      merchant_name: 'Secret Shop',
      description: 'do not leak this description',
      metadata: { note: 'do not leak this metadata' },
    });
    const b = await paid(m.actor, '2026-03-10T08:55:00Z', '2026-03-10T09:00:00Z', {
      amount: 1500.5,
      currency: 'NGN',
      reference: 'order-b',
    });
    const c = await paid(m.actor, '2026-03-10T11:55:00Z', '2026-03-10T12:00:00Z', { amount: 1000, currency: 'KES' });
    // Just outside, on both sides.
    const before = await paid(m.actor, '2026-03-09T23:00:00Z', '2026-03-09T23:59:59.999Z', {
      amount: 800,
      currency: 'NGN',
    });
    // Another account's and the other mode's payments, paid in the range.
    await paid(other.actor, '2026-03-10T10:00:00Z', '2026-03-10T10:01:00Z', { amount: 10_000, currency: 'NGN' });
    const live = await created({ ...m.actor, livemode: true }, '2026-03-10T10:00:00Z', {
      amount: 20_000,
      currency: 'NGN',
    });
    clockAt('2026-03-10T10:02:00Z');
    // Paid on a live rail: a Paystack attempt into the operator's live collection account, confirmed.
    const liveScope = { accountId: m.actor.accountId, livemode: true };
    const started = await runSystemTool(
      runtime,
      startPaymentAttempt,
      { payment_id: live.id, rail: 'paystack', collection_id: await operatorCollection(runtime, 'paystack', true) },
      liveScope,
    );
    await runSystemTool(
      runtime,
      recordPaymentAttempt,
      {
        payment_id: live.id,
        attempt_id: started.attempt_id,
        rail: 'paystack',
        outcome: 'succeeded',
        confirmed: {
          amount_minor: started.amount_minor,
          currency: started.currency,
          reference: paystackReference(started.attempt_id),
        },
      },
      liveScope,
    );
    // Expired, and still pending: created in the range, never paid.
    expiredId = (await created(m.actor, '2026-03-10T13:00:00Z', { amount: 900, currency: 'NGN', ttl_minutes: 1 })).id;
    clockAt('2026-03-10T13:05:00Z');
    await expireDuePayments(runtime);
    pendingId = (await created(m.actor, '2026-03-10T13:06:00Z', { amount: 950, currency: 'NGN', ttl_minutes: 1440 }))
      .id;

    clockAt('2026-03-10T18:00:00Z');
    await settleAll();
    const bDebit = await refunded(m.actor, b.id, 500.25);
    const cDebit = await refunded(m.actor, c.id);
    expect(cDebit).toBe(c.settlementMinor); // a full refund takes back exactly what was credited

    // Paid in the last millisecond of the range and not settled yet: counts at its locked quote.
    const d = await paid(m.actor, '2026-03-10T23:00:00Z', '2026-03-10T23:59:59.999Z', {
      amount: 250,
      currency: 'KES',
    });
    // Paid exactly at `to` (exclusive).
    const after = await paid(m.actor, '2026-03-10T23:30:00Z', DAY.to, { amount: 700, currency: 'NGN' });
    clockAt('2026-03-12T00:00:00Z');

    expected.ngnSettlement = a.settlementMinor + b.settlementMinor - bDebit;
    expected.kesSettlement = c.settlementMinor - cDebit + d.settlementMinor;
    Object.assign(ids, { a: a.id, b: b.id, c: c.id, d: d.id, before: before.id, after: after.id, live: live.id });
  });

  it('totals the payments paid within [from, to) per currency, exactly, in bigint minor units', async () => {
    const statuses = await runtime.db
      .selectFrom('payments')
      .select(['id', 'status'])
      .where('id', 'in', [expiredId, pendingId])
      .execute();
    expect(Object.fromEntries(statuses.map((p) => [p.id, p.status]))).toEqual({
      [expiredId]: 'expired',
      [pendingId]: 'pending',
    });

    const out = await revenue(m.actor, DAY);
    expect(out).toEqual({
      object: 'revenue',
      from: '2026-03-10T00:00:00.000Z',
      to: '2026-03-11T00:00:00.000Z',
      currencies: [
        { currency: 'KES', amount: 1250, refunded: 1000, count: 2, settlement_amount: usdc(expected.kesSettlement) },
        {
          currency: 'NGN',
          amount: 6500.5,
          refunded: 500.25,
          count: 2,
          settlement_amount: usdc(expected.ngnSettlement),
        },
      ],
      count: 4,
      settlement_amount: usdc(expected.ngnSettlement + expected.kesSettlement),
      asset: 'USDC',
      payments: [
        {
          id: ids.d,
          object: 'payment',
          amount: 250,
          currency: 'KES',
          status: 'paid',
          reference: null,
          paid_at: '2026-03-10T23:59:59.999Z',
        },
        {
          id: ids.c,
          object: 'payment',
          amount: 1000,
          currency: 'KES',
          status: 'refunded',
          reference: null,
          paid_at: '2026-03-10T12:00:00.000Z',
        },
        {
          id: ids.b,
          object: 'payment',
          amount: 1500.5,
          currency: 'NGN',
          status: 'partially_refunded',
          reference: 'order-b',
          paid_at: '2026-03-10T09:00:00.000Z',
        },
        {
          id: ids.a,
          object: 'payment',
          amount: 5000,
          currency: 'NGN',
          status: 'settled',
          reference: null,
          paid_at: '2026-03-10T00:00:00.000Z',
        },
      ],
      has_more: false,
    });
    expect(expected.ngnSettlement).toBeGreaterThan(0n);
    expect(expected.kesSettlement).toBeGreaterThan(0n);
    // Free text the merchant or a payer wrote never reaches the agent through this tool.
    expect(JSON.stringify(out)).not.toMatch(/Secret Shop|do not leak/);
  });

  it('a currency filter keeps one currency; a supported currency without payments totals nothing', async () => {
    const kes = await revenue(m.actor, { ...DAY, currency: 'kes' });
    expect(kes.currencies).toEqual([
      { currency: 'KES', amount: 1250, refunded: 1000, count: 2, settlement_amount: usdc(expected.kesSettlement) },
    ]);
    expect(kes.payments.map((p) => p.id)).toEqual([ids.d, ids.c]);
    expect(kes.settlement_amount).toBe(usdc(expected.kesSettlement));

    const ghs = await revenue(m.actor, { ...DAY, currency: 'GHS' });
    expect(ghs).toMatchObject({
      currencies: [],
      count: 0,
      settlement_amount: 0,
      payments: [],
      has_more: false,
    });
  });

  it('an offset or a plain date names the same instants; a wider range picks up the neighbours', async () => {
    const day = await revenue(m.actor, DAY);
    const lagos = await revenue(m.actor, { from: '2026-03-10T01:00:00+01:00', to: '2026-03-11T01:00:00+01:00' });
    expect(lagos).toEqual(day);
    expect(await revenue(m.actor, { from: '2026-03-10', to: '2026-03-11' })).toEqual(day);
    const wider = await revenue(m.actor, { from: '2026-03-09', to: '2026-03-12' });
    expect(wider.payments.map((p) => p.id)).toEqual([ids.after, ids.d, ids.c, ids.b, ids.a, ids.before]);
    expect(wider.count).toBe(6);
  });

  it('reads the same on the agent channel (in a transaction, logged)', async () => {
    const onAgent = executedOutput(
      await executeTool(getRevenue, DAY, { runtime, actor: { ...m.actor, channel: 'agent' } }),
    );
    expect(onAgent).toEqual(await revenue(m.actor, DAY));
  });

  it('the live mode sees only its own payment', async () => {
    const out = await revenue({ ...m.actor, livemode: true }, DAY);
    expect(out).toMatchObject({
      currencies: [{ currency: 'NGN', amount: 20_000, refunded: 0, count: 1 }],
      count: 1,
      payments: [{ id: ids.live, status: 'settled', paid_at: '2026-03-10T10:02:00.000Z' }],
    });
  });

  it('GET /v1/revenue returns the same object; without a key it is 401', async () => {
    const url = `/v1/revenue?from=${DAY.from}&to=${DAY.to}`;
    const res = await app.inject({ method: 'GET', url, headers: bearer(m.apiKey) });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual(await revenue(m.actor, DAY));

    const offset = await app.inject({
      method: 'GET',
      url: `/v1/revenue?from=${encodeURIComponent('2026-03-10T01:00:00+01:00')}&to=2026-03-11&currency=NGN`,
      headers: bearer(m.apiKey),
    });
    expect(offset.statusCode, offset.body).toBe(200);
    expect(offset.json().currencies).toEqual([expect.objectContaining({ currency: 'NGN', count: 2 })]);

    const anonymous = await app.inject({ method: 'GET', url });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json().error.type).toBe('authentication_error');
  });
});

describe('get_revenue refusals name the field and the rule', () => {
  it('to at or before from is a 400 naming to', async () => {
    const { actor, apiKey } = await merchant();
    for (const to of [DAY.from, '2026-03-09T23:59:59Z']) {
      const error = await refusal(actor, { from: DAY.from, to });
      expect(error).toMatchObject({ code: 'invalid_request', param: 'to' });
      expect(error.message).toContain('to must be after from');
    }
    const res = await app.inject({
      method: 'GET',
      url: `/v1/revenue?from=${DAY.to}&to=${DAY.from}`,
      headers: bearer(apiKey),
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ type: 'invalid_request_error', param: 'to' });
  });

  it('a range longer than 366 days is refused naming to; 366 days is accepted', async () => {
    const { actor } = await merchant();
    const error = await refusal(actor, { from: '2025-01-01T00:00:00Z', to: '2026-01-02T00:00:01Z' });
    expect(error).toMatchObject({ code: 'invalid_request', param: 'to' });
    expect(error.message).toContain('at most 366 days');
    expect((await revenue(actor, { from: '2025-01-01T00:00:00Z', to: '2026-01-02T00:00:00Z' })).count).toBe(0);
  });

  it('an unsupported currency is a 400 naming it', async () => {
    const { actor, apiKey } = await merchant();
    const error = await refusal(actor, { ...DAY, currency: 'XYZ' });
    expect(error).toMatchObject({ code: 'invalid_request', param: 'currency' });
    expect(error.message).toContain('XYZ is not supported');
    const res = await app.inject({
      method: 'GET',
      url: `/v1/revenue?from=${DAY.from}&to=${DAY.to}&currency=XYZ`,
      headers: bearer(apiKey),
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ param: 'currency' });
    expect(res.json().error.message).toContain('XYZ');
  });

  it('missing, malformed, zone-less or impossible times are refused naming the field', async () => {
    const { actor } = await merchant();
    const cases: [Record<string, unknown>, string][] = [
      [{ to: DAY.to }, 'from'],
      [{ from: DAY.from }, 'to'],
      [{ from: 'yesterday', to: DAY.to }, 'from'],
      [{ from: '2026-03-10T00:00:00', to: DAY.to }, 'from'], // no zone: would depend on the server's
      [{ from: '2026-02-30', to: DAY.to }, 'from'], // Date.parse would take it as March 2nd
      [{ from: DAY.from, to: '2026-03-10T24:00:00Z' }, 'to'],
      [{ from: '0000-12-31T00:00:00Z', to: DAY.to }, 'from'],
      [{ from: 20260310, to: DAY.to }, 'from'],
      [{ ...DAY, limit: 5 }, 'limit'],
    ];
    for (const [input, param] of cases) {
      const error = await refusal(actor, input);
      expect(error, JSON.stringify(input)).toMatchObject({ code: 'invalid_request', param });
    }
  });
});

describe('get_revenue over more than 100 payments', () => {
  it('counts them all, lists the newest 100 and says has_more', async () => {
    const { actor } = await merchant();
    const ids: string[] = [];
    for (let i = 0; i < 101; i++) {
      const minute = String(i % 60).padStart(2, '0');
      const hour = String(10 + Math.floor(i / 60)).padStart(2, '0');
      const at = `2026-04-01T${hour}:${minute}:00Z`;
      ids.push((await paid(actor, at, at, { amount: 100 + i, currency: 'UGX' })).id);
    }
    const out = await revenue(actor, { from: '2026-04-01', to: '2026-04-02' });
    expect(out.count).toBe(101);
    // 100 + 101 + … + 200 UGX (no minor units).
    expect(out.currencies).toEqual([expect.objectContaining({ currency: 'UGX', amount: 15_150, count: 101 })]);
    expect(out.payments).toHaveLength(100);
    expect(out.payments.map((p) => p.id)).toEqual(ids.slice(1).reverse());
    expect(out.has_more).toBe(true);
  }, 60_000);
});
