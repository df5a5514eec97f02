// Money is an integer count of minor units held in a bigint. Nothing in this file multiplies or
// divides a float: a JSON number from the API is read through its decimal text, and every
// conversion is integer arithmetic with an explicit rounding direction.

export type CurrencyKind = 'fiat' | 'stablecoin';

export interface Currency {
  /** ISO 4217 code (or the token ticker for a stablecoin), upper-case. */
  readonly code: string;
  /** Number of minor-unit digits: 2 for NGN (kobo), 0 for UGX, 6 for USDC. */
  readonly exponent: number;
  readonly name: string;
  /** Display symbol, hard-coded so output never depends on the machine's Intl data. */
  readonly symbol: string;
  /** Whether a space separates the symbol from the digits ("KSh 1,000.00" vs "₦5,000.00"). */
  readonly symbolSpaced: boolean;
  /** Symbol before or after the digits ("10.500000 USDC"). */
  readonly symbolPosition: 'prefix' | 'suffix';
  /** BCP 47 locale where the currency is at home; a hint for pages, not used by formatDisplay. */
  readonly locale: string;
  readonly kind: CurrencyKind;
}

function currency(
  code: string,
  exponent: number,
  name: string,
  symbol: string,
  locale: string,
  options: { spaced?: boolean; position?: 'prefix' | 'suffix'; kind?: CurrencyKind } = {},
): Currency {
  return Object.freeze({
    code,
    exponent,
    name,
    symbol,
    symbolSpaced: options.spaced ?? false,
    symbolPosition: options.position ?? 'prefix',
    locale,
    kind: options.kind ?? 'fiat',
  });
}

// Exponents follow ISO 4217 minor units (UGX, RWF, XOF and XAF have none); USDC follows the token's
// 6 on-chain decimals, so a settlement amount in minor units is exactly the token's integer amount.
export const CURRENCIES = Object.freeze({
  NGN: currency('NGN', 2, 'Nigerian naira', '₦', 'en-NG'),
  GHS: currency('GHS', 2, 'Ghanaian cedi', 'GH₵', 'en-GH'),
  KES: currency('KES', 2, 'Kenyan shilling', 'KSh', 'en-KE', { spaced: true }),
  UGX: currency('UGX', 0, 'Ugandan shilling', 'USh', 'en-UG', { spaced: true }),
  TZS: currency('TZS', 2, 'Tanzanian shilling', 'TSh', 'en-TZ', { spaced: true }),
  RWF: currency('RWF', 0, 'Rwandan franc', 'FRw', 'en-RW', { spaced: true }),
  XOF: currency('XOF', 0, 'West African CFA franc', 'CFA', 'fr-SN', { spaced: true }),
  XAF: currency('XAF', 0, 'Central African CFA franc', 'FCFA', 'fr-CM', { spaced: true }),
  ZAR: currency('ZAR', 2, 'South African rand', 'R', 'en-ZA'),
  EGP: currency('EGP', 2, 'Egyptian pound', 'E£', 'en-EG'),
  MAD: currency('MAD', 2, 'Moroccan dirham', 'MAD', 'fr-MA', { spaced: true }),
  ETB: currency('ETB', 2, 'Ethiopian birr', 'Br', 'en-ET', { spaced: true }),
  ZMW: currency('ZMW', 2, 'Zambian kwacha', 'K', 'en-ZM'),
  USD: currency('USD', 2, 'US dollar', '$', 'en-US'),
  EUR: currency('EUR', 2, 'Euro', '€', 'en-IE'),
  GBP: currency('GBP', 2, 'Pound sterling', '£', 'en-GB'),
  USDC: currency('USDC', 6, 'USD Coin', 'USDC', 'en-US', { spaced: true, position: 'suffix', kind: 'stablecoin' }),
} as const satisfies Record<string, Currency>);

export type CurrencyCode = keyof typeof CURRENCIES;

export const SUPPORTED_CURRENCY_CODES: readonly CurrencyCode[] = Object.freeze(
  Object.keys(CURRENCIES) as CurrencyCode[],
);

/** The settlement asset: every payment is settled in it, every quote converts into it. */
export const SETTLEMENT_CURRENCY: Currency = CURRENCIES.USDC;

/** The seed's bound on `amount`: at most 1,000,000,000 in the payment's currency. */
export const MAX_PAYMENT_AMOUNT_MAJOR = 1_000_000_000n;

/**
 * Looks a code up exactly as given. Codes are upper-case; `getCurrency('ngn')` is undefined on
 * purpose so that stored data has one spelling. Input from outside goes through
 * `normaliseCurrencyCode` first (the API accepts "ngn" the way Stripe does).
 */
export function getCurrency(code: string): Currency | undefined {
  // hasOwn, not `in`: "toString" or "__proto__" must not resolve to something on the prototype.
  return Object.hasOwn(CURRENCIES, code) ? CURRENCIES[code as CurrencyCode] : undefined;
}

/**
 * The API boundary's normalisation: upper-cases the code and nothing else. Surrounding spaces are
 * not trimmed: " NGN" is malformed input and should be reported as such, not silently repaired.
 */
export function normaliseCurrencyCode(input: string): string {
  return input.toUpperCase();
}

export type ParseAmountFailure = 'not_a_number' | 'not_positive' | 'too_many_decimals' | 'too_large';

export type ParseAmountResult = { ok: true; minor: bigint } | { ok: false; reason: ParseAmountFailure };

// A sanity ceiling on how big a number we are willing to materialise, far above any real amount
// (the API caps at 1e9 major units): it keeps "1e999999999" from allocating a billion-digit string.
const MAX_INTEGER_DIGITS = 30;
const MAX_EXPONENT_MAGNITUDE = 400;

// Grammar of what String(number) can produce, plus plain decimal strings from other callers.
// Deliberately strict: no leading "+", no ".5", no "5.", no spaces, no hex, no "_".
const DECIMAL_TEXT = /^(-)?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/**
 * Parses a major-unit amount (the API's JSON number, or a decimal string) into minor units.
 *
 * A number is read through String(n), its shortest round-trip decimal text, so 10.1 is exactly
 * "10.1" and never 10.0999999…. A request's amount reaches here as a number only when String(n)
 * is the text the caller wrote (tools/schemas.ts writtenAmount): a double cannot say whether
 * `100.00000000000000001` was sent, so that is judged on its text before any double exists. Exponent forms (1e-7, 1e21) are expanded by moving the decimal
 * point in the text. More fraction digits than the currency has is an error, except trailing zeros,
 * which add no precision ("10.500" is 10.50 NGN). The upper bound is the caller's: see exceedsMajor.
 */
export function parseMajorAmount(value: number | string, currency: Currency): ParseAmountResult {
  let text: string;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return { ok: false, reason: 'not_a_number' };
    text = String(value);
  } else if (typeof value === 'string') {
    text = value;
  } else {
    return { ok: false, reason: 'not_a_number' };
  }

  const match = DECIMAL_TEXT.exec(text);
  if (match === null) return { ok: false, reason: 'not_a_number' };
  const [, sign, intDigits = '', fracDigits = '', exponentText] = match;
  // Sign and zero first: "-1e999" and "0e-999" are wrong for those reasons, whatever their size.
  if (sign === '-' || /^0*$/.test(intDigits + fracDigits)) return { ok: false, reason: 'not_positive' };

  const exponent = exponentText === undefined ? 0 : Number(exponentText);
  if (!Number.isSafeInteger(exponent) || Math.abs(exponent) > MAX_EXPONENT_MAGNITUDE) {
    // An exponent that large is either astronomically big or below any currency's precision.
    return { ok: false, reason: exponent > 0 ? 'too_large' : 'too_many_decimals' };
  }

  const plain = shiftDecimalPoint(intDigits, fracDigits, exponent);
  const integerPart = plain.integer.replace(/^0+/, '');
  const fractionPart = plain.fraction.replace(/0+$/, '');

  if (fractionPart.length > currency.exponent) return { ok: false, reason: 'too_many_decimals' };
  if (integerPart.length > MAX_INTEGER_DIGITS) return { ok: false, reason: 'too_large' };

  return { ok: true, minor: BigInt((integerPart || '0') + fractionPart.padEnd(currency.exponent, '0')) };
}

/** Moves the decimal point of `int.frac` by `shift` places (positive = right), as text. */
function shiftDecimalPoint(int: string, frac: string, shift: number): { integer: string; fraction: string } {
  const digits = int + frac;
  const point = int.length + shift;
  if (point <= 0) return { integer: '', fraction: '0'.repeat(-point) + digits };
  if (point >= digits.length) return { integer: digits + '0'.repeat(point - digits.length), fraction: '' };
  return { integer: digits.slice(0, point), fraction: digits.slice(point) };
}

/** 10^n as a bigint; exponents are small non-negative integers from the currency table. */
export function pow10(n: number): bigint {
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`pow10 needs a non-negative integer, got ${n}`);
  return 10n ** BigInt(n);
}

/** True when `minor` is more than `maxMajor` whole units of `currency` (the seed's 1e9 cap). */
export function exceedsMajor(minor: bigint, maxMajor: bigint, currency: Currency): boolean {
  return minor > maxMajor * pow10(currency.exponent);
}

/**
 * Plain decimal text with exactly `exponent` fraction digits: 500000n NGN → "5000.00",
 * 5000n UGX → "5000". This is the canonical text form for storage, logs and CSV.
 */
export function formatMinor(minor: bigint, currency: Currency): string {
  const negative = minor < 0n;
  const digits = (negative ? -minor : minor).toString().padStart(currency.exponent + 1, '0');
  const cut = digits.length - currency.exponent;
  const text = currency.exponent === 0 ? digits : `${digits.slice(0, cut)}.${digits.slice(cut)}`;
  return negative ? `-${text}` : text;
}

/**
 * The API's number form of an amount (the seed returns `amount` as a JSON number). Goes through
 * the decimal text, so the result is the double nearest that decimal and String() of it prints the
 * same decimal (trailing zeros aside) whenever it has at most 15 significant digits; every amount
 * the API accepts (≤ 1e9 major units, exponent ≤ 6, so ≤ 16 digits) also round-trips.
 */
export function minorToNumber(minor: bigint, currency: Currency): number {
  return Number(formatMinor(minor, currency));
}

/**
 * Human text for pages and messages: "₦5,000.00", "GH₵12.50", "KSh 1,000.00", "USh 5,000",
 * "12.500000 USDC". Deterministic: hard-coded symbols, comma grouping by threes, "." decimal mark,
 * regardless of the machine's locale data.
 */
export function formatDisplay(minor: bigint, currency: Currency): string {
  const plain = formatMinor(minor, currency);
  const negative = plain.startsWith('-');
  const unsigned = negative ? plain.slice(1) : plain;
  const [integer = '', fraction] = unsigned.split('.');
  const grouped = integer.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const number = fraction === undefined ? grouped : `${grouped}.${fraction}`;
  const gap = currency.symbolSpaced ? ' ' : '';
  const body = currency.symbolPosition === 'prefix' ? currency.symbol + gap + number : number + gap + currency.symbol;
  return negative ? `-${body}` : body;
}

/**
 * An amount for finance's tables: grouped by threes, the currency's code after it, and the
 * currency's own decimals with the zeros past the second left off, so a column of USDC reads like
 * money and stays exact: "1,000,000,000.00 USDC", "15.662078 USDC", "1.00 KES", "5,000 UGX".
 */
export function formatAmount(minor: bigint, currency: Currency): string {
  const plain = formatMinor(minor, currency);
  const negative = plain.startsWith('-');
  const [integer = '', fraction] = (negative ? plain.slice(1) : plain).split('.');
  const grouped = integer.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const shown =
    fraction === undefined ? '' : `.${fraction.replace(/0+$/, '').padEnd(Math.min(2, fraction.length), '0')}`;
  return `${negative ? '-' : ''}${grouped}${shown} ${currency.code}`;
}

/** An exact positive rational, e.g. a decimal rate "1580.25" is 158025/100. */
export interface Ratio {
  readonly numerator: bigint;
  readonly denominator: bigint;
}

export type Rounding = 'down' | 'up';

/** n / d for n ≥ 0, d > 0, rounded in the stated direction. */
export function divideRounded(n: bigint, d: bigint, rounding: Rounding): bigint {
  if (n < 0n || d <= 0n) throw new RangeError('divideRounded needs n >= 0 and d > 0');
  const quotient = n / d; // bigint division truncates, which is "down" for non-negative operands
  return rounding === 'up' && quotient * d !== n ? quotient + 1n : quotient;
}

/**
 * Converts a non-negative minor amount between currencies:
 * toMajor = fromMajor × rate, where rate is `to` major units per 1 `from` major unit.
 * One multiplication chain and one division, so only the final result is rounded.
 */
export function convertMinor(
  minor: bigint,
  fromExponent: number,
  toExponent: number,
  rate: Ratio,
  rounding: Rounding = 'down',
): bigint {
  if (minor < 0n) throw new RangeError('convertMinor needs a non-negative amount');
  if (rate.numerator <= 0n || rate.denominator <= 0n) throw new RangeError('convertMinor needs a positive rate');
  const numerator = minor * rate.numerator * pow10(toExponent);
  const denominator = rate.denominator * pow10(fromExponent);
  return divideRounded(numerator, denominator, rounding);
}
