import { isAddress } from 'viem';
import { z } from 'zod';
import { JsonNumber, nestsDeeperThan, stringifyJson } from '../src/core/json-text.ts';
import { PAYMENT_SETTLEMENT_SCHEDULES } from '../src/domain/settlement-windows.ts';
import { isBurnAddress } from '../src/domain/recipients.ts';
import {
  CURRENCIES,
  getCurrency,
  MAX_PAYMENT_AMOUNT_MAJOR,
  normaliseCurrencyCode,
  parseMajorAmount,
  SETTLEMENT_CURRENCY,
  SUPPORTED_CURRENCY_CODES,
} from '../src/domain/money.ts';

/**
 * Field schemas shared by several tools. Each carries its rule in its message, so a 400 names
 * the field and the rule; each is described, because the schema is the documentation.
 */

export const currencyCode = z
  .string({ error: 'currency must be a string such as "NGN"' })
  .min(2, 'currency must be 2 to 8 characters')
  .max(8, 'currency must be 2 to 8 characters')
  .transform(normaliseCurrencyCode)
  .refine((code) => getCurrency(code) !== undefined, {
    error: (issue) =>
      `currency ${String(issue.input)} is not supported. Supported: ${SUPPORTED_CURRENCY_CODES.join(', ')}.`,
  });

export const evmAddress = (field: string) =>
  z
    .string({ error: `${field} must be a 0x EVM address (0x followed by 40 hex characters)` })
    .regex(/^0x[0-9a-fA-F]{40}$/, `${field} must be a 0x EVM address (0x followed by 40 hex characters)`)
    // Mixed case is an EIP-55 checksum; a wrong one is almost surely a typo, so refuse it.
    .refine(
      (value) => isAddress(value, { strict: true }),
      `${field} must be a 0x EVM address with a valid EIP-55 checksum (or all lower-case)`,
    )
    // Every use is a recipient, and tokens sent to the zero address are burned.
    .refine((value) => !isBurnAddress(value), `${field} must not be the zero address (tokens sent there are burned)`);

/** A payment's own settlement schedule (POST /v1/payments); `threshold` is an account setting only. */
export const paymentSettlementSchedule = z.enum(PAYMENT_SETTLEMENT_SCHEDULES, {
  error: `settlement_schedule must be one of ${PAYMENT_SETTLEMENT_SCHEDULES.join(', ')}`,
});

export const PAYMENT_SETTLEMENT_SCHEDULE_DESCRIPTION =
  "When this payment's on-chain transfer goes out: instant (with the next batch, in seconds), hourly or daily (at the next UTC hour or midnight after it is paid, netted with everything else owed to the address). Default: the account's schedule (GET /v1/settlement_schedule).";

export const httpUrl = (field: string) =>
  z
    .string({ error: `${field} must be a string` })
    .max(2048, `${field} must be at most 2048 characters`)
    .refine((value) => {
      try {
        const url = new URL(value);
        return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
      } catch {
        return false;
      }
    }, `${field} must be a valid absolute http(s) URL`);

export const METADATA_MAX_BYTES = 8192;
/** Deep enough for any real line-item summary; bounded so every reader of it can recurse. */
export const METADATA_MAX_DEPTH = 32;

// The object itself passes through (z.custom, not z.record, which copies it): it may carry the
// caller's exact text (core/json-text.ts), which is what gets stored and returned. Its values are
// whatever JSON holds, so the JSON Schema stays free of recursive references.
export const metadata = z
  .custom<Record<string, unknown>>((value) => typeof value === 'object' && value !== null && !Array.isArray(value), {
    error: 'metadata must be a JSON object of key/value pairs',
  })
  .superRefine((value, ctx) => {
    // Depth first: serialising something nested a million levels deep would blow the stack.
    if (nestsDeeperThan(value, METADATA_MAX_DEPTH)) {
      ctx.addIssue({ code: 'custom', message: `metadata must nest at most ${METADATA_MAX_DEPTH} levels deep` });
    } else if (Buffer.byteLength(stringifyJson(value)) > METADATA_MAX_BYTES) {
      ctx.addIssue({ code: 'custom', message: `metadata must be at most ${METADATA_MAX_BYTES} bytes as JSON` });
    }
  })
  .meta({ type: 'object', additionalProperties: true });

export const METADATA_DESCRIPTION =
  'Arbitrary key/value data (nested objects and arrays allowed, at most 8 KB as JSON), returned unchanged on reads and in webhook events.';

/** An optional text field: null and "" count as not given. */
export const optionalText = (field: string, max: number) =>
  z
    .string({ error: `${field} must be a string` })
    .max(max, `${field} must be at most ${max} characters`)
    .nullish()
    .transform((value) => (value === '' || value === null ? undefined : value));

// Any string is looked up; an id that is malformed, unknown, another account's or the other
// mode's is the same 404, so ids reveal nothing.
export const paymentId = z
  .string({ error: 'payment_id must be a string' })
  .min(1, 'payment_id must not be empty')
  .max(100, 'payment_id must be at most 100 characters')
  .describe('The payment id (pay_…).');

/** The most decimal places any currency has (USDC's 6): no amount may have more. */
const MOST_DECIMALS = Math.max(...Object.values(CURRENCIES).map((currency) => currency.exponent));

/**
 * An amount as the API takes it, a JSON number in major units, read from the digits the caller
 * wrote, never from a double (docs/api.md, Amounts). The body parser hands over a plain number
 * only when String() of its double is the text written; any other text arrives as a JsonNumber
 * (core/json-text.ts) and is judged here, before a double can round it:
 *
 * - an exponent is refused, whatever its value (1.5e3: write 1500), so that an amount is always
 *   read as written, digit for digit;
 * - text the double does not hold exactly is refused: at most 1,000,000,000 that means more than
 *   15 significant digits, so more decimal places than any currency has (100.00000000000000001
 *   has 17; its double says 100, which is how it once moved 100).
 *
 * What passes is a number whose String() is the amount written (at most 15 significant digits
 * round-trip through a double), so parseMajorAmount reads those digits and no others.
 */
export function writtenAmount<S extends z.ZodType>(field: string, number: S, tooManyDecimals: string) {
  return z.preprocess((value, ctx) => {
    if (!(value instanceof JsonNumber)) return value;
    if (value.hasExponent) {
      ctx.addIssue({
        code: 'custom',
        message: `${field} must be written as plain decimal digits, without an exponent (e.g. 1500, not 1.5e3)`,
      });
      return z.NEVER;
    }
    // Too large or not positive: the number's own bounds say so.
    if (value.exact || !(value.value > 0 && value.value <= Number(MAX_PAYMENT_AMOUNT_MAJOR))) return value.value;
    ctx.addIssue({ code: 'custom', message: tooManyDecimals });
    return z.NEVER;
  }, number);
}

/** The message for an amount whose currency is known only with the rest of the request. */
export const tooManyDecimalsForAnyCurrency = (field: string): string =>
  `${field} has more decimal places than its currency has (no currency has more than ${MOST_DECIMALS})`;

/** An amount of the settlement asset (USDC, 6 decimals) as the API takes it: a JSON number in major units. */
export const settlementAmount = (field: string) =>
  writtenAmount(
    field,
    z
      .number({ error: `${field} must be a number of USDC, e.g. 250 or 250.5` })
      .positive(`${field} must be positive`)
      .max(1_000_000_000, `${field} must be at most 1,000,000,000`)
      .refine(
        (value) => parseMajorAmount(value, SETTLEMENT_CURRENCY).ok,
        `${field} must have at most 6 decimal places`,
      ),
    `${field} must have at most 6 decimal places`,
  );

export const settlementAsset = z
  .literal('USDC', { error: "asset must be 'USDC', the settlement stablecoin" })
  .default('USDC')
  .describe("The settlement asset: 'USDC' (the only one for now).");

/** The minor units of a validated settlementAmount. */
export function settlementMinor(value: number): bigint {
  const parsed = parseMajorAmount(value, SETTLEMENT_CURRENCY);
  if (!parsed.ok) throw new Error(`not a settlement amount: ${value}`);
  return parsed.minor;
}
