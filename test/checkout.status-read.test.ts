import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { stringifyJson } from '../src/core/json-text.ts';
import { findPaymentById } from '../src/db/repositories/payments.ts';
import { presentPublicPayment } from '../src/domain/present-payment.ts';
import { bearer, testAccount, testApp, testRuntime, type TestRuntime } from './support/harness.ts';

/**
 * GET /checkout/:id reads only the public columns and writes its body without the app's
 * serializer (checkout-status.ts): the body must stay byte for byte what the general path writes,
 * stringifyJson(presentPublicPayment(the whole row)), whatever the metadata holds.
 */
let runtime: TestRuntime;
let api: FastifyInstance;
let key: string;

beforeAll(async () => {
  runtime = await testRuntime();
  api = await testApp(runtime);
  key = (await testAccount(runtime)).apiKey;
});

/** A payment created with this raw JSON body (so metadata can hold what JSON.stringify cannot write). */
async function create(rawBody: string): Promise<string> {
  const res = await api.inject({
    method: 'POST',
    url: '/v1/payments',
    headers: { ...bearer(key), 'content-type': 'application/json' },
    payload: rawBody,
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().id;
}

async function expectSameAsGeneralPath(id: string): Promise<string> {
  const res = await api.inject({ method: 'GET', url: `/checkout/${id}` });
  expect(res.statusCode).toBe(200);
  expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(res.headers['cache-control']).toBe('no-store');
  const row = await findPaymentById(runtime.db, id);
  expect(res.body).toBe(stringifyJson(presentPublicPayment(runtime.config, row!)));
  return res.body;
}

const BASE = '"amount":5000,"currency":"NGN","redirect_url":"https://shop.example/thanks"';

describe('GET /checkout/:id writes what the general path writes', () => {
  it.each([
    ['no metadata', `{${BASE}}`],
    ['plain metadata', `{${BASE},"metadata":{"order":"o_1","n":3,"ok":true,"list":[1,"two",null]}}`],
    ['numbers JSON.stringify would rewrite', `{${BASE},"metadata":{"big":12345678901234567890,"price":1.10,"e":1e3}}`],
    [
      'text that looks like the key',
      `{${BASE},"description":"\\"metadata\\":null","merchant_name":"\\"metadata\\":{}","metadata":{"metadata":null}}`,
    ],
    ['unicode', `{${BASE},"metadata":{"név":"Ọ̀yọ́ ₦ 🙂","esc":"a\\u0000b\\n"}}`],
  ])('%s', async (_name, body) => {
    await expectSameAsGeneralPath(await create(body));
  });

  it('metadata stored with whitespace (written outside the service) is rewritten as the general path does', async () => {
    const id = await create(`{${BASE},"metadata":{"a":1}}`);
    await sql`update payments set metadata = ${'{ "a" : 1.50 , "b": [ 1, 2 ] }'}::json where id = ${id}`.execute(
      runtime.db,
    );
    const body = await expectSameAsGeneralPath(id);
    expect(body).toContain('"metadata":{"a":1.50,"b":[1,2]}');
  });

  it('a settled payment, with its settlement', async () => {
    const id = await create(`{${BASE},"metadata":{"order":"o_2"}}`);
    await runtime.db
      .updateTable('payments')
      .set({
        status: 'settled',
        paid_at: runtime.clock.now(),
        settled_at: runtime.clock.now(),
        settlement_tx_hash: `0x${'cd'.repeat(32)}`,
        settlement_chain_id: 31337,
        settlement_destination: 'address',
      })
      .where('id', '=', id)
      .execute();
    expect(JSON.parse(await expectSameAsGeneralPath(id))).toMatchObject({
      status: 'settled',
      settlement: { chain_id: 31337, tx_hash: `0x${'cd'.repeat(32)}` },
    });
  });

  it('an unknown id is the error object', async () => {
    const res = await api.inject({ method: 'GET', url: '/checkout/pay_0000000000000000000000' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ error: { code: 'not_found', param: 'id' } });
  });
});
