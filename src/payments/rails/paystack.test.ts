import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { paystackFixture } from '../../../test/fakes/fixtures/paystack/index.ts';
import { isAppError } from '../../core/errors.ts';
import type { RailServices } from '../deps.ts';
import type { PaymentAttemptRow } from '../../db/repositories/payment-attempts.ts';
import type { PaymentRow } from '../../db/database.ts';
import { CurrencyRefusedError, RailUnavailableError } from './rail.ts';
import { paystackReference } from '../../domain/provider-references.ts';
import { paystackAmounts, paystackRail, paystackSignatureValid } from './paystack.ts';

const KEY = 'sk_test_0123456789abcdef';
const sign = (body: string, key = KEY) => createHmac('sha512', key).update(body).digest('hex');

describe('Paystack event signature (x-paystack-signature)', () => {
  const body = '{"event":"charge.success","data":{"reference":"att-1","amount":500000}}';

  it('accepts the HMAC-SHA512 of the raw body with the secret key, in either hex case', () => {
    expect(paystackSignatureValid(KEY, body, sign(body))).toBe(true);
    expect(paystackSignatureValid(KEY, body, sign(body).toUpperCase())).toBe(true);
  });

  it('refuses another key, a changed body, and anything that is not a 128-hex signature', () => {
    expect(paystackSignatureValid(KEY, body, sign(body, 'sk_test_other0000000000'))).toBe(false);
    expect(paystackSignatureValid(KEY, body.replace('500000', '5000'), sign(body))).toBe(false);
    for (const header of [undefined, '', 'zz', sign(body).slice(0, 64), `${sign(body)}00`]) {
      expect(paystackSignatureValid(KEY, body, header)).toBe(false);
    }
  });
});

describe('Paystack payer email and reference', () => {
  const read = (email: string) => paystackRail.readPayer(new URLSearchParams({ email }));

  it('takes an ordinary email, trimmed, and keeps only a masked hint', () => {
    expect(read('  ada.obi+shop@example.com.ng ')).toEqual({ email: 'ada.obi+shop@example.com.ng' });
    expect(paystackRail.payerHint({ email: 'ada.obi@example.com' })).toBe('a***@example.com');
  });

  it('names the field and the rule for a missing or malformed email', () => {
    for (const email of ['', 'ada', 'ada@', '@example.com', 'ada@example', 'a b@example.com']) {
      try {
        read(email);
        expect.unreachable(email);
      } catch (error) {
        expect(isAppError(error) && error.param).toBe('email');
      }
    }
  });

  it("makes a reference of Paystack's allowed characters from the attempt id", () => {
    expect(paystackReference('att_7Qm2bX')).toBe('att-7Qm2bX');
    expect(paystackReference('att_7Qm2bX')).toMatch(/^[A-Za-z0-9.=-]+$/);
  });
});

/** Asks the adapter, against a server that answers one of Paystack's published samples. */
async function answeredBy<T>(
  fixture: string,
  ask: (services: RailServices, attempt: PaymentAttemptRow) => Promise<T>,
): Promise<T> {
  const published = paystackFixture(fixture);
  const server = createServer((_req, res) => {
    res.writeHead(published.status ?? 200, { 'content-type': 'application/json' }).end(JSON.stringify(published.body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const services = {
      config: {
        rails: { paystackBaseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, timeoutMs: 2000 },
      },
    } as unknown as RailServices;
    return await ask(services, { provider_reference: 're4lyvq3s3' } as PaymentAttemptRow);
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

describe("Paystack's amounts: what was asked, and the payer's fee", () => {
  it("reads Paystack's published verify sample with customer-borne fees as 30050 asked and a 10283 fee", async () => {
    const verdict = await answeredBy('verify.success_customer_bears_fees.200', (services, attempt) =>
      paystackRail.verify({ services, credentials: { secret_key: KEY }, attempt }),
    );
    expect(verdict).toMatchObject({
      outcome: 'succeeded',
      confirmed: {
        amount_minor: '30050',
        payer_fee_minor: '10283',
        currency: 'NGN',
        reference: 're4lyvq3s3',
        receipt: '4099260516',
      },
    });
  });

  it('falls back to amount without requested_amount, and reports a charge below the asked amount as charged', () => {
    expect(paystackAmounts({ amount: 10000 })).toEqual({ amount_minor: '10000' });
    expect(paystackAmounts({ amount: 10000, requested_amount: 10000, fees: 150 })).toEqual({ amount_minor: '10000' });
    expect(paystackAmounts({ amount: '10150', requested_amount: 10000 })).toEqual({
      amount_minor: '10000',
      payer_fee_minor: '150',
    });
    expect(paystackAmounts({ amount: 9000, requested_amount: 10000 })).toEqual({ amount_minor: '9000' });
  });
});

describe("Paystack's refusal of a currency the integration has not enabled", () => {
  it('reads its published answer as a currency refusal, not as Paystack being unavailable', async () => {
    const error = await answeredBy('currency_not_supported.400', (services, attempt) =>
      paystackRail
        .start({
          services,
          credentials: { secret_key: KEY },
          attempt,
          payment: { currency: 'GHS', account_id: 'acct_1' } as PaymentRow,
          payer: { email: 'kofi@example.com' },
          returnUrl: 'https://pay.example/return',
          callbackUrl: 'https://api.example/hooks',
        })
        .catch((e: unknown) => e),
    );
    expect(error).toBeInstanceOf(CurrencyRefusedError);
    expect(error).toMatchObject({ currency: 'GHS', providerStatus: 400, refused: true });
  });
});

describe('verify of a reference Paystack does not know', () => {
  it.each(['verify.not_found.404_spec', 'verify.not_found.400_live'])(
    'reads %s as never initialized: abandoned, so nothing was paid on it',
    async (fixture) => {
      const verdict = await answeredBy(fixture, (services, attempt) =>
        paystackRail.verify({ services, credentials: { secret_key: KEY }, attempt }),
      );
      expect(verdict).toMatchObject({ outcome: 'abandoned', detail: expect.stringContaining('does not know') });
    },
  );

  it('reads any other refusal as Paystack not answering: unknown, never "not paid"', async () => {
    const error = await answeredBy('currency_not_supported.400', (services, attempt) =>
      paystackRail.verify({ services, credentials: { secret_key: KEY }, attempt }).catch((e: unknown) => e),
    );
    expect(error).toBeInstanceOf(RailUnavailableError);
  });
});
