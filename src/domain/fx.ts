// FX for settlement. A payment in local currency is settled in the stablecoin at a rate locked when
// the session is created. Rates are decimal strings turned into exact rationals, and every rounding
// is chosen so that the service never pays out more than the payment covered.

import { z } from 'zod';
import {
  type Currency,
  type CurrencyCode,
  convertMinor,
  divideRounded,
  getCurrency,
  type Ratio,
  SETTLEMENT_CURRENCY,
} from './money.ts';

/**
 * Where a rate came from; stored with every quote so a sandbox rate is never mistaken for a market
 * one. `identity`: the payer paid in the settlement asset itself (USDC in), no conversion.
 */
export type RateSource = 'sandbox' | 'file' | 'identity';

/** Local-currency units per 1 unit of `base` (the settlement stablecoin), as decimal strings. */
export interface RateTable {
  readonly source: RateSource;
  readonly base: CurrencyCode;
  /** When the operator says the rates were taken (ISO 8601); null for the sandbox table. */
  readonly asOf: string | null;
  readonly rates: Readonly<Partial<Record<CurrencyCode, string>>>;
}

/**
 * SANDBOX rates: fixed, illustrative numbers of roughly the right size so that demos and tests
 * show plausible amounts. They are NOT market data and must never price real money; every quote
 * made from them carries `source: 'sandbox'`. Units of each currency per 1 USDC.
 */
export const SANDBOX_RATES: RateTable = Object.freeze({
  source: 'sandbox',
  base: 'USDC',
  asOf: null,
  rates: Object.freeze({
    NGN: '1580.25',
    GHS: '12.40',
    KES: '129.25',
    UGX: '3660',
    TZS: '2480.50',
    RWF: '1435',
    XOF: '565',
    XAF: '565',
    ZAR: '17.85',
    EGP: '48.60',
    MAD: '9.05',
    ETB: '135.40',
    ZMW: '23.75',
    USD: '1',
    EUR: '0.86',
    GBP: '0.74',
    USDC: '1',
  }),
} as const);

const MAX_RATE_FRACTION_DIGITS = 12;

// Positive decimal text: no sign, no exponent, no leading zeros, 1–12 fraction digits when present.
// 15 integer digits is far beyond any real currency per dollar and keeps operator typos visible.
const RATE_TEXT = new RegExp(`^(0|[1-9]\\d{0,14})(\\.\\d{1,${MAX_RATE_FRACTION_DIGITS}})?$`);

/** True for a rate string this module accepts: a positive decimal with at most 12 fraction digits. */
export function isValidRate(rate: string): boolean {
  return RATE_TEXT.test(rate) && /[1-9]/.test(rate);
}

/** "1580.25" → 158025/100, exactly. Throws on text that isValidRate rejects: rates are validated on entry. */
export function rateToRatio(rate: string): Ratio {
  if (!isValidRate(rate)) throw new RangeError(`not a positive decimal rate: ${JSON.stringify(rate)}`);
  const [integer = '', fraction = ''] = rate.split('.');
  return { numerator: BigInt(integer + fraction), denominator: 10n ** BigInt(fraction.length) };
}

/** The ratio inverted: local → settlement divides by the rate. */
function inverse(ratio: Ratio): Ratio {
  return { numerator: ratio.denominator, denominator: ratio.numerator };
}

/** The table's rate for a currency; the base currency is 1 by definition. */
export function getRate(table: RateTable, code: string): string | undefined {
  if (code === table.base) return '1';
  const currency = getCurrency(code);
  return currency === undefined ? undefined : table.rates[currency.code as CurrencyCode];
}

const RATE_MESSAGE = `must be a positive decimal string with at most ${MAX_RATE_FRACTION_DIGITS} fraction digits, e.g. "1580.25"`;

/** The operator-supplied rates file. The caller reads and JSON-parses it; this module does no I/O. */
export const RatesFileSchema = z
  .strictObject({
    base: z.literal('USDC').describe('The settlement asset the rates are quoted against; only USDC is supported'),
    as_of: z.iso.datetime({ offset: true }).optional().describe('When the rates were taken, ISO 8601'),
    // Keys and values are checked together in one pass so that an operator sees every bad entry at
    // once (a failing key schema would stop zod at "Invalid key in record" and hide the rest).
    rates: z
      .record(z.string(), z.unknown())
      .superRefine((rates, ctx) => {
        const codes = Object.keys(rates);
        if (codes.length === 0) ctx.addIssue({ code: 'custom', message: 'must list at least one rate' });
        for (const code of codes) {
          const rate = rates[code];
          if (getCurrency(code) === undefined) {
            ctx.addIssue({ code: 'custom', path: [code], message: `${code} is not a supported currency code` });
          } else if (typeof rate !== 'string' || !isValidRate(rate)) {
            // A JSON number is refused on purpose: 0.1 in a file is already a float approximation.
            ctx.addIssue({ code: 'custom', path: [code], message: RATE_MESSAGE });
          }
        }
      })
      .transform((rates) => rates as Record<string, string>)
      .describe(
        'Map of upper-case currency code (e.g. "NGN") to units of that currency per 1 USDC, as a decimal string',
      ),
  })
  .describe('Operator rates file: { "base": "USDC", "as_of"?: "...", "rates": { "NGN": "1580.25" } }');

export type LoadRatesResult = { ok: true; table: RateTable } | { ok: false; issues: string[] };

/** Validates a parsed rates file into a `source: 'file'` table; every problem is listed with its path. */
export function loadRatesFile(json: unknown): LoadRatesResult {
  const parsed = RatesFileSchema.safeParse(json);
  if (!parsed.success) {
    return {
      ok: false,
      issues: parsed.error.issues.map((issue) => {
        const path = issue.path.map(String).join('.');
        return path === '' ? issue.message : `${path}: ${issue.message}`;
      }),
    };
  }
  const { base, as_of: asOf, rates } = parsed.data;
  // The base against itself can only be 1; anything else is a file that contradicts itself.
  const baseRate = rates[base];
  if (baseRate !== undefined && rateToRatio(baseRate).numerator !== rateToRatio(baseRate).denominator) {
    return { ok: false, issues: [`rates.${base}: the base currency's rate must be 1`] };
  }
  return {
    ok: true,
    table: Object.freeze({
      source: 'file',
      base,
      asOf: asOf ?? null,
      rates: Object.freeze({ ...rates }) as Partial<Record<CurrencyCode, string>>,
    }),
  };
}

/** A locked settlement quote, shaped for storage and for `payment.settled` (snake_case fields). */
export interface SettlementQuote {
  readonly source: RateSource;
  /** Local currency code of the payment. */
  readonly currency: string;
  readonly settlement_currency: string;
  readonly amount_minor: bigint;
  /** Local units per 1 settlement unit, exactly as quoted. */
  readonly rate: string;
  readonly fee_bps: number;
  /** The local amount in settlement minor units, rounded down. */
  readonly gross_settlement_minor: bigint;
  /** The service fee, rounded up. */
  readonly fee_minor: bigint;
  /** What the merchant receives: gross − fee. */
  readonly settlement_minor: bigint;
}

export interface QuoteSettlementInput {
  readonly amountMinor: bigint;
  readonly currency: Currency;
  /** Units of `currency` per 1 unit of `settlementCurrency`. */
  readonly rate: string;
  /** Basis points, an integer from 0 to 10000. */
  readonly feeBps: number;
  readonly source: RateSource;
  readonly settlementCurrency?: Currency;
}

/**
 * Prices a payment in the settlement asset.
 * gross = amount ÷ rate, rounded DOWN: the service never promises more than the payment covers.
 * fee = gross × bps ÷ 10000, rounded UP: the fraction of a minor unit is the service's, not a loss.
 * settlement = gross − fee, so gross = fee + settlement exactly and never goes negative.
 */
export function quoteSettlement(input: QuoteSettlementInput): SettlementQuote {
  const { amountMinor, currency, rate, feeBps, source } = input;
  const settlementCurrency = input.settlementCurrency ?? SETTLEMENT_CURRENCY;
  if (amountMinor < 0n) throw new RangeError('quoteSettlement needs a non-negative amount');
  if (!Number.isInteger(feeBps) || feeBps < 0 || feeBps > 10_000) {
    throw new RangeError(`fee must be an integer number of basis points from 0 to 10000, got ${feeBps}`);
  }
  const gross = convertMinor(
    amountMinor,
    currency.exponent,
    settlementCurrency.exponent,
    inverse(rateToRatio(rate)),
    'down',
  );
  const fee = divideRounded(gross * BigInt(feeBps), 10_000n, 'up');
  return Object.freeze({
    source,
    currency: currency.code,
    settlement_currency: settlementCurrency.code,
    amount_minor: amountMinor,
    rate,
    fee_bps: feeBps,
    gross_settlement_minor: gross,
    fee_minor: fee,
    settlement_minor: gross - fee,
  });
}

/** quoteSettlement with the rate and its source taken from a table; undefined when the table has no rate. */
export function quoteFromTable(
  amountMinor: bigint,
  currency: Currency,
  table: RateTable,
  feeBps: number,
): SettlementQuote | undefined {
  const rate = getRate(table, currency.code);
  if (rate === undefined) return undefined;
  return quoteSettlement({ amountMinor, currency, rate, feeBps, source: table.source });
}

/**
 * The settlement-asset equivalent of a local amount, for policy thresholds and caps. Rounds UP,
 * unlike a quote: a limit must not be slipped under by a fraction of a minor unit. Undefined when
 * the table has no rate, so the policy can refuse what it cannot judge.
 */
export function convertToSettlement(
  amountMinor: bigint,
  currency: Currency,
  rates: RateTable,
  settlementCurrency: Currency = SETTLEMENT_CURRENCY,
): bigint | undefined {
  const rate = getRate(rates, currency.code);
  if (rate === undefined) return undefined;
  return convertMinor(amountMinor, currency.exponent, settlementCurrency.exponent, inverse(rateToRatio(rate)), 'up');
}

/**
 * Settlement minor units back to the local currency at a given (locked) rate, rounded DOWN: used to
 * work out how much local currency a settlement-asset refund represents, never more than covered.
 */
export function convertFromSettlement(
  settlementMinor: bigint,
  currency: Currency,
  rate: string,
  settlementCurrency: Currency = SETTLEMENT_CURRENCY,
): bigint {
  return convertMinor(settlementMinor, settlementCurrency.exponent, currency.exponent, rateToRatio(rate), 'down');
}
