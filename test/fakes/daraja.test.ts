import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { type FakeDaraja, startFakeDaraja, stkPassword } from './daraja.ts';

const APP = { consumerKey: 'key-1', consumerSecret: 'secret-1', shortcode: '174379', passkey: 'bfb279f9aa9bdbcf' };
const PHONE = '254708374149';
const TIMESTAMP = '20240710091526';

async function withFake(run: (fake: FakeDaraja) => Promise<void>): Promise<void> {
  const fake = await startFakeDaraja({ apps: [APP] });
  try {
    await run(fake);
  } finally {
    await fake.close();
  }
}

/** A tiny callback receiver: records every body POSTed to it. */
async function startReceiver(status = 200) {
  const received: Array<{ contentType: string | undefined; body: string }> = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      received.push({ contentType: req.headers['content-type'], body });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mpesa/callback`;
  return { url, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const basic = (key: string, secret: string) => `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}`;

async function token(fake: FakeDaraja): Promise<string> {
  const res = await fetch(`${fake.baseUrl}/oauth/v1/generate?grant_type=client_credentials`, {
    headers: { authorization: basic(APP.consumerKey, APP.consumerSecret) },
  });
  return ((await res.json()) as { access_token: string }).access_token;
}

async function post(fake: FakeDaraja, path: string, body: unknown, bearer?: string) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  const res = await fetch(`${fake.baseUrl}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

function pushBody(overrides: Record<string, unknown> = {}) {
  return {
    BusinessShortCode: 174379,
    Password: stkPassword(APP.shortcode, APP.passkey, TIMESTAMP),
    Timestamp: TIMESTAMP,
    TransactionType: 'CustomerPayBillOnline',
    Amount: '150',
    PartyA: PHONE,
    PartyB: '174379',
    PhoneNumber: PHONE,
    CallBackURL: 'https://example.com/mpesa/callback',
    AccountReference: 'ORDER-42',
    TransactionDesc: 'Order 42',
    ...overrides,
  };
}

const queryBody = (checkoutRequestId: string) => ({
  BusinessShortCode: '174379',
  Password: stkPassword(APP.shortcode, APP.passkey, TIMESTAMP),
  Timestamp: TIMESTAMP,
  CheckoutRequestID: checkoutRequestId,
});

const PUSH = '/mpesa/stkpush/v1/processrequest';
const QUERY = '/mpesa/stkpushquery/v1/query';

describe('fake Daraja: OAuth', () => {
  it('issues a token for known credentials and refuses the rest in the documented shapes', () =>
    withFake(async (fake) => {
      const url = `${fake.baseUrl}/oauth/v1/generate?grant_type=client_credentials`;
      const good = await fetch(url, { headers: { authorization: basic('key-1', 'secret-1') } });
      expect(good.status).toBe(200);
      const body = (await good.json()) as Record<string, unknown>;
      expect(body).toEqual({ access_token: expect.stringMatching(/^[A-Za-z0-9]{28}$/), expires_in: '3599' });

      const wrong = await fetch(url, { headers: { authorization: basic('key-1', 'nope') } });
      expect(wrong.status).toBe(401);
      expect(await wrong.json()).toMatchObject({ requestId: expect.any(String), errorCode: expect.any(String) });

      const noAuth = await fetch(url);
      expect(noAuth.status).toBe(400);
      expect(await noAuth.json()).toMatchObject({ errorCode: '400.008.01' });

      const grant = await fetch(`${fake.baseUrl}/oauth/v1/generate?grant_type=password`, {
        headers: { authorization: basic('key-1', 'secret-1') },
      });
      expect(grant.status).toBe(400);
      expect(await grant.json()).toMatchObject({ errorCode: '400.008.02', errorMessage: 'Invalid grant type passed' });
    }));

  it('requires a valid, unexpired bearer token on the API', () =>
    withFake(async (fake) => {
      expect((await post(fake, PUSH, pushBody())).json).toMatchObject({ errorCode: '404.001.04' });
      const bogus = await post(fake, PUSH, pushBody(), 'not-a-token');
      expect(bogus).toEqual({
        status: 404,
        json: { requestId: expect.any(String), errorCode: '404.001.03', errorMessage: 'Invalid Access Token' },
      });
      const t = await token(fake);
      fake.expireTokens();
      expect((await post(fake, PUSH, pushBody(), t)).json.errorCode).toBe('404.001.03');
      expect(fake.pushes.size).toBe(0);
    }));
});

describe('fake Daraja: STK push validation', () => {
  it('checks the password against shortcode + passkey + timestamp', () =>
    withFake(async (fake) => {
      const t = await token(fake);
      const wrong = await post(fake, PUSH, pushBody({ Password: stkPassword('174379', 'other', TIMESTAMP) }), t);
      expect(wrong).toMatchObject({
        status: 500,
        json: { errorCode: '500.001.1001', errorMessage: 'Wrong credentials' },
      });
      const skew = await post(fake, PUSH, pushBody({ Timestamp: '20240710091527' }), t);
      expect(skew.json.errorMessage).toBe('Wrong credentials');
      const unknown = await post(fake, PUSH, pushBody({ BusinessShortCode: '600000' }), t);
      expect(unknown.json.errorMessage).toBe('Merchant does not exist');
    }));

  it.each([
    [{ BusinessShortCode: 'abc' }, 'BusinessShortCode'],
    [{ Timestamp: '2024-07-10' }, 'Timestamp'],
    [{ TransactionType: 'CustomerPay' }, 'TransactionType'],
    [{ Amount: 0 }, 'Amount'],
    [{ Amount: '10.5' }, 'Amount'],
    [{ PartyA: '0708374149' }, 'PartyA'],
    [{ PhoneNumber: '25470837414' }, 'PhoneNumber'],
    [{ PhoneNumber: '254208374149' }, 'PhoneNumber'],
    [{ CallBackURL: 'not a url' }, 'CallBackURL'],
    [{ AccountReference: 'THIRTEEN-CHAR' }, 'AccountReference'],
    [{ TransactionDesc: 'fourteen chars' }, 'TransactionDesc'],
  ])('rejects %o as Invalid %s', (override, field) =>
    withFake(async (fake) => {
      const res = await post(fake, PUSH, pushBody(override), await token(fake));
      expect(res).toEqual({
        status: 400,
        json: {
          requestId: expect.any(String),
          errorCode: '400.002.02',
          errorMessage: `Bad Request - Invalid ${field}`,
        },
      });
    }),
  );

  it('reads no body without Content-Type application/json, as the portal FAQ says', () =>
    withFake(async (fake) => {
      const res = await fetch(`${fake.baseUrl}${PUSH}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${await token(fake)}`, 'content-type': 'text/plain' },
        body: JSON.stringify(pushBody()),
      });
      expect(await res.json()).toMatchObject({ errorMessage: 'Bad Request - Invalid BusinessShortCode' });
    }));
});

describe('fake Daraja: the payer', () => {
  it('push → accept → callback with metadata → query says 0', () =>
    withFake(async (fake) => {
      const receiver = await startReceiver();
      try {
        const t = await token(fake);
        const waiting = fake.waitForPush(PHONE, 5_000);
        const ack = await post(fake, PUSH, pushBody({ CallBackURL: receiver.url }), t);
        expect(ack).toEqual({
          status: 200,
          json: {
            MerchantRequestID: expect.any(String),
            CheckoutRequestID: expect.stringMatching(/^ws_CO_\d{17}708374149$/),
            ResponseCode: '0',
            ResponseDescription: 'Success. Request accepted for processing',
            CustomerMessage: 'Success. Request accepted for processing',
          },
        });
        const push = await waiting;
        expect(push).toMatchObject({ checkoutRequestId: ack.json.CheckoutRequestID, amount: 150, state: 'pending' });

        await fake.phone.accept(push.checkoutRequestId);
        expect(receiver.received).toHaveLength(1);
        expect(receiver.received[0]!.contentType).toBe('application/json');
        const callback = JSON.parse(receiver.received[0]!.body);
        expect(callback).toEqual({
          Body: {
            stkCallback: {
              MerchantRequestID: push.merchantRequestId,
              CheckoutRequestID: push.checkoutRequestId,
              ResultCode: 0,
              ResultDesc: 'The service request is processed successfully.',
              CallbackMetadata: {
                Item: [
                  { Name: 'Amount', Value: 150 },
                  { Name: 'MpesaReceiptNumber', Value: expect.stringMatching(/^[A-Z][A-Z0-9]{9}$/) },
                  { Name: 'TransactionDate', Value: expect.any(Number) },
                  { Name: 'PhoneNumber', Value: 254708374149 },
                ],
              },
            },
          },
        });
        expect(String(callback.Body.stkCallback.CallbackMetadata.Item[2].Value)).toMatch(/^20\d{12}$/);
        expect(fake.callbacks).toEqual([{ url: receiver.url, body: receiver.received[0]!.body, status: 200 }]);
        expect(fake.callbackBody(push.checkoutRequestId)).toBe(receiver.received[0]!.body);

        const query = await post(fake, QUERY, queryBody(push.checkoutRequestId), t);
        expect(query).toEqual({
          status: 200,
          json: {
            ResponseCode: '0',
            ResponseDescription: 'The service request has been accepted successfully',
            MerchantRequestID: push.merchantRequestId,
            CheckoutRequestID: push.checkoutRequestId,
            ResultCode: '0',
            ResultDesc: 'The service request is processed successfully.',
          },
        });
      } finally {
        await receiver.close();
      }
    }));

  it('cancel gives 1032 without metadata; a second push while one is pending cannot lock the subscriber', () =>
    withFake(async (fake) => {
      const receiver = await startReceiver();
      try {
        const t = await token(fake);
        const ack = await post(fake, PUSH, pushBody({ CallBackURL: receiver.url }), t);
        const again = await post(fake, PUSH, pushBody({ CallBackURL: receiver.url }), t);
        expect(again).toMatchObject({
          status: 500,
          json: {
            errorCode: '500.001.1001',
            errorMessage: 'Unable to lock subscriber, a transaction is already in process for the current subscriber',
          },
        });
        const id = ack.json.CheckoutRequestID as string;
        await fake.phone.cancel(id);
        expect(JSON.parse(receiver.received[0]!.body).Body.stkCallback).toEqual({
          MerchantRequestID: ack.json.MerchantRequestID,
          CheckoutRequestID: id,
          ResultCode: 1032,
          ResultDesc: 'Request cancelled by user.',
        });
        expect((await post(fake, QUERY, queryBody(id), t)).json).toMatchObject({ ResultCode: '1032' });
        expect((await post(fake, PUSH, pushBody(), t)).status).toBe(200);
      } finally {
        await receiver.close();
      }
    }));

  it('query while pending says the transaction is being processed; timeout without a callback still answers', () =>
    withFake(async (fake) => {
      const t = await token(fake);
      const ack = await post(fake, PUSH, pushBody(), t);
      const id = ack.json.CheckoutRequestID as string;
      expect(await post(fake, QUERY, queryBody(id), t)).toEqual({
        status: 500,
        json: {
          requestId: expect.any(String),
          errorCode: '500.001.1001',
          errorMessage: 'The transaction is being processed',
        },
      });
      await fake.phone.timeout(id, { callback: false });
      expect(fake.callbacks).toHaveLength(0);
      expect((await post(fake, QUERY, queryBody(id), t)).json).toMatchObject({
        ResultCode: '1037',
        ResultDesc: 'DS timeout user cannot be reached.',
      });
      expect((await post(fake, QUERY, queryBody('ws_CO_nope'), t)).json).toMatchObject({
        errorMessage: 'Bad Request - Invalid CheckoutRequestID',
      });
    }));

  it('records a callback to a receiver that is down without throwing', () =>
    withFake(async (fake) => {
      const t = await token(fake);
      const ack = await post(fake, PUSH, pushBody({ CallBackURL: 'http://127.0.0.1:9/down' }), t);
      await fake.phone.insufficientFunds(ack.json.CheckoutRequestID as string);
      expect(fake.callbacks).toEqual([{ url: 'http://127.0.0.1:9/down', body: expect.any(String), status: 'error' }]);
      expect(JSON.parse(fake.callbacks[0]!.body).Body.stkCallback.ResultCode).toBe(1);
      await expect(fake.waitForPush('254711111111', 50)).rejects.toThrow(/no STK push/);
    }));
});
