import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  DARAJA_RESULT_CODES,
  type FakeDaraja,
  type FakeEnvironment,
  type InvalidTokenAnswer,
  startFakeDaraja,
  stkPassword,
} from './daraja.ts';

/**
 * The fake Daraja against what Safaricom publishes: each rule of its header comment, and the
 * published samples of fixtures/daraja/ replayed, request for request and shape for shape.
 */

/** The sandbox's published passkey: the published push sample's Password is built with it. */
const PASSKEY = 'bfb279f9aa9bdbcf158e97dd71a467cd2e0c893059b10f78e6b72ada1ed2c919';
const APP = { consumerKey: 'key-1', consumerSecret: 'secret-1', shortcode: '174379', passkey: PASSKEY };
const PRODUCTION_APP = {
  ...APP,
  consumerKey: 'live-key',
  consumerSecret: 'live-secret',
  environment: 'production',
} as const;
const PHONE = '254708374149';
const TIMESTAMP = '20240710091526';
const PUSH = '/mpesa/stkpush/v1/processrequest';
const QUERY = '/mpesa/stkpushquery/v1/query';

const sample = (name: string): Record<string, unknown> => {
  const { _source, ...payload } = JSON.parse(
    readFileSync(new URL(`./fixtures/daraja/${name}`, import.meta.url), 'utf8'),
  ) as Record<string, unknown>;
  expect(_source, `${name} names where it was published`).toMatch(/https:\/\//);
  return payload;
};
/** The same keys, recursively, and the same texts where Daraja's answer is fixed text. */
const shapeOf = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(shapeOf)
    : value && typeof value === 'object'
      ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shapeOf(v)]))
      : typeof value;

async function withFake(
  run: (fake: FakeDaraja) => Promise<void>,
  resolveCallback?: (url: URL) => string | undefined,
): Promise<void> {
  const fake = await startFakeDaraja({ apps: [APP, PRODUCTION_APP], resolveCallback });
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
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/result`;
  return { url, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const basic = (key: string, secret: string) => `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}`;
const base = (fake: FakeDaraja, environment: FakeEnvironment) =>
  environment === 'sandbox' ? fake.baseUrl : fake.productionBaseUrl;

async function token(fake: FakeDaraja, environment: FakeEnvironment = 'sandbox'): Promise<string> {
  const app = environment === 'sandbox' ? APP : PRODUCTION_APP;
  const res = await fetch(`${base(fake, environment)}/oauth/v1/generate?grant_type=client_credentials`, {
    headers: { authorization: basic(app.consumerKey, app.consumerSecret) },
  });
  return ((await res.json()) as { access_token: string }).access_token;
}

async function post(
  fake: FakeDaraja,
  path: string,
  body: unknown,
  bearer?: string,
  environment: FakeEnvironment = 'sandbox',
) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  const res = await fetch(`${base(fake, environment)}${path}`, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
  });
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
    CallBackURL: 'https://shop.example.com/hooks/result',
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

describe('fake Daraja: OAuth', () => {
  it('issues a token for known credentials, in their own environment only, and refuses the rest in the documented shapes', () =>
    withFake(async (fake) => {
      const url = `${fake.baseUrl}/oauth/v1/generate?grant_type=client_credentials`;
      const good = await fetch(url, { headers: { authorization: basic('key-1', 'secret-1') } });
      expect(good.status).toBe(200);
      const body = (await good.json()) as Record<string, unknown>;
      expect(shapeOf(body)).toEqual({ ...(shapeOf(sample('oauth.response.json')) as object), expires_in: 'string' });
      expect(body).toEqual({ access_token: expect.stringMatching(/^[A-Za-z0-9]{28}$/), expires_in: '3599' });

      expect((await fetch(url, { headers: { authorization: basic('key-1', 'nope') } })).status).toBe(401);
      // A sandbox app is no production app.
      const elsewhere = await fetch(`${fake.productionBaseUrl}/oauth/v1/generate?grant_type=client_credentials`, {
        headers: { authorization: basic('key-1', 'secret-1') },
      });
      expect(elsewhere.status).toBe(401);

      const noAuth = await fetch(url);
      expect(noAuth.status).toBe(400);
      expect(await noAuth.json()).toMatchObject({ errorCode: '400.008.01' });
      const grant = await fetch(`${fake.baseUrl}/oauth/v1/generate?grant_type=password`, {
        headers: { authorization: basic('key-1', 'secret-1') },
      });
      expect(grant.status).toBe(400);
      expect(await grant.json()).toMatchObject({ errorCode: '400.008.02', errorMessage: 'Invalid grant type passed' });
    }));

  it('a new token invalidates the previous one (FAQ 3), and a token works on its own environment only', () =>
    withFake(async (fake) => {
      const first = await token(fake);
      expect((await post(fake, PUSH, pushBody(), first)).status).toBe(200);
      const second = await token(fake);
      expect(fake.tokensIssued).toEqual({ sandbox: 2, production: 0 });
      expect((await post(fake, QUERY, queryBody('ws_CO_x'), first)).json).toMatchObject({ errorCode: '404.001.03' });
      expect((await post(fake, QUERY, queryBody('ws_CO_x'), second)).json.errorMessage).toBe(
        'Bad Request - Invalid CheckoutRequestID',
      );
      expect((await post(fake, QUERY, queryBody('ws_CO_x'), second, 'production')).json).toMatchObject({
        errorCode: '404.001.03',
      });
    }));

  it.each([
    ['invalid_access_token', 404, '404.001.03', 'Invalid Access Token'],
    ['invalid_access_token_401', 401, '401.002.01', expect.stringMatching(/^Error Occurred - Invalid Access Token - /)],
    ['invalid_access_token_400', 400, '400.003.01', 'Invalid Access Token'],
  ] as const)('answers an invalid token as documented: %s', (answer, status, errorCode, errorMessage) =>
    withFake(async (fake) => {
      fake.answerInvalidTokensWith(answer as InvalidTokenAnswer);
      expect(await post(fake, PUSH, pushBody(), 'not-a-token')).toEqual({
        status,
        json: { requestId: expect.any(String), errorCode, errorMessage },
      });
      const t = await token(fake);
      fake.expireTokens();
      expect((await post(fake, PUSH, pushBody(), t)).json.errorCode).toBe(errorCode);
      expect((await post(fake, PUSH, pushBody())).json).toMatchObject({ errorCode: '404.001.04' });
      expect(fake.pushes.size).toBe(0);
    }),
  );
});

describe('fake Daraja: the push, against the published request', () => {
  it("takes Safaricom's own sample request and answers in the shape of its sample response", () =>
    withFake(async (fake) => {
      const res = await post(fake, PUSH, sample('stkpush.request.json'), await token(fake));
      const published = sample('stkpush.response.json');
      expect(res.status).toBe(200);
      expect(shapeOf(res.json)).toEqual(shapeOf(published));
      expect(res.json).toMatchObject({
        ResponseCode: published.ResponseCode,
        ResponseDescription: published.ResponseDescription,
        CustomerMessage: published.CustomerMessage,
        CheckoutRequestID: expect.stringMatching(/^ws_CO_\d{17}722111111$/),
      });
    }));

  it("refuses a bad field in the sample error's shape, and reads no body without Content-Type (FAQ 9)", () =>
    withFake(async (fake) => {
      const t = await token(fake);
      const refused = await post(fake, PUSH, pushBody({ BusinessShortCode: 'abc' }), t);
      const published = sample('stkpush.error.invalid_shortcode.json');
      expect(refused.status).toBe(400);
      expect(refused.json).toEqual({ ...published, requestId: expect.any(String) });
      const untyped = await fetch(`${fake.baseUrl}${PUSH}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t}`, 'content-type': 'text/plain' },
        body: JSON.stringify(pushBody()),
      });
      expect(await untyped.json()).toMatchObject({ errorMessage: published.errorMessage });
    }));

  it('checks the password against shortcode + passkey + timestamp', () =>
    withFake(async (fake) => {
      const t = await token(fake);
      const wrong = await post(fake, PUSH, pushBody({ Password: stkPassword('174379', 'other', TIMESTAMP) }), t);
      expect(wrong).toMatchObject({
        status: 500,
        json: { errorCode: '500.001.1001', errorMessage: 'Wrong credentials' },
      });
      expect((await post(fake, PUSH, pushBody({ Timestamp: '20240710091527' }), t)).json.errorMessage).toBe(
        'Wrong credentials',
      );
      expect((await post(fake, PUSH, pushBody({ BusinessShortCode: '600000' }), t)).json.errorMessage).toBe(
        'Merchant does not exist',
      );
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

  it("refuses the callback URLs Safaricom's URL rules forbid, as Invalid CallBackURL", () =>
    withFake(async (fake) => {
      const sandbox = await token(fake);
      const production = await token(fake, 'production');
      const verdict = async (url: string, environment: FakeEnvironment) => {
        const res = await post(
          fake,
          PUSH,
          pushBody({ CallBackURL: url, PhoneNumber: '254711000001', PartyA: '254711000001' }),
          environment === 'sandbox' ? sandbox : production,
          environment,
        );
        if (res.status === 200) await fake.phone.cancel(res.json.CheckoutRequestID as string, { callback: false });
        return res.status === 200 ? 'taken' : res.json.errorMessage;
      };
      const refused = 'Bad Request - Invalid CallBackURL';
      for (const environment of ['sandbox', 'production'] as const) {
        for (const url of [
          'https://shop.example.com/mpesa/result',
          'https://shop.example.com/M-PESA',
          'https://m-pesa.shop.example.com/result',
          'https://shop.example.com/safaricom',
          'https://shop.example.com/cgi/run.exe',
          'https://shop.example.com/exec',
          'https://shop.example.com/CMD/1',
          'https://shop.example.com/sql',
          'https://shop.example.com/result?query=1',
        ]) {
          expect(await verdict(url, environment), `${environment} ${url}`).toBe(refused);
        }
      }
      // Plain http and a private host: the sandbox takes them; production only HTTPS on the Internet.
      expect(await verdict('http://127.0.0.1:9/hooks/stk/ab', 'sandbox')).toBe('taken');
      for (const url of [
        'http://shop.example.com/hooks/stk/ab',
        'https://127.0.0.1/hooks/stk/ab',
        'https://10.0.0.8/hooks/stk/ab',
        'https://localhost/hooks/stk/ab',
        'https://shop.internal/hooks/stk/ab',
        'https://abc.ngrok-free.app/hooks/stk/ab',
      ]) {
        expect(await verdict(url, 'production'), url).toBe(refused);
      }
      expect(await verdict('https://shop.example.com/hooks/stk/ab', 'production')).toBe('taken');
    }));
});

describe('fake Daraja: the result, against the published callbacks and queries', () => {
  it('accept: one callback in the shape of the published success sample (Amount a decimal), then the query says "0"', () =>
    withFake(async (fake) => {
      const receiver = await startReceiver();
      try {
        const t = await token(fake);
        const waiting = fake.waitForPush(PHONE, 5_000);
        const ack = await post(fake, PUSH, pushBody({ CallBackURL: receiver.url }), t);
        const push = await waiting;
        expect(push).toMatchObject({ checkoutRequestId: ack.json.CheckoutRequestID, amount: 150, state: 'pending' });

        // While the prompt is open the query answers as Safaricom's own sample shows.
        const open = await post(fake, QUERY, queryBody(push.checkoutRequestId), t);
        expect(open.status).toBe(500);
        expect(open.json).toEqual({ ...sample('stkpushquery.being_processed.json'), requestId: expect.any(String) });

        await fake.phone.accept(push.checkoutRequestId);
        expect(receiver.received).toHaveLength(1);
        expect(receiver.received[0]!.contentType).toBe('application/json');
        const raw = receiver.received[0]!.body;
        expect(raw).toContain('{"Name":"Amount","Value":150.00}');
        const callback = JSON.parse(raw);
        const published = sample('stk_callback.success.json') as { Body: { stkCallback: Record<string, unknown> } };
        expect(shapeOf(callback)).toEqual(shapeOf(published));
        expect(callback.Body.stkCallback).toMatchObject({
          MerchantRequestID: push.merchantRequestId,
          CheckoutRequestID: push.checkoutRequestId,
          ResultCode: 0,
          ResultDesc: published.Body.stkCallback.ResultDesc,
        });
        expect(callback.Body.stkCallback.CallbackMetadata.Item).toEqual([
          { Name: 'Amount', Value: 150 },
          { Name: 'MpesaReceiptNumber', Value: expect.stringMatching(/^[A-Z][A-Z0-9]{9}$/) },
          { Name: 'TransactionDate', Value: expect.any(Number) },
          { Name: 'PhoneNumber', Value: 254708374149 },
        ]);
        expect(String(callback.Body.stkCallback.CallbackMetadata.Item[2].Value)).toMatch(/^20\d{12}$/);
        expect(fake.callbackBody(push.checkoutRequestId)).toBe(raw);

        const query = await post(fake, QUERY, queryBody(push.checkoutRequestId), t);
        expect(query.status).toBe(200);
        expect(query.json).toEqual({
          ...sample('stkpushquery.success.json'),
          MerchantRequestID: push.merchantRequestId,
          CheckoutRequestID: push.checkoutRequestId,
        });
      } finally {
        await receiver.close();
      }
    }));

  it('on production: the callback carries a Balance item with no Value and the query the live "successsfully", as live samples show', async () => {
    const receiver = await startReceiver();
    try {
      // The test plays DNS and TLS for shop.example.com: its callbacks reach the receiver.
      await withFake(
        async (fake) => {
          const t = await token(fake, 'production');
          const phone = { PhoneNumber: '254711000002', PartyA: '254711000002' };
          const paid = (await post(fake, PUSH, pushBody(phone), t, 'production')).json.CheckoutRequestID as string;
          await fake.phone.accept(paid);
          const live = sample('stk_callback.success_live_balance.json') as {
            Body: { stkCallback: { CallbackMetadata: { Item: Array<{ Name: string }> } } };
          };
          const items = JSON.parse(receiver.received[0]!.body).Body.stkCallback.CallbackMetadata.Item;
          expect(items.map((i: { Name: string }) => i.Name)).toEqual(
            live.Body.stkCallback.CallbackMetadata.Item.map((i) => i.Name),
          );
          expect(items[2]).toEqual({ Name: 'Balance' });
          expect(fake.callbacks[0]).toMatchObject({ url: 'https://shop.example.com/hooks/result', status: 200 });

          const cancelled = (await post(fake, PUSH, pushBody(phone), t, 'production')).json.CheckoutRequestID as string;
          await fake.phone.cancel(cancelled);
          const query = await post(fake, QUERY, queryBody(cancelled), t, 'production');
          expect(query.json).toEqual({
            ...sample('stkpushquery.cancelled_live.json'),
            MerchantRequestID: expect.any(String),
            CheckoutRequestID: cancelled,
          });
          expect(JSON.parse(receiver.received[1]!.body)).toEqual({
            Body: {
              stkCallback: {
                ...(sample('stk_callback.cancelled.json') as { Body: { stkCallback: object } }).Body.stkCallback,
                MerchantRequestID: expect.any(String),
                CheckoutRequestID: cancelled,
              },
            },
          });
        },
        (url) => (url.hostname === 'shop.example.com' ? receiver.url : undefined),
      );
    } finally {
      await receiver.close();
    }
  });

  it("refuses the query page's own sample request: its Password lost characters when it was published", () =>
    withFake(async (fake) => {
      const res = await post(fake, QUERY, sample('stkpushquery.request.json'), await token(fake));
      expect(res).toMatchObject({
        status: 500,
        json: { errorCode: '500.001.1001', errorMessage: 'Wrong credentials' },
      });
    }));

  it.each(DARAJA_RESULT_CODES.map((r) => [r.code, r.description, r._source]))(
    'produces result %s (%s), a number in the callback and a string in the query [%s]',
    (code, description) =>
      withFake(async (fake) => {
        const receiver = await startReceiver();
        try {
          const t = await token(fake);
          const ack = await post(fake, PUSH, pushBody({ CallBackURL: receiver.url }), t);
          const id = ack.json.CheckoutRequestID as string;
          await fake.phone.answer(id, code);
          const callback = JSON.parse(receiver.received[0]!.body).Body.stkCallback;
          expect(callback.ResultCode).toBe(/^\d+$/.test(code) ? Number(code) : code);
          expect(callback.ResultDesc).toBe(code === '1032' ? 'Request cancelled by user' : description);
          expect('CallbackMetadata' in callback).toBe(code === '0');
          const query = await post(fake, QUERY, queryBody(id), t);
          expect(query.json).toMatchObject({ ResponseCode: '0', ResultCode: code, ResultDesc: callback.ResultDesc });
        } finally {
          await receiver.close();
        }
      }),
  );

  it('sends one callback per push and never again, whatever the receiver answers', () =>
    withFake(async (fake) => {
      const receiver = await startReceiver(500);
      try {
        const t = await token(fake);
        const ack = await post(fake, PUSH, pushBody({ CallBackURL: receiver.url }), t);
        await fake.phone.insufficientFunds(ack.json.CheckoutRequestID as string);
        expect(fake.callbacks).toEqual([{ url: receiver.url, body: expect.any(String), status: 500 }]);
        // Whatever else happens on the fake afterwards, that push's result is not sent again.
        await post(fake, QUERY, queryBody(ack.json.CheckoutRequestID as string), t);
        const next = await post(fake, PUSH, pushBody({ CallBackURL: receiver.url }), t);
        await fake.phone.cancel(next.json.CheckoutRequestID as string);
        expect(receiver.received.map((r) => JSON.parse(r.body).Body.stkCallback.CheckoutRequestID)).toEqual([
          ack.json.CheckoutRequestID,
          next.json.CheckoutRequestID,
        ]);
      } finally {
        await receiver.close();
      }
    }));

  it('a second push while one is open cannot lock the subscriber; a timeout without a callback still answers the query', () =>
    withFake(async (fake) => {
      const t = await token(fake);
      const ack = await post(fake, PUSH, pushBody({ CallBackURL: 'http://127.0.0.1:9/down' }), t);
      expect(await post(fake, PUSH, pushBody(), t)).toMatchObject({
        status: 500,
        json: {
          errorCode: '500.001.1001',
          errorMessage: 'Unable to lock subscriber, a transaction is already in process for the current subscriber',
        },
      });
      const id = ack.json.CheckoutRequestID as string;
      await fake.phone.timeout(id, { callback: false });
      expect(fake.callbacks).toHaveLength(0);
      expect((await post(fake, QUERY, queryBody(id), t)).json).toMatchObject({
        ResultCode: '1037',
        ResultDesc: 'DS timeout user cannot be reached.',
      });
      expect((await post(fake, QUERY, queryBody('ws_CO_nope'), t)).json).toMatchObject({
        errorMessage: 'Bad Request - Invalid CheckoutRequestID',
      });
      const next = await post(fake, PUSH, pushBody({ CallBackURL: 'http://127.0.0.1:9/down' }), t);
      await fake.phone.answer(next.json.CheckoutRequestID as string, '1');
      expect(fake.callbacks).toEqual([{ url: 'http://127.0.0.1:9/down', body: expect.any(String), status: 'error' }]);
      await expect(fake.waitForPush('254711111111', 50)).rejects.toThrow(/no STK push/);
      await expect(fake.phone.answer(id, '0')).rejects.toThrow(/already ended/);
      await expect(fake.phone.answer(next.json.CheckoutRequestID as string, '42')).rejects.toThrow(/already ended/);
    }));
});
