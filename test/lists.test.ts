// Issue 16, point 2: every list pages both ways (starting_after, ending_before) and filters by
// status and creation time; payouts, refunds and revenue shares have lists; a revenue share's
// reference names it for good. Refunds need a settled payment, so the file runs the settlement
// worker on its own devnet.

import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import type { Runtime } from '../src/runtime.ts';
import { type SettlementWorker, startSettlementWorker } from '../src/settlement/worker.ts';
import { bearer, type TestAccount, testAccount, testApp } from './support/harness.ts';
import { ADDRESS_A, ADDRESS_B, ADDRESS_C, availableBalance, fund, post } from './support/money.ts';
import { createPayment, payPayment } from './support/payments.ts';
import { settlementRuntime, waitUntil } from './support/settlement.ts';

let chain: ChainConnection;
let runtime: Runtime;
let app: FastifyInstance;
let worker: SettlementWorker;
let merchant: TestAccount;
let other: TestAccount;

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await settlementRuntime(chain);
  app = await testApp(runtime);
  worker = startSettlementWorker(runtime);
  merchant = await testAccount(runtime);
  other = await testAccount(runtime);
  await fund(app, merchant.apiKey, 1000);
});

afterAll(async () => {
  await worker?.stop();
  await chain?.close();
});

const get = (url: string, key = merchant.apiKey) => app.inject({ method: 'GET', url, headers: bearer(key) });

interface Page {
  data: Array<{ id: string; status?: string }>;
  has_more: boolean;
}

async function page(url: string): Promise<Page> {
  const res = await get(url);
  expect(res.statusCode, `${url}: ${res.body}`).toBe(200);
  return res.json();
}

/**
 * Walks a list forward with starting_after, then back with ending_before from the oldest object,
 * 2 per page; `backward` ends with that oldest object, so both walks should list the same.
 */
async function walk(list: string): Promise<{ forward: string[]; backward: string[] }> {
  const sep = list.includes('?') ? '&' : '?';
  const forward: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    const p = await page(`${list}${sep}limit=2${cursor ? `&starting_after=${cursor}` : ''}`);
    forward.push(...p.data.map((o) => o.id));
    if (!p.has_more) break;
    cursor = p.data.at(-1)!.id;
  }
  const backward: string[] = [];
  cursor = forward.at(-1);
  for (;;) {
    const p = await page(`${list}${sep}limit=2&ending_before=${cursor}`);
    // Each page is newest first, like every page; the pages come newest last.
    backward.unshift(...p.data.map((o) => o.id));
    if (!p.has_more) break;
    cursor = p.data[0]!.id;
  }
  backward.push(...forward.slice(-1));
  return { forward, backward };
}

describe('lists of payouts, refunds and revenue shares', () => {
  const payoutIds: string[] = [];
  const shareIds: string[] = [];
  const refundIds: string[] = [];

  beforeAll(async () => {
    for (const [i, to] of [ADDRESS_A, ADDRESS_B, ADDRESS_C, ADDRESS_A, ADDRESS_B].entries()) {
      const res = await post(app, merchant.apiKey, '/v1/payouts', { amount: 1 + i, to_address: to, memo: `p${i}` });
      expect(res.statusCode, res.body).toBe(200);
      payoutIds.unshift(res.json().id);
    }
    for (let i = 0; i < 3; i++) {
      const res = await post(app, merchant.apiKey, '/v1/revenue_shares', {
        amount: 10,
        splits: [
          { to_address: ADDRESS_A, share_bps: 7000 },
          { to_address: ADDRESS_C, share_bps: 3000 },
        ],
      });
      expect(res.statusCode, res.body).toBe(200);
      shareIds.unshift(res.json().id);
    }
    const payment = await createPayment(app, merchant.apiKey, { amount: 9000, currency: 'NGN' });
    expect((await payPayment(app, merchant.apiKey, payment.id)).statusCode).toBe(200);
    await waitUntil(
      'the payment to settle',
      async () => (await get(`/v1/payments/${payment.id}`)).json().status === 'settled',
    );
    for (let i = 0; i < 3; i++) {
      const res = await post(app, merchant.apiKey, `/v1/payments/${payment.id}/refunds`, { amount: 1000 });
      expect(res.statusCode, res.body).toBe(200);
      refundIds.unshift(res.json().id);
    }
  });

  it('GET /v1/payouts pages forward and back to the same objects, newest first, legs included', async () => {
    const { forward, backward } = await walk('/v1/payouts');
    // 5 direct payouts, then 3 revenue shares of 2 legs each: newest first, the legs come first.
    expect(forward).toHaveLength(11);
    expect(forward.slice(6)).toEqual(payoutIds);
    expect(backward).toEqual(forward);
  });

  it('GET /v1/revenue_shares lists each share with its legs, and pages both ways', async () => {
    const { forward, backward } = await walk('/v1/revenue_shares');
    expect(forward).toEqual(shareIds);
    expect(backward).toEqual(shareIds);
    const first = (await page('/v1/revenue_shares?limit=1')).data[0] as unknown as {
      legs: Array<{ to_address: string; amount: number; revenue_share: string }>;
    };
    expect(first.legs.map((l) => [l.to_address, l.amount]).sort()).toEqual([
      [ADDRESS_A, 7],
      [ADDRESS_C, 3],
    ]);
    expect(first.legs.every((l) => l.revenue_share === shareIds[0])).toBe(true);
    const legs = await page(`/v1/payouts?revenue_share=${shareIds[0]}`);
    expect(legs.data).toHaveLength(2);
  });

  it('GET /v1/refunds lists the refunds, filtered by payment and status, and pages both ways', async () => {
    const { forward, backward } = await walk('/v1/refunds');
    expect(forward).toEqual(refundIds);
    expect(backward).toEqual(refundIds);
    const succeeded = await page('/v1/refunds?status=succeeded');
    expect(succeeded.data.map((r) => r.id)).toEqual(refundIds);
    expect((await page('/v1/refunds?status=failed')).data).toEqual([]);
  });

  it('filters by status and creation time', async () => {
    expect((await page('/v1/payouts?status=failed')).data).toEqual([]);
    const queuedOrSettled = (await page('/v1/payouts?limit=100')).data.map((p) => p.status);
    expect(queuedOrSettled.every((s) => s === 'queued' || s === 'settled')).toBe(true);
    const future = encodeURIComponent(new Date(runtime.clock.now().getTime() + 3_600_000).toISOString());
    for (const list of ['/v1/payouts', '/v1/refunds', '/v1/revenue_shares', '/v1/payments']) {
      expect((await page(`${list}?created_gte=${future}`)).data, list).toEqual([]);
      expect((await page(`${list}?created_lte=${future}&limit=1`)).data, list).toHaveLength(1);
    }
  });

  it('refuses both cursors at once, a cursor that is not the caller’s, and a bad filter, naming the field', async () => {
    const both = await get(`/v1/payouts?starting_after=${payoutIds[0]}&ending_before=${payoutIds[1]}`);
    expect(both.statusCode).toBe(400);
    expect(both.json().error).toMatchObject({ type: 'invalid_request_error', param: 'ending_before' });
    const foreign = await get(`/v1/payouts?ending_before=${payoutIds[0]}`, other.apiKey);
    expect(foreign.statusCode).toBe(400);
    expect(foreign.json().error.param).toBe('ending_before');
    const status = await get('/v1/refunds?status=done');
    expect(status.statusCode).toBe(400);
    expect(status.json().error.param).toBe('status');
    const share = await get(`/v1/payouts?revenue_share=${shareIds[0]}`, other.apiKey);
    expect(share.statusCode).toBe(404);
    expect(share.json().error.param).toBe('revenue_share');
    const payment = await get('/v1/refunds?payment_id=pay_unknown');
    expect(payment.statusCode).toBe(404);
    const time = await get('/v1/revenue_shares?created_gte=yesterday');
    expect(time.statusCode).toBe(400);
    expect(time.json().error.param).toBe('created_gte');
  });

  it('ending_before on the newest object is an empty first page', async () => {
    const newest = await page(`/v1/payouts?ending_before=${(await page('/v1/payouts?limit=1')).data[0]!.id}`);
    expect(newest).toEqual({ object: 'list', data: [], has_more: false });
  });

  it('every other list takes ending_before too', async () => {
    for (const list of ['/v1/payments', '/v1/events', '/v1/confirmations', '/agent/runs', '/agent/actions', '/keys']) {
      const res = await get(`${list}?ending_before=nope_123`);
      expect(res.statusCode, `${list}: ${res.body}`).toBe(400);
      expect(res.json().error.param, list).toBe('ending_before');
    }
  });
});

describe('one naming rule for timestamps', () => {
  const DEPRECATED = new Set(['last_used', 'expires', 'revoked', 'finished', 'updated', 'valid_until']);
  const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

  /** Every field holding a timestamp, as path → name, in an API response. */
  function timestampFields(value: unknown, path: string, found: string[]): string[] {
    if (Array.isArray(value)) {
      for (const [i, item] of value.entries()) timestampFields(item, `${path}[${i}]`, found);
    } else if (value && typeof value === 'object') {
      for (const [key, inner] of Object.entries(value)) {
        if (typeof inner === 'string' && ISO.test(inner)) found.push(`${path}.${key}`);
        else timestampFields(inner, `${path}.${key}`, found);
      }
    }
    return found;
  }

  it('every timestamp of every object is `created` or `<event>_at` (besides the aliases kept one release)', async () => {
    const endpoint = await post(app, merchant.apiKey, '/v1/webhook_endpoints', {
      url: 'https://93.184.216.34/hook',
      enabled_events: ['*'],
    });
    expect(endpoint.statusCode, endpoint.body).toBe(200);
    const reads = [
      '/v1/payments?limit=5',
      '/v1/payouts?limit=5',
      '/v1/refunds?limit=5',
      '/v1/revenue_shares?limit=5',
      '/v1/events?limit=5',
      '/v1/confirmations',
      '/v1/policy',
      '/keys',
      '/v1/webhook_endpoints',
      '/agent/runs',
      '/agent/actions',
    ];
    const events = (await page('/v1/events?limit=1')).data;
    if (events[0]) reads.push(`/v1/events/${events[0].id}/deliveries`);
    const offending: string[] = [];
    let seen = 0;
    for (const url of reads) {
      const fields = timestampFields((await get(url)).json(), url, []);
      seen += fields.length;
      for (const field of fields) {
        const name = field.slice(field.lastIndexOf('.') + 1);
        if (name !== 'created' && !name.endsWith('_at') && !DEPRECATED.has(name)) offending.push(field);
      }
    }
    expect(seen).toBeGreaterThan(20);
    expect(offending).toEqual([]);
  });
});

describe('a revenue share reference names one share for good', () => {
  const body = {
    amount: 20,
    reference: 'split-march',
    splits: [
      { to_address: ADDRESS_A, share_bps: 5000 },
      { to_address: ADDRESS_B, share_bps: 5000 },
    ],
  };

  it('the same request again returns the first share and moves nothing; other parameters are a 409', async () => {
    const before = await availableBalance(app, merchant.apiKey);
    const first = await post(app, merchant.apiKey, '/v1/revenue_shares', body);
    expect(first.statusCode, first.body).toBe(200);
    // The splits in another order are the same split.
    const again = await post(app, merchant.apiKey, '/v1/revenue_shares', {
      ...body,
      splits: [...body.splits].reverse(),
    });
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json().id).toBe(first.json().id);
    expect(await availableBalance(app, merchant.apiKey)).toBe(before - 20);

    const changed = await post(app, merchant.apiKey, '/v1/revenue_shares', { ...body, amount: 21 });
    expect(changed.statusCode).toBe(409);
    expect(changed.json().error).toMatchObject({ param: 'reference' });
    expect(changed.json().error.message).toContain(first.json().id);
    expect(await availableBalance(app, merchant.apiKey)).toBe(before - 20);
    const shares = await page('/v1/revenue_shares?reference=split-march');
    expect(shares.data.map((s) => s.id)).toEqual([first.json().id]);
  });
});
