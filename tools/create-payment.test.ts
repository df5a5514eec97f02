import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.ts';
import { AppError } from '../src/core/errors.ts';
import { executedOutput, executeTool } from '../src/pipeline/execute-tool.ts';
import type { Actor } from '../src/core/tool.ts';
import { DEFAULT_POLICY, PolicySchema, policyToJson } from '../src/policy/policy-schema.ts';
import { savePolicy } from '../src/policy/store.ts';
import { testAccount, testRuntime, type TestRuntime } from '../test/support/harness.ts';
import { ADDRESS_A, ADDRESS_B, firstKeyAuth } from '../test/support/money.ts';
import { createPayment } from './create-payment.ts';
import { getPayment } from './get-payment.ts';

// A fixed clock: created, expires_at and the quote's expiry are exact instants.
const NOW = '2026-05-01T09:00:00.000Z';
let runtime: TestRuntime;

beforeAll(async () => {
  runtime = await testRuntime({}, { clock: new ManualClock(new Date(NOW)) });
});

async function merchant(channel: Actor['channel'] = 'api'): Promise<Actor> {
  const account = await testAccount(runtime);
  return { ...(await firstKeyAuth(runtime, account.accountId)), channel };
}

async function refusal(actor: Actor, input: unknown, idempotencyKey?: string): Promise<AppError> {
  const error = await executeTool(createPayment, input, { runtime, actor, idempotencyKey }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

async function paymentsOf(actor: Actor): Promise<string[]> {
  const rows = await runtime.db.selectFrom('payments').select('id').where('account_id', '=', actor.accountId).execute();
  return rows.map((r) => r.id);
}

const BASE = { amount: 100, currency: 'USD', redirect_url: 'https://shop.example/thanks' };

describe('create_payment', () => {
  it('creates a pending checkout session with its quote locked at the sandbox rate, less the 1% fee', async () => {
    const actor = await merchant();
    const out = executedOutput(
      await executeTool(
        createPayment,
        {
          ...BASE,
          currency: 'usd',
          reference: 'order-1',
          merchant_name: 'Shop',
          description: 'Two mugs',
          payout_address: ADDRESS_A,
          metadata: { cart: { items: 2 } },
          ttl_minutes: 30,
        },
        { runtime, actor },
      ),
    );
    const expiresAt = '2026-05-01T09:30:00.000Z';
    expect(out).toEqual({
      id: expect.stringMatching(/^pay_/),
      object: 'payment',
      livemode: false,
      status: 'pending',
      amount: 100,
      currency: 'USD',
      amount_refunded: 0,
      checkout_url: `${runtime.config.checkoutBaseUrl}/pay/${out.id}`,
      redirect_url: 'https://shop.example/thanks',
      reference: 'order-1',
      merchant_name: 'Shop',
      description: 'Two mugs',
      webhook_url: null,
      payout_address: ADDRESS_A,
      metadata: { cart: { items: 2 } },
      // USD is 1 per USDC in the sandbox table: 100 USD is 100 USDC gross, 1 USDC fee (100 bps).
      quote: {
        source: 'sandbox',
        rate: '1',
        fee_bps: 100,
        settlement_asset: 'USDC',
        gross_settlement_amount: 100,
        fee_amount: 1,
        settlement_amount: 99,
        expires_at: expiresAt,
        valid_until: expiresAt,
      },
      settlement: null,
      settlement_schedule: 'instant',
      settlement_due_at: null,
      created: NOW,
      expires_at: expiresAt,
      paid_at: null,
      settled_at: null,
      expired_at: null,
    });
    // What it returned is what is stored: a read gives the same record.
    expect(executedOutput(await executeTool(getPayment, { payment_id: out.id }, { runtime, actor }))).toEqual(out);
  });

  it('defaults: a 60-minute session, no reference; "" and null count as not given', async () => {
    const actor = await merchant();
    const out = executedOutput(
      await executeTool(createPayment, { ...BASE, reference: '', description: null }, { runtime, actor }),
    );
    expect(out).toMatchObject({ reference: null, description: null, expires_at: '2026-05-01T10:00:00.000Z' });
  });

  it('refusals name the field and the rule; nothing is written', async () => {
    const actor = await merchant();
    const cases: [Record<string, unknown>, string, string][] = [
      [{ ...BASE, amount: 0 }, 'amount', 'positive'],
      [{ ...BASE, amount: '100' }, 'amount', 'must be a number'],
      [{ ...BASE, amount: 1_000_000_001 }, 'amount', 'at most 1,000,000,000'],
      [{ ...BASE, amount: 100.001 }, 'amount', 'at most 2 decimal places for USD'],
      [{ ...BASE, amount: 100.5, currency: 'UGX' }, 'amount', 'whole number for UGX'],
      [{ ...BASE, currency: 'XYZ' }, 'currency', 'XYZ is not supported'],
      [{ ...BASE, redirect_url: 'ftp://shop.example/' }, 'redirect_url', 'absolute http(s) URL'],
      [{ ...BASE, reference: 'r'.repeat(65) }, 'reference', 'at most 64 characters'],
      [{ ...BASE, payout_address: '0x123' }, 'payout_address', '0x EVM address'],
      [{ ...BASE, payout_address: `0x${'0'.repeat(40)}` }, 'payout_address', 'zero address'],
      [{ ...BASE, metadata: [1, 2] }, 'metadata', 'JSON object'],
      [{ ...BASE, ttl_minutes: 1441 }, 'ttl_minutes', 'between 1 and 1440'],
      [{ ...BASE, settlement_schedule: 'threshold' }, 'settlement_schedule', 'must be one of'],
      [{ amount: 100, currency: 'USD' }, 'redirect_url', 'Missing required parameter'],
      [{ ...BASE, customer: 'x' }, 'customer', 'unknown parameter'],
      // A private webhook receiver is refused before anything opens (the precheck).
      [{ ...BASE, webhook_url: 'http://127.0.0.1/hooks' }, 'webhook_url', 'webhook'],
    ];
    for (const [input, param, rule] of cases) {
      const error = await refusal(actor, input);
      expect(error, JSON.stringify(input)).toMatchObject({ code: 'invalid_request', param });
      expect(error.message, JSON.stringify(input)).toContain(rule);
    }
    expect(await paymentsOf(actor)).toEqual([]);
  });

  it('a key without payments:write is refused', async () => {
    const actor = await merchant();
    const error = await refusal({ ...actor, scopes: new Set(['payments:read']) }, BASE);
    expect(error.code).toBe('permission_denied');
    expect(await paymentsOf(actor)).toEqual([]);
  });

  it('the same Idempotency-Key replays the first payment; other parameters are idempotency_conflict', async () => {
    const actor = await merchant();
    const first = await executeTool(createPayment, BASE, { runtime, actor, idempotencyKey: 'create-1' });
    const again = await executeTool(createPayment, BASE, { runtime, actor, idempotencyKey: 'create-1' });
    expect(again).toMatchObject({ kind: 'executed', replayed: true });
    expect(executedOutput(again)).toEqual(executedOutput(first));

    const error = await refusal(actor, { ...BASE, amount: 101 }, 'create-1');
    expect(error.code).toBe('idempotency_conflict');
    expect(await paymentsOf(actor)).toEqual([executedOutput(first).id]);

    // Keys are per account: another merchant's same key is its own payment.
    const other = await merchant();
    const theirs = executedOutput(
      await executeTool(createPayment, BASE, { runtime, actor: other, idempotencyKey: 'create-1' }),
    );
    expect(theirs.id).not.toBe(executedOutput(first).id);
  });

  it('a repeated reference returns the same payment; with other parameters it is a conflict naming reference', async () => {
    const actor = await merchant();
    const first = executedOutput(await executeTool(createPayment, { ...BASE, reference: 'inv-7' }, { runtime, actor }));
    const again = executedOutput(await executeTool(createPayment, { ...BASE, reference: 'inv-7' }, { runtime, actor }));
    expect(again.id).toBe(first.id);
    const error = await refusal(actor, { ...BASE, amount: 5, reference: 'inv-7' });
    expect(error).toMatchObject({ code: 'conflict', param: 'reference' });
    expect(error.message).toContain(first.id);
    expect(await paymentsOf(actor)).toEqual([first.id]);

    // References are per account too.
    const other = await merchant();
    const theirs = executedOutput(
      await executeTool(createPayment, { ...BASE, reference: 'inv-7' }, { runtime, actor: other }),
    );
    expect(theirs.id).not.toBe(first.id);
  });
});

describe('create_payment policy: where the money will settle', () => {
  async function denylisting(actor: Actor, address: string): Promise<void> {
    const policy = policyToJson(DEFAULT_POLICY);
    policy.recipients.denylist = [address];
    await savePolicy(runtime.db, actor, PolicySchema.parse(policy), null, runtime.clock.now());
  }

  it('on the agent channel a denylisted payout_address is policy_denied and nothing is created', async () => {
    const actor = await merchant('agent');
    await denylisting(actor, ADDRESS_B);
    const error = await refusal(actor, { ...BASE, payout_address: ADDRESS_B });
    expect(error.code).toBe('policy_denied');
    expect(error.message).toContain('deny');
    expect(await paymentsOf(actor)).toEqual([]);
    // Another address, or none, is allowed.
    const allowed = await executeTool(createPayment, { ...BASE, payout_address: ADDRESS_A }, { runtime, actor });
    expect(allowed).toMatchObject({ kind: 'executed', decision: 'allow' });
  });

  it('on the api channel a payment is not policy-checked (not a money movement)', async () => {
    const actor = await merchant('api');
    await denylisting(actor, ADDRESS_B);
    const out = await executeTool(createPayment, { ...BASE, payout_address: ADDRESS_B }, { runtime, actor });
    expect(out).toMatchObject({ kind: 'executed', decision: 'not_checked' });
  });
});
