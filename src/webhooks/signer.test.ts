import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { describe, expect, it } from 'vitest';
import {
  decodeWebhookSecret,
  generateWebhookSecret,
  signWebhook,
  verifyWebhook,
  WEBHOOK_SECRET_PREFIX,
} from './signer.ts';

// The known-answer vector of the Standard Webhooks reference library
// (standard-webhooks/standard-webhooks, libraries/javascript/src/webhook.test.ts, "sign function works").
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

const BODY = JSON.stringify({ type: 'payment.settled', data: { reference: 'order-1', metadata: { plan: 'pro' } } });
const nowSeconds = (): number => Math.floor(Date.now() / 1000);

function svixHeaders(headers: Record<string, string>): Record<string, string> {
  return {
    'svix-id': headers['webhook-id'] ?? '',
    'svix-timestamp': headers['webhook-timestamp'] ?? '',
    'svix-signature': headers['webhook-signature'] ?? '',
  };
}

describe('known-answer vector', () => {
  it('signs exactly like the reference', () => {
    const headers = signWebhook({
      id: VECTOR.id,
      timestamp: VECTOR.timestamp,
      body: VECTOR.body,
      secrets: [VECTOR.secret],
    });
    expect(headers).toEqual({
      'webhook-id': VECTOR.id,
      'webhook-timestamp': '1614265330',
      'webhook-signature': VECTOR.signature,
    });
    // And the reference libraries agree with the vector.
    const at = new Date(VECTOR.timestamp * 1000);
    expect(new StandardWebhook(VECTOR.secret).sign(VECTOR.id, at, VECTOR.body)).toBe(VECTOR.signature);
    expect(new SvixWebhook(VECTOR.secret).sign(VECTOR.id, at, VECTOR.body)).toBe(VECTOR.signature);
  });

  it('verifies the vector at its own time and refuses it today', () => {
    const headers = {
      'webhook-id': VECTOR.id,
      'webhook-timestamp': String(VECTOR.timestamp),
      'webhook-signature': VECTOR.signature,
    };
    expect(verifyWebhook({ body: VECTOR.body, headers, secrets: [VECTOR.secret], now: VECTOR.timestamp + 10 })).toEqual(
      {
        ok: true,
        id: VECTOR.id,
        timestamp: VECTOR.timestamp,
      },
    );
    expect(verifyWebhook({ body: VECTOR.body, headers, secrets: [VECTOR.secret] })).toEqual({
      ok: false,
      reason: 'timestamp_too_old',
    });
  });
});

describe('interoperability', () => {
  it('our signature verifies with standardwebhooks and svix (webhook-* and svix-* names)', () => {
    const secret = generateWebhookSecret();
    const headers = { ...signWebhook({ id: 'evt_1', timestamp: nowSeconds(), body: BODY, secrets: [secret] }) };
    expect(new StandardWebhook(secret).verify(BODY, headers)).toEqual(JSON.parse(BODY));
    expect(new SvixWebhook(secret).verify(BODY, headers)).toEqual(JSON.parse(BODY));
    expect(new SvixWebhook(secret).verify(BODY, svixHeaders(headers))).toEqual(JSON.parse(BODY));
  });

  it('their signatures verify with ours', () => {
    const secret = generateWebhookSecret();
    const timestamp = nowSeconds();
    const at = new Date(timestamp * 1000);
    for (const signature of [
      new StandardWebhook(secret).sign('evt_2', at, BODY),
      new SvixWebhook(secret).sign('evt_2', at, BODY),
    ]) {
      const headers = { 'webhook-id': 'evt_2', 'webhook-timestamp': String(timestamp), 'webhook-signature': signature };
      expect(verifyWebhook({ body: BODY, headers, secrets: [secret] })).toEqual({ ok: true, id: 'evt_2', timestamp });
    }
  });

  it('a tampered body fails everywhere', () => {
    const secret = generateWebhookSecret();
    const headers = { ...signWebhook({ id: 'evt_3', timestamp: nowSeconds(), body: BODY, secrets: [secret] }) };
    const tampered = BODY.replace('order-1', 'order-2');
    expect(verifyWebhook({ body: tampered, headers, secrets: [secret] })).toEqual({
      ok: false,
      reason: 'no_matching_signature',
    });
    expect(() => new StandardWebhook(secret).verify(tampered, headers)).toThrow('No matching signature');
    expect(() => new SvixWebhook(secret).verify(tampered, headers)).toThrow('No matching signature');
  });

  it('a 10-minute-old timestamp fails everywhere, even with a valid signature', () => {
    const secret = generateWebhookSecret();
    const headers = { ...signWebhook({ id: 'evt_4', timestamp: nowSeconds() - 600, body: BODY, secrets: [secret] }) };
    expect(verifyWebhook({ body: BODY, headers, secrets: [secret] })).toEqual({
      ok: false,
      reason: 'timestamp_too_old',
    });
    expect(() => new StandardWebhook(secret).verify(BODY, headers)).toThrow('too old');
    expect(() => new SvixWebhook(secret).verify(BODY, headers)).toThrow('too old');
  });

  it('a timestamp 10 minutes ahead fails too', () => {
    const secret = generateWebhookSecret();
    const headers = { ...signWebhook({ id: 'evt_5', timestamp: nowSeconds() + 600, body: BODY, secrets: [secret] }) };
    expect(verifyWebhook({ body: BODY, headers, secrets: [secret] })).toEqual({
      ok: false,
      reason: 'timestamp_too_new',
    });
    expect(() => new StandardWebhook(secret).verify(BODY, headers)).toThrow('too new');
  });

  it('during rotation both secrets verify with every library', () => {
    const previous = generateWebhookSecret();
    const current = generateWebhookSecret();
    const headers = {
      ...signWebhook({ id: 'evt_6', timestamp: nowSeconds(), body: BODY, secrets: [current, previous] }),
    };
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    for (const secret of [current, previous]) {
      expect(new StandardWebhook(secret).verify(BODY, headers)).toEqual(JSON.parse(BODY));
      expect(new SvixWebhook(secret).verify(BODY, headers)).toEqual(JSON.parse(BODY));
      expect(verifyWebhook({ body: BODY, headers, secrets: [secret] }).ok).toBe(true);
    }
    const stranger = generateWebhookSecret();
    expect(verifyWebhook({ body: BODY, headers, secrets: [stranger] }).ok).toBe(false);
    expect(() => new StandardWebhook(stranger).verify(BODY, headers)).toThrow();
  });

  it('a UTF-8 body is signed as UTF-8 bytes', () => {
    const secret = generateWebhookSecret();
    const body = JSON.stringify({ merchant_name: 'Àdùkẹ́ ₦ café 🚀' });
    const headers = { ...signWebhook({ id: 'evt_7', timestamp: nowSeconds(), body, secrets: [secret] }) };
    expect(new StandardWebhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
  });
});

describe('verifyWebhook details', () => {
  const secret = generateWebhookSecret();
  const timestamp = 1_700_000_000;
  const signed = signWebhook({ id: 'evt_8', timestamp, body: BODY, secrets: [secret] });

  it('matches header names case-insensitively and skips other schemes', () => {
    const headers = {
      'Webhook-Id': signed['webhook-id'],
      'WEBHOOK-TIMESTAMP': signed['webhook-timestamp'],
      'webhook-signature': `v1a,AAAA v2,${signed['webhook-signature'].slice(3)} v1,bm90IGl0 ${signed['webhook-signature']}`,
    };
    expect(verifyWebhook({ body: BODY, headers, secrets: [secret], now: timestamp }).ok).toBe(true);
  });

  it('refuses missing headers, malformed timestamps and a repeated signature header', () => {
    const verify = (headers: Record<string, string | string[]>) =>
      verifyWebhook({ body: BODY, headers, secrets: [secret], now: timestamp });
    expect(verify({ 'webhook-id': 'evt_8', 'webhook-timestamp': String(timestamp) })).toEqual({
      ok: false,
      reason: 'missing_headers',
    });
    expect(verify({ ...signed, 'webhook-timestamp': '1700000000abc' })).toEqual({
      ok: false,
      reason: 'invalid_timestamp',
    });
    expect(verify({ ...signed, 'webhook-timestamp': '-1' })).toEqual({ ok: false, reason: 'invalid_timestamp' });
    expect(verify({ ...signed, 'webhook-signature': [signed['webhook-signature'], 'v1,x'] })).toEqual({
      ok: false,
      reason: 'missing_headers',
    });
    expect(verify({ ...signed, 'webhook-signature': 'v1,' })).toEqual({ ok: false, reason: 'no_matching_signature' });
    expect(verify({ ...signed, 'webhook-id': 'evt_9' })).toEqual({ ok: false, reason: 'no_matching_signature' });
  });

  it('accepts the edge of the tolerance window and not one second past it', () => {
    expect(verifyWebhook({ body: BODY, headers: signed, secrets: [secret], now: timestamp + 300 }).ok).toBe(true);
    expect(verifyWebhook({ body: BODY, headers: signed, secrets: [secret], now: timestamp + 301 }).ok).toBe(false);
    expect(verifyWebhook({ body: BODY, headers: signed, secrets: [secret], now: timestamp - 301 }).ok).toBe(false);
  });
});

describe('secrets and inputs', () => {
  it('generates whsec_ + base64 of 32 random bytes that the reference accepts', () => {
    const secret = generateWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(decodeWebhookSecret(secret)).toHaveLength(32);
    expect(generateWebhookSecret()).not.toBe(secret);
    expect(() => new StandardWebhook(secret)).not.toThrow();
  });

  it('decodes with or without the prefix and refuses weak or mangled secrets without echoing them', () => {
    expect(decodeWebhookSecret('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')).toEqual(decodeWebhookSecret(VECTOR.secret));
    const short = `${WEBHOOK_SECRET_PREFIX}${Buffer.alloc(16, 7).toString('base64')}`;
    expect(() => decodeWebhookSecret(short)).toThrow(/24–64 bytes/);
    for (const bad of ['whsec_', 'whsec_not base64!', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS', '']) {
      let message = '';
      try {
        decodeWebhookSecret(bad);
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).not.toBe('');
      if (bad.length > 6) expect(message).not.toContain(bad.slice(6));
    }
  });

  it('refuses ids with dots or spaces, millisecond or fractional timestamps, and no secrets', () => {
    const secret = generateWebhookSecret();
    expect(() => signWebhook({ id: 'evt.1', timestamp: 1, body: '', secrets: [secret] })).toThrow(TypeError);
    expect(() => signWebhook({ id: 'evt 1', timestamp: 1, body: '', secrets: [secret] })).toThrow(TypeError);
    expect(() => signWebhook({ id: '', timestamp: 1, body: '', secrets: [secret] })).toThrow(TypeError);
    expect(() => signWebhook({ id: 'evt_1', timestamp: Date.now(), body: '', secrets: [secret] })).toThrow(RangeError);
    expect(() => signWebhook({ id: 'evt_1', timestamp: 1.5, body: '', secrets: [secret] })).toThrow(RangeError);
    expect(() => signWebhook({ id: 'evt_1', timestamp: 1, body: '', secrets: [] })).toThrow(RangeError);
  });
});
