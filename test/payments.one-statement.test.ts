// POST /v1/payments is one statement (insert, idempotency claim and stored response; a prepared,
// prebuilt text) for a call neither judged nor logged, and falls back to the transaction whenever
// that statement writes nothing. Each case here is one way the statement must write nothing, or
// write exactly what the transaction would have.

import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { bearer, testAccount, testApp, testRuntime, type TestAccount, type TestRuntime } from './support/harness.ts';
import { VALID_PAYMENT } from './support/payments.ts';

let runtime: TestRuntime;
let app: FastifyInstance;
let merchant: TestAccount;

beforeAll(async () => {
  runtime = await testRuntime();
  app = await testApp(runtime);
  merchant = await testAccount(runtime);
});

const create = (body: object, key?: string) =>
  app.inject({
    method: 'POST',
    url: '/v1/payments',
    headers: { ...bearer(merchant.apiKey), ...(key ? { 'idempotency-key': key } : {}) },
    payload: body,
  });

async function storedResponse(key: string): Promise<unknown> {
  const { rows } = await sql<{ response: unknown }>`
    select response from idempotency_keys where account_id = ${merchant.accountId} and key = ${key}`.execute(
    runtime.db,
  );
  return rows[0]?.response;
}

describe('POST /v1/payments in one statement', () => {
  it('stores, under the key, exactly the payment it answers, and replays it', async () => {
    const first = await create(VALID_PAYMENT, 'one-statement-1');
    expect(first.statusCode).toBe(200);
    expect(await storedResponse('one-statement-1')).toMatchObject({ kind: 'executed', output: first.json() });
    const replay = await create(VALID_PAYMENT, 'one-statement-1');
    expect(replay.json()).toEqual(first.json());
    const { rows } = await sql`select id from payments where account_id = ${merchant.accountId}`.execute(runtime.db);
    expect(rows).toHaveLength(1);
  });

  it('refuses the same key with other parameters, writing nothing', async () => {
    const other = await create({ ...VALID_PAYMENT, amount: 7000 }, 'one-statement-1');
    expect(other.statusCode).toBe(409);
    expect(other.json().error.code).toBe('idempotency_conflict');
    const { rows } = await sql`select id from payments where account_id = ${merchant.accountId}`.execute(runtime.db);
    expect(rows).toHaveLength(1);
  });

  it('gives one payment to concurrent requests with one key', async () => {
    const answers = await Promise.all(Array.from({ length: 6 }, () => create(VALID_PAYMENT, 'one-statement-race')));
    const ids = new Set(answers.filter((a) => a.statusCode === 200).map((a) => a.json().id));
    expect(ids.size).toBe(1);
    const { rows } = await sql`select id from payments where id = ${[...ids][0]}`.execute(runtime.db);
    expect(rows).toHaveLength(1);
  });

  it("uses the account's fee as it is now, not as this process last read it", async () => {
    const before = await create(VALID_PAYMENT);
    expect(before.json().quote.fee_bps).toBe(100);
    await sql`update accounts set fee_bps = 250 where id = ${merchant.accountId}`.execute(runtime.db);
    const after = await create(VALID_PAYMENT, 'one-statement-fee');
    expect(after.statusCode).toBe(200);
    expect(after.json().quote.fee_bps).toBe(250);
    expect(await storedResponse('one-statement-fee')).toMatchObject({ output: { quote: { fee_bps: 250 } } });
    await sql`update accounts set fee_bps = 100 where id = ${merchant.accountId}`.execute(runtime.db);
  });

  it("uses the mode's settlement schedule as it is now", async () => {
    expect((await create(VALID_PAYMENT)).json().settlement_schedule).toBe('instant');
    const put = await app.inject({
      method: 'PUT',
      url: '/v1/settlement_schedule',
      headers: bearer(merchant.apiKey),
      payload: { schedule: 'hourly' },
    });
    expect(put.statusCode).toBe(200);
    expect((await create(VALID_PAYMENT)).json().settlement_schedule).toBe('hourly');
  });

  it('answers a taken reference with the first payment, or a conflict for other parameters', async () => {
    const first = await create({ ...VALID_PAYMENT, reference: 'order-one-statement' });
    const again = await create({ ...VALID_PAYMENT, reference: 'order-one-statement' }, 'one-statement-ref');
    expect(again.json().id).toBe(first.json().id);
    const other = await create({ ...VALID_PAYMENT, amount: 9000, reference: 'order-one-statement' });
    expect(other.statusCode).toBe(409);
  });
});
