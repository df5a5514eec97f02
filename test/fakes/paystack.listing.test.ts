// Paystack's List Transactions, which the daily reconciliation reads (docs/reconciliation.md): the
// adapter against Paystack's own published sample, and the fake's listing against the spec and the
// same sample. The fake's other endpoints are tested in paystack.test.ts.

import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.ts';
import { paystackRail } from '../../src/payments/rails/paystack.ts';
import { RailUnavailableError } from '../../src/payments/rails/rail.ts';
import type { Runtime } from '../../src/runtime.ts';
import { type FakePaystack, startFakePaystack } from './paystack.ts';

const KEY = 'sk_test_fake_paystack_listing_one';
const OTHER_KEY = 'sk_test_fake_paystack_listing_two';

const SAMPLE = JSON.parse(readFileSync(new URL('./fixtures/paystack/transaction_list.json', import.meta.url), 'utf8'));
const { _source, ...sampleAnswer } = SAMPLE;

let paystack: FakePaystack;
beforeAll(async () => {
  paystack = await startFakePaystack({
    integrations: [
      { secretKey: KEY, currencies: ['NGN'] },
      { secretKey: OTHER_KEY, currencies: ['NGN'] },
    ],
  });
});
afterAll(() => paystack?.close());

/** What listCollected needs of a runtime: where Paystack is. */
const runtimeFor = (baseUrl: string) => ({ config: loadConfig({ PAYSTACK_BASE_URL: baseUrl }) }) as Runtime;

async function list(query: string, key = KEY) {
  const res = await fetch(`${paystack.baseUrl}/transaction?${query}`, { headers: { authorization: `Bearer ${key}` } });
  // biome-ignore lint/suspicious/noExplicitAny: the listing's JSON as the tests read it.
  return { status: res.status, json: (await res.json()) as any };
}

/** A transaction of the integration, paid (or declined, or left abandoned) on the hosted page. */
async function transaction(amount: number, outcome: 'success' | 'failed' | 'abandoned' = 'success', key = KEY) {
  const res = await fetch(`${paystack.baseUrl}/transaction/initialize`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'ada@example.com', amount, currency: 'NGN' }),
  });
  const { reference } = ((await res.json()) as { data: { reference: string } }).data;
  if (outcome !== 'abandoned') await paystack.complete(reference, outcome);
  return reference;
}

describe("the Paystack adapter reads Paystack's published List Transactions sample", () => {
  it('counts what the payer was asked (requested_amount) and the fee they bore apart, every page read', async () => {
    expect(_source).toContain('paystack.com/docs/api/transaction/#list');
    const asked: string[] = [];
    // Page 1 is the sample; page 2 is empty, which ends a listing without pageCount.
    const server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://stub.invalid');
      asked.push(url.search);
      const page = url.searchParams.get('page');
      const body = page === '1' ? sampleAnswer : { ...sampleAnswer, data: [] };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const rows = await paystackRail.listCollected!({
        services: runtimeFor(baseUrl),
        credentials: { secret_key: KEY },
        from: new Date('2024-08-22T00:00:00Z'),
        to: new Date('2024-08-23T00:00:00Z'),
      });
      expect(rows).toEqual([
        {
          reference: 're4lyvq3s3',
          receipt: '4099260516',
          amountMinor: 30050n,
          payerFeeMinor: 10283n,
          currency: 'NGN',
          paidAt: new Date('2024-08-22T09:15:02.000Z'),
        },
      ]);
      // per_page in snake case, as this endpoint spells it; the window starts a day early (created vs paid).
      const first = new URLSearchParams(asked[0]);
      expect(first.get('per_page')).toBe('100');
      expect(first.get('from')).toBe('2024-08-21T00:00:00.000Z');
      expect(first.get('to')).toBe('2024-08-23T00:00:00.000Z');
      expect(asked.map((q) => new URLSearchParams(q).get('page'))).toEqual(['1', '2']);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('fails the listing on a collected row it cannot read, rather than leave it out of the count', async () => {
    const server = createServer((_req, res) => {
      const broken = { ...sampleAnswer, data: [{ ...sampleAnswer.data[0], amount: 'forty' }] };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(broken));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      await expect(
        paystackRail.listCollected!({
          services: runtimeFor(baseUrl),
          credentials: { secret_key: KEY },
          from: new Date('2024-08-22T00:00:00Z'),
          to: new Date('2024-08-23T00:00:00Z'),
        }),
      ).rejects.toBeInstanceOf(RailUnavailableError);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('fake Paystack: List Transactions', () => {
  it("answers in the published sample's shape: the same item fields, the cursor meta with use_cursor", async () => {
    await transaction(30050);
    const { status, json } = await list('use_cursor=true&per_page=1');
    expect(status).toBe(200);
    expect(json.message).toBe(sampleAnswer.message);
    for (const field of Object.keys(sampleAnswer.data[0])) expect(json.data[0]).toHaveProperty(field);
    expect(Object.keys(json.meta).sort()).toEqual(Object.keys(sampleAnswer.meta).sort());
  });

  it('pages with per_page and page, newest first, with the spec meta; the pages hold every transaction once', async () => {
    const refs: string[] = [];
    for (let i = 0; i < 5; i++) refs.push(await transaction(1000 + i, 'success', OTHER_KEY));
    const pages = [1, 2, 3].map((page) => list(`per_page=2&page=${page}`, OTHER_KEY));
    const answers = await Promise.all(pages);
    expect(answers[0]!.json.meta).toEqual({
      total: 5,
      total_volume: 5010,
      skipped: 0,
      perPage: 2,
      page: 1,
      pageCount: 3,
    });
    const listed = answers.flatMap((a) => a.json.data.map((t: { reference: string }) => t.reference));
    expect(listed).toEqual([...refs].reverse());
    expect((await list('per_page=2&page=4', OTHER_KEY)).json.data).toEqual([]);
  });

  it('filters by status and by from/to on creation, and lists only the calling integration', async () => {
    const paid = await transaction(2000);
    const declined = await transaction(2100, 'failed');
    const left = await transaction(2200, 'abandoned');
    const refsOf = (json: { data: Array<{ reference: string }> }) => json.data.map((t) => t.reference);
    expect(refsOf((await list('status=success&per_page=500')).json)).toContain(paid);
    expect(refsOf((await list('status=success&per_page=500')).json)).not.toContain(declined);
    expect(refsOf((await list('status=failed&per_page=500')).json)).toContain(declined);
    expect(refsOf((await list('status=abandoned&per_page=500')).json)).toContain(left);
    const future = new Date(Date.now() + 3600_000).toISOString();
    expect((await list(`from=${encodeURIComponent(future)}`)).json.data).toEqual([]);
    expect(refsOf((await list('per_page=500', OTHER_KEY)).json)).not.toContain(paid);
  });

  it('refuses a status outside the enum and a filter it does not implement, instead of ignoring them', async () => {
    expect((await list('status=pending')).status).toBe(400);
    expect((await list('customer_code=CUS_x')).status).toBe(400);
  });

  it('is what the adapter reads: successes within the window, at the asked amount, over several pages', async () => {
    const key = 'sk_test_fake_paystack_listing_many';
    const many = await startFakePaystack({ integrations: [{ secretKey: key, currencies: ['NGN'] }] });
    try {
      const refs: string[] = [];
      const mine = async (amount: number, outcome: 'success' | 'failed') => {
        const res = await fetch(`${many.baseUrl}/transaction/initialize`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ email: 'ada@example.com', amount, currency: 'NGN' }),
        });
        const { reference } = ((await res.json()) as { data: { reference: string } }).data;
        await many.complete(reference, outcome);
        return reference;
      };
      // More than one page of the adapter's 100, and declines that are not collected money.
      for (let i = 0; i < 103; i++) refs.push(await mine(5000 + i, 'success'));
      await mine(9999, 'failed');
      const now = Date.now();
      const rows = await paystackRail.listCollected!({
        services: runtimeFor(many.baseUrl),
        credentials: { secret_key: key },
        from: new Date(now - 3600_000),
        to: new Date(now + 3600_000),
      });
      expect(rows.map((r) => r.reference).sort()).toEqual([...refs].sort());
      expect(rows.find((r) => r.reference === refs[0])).toMatchObject({ amountMinor: 5000n, currency: 'NGN' });
    } finally {
      await many.close();
    }
  });
});
