// Daraja's Pull Transactions, which the daily reconciliation reads (docs/reconciliation.md): the
// M-Pesa adapter against the published answer sample, and the fake's Pull endpoints against the
// Pull page. The fake's STK endpoints are tested in daraja.test.ts.

import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.ts';
import { ManualClock } from '../../src/core/clock.ts';
import { mpesaRail, stkPassword } from '../../src/payments/rails/mpesa.ts';
import { RailUnavailableError } from '../../src/payments/rails/rail.ts';
import type { RailServices } from '../../src/payments/deps.ts';
import { type FakeDaraja, startFakeDaraja } from './daraja.ts';

const APP = {
  consumerKey: 'pull-key-1',
  consumerSecret: 'pull-secret-1',
  shortcode: '600000',
  passkey: 'c2b-pull-passkey',
};
const CREDENTIALS = {
  consumer_key: APP.consumerKey,
  consumer_secret: APP.consumerSecret,
  shortcode: APP.shortcode,
  passkey: APP.passkey,
  environment: 'sandbox',
  transaction_type: 'CustomerPayBillOnline',
} as const;

const SAMPLE = JSON.parse(
  readFileSync(new URL('./fixtures/daraja/pull_transactions_query.json', import.meta.url), 'utf8'),
);
const { _source, ...sampleAnswer } = SAMPLE;

/** What listCollected needs of a runtime: where Daraja is, and the time now. */
const runtimeFor = (baseUrl: string, now?: Date) =>
  ({
    config: loadConfig({ MPESA_SANDBOX_BASE_URL: baseUrl }),
    clock: new ManualClock(now),
  }) as unknown as RailServices;

async function withFake(run: (fake: FakeDaraja, bearer: string) => Promise<void>): Promise<void> {
  const fake = await startFakeDaraja({ apps: [APP] });
  try {
    const res = await fetch(`${fake.baseUrl}/oauth/v1/generate?grant_type=client_credentials`, {
      headers: { authorization: `Basic ${Buffer.from(`${APP.consumerKey}:${APP.consumerSecret}`).toString('base64')}` },
    });
    await run(fake, ((await res.json()) as { access_token: string }).access_token);
  } finally {
    await fake.close();
  }
}

async function post(fake: FakeDaraja, bearer: string, path: string, body: unknown) {
  const res = await fetch(`${fake.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}` },
    body: JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: Daraja's JSON as the tests read it.
  return { status: res.status, json: (await res.json()) as any };
}

const register = (fake: FakeDaraja, bearer: string, overrides: Record<string, unknown> = {}) =>
  post(fake, bearer, '/pulltransactions/v1/register', {
    ShortCode: APP.shortcode,
    RequestType: 'Pull',
    NominatedNumber: '0722000000',
    CallBackURL: 'https://operator.example/pull',
    ...overrides,
  });

/** A push the payer accepts on the phone: a paid M-Pesa payment of `shillings` to the shortcode. */
async function paidPush(fake: FakeDaraja, bearer: string, shillings: number, phone: string): Promise<string> {
  const timestamp = '20240710091526';
  const { json } = await post(fake, bearer, '/mpesa/stkpush/v1/processrequest', {
    BusinessShortCode: APP.shortcode,
    Password: stkPassword(APP.shortcode, APP.passkey, timestamp),
    Timestamp: timestamp,
    TransactionType: 'CustomerPayBillOnline',
    Amount: shillings,
    PartyA: phone,
    PartyB: APP.shortcode,
    PhoneNumber: phone,
    CallBackURL: 'https://operator.example/hooks/stk/1',
    AccountReference: `ORDER${shillings}`,
    TransactionDesc: 'Payment',
  });
  await fake.phone.accept(json.CheckoutRequestID, { callback: false });
  return fake.pushes.get(json.CheckoutRequestID)!.receipt!;
}

describe("the M-Pesa adapter reads Daraja's published Pull Transactions answer", () => {
  it('reads each row as a receipt and an amount in cents, from the nested Response, every page', async () => {
    expect(_source).toContain('developer.safaricom.co.ke/apis/PullTransaction');
    const queries: Array<Record<string, unknown>> = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => {
        body += chunk;
      });
      req.on('end', () => {
        const send = (json: unknown) =>
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(json));
        if (req.url?.startsWith('/oauth/')) return send({ access_token: 'pull-token', expires_in: '3599' });
        const query = JSON.parse(body) as Record<string, unknown>;
        queries.push(query);
        // The sample first, then Daraja's "no transactions" past the last row.
        if (query.OffSetValue === '0') return send(sampleAnswer);
        return send({ ResponseRefID: 'x', ResponseCode: '1001', ResponseMessage: 'No transactions', Response: [[]] });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const rows = await mpesaRail.listCollected!({
        services: runtimeFor(baseUrl, new Date('2020-08-06T00:00:00Z')),
        credentials: CREDENTIALS,
        from: new Date('2020-08-05T00:00:00Z'),
        to: new Date('2020-08-06T00:00:00Z'),
      });
      expect(rows).toEqual([
        {
          reference: 'yzlyrEsRG1',
          receipt: 'yzlyrEsRG1',
          amountMinor: 16800n,
          payerFeeMinor: 0n,
          currency: 'KES',
          paidAt: new Date('2020-08-05T10:13:00Z'),
        },
        {
          reference: 'ZobjR29vdz',
          receipt: 'ZobjR29vdz',
          amountMinor: 64700n,
          payerFeeMinor: 0n,
          currency: 'KES',
          paidAt: new Date('2020-08-05T10:13:00Z'),
        },
      ]);
      // The UTC day on Daraja's clock (EAT), and the offset moved on by the rows received.
      expect(queries).toEqual([
        { ShortCode: '600000', StartDate: '2020-08-05 03:00:00', EndDate: '2020-08-06 03:00:00', OffSetValue: '0' },
        { ShortCode: '600000', StartDate: '2020-08-05 03:00:00', EndDate: '2020-08-06 03:00:00', OffSetValue: '2' },
      ]);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('refuses a window older than the 48 hours Daraja keeps, rather than read its silence as nothing collected', async () => {
    await expect(
      mpesaRail.listCollected!({
        services: runtimeFor('http://127.0.0.1:9', new Date('2020-08-08T00:00:01Z')),
        credentials: CREDENTIALS,
        from: new Date('2020-08-05T00:00:00Z'),
        to: new Date('2020-08-06T00:00:00Z'),
      }),
    ).rejects.toThrow(/48 hours/);
  });
});

describe('fake Daraja: Pull Transactions', () => {
  it('registers a shortcode once (1000, then 1001), with a secure callback URL and a nominated number', async () => {
    await withFake(async (fake, bearer) => {
      expect((await register(fake, bearer, { CallBackURL: 'http://operator.example/pull' })).json.errorCode).toBe(
        '400.002.02',
      );
      expect((await register(fake, bearer, { NominatedNumber: '12' })).status).toBe(400);
      expect((await register(fake, bearer, { ShortCode: '999999' })).json.errorCode).toBe('400.001');
      const first = await register(fake, bearer);
      expect(first.json).toMatchObject({ ResponseStatus: '1000', ShortCode: '600000' });
      expect(first.json.ResponseDescription).toBe('Shortcode Registered Successfully');
      expect((await register(fake, bearer)).json).toMatchObject({
        ResponseStatus: '1001',
        ResponseDescription: 'ShortCode already Registered',
      });
    });
  });

  it('lists the paid pushes of a registered shortcode in the published shape, by row offset; 1001 past the end', async () => {
    await withFake(async (fake, bearer) => {
      const window = { ShortCode: APP.shortcode, StartDate: '2000-01-01 00:00:00', EndDate: '2100-01-01 00:00:00' };
      expect(
        (await post(fake, bearer, '/pulltransactions/v1/query', { ...window, OffSetValue: '0' })).json.errorCode,
      ).toBe('400.001');
      await register(fake, bearer);
      const receipts = [
        await paidPush(fake, bearer, 168, '254708374149'),
        await paidPush(fake, bearer, 647, '254708374150'),
      ];
      const first = await post(fake, bearer, '/pulltransactions/v1/query', { ...window, OffSetValue: '0' });
      expect(first.json).toMatchObject({ ResponseCode: '1000', ResponseMessage: 'Success' });
      const rows = first.json.Response[0];
      for (const field of Object.keys(sampleAnswer.Response[0][0])) expect(rows[0]).toHaveProperty(field);
      expect(rows.map((r: { transactionId: string }) => r.transactionId)).toEqual(receipts);
      expect(rows[0]).toMatchObject({
        amount: '168.00',
        billreference: 'ORDER168',
        transactiontype: 'c2b-pay-bill-debit',
      });
      const second = await post(fake, bearer, '/pulltransactions/v1/query', { ...window, OffSetValue: '1' });
      expect(second.json.Response[0].map((r: { transactionId: string }) => r.transactionId)).toEqual([receipts[1]]);
      expect(
        (await post(fake, bearer, '/pulltransactions/v1/query', { ...window, OffSetValue: '2' })).json,
      ).toMatchObject({ ResponseCode: '1001', Response: [[]] });
      const malformed = await post(fake, bearer, '/pulltransactions/v1/query', { ...window, StartDate: 'yesterday' });
      expect(malformed.json.errorCode).toBe('400.002.02');
    });
  });

  it('is what the adapter reads: the paid pushes of the window, at their amounts', async () => {
    await withFake(async (fake, bearer) => {
      await register(fake, bearer);
      const receipt = await paidPush(fake, bearer, 250, '254708374151');
      const now = Date.now();
      const rows = await mpesaRail.listCollected!({
        services: runtimeFor(fake.baseUrl),
        credentials: CREDENTIALS,
        from: new Date(now - 3600_000),
        to: new Date(now + 60_000),
      });
      expect(rows).toEqual([expect.objectContaining({ reference: receipt, amountMinor: 25000n, currency: 'KES' })]);
    });
  });

  it('an unregistered shortcode makes the listing unavailable, with what Daraja said', async () => {
    await withFake(async (fake) => {
      const now = Date.now();
      const listing = mpesaRail.listCollected!({
        services: runtimeFor(fake.baseUrl),
        credentials: CREDENTIALS,
        from: new Date(now - 3600_000),
        to: new Date(now),
      });
      await expect(listing).rejects.toBeInstanceOf(RailUnavailableError);
      await expect(listing).rejects.toThrow(/Invalid ShortCode/);
    });
  });
});
