import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { testAccount, testApp, testRuntime } from './support/harness.ts';
import { createPaymentRequest, VALID_PAYMENT } from './support/payments.ts';

let app: FastifyInstance;
let key: string;

beforeAll(async () => {
  const runtime = await testRuntime();
  app = await testApp(runtime);
  key = (await testAccount(runtime)).apiKey;
});

const ADDRESS = '0x52908400098527886e0f7030069857d2e4169ee7';
const PUBLIC_HOOK = 'https://93.184.216.34/hooks';

/** [name, overriding fields, accepted?, param named when refused] — each bound on both sides of its edge. */
const CASES: Array<[string, Record<string, unknown>, boolean, string?]> = [
  ['amount at the maximum 1,000,000,000', { amount: 1_000_000_000 }, true],
  ['amount 1,000,000,000.01', { amount: 1_000_000_000.01 }, false, 'amount'],
  ['amount the smallest unit 0.01 NGN', { amount: 0.01 }, true],
  ['amount 0', { amount: 0 }, false, 'amount'],
  ['amount negative', { amount: -5 }, false, 'amount'],
  ['amount with 3 decimals for NGN', { amount: 10.001 }, false, 'amount'],
  ['amount with decimals for a 0-decimal currency', { amount: 10.5, currency: 'UGX' }, false, 'amount'],
  ['amount whole for UGX', { amount: 5000, currency: 'UGX' }, true],
  ['amount as a string', { amount: '5000' }, false, 'amount'],
  ['amount missing', { amount: undefined }, false, 'amount'],
  ['currency of 2 characters is checked as a code', { currency: 'NG' }, false, 'currency'],
  ['currency of 1 character', { currency: 'N' }, false, 'currency'],
  ['currency of 9 characters', { currency: 'NGNNGNNGN' }, false, 'currency'],
  ['currency lower-case', { currency: 'kes' }, true],
  ['currency well-formed but unsupported', { currency: 'XYZ' }, false, 'currency'],
  ['currency USDC with its 6 decimals', { currency: 'USDC', amount: 1.123456 }, true],
  ['currency USDC with 7 decimals', { currency: 'USDC', amount: 1.1234567 }, false, 'amount'],
  ['currency missing', { currency: undefined }, false, 'currency'],
  ['redirect_url absolute https', { redirect_url: 'https://a.example/x?y=1' }, true],
  ['redirect_url relative', { redirect_url: '/thanks' }, false, 'redirect_url'],
  ['redirect_url javascript:', { redirect_url: 'javascript:alert(1)' }, false, 'redirect_url'],
  ['redirect_url missing', { redirect_url: undefined }, false, 'redirect_url'],
  ['reference of 64 characters', { reference: 'r'.repeat(64) }, true],
  ['reference of 65 characters', { reference: 'r'.repeat(65) }, false, 'reference'],
  ['merchant_name of 80 characters', { merchant_name: 'm'.repeat(80) }, true],
  ['merchant_name of 81 characters', { merchant_name: 'm'.repeat(81) }, false, 'merchant_name'],
  ['description of 300 characters', { description: 'd'.repeat(300) }, true],
  ['description of 301 characters', { description: 'd'.repeat(301) }, false, 'description'],
  ['webhook_url public https', { webhook_url: PUBLIC_HOOK }, true],
  ['webhook_url not a URL', { webhook_url: 'not a url' }, false, 'webhook_url'],
  ['webhook_url ftp', { webhook_url: 'ftp://93.184.216.34/x' }, false, 'webhook_url'],
  ['payout_address lower-case', { payout_address: ADDRESS }, true],
  ['payout_address checksummed', { payout_address: '0x52908400098527886E0F7030069857D2E4169EE7' }, true],
  ['payout_address without 0x', { payout_address: ADDRESS.slice(2) }, false, 'payout_address'],
  ['payout_address of 39 hex', { payout_address: ADDRESS.slice(0, -1) }, false, 'payout_address'],
  ['payout_address the zero address', { payout_address: `0x${'0'.repeat(40)}` }, false, 'payout_address'],
  [
    'payout_address with a bad checksum',
    { payout_address: '0x52908400098527886E0F7030069857D2E4169Ee7' },
    false,
    'payout_address',
  ],
  ['metadata object', { metadata: { order: 42 } }, true],
  ['metadata array', { metadata: [1, 2] }, false, 'metadata'],
  ['metadata string', { metadata: 'x' }, false, 'metadata'],
  ['metadata of 8 KB', { metadata: { blob: 'x'.repeat(8192 - 12) } }, true],
  ['metadata over 8 KB', { metadata: { blob: 'x'.repeat(8192) } }, false, 'metadata'],
  ['ttl_minutes 1', { ttl_minutes: 1 }, true],
  ['ttl_minutes 1440', { ttl_minutes: 1440 }, true],
  ['ttl_minutes 0', { ttl_minutes: 0 }, false, 'ttl_minutes'],
  ['ttl_minutes 1441', { ttl_minutes: 1441 }, false, 'ttl_minutes'],
  ['ttl_minutes 1.5', { ttl_minutes: 1.5 }, false, 'ttl_minutes'],
  ['an unknown field', { colour: 'red' }, false, 'colour'],
];

describe("POST /v1/payments bounds (the seed's Payment table)", () => {
  it.each(CASES)('%s', async (_name, fields, accepted, param) => {
    const res = await createPaymentRequest(app, key, { ...VALID_PAYMENT, ...fields });
    if (accepted) {
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().status).toBe('pending');
      return;
    }
    expect(res.statusCode, res.body).toBe(400);
    const { error } = res.json();
    expect(error.type).toBe('invalid_request_error');
    expect(error.param).toBe(param);
    expect(error.message).toContain(param);
  });

  it('says payout_address must be a 0x EVM address, as the seed words it', async () => {
    const res = await createPaymentRequest(app, key, { ...VALID_PAYMENT, payout_address: 'abc' });
    expect(res.json().error.message).toContain('payout_address must be a 0x EVM address');
  });

  it('names the unsupported currency', async () => {
    const res = await createPaymentRequest(app, key, { ...VALID_PAYMENT, currency: 'XYZ' });
    expect(res.json().error.message).toContain('currency XYZ is not supported');
  });

  it('names the rule for too many decimals', async () => {
    const res = await createPaymentRequest(app, key, { ...VALID_PAYMENT, amount: 1.234 });
    expect(res.json().error.message).toMatch(/at most 2 decimal places for NGN/);
  });

  it('the returned amount equals what was sent (no float drift)', async () => {
    for (const amount of [0.07, 19.99, 1234567.89, 999_999_999.99]) {
      const res = await createPaymentRequest(app, key, { ...VALID_PAYMENT, amount });
      expect(res.json().amount).toBe(amount);
    }
  });
});
