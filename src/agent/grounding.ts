import { AppError } from '../core/errors.ts';
import { ID_PREFIXES, isId } from '../domain/ids.ts';
import { getCurrency, SETTLEMENT_CURRENCY } from '../domain/money.ts';
import { readInstruction } from './planner/plan.ts';
import { truncate } from './planner/checks.ts';

/**
 * Grounding (docs/agent.md "Untrusted text and grounding", issue 13 point 4): a money call on the agent channel runs only if each
 * recipient, amount or share and payment id in it comes from the merchant's instruction or from a
 * typed field of a tool result read earlier in the same run. Text inside results (descriptions,
 * metadata, memos, merchant names) is data a payer or a third party may have written: an address
 * found only there is never paid, whatever the model makes of it. Pure functions: the runtime
 * builds the evidence and asks; the pipeline records a refusal.
 *
 * Issue 32: every number carries its currency (a ₦50,000 payment that was read grounds no 50,000
 * USDC payout), the instruction is read by the planner's own reader (an exponent or "1O0" grounds
 * nothing; a value a correction replaced grounds nothing), and an instruction whose condition,
 * wait, negation, test or repetition the grammar cannot place, or whose figure cannot be read
 * exactly, grounds no money call at all: the model must ask the merchant.
 */

/** An exact rational, reduced, with a positive denominator: amounts are compared without floats. */
export interface Rational {
  readonly n: bigint;
  readonly d: bigint;
}

/**
 * A number that grounds amounts, in the currency it was written or read in: a code ("NGN",
 * "USDC"), "DOLLAR" for "$" or "dollars" in the instruction (USDC or USD), or undefined for a
 * number written with no currency (it grounds an amount in any).
 */
export interface Grounded {
  readonly value: Rational;
  readonly currency: string | undefined;
}

export interface RunEvidence {
  /** Recipients, lower-cased. */
  readonly addresses: ReadonlySet<string>;
  /** Object ids (pay_…, po_…, …). */
  readonly ids: ReadonlySet<string>;
  /** Amounts a call may use as they are, or as the base of a proportion, keyed by value and currency. */
  readonly numbers: ReadonlyMap<string, Grounded>;
  /** Proportions written in the instruction: percentages, fractions ("half"), ratio parts. */
  readonly proportions: readonly Rational[];
  /** Shares written in the instruction, in basis points (percentages, ratio parts). */
  readonly shareBps: ReadonlySet<bigint>;
  /** Fractions written in the instruction ("a third"), for shares. */
  readonly fractions: readonly Rational[];
  /** The currency of each payment read: a refund's amount is in it, and may be rounded to it. */
  readonly paymentCurrencies: ReadonlyMap<string, string>;
  /** The instruction asks for equal parts ("equally", "evenly", "three ways"). */
  readonly equalParts: boolean;
  /** What in the instruction holds every money call back, as written ("only after", "1e3"). */
  readonly holds: readonly string[];
}

/** Keys whose values are free text, and everything under them: never evidence. */
const FREE_TEXT_KEYS: ReadonlySet<string> = new Set([
  'description',
  'metadata',
  'merchant_name',
  'memo',
  'reason',
  'reasons',
  'summary',
  'reply',
  'message',
  'note',
  'notes',
  'instruction',
  'reference',
  'name',
  'title',
  'label',
  'comment',
  'text',
  // A held action's input (list_pending_confirmations) may come from any channel: not evidence.
  'input',
]);

/** Keys of typed amounts in results: only these numbers ground an amount (not counts, ids, gas). */
const AMOUNT_KEY = /(?:^|_)(?:amount|available|refunded|total|balance|remaining)$/;

/** Equal divisions a call may make of a grounded amount ("split it equally between …"). */
const MAX_EQUAL_PARTS = 20n;
const BPS = 10_000n;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/i;

/** What the merchant's instruction grounds: its addresses, payment ids, amounts, shares. */
export function evidenceFromInstruction(instruction: string, now: Date): RunEvidence {
  const addresses = new Set<string>();
  const ids = new Set<string>();
  const numbers = new Map<string, Grounded>();
  const proportions: Rational[] = [];
  const shareBps = new Set<bigint>();
  const fractions: Rational[] = [];
  const reading = readInstruction(instruction, now);
  // The grammar's own reading of shares: "sixty forty" is a ratio, "sawa sawa" asks for equal parts.
  for (const bps of reading.shareBps) {
    shareBps.add(bps);
    proportions.push(rational(bps, BPS));
  }
  for (const token of reading.tokens) {
    // "3k … no make it 2k", "400 usdc not 600": only the value meant grounds.
    if (reading.superseded.has(token.index)) continue;
    switch (token.kind) {
      case 'address':
        addresses.add(token.value.toLowerCase());
        break;
      case 'payment_id':
      case 'object_id':
        ids.add(token.value);
        break;
      case 'amount':
        // An unreadable figure ("1e3", "1O0", "5.000") grounds nothing: the model must ask.
        if (token.number.type === 'exact') addNumber(numbers, parseDecimal(token.number.text), token.currency?.code);
        break;
      case 'percent':
        if (token.bps !== undefined) {
          shareBps.add(token.bps);
          proportions.push(rational(token.bps, BPS));
        }
        break;
      case 'ratio': {
        for (const part of token.parts) {
          shareBps.add(part);
          proportions.push(rational(part, BPS));
        }
        // "refund 3/4 of pay_…": two parts, the first no more than the second, also read as a fraction.
        const [first, second] = token.parts;
        if (token.parts.length === 2 && first !== undefined && second !== undefined && first > 0n && first <= second)
          proportions.push(rational(first, second));
        break;
      }
      case 'fraction':
        if (token.denominator > 0n) {
          fractions.push(rational(token.numerator, token.denominator));
          proportions.push(rational(token.numerator, token.denominator));
        }
        break;
      default:
        break;
    }
  }
  return {
    addresses,
    ids,
    numbers,
    proportions,
    shareBps,
    fractions,
    paymentCurrencies: new Map(),
    equalParts: reading.equalParts,
    holds: reading.holds.map((token) => token.text),
  };
}

/**
 * The evidence after a successful tool result: its typed fields (numbers, ids, whole addresses),
 * skipping free-text keys and everything under them. A string counts only when it is exactly an
 * id or an address; any other string is free text, whatever its key.
 */
export function withToolResult(evidence: RunEvidence, output: unknown): RunEvidence {
  const addresses = new Set(evidence.addresses);
  const ids = new Set(evidence.ids);
  const numbers = new Map(evidence.numbers);
  const paymentCurrencies = new Map(evidence.paymentCurrencies);
  // A number's currency is the `currency` (or `asset`) of the object it sits in, inherited by the
  // objects below it; a settlement figure is always USDC.
  const visit = (value: unknown, depth: number, key: string, currency: string | undefined): void => {
    if (depth > 32) return;
    if (typeof value === 'number') {
      if (!AMOUNT_KEY.test(key.toLowerCase())) return;
      const parsed = Number.isFinite(value) ? parseDecimal(String(value)) : undefined;
      addNumber(numbers, parsed, key.toLowerCase().startsWith('settlement') ? SETTLEMENT_CURRENCY.code : currency);
    } else if (typeof value === 'string') {
      if (ADDRESS.test(value)) addresses.add(value.toLowerCase());
      else if (ID_PREFIXES.some((prefix) => isId(prefix, value))) ids.add(value);
    } else if (Array.isArray(value)) {
      for (const item of value) visit(item, depth + 1, key, currency);
    } else if (typeof value === 'object' && value !== null) {
      const record = value as Record<string, unknown>;
      const own = typeof record.currency === 'string' ? record.currency : record.asset;
      const here = typeof own === 'string' ? own.toUpperCase() : currency;
      notePayment(record, numbers, paymentCurrencies);
      for (const [key, item] of Object.entries(record)) {
        if (!isFreeTextKey(key)) visit(item, depth + 1, key, here);
      }
    }
  };
  visit(output, 0, '', undefined);
  return { ...evidence, addresses, ids, numbers, paymentCurrencies };
}

function isFreeTextKey(key: string): boolean {
  const lower = key.toLowerCase();
  if (FREE_TEXT_KEYS.has(lower)) return true;
  const last = lower.split('_').at(-1) ?? lower;
  return FREE_TEXT_KEYS.has(last) || lower.endsWith('_name');
}

/** A payment read: its currency, and what is left to refund (amount − amount_refunded) in it. */
function notePayment(
  record: Record<string, unknown>,
  numbers: Map<string, Grounded>,
  paymentCurrencies: Map<string, string>,
): void {
  if (!isId('pay', record.id) || typeof record.currency !== 'string') return;
  const code = record.currency.toUpperCase();
  if (getCurrency(code) !== undefined) paymentCurrencies.set(record.id, code);
  if (typeof record.amount === 'number' && typeof record.amount_refunded === 'number') {
    const amount = parseDecimal(String(record.amount));
    const refunded = parseDecimal(String(record.amount_refunded));
    if (amount !== undefined && refunded !== undefined) addNumber(numbers, subtract(amount, refunded), code);
  }
}

/**
 * Refuses a money call whose recipient, amount, share or payment id is not grounded in the
 * evidence. Other tools are not checked: they move nothing.
 */
export function checkGrounding(toolName: string, input: unknown, evidence: RunEvidence): void {
  const value = (typeof input === 'object' && input !== null ? input : {}) as Record<string, unknown>;
  if (MONEY_TOOLS.has(toolName) && evidence.holds.length > 0) throw unclear(evidence.holds);
  switch (toolName) {
    case 'create_payout':
      requireAddress(value.to_address, 'to_address', evidence);
      requireAmount(value.amount, 'amount', evidence, SETTLEMENT_CURRENCY.code);
      return;
    case 'refund_payment': {
      requirePaymentId(value.payment_id, 'payment_id', evidence);
      // A full refund (no amount) needs only the payment: the tool refunds what is left of it. An
      // amount is in the payment's currency, known once the payment was read in the run.
      const currency =
        typeof value.payment_id === 'string' ? evidence.paymentCurrencies.get(value.payment_id) : undefined;
      if (value.amount !== undefined) requireAmount(value.amount, 'amount', evidence, currency);
      return;
    }
    case 'create_payment':
      // A payment settles to its payout_address: an invented one would be a way to pay anyone.
      if (value.payout_address !== undefined) requireAddress(value.payout_address, 'payout_address', evidence);
      return;
    case 'split_revenue': {
      if (value.payment_id !== undefined) requirePaymentId(value.payment_id, 'payment_id', evidence);
      if (value.amount !== undefined) requireAmount(value.amount, 'amount', evidence, SETTLEMENT_CURRENCY.code);
      const splits = Array.isArray(value.splits) ? (value.splits as Record<string, unknown>[]) : [];
      const total = typeof value.amount === 'number' ? parseDecimal(String(value.amount)) : undefined;
      for (const [i, split] of splits.entries()) {
        requireAddress(split.to_address, `splits.${i}.to_address`, evidence);
        if (split.share_parts !== undefined)
          requireParts(split.share_parts, `splits.${i}.share_parts`, splits, evidence);
        else requireShare(split.share_bps, `splits.${i}.share_bps`, splits.length, total, evidence);
      }
      return;
    }
    default:
      return;
  }
}

const MONEY_TOOLS: ReadonlySet<string> = new Set(['create_payout', 'refund_payment', 'split_revenue']);

function unclear(holds: readonly string[]): AppError {
  const quoted = [...new Set(holds)].map((text) => `"${truncate(text, 40)}"`).join(', ');
  return new AppError(
    'unclear_instruction',
    `the instruction holds ${quoted}: a condition, a wait, a negation, a repetition, or a number that reads more than one way. Nothing moved: ask the merchant what to do now, quoting it, instead of moving money`,
  );
}

function ungrounded(field: string, value: unknown): AppError {
  return new AppError(
    'ungrounded_argument',
    `${field} ${String(value)} does not appear in your instruction or in data read in this run; I only use recipients, amounts and payment ids you gave me`,
    { param: field },
  );
}

function requireAddress(value: unknown, field: string, evidence: RunEvidence): void {
  if (typeof value !== 'string' || !evidence.addresses.has(value.toLowerCase())) throw ungrounded(field, value);
}

function requirePaymentId(value: unknown, field: string, evidence: RunEvidence): void {
  if (typeof value !== 'string' || !evidence.ids.has(value)) throw ungrounded(field, value);
}

function requireAmount(value: unknown, field: string, evidence: RunEvidence, currency: string | undefined): void {
  const amount = typeof value === 'number' && Number.isFinite(value) ? parseDecimal(String(value)) : undefined;
  if (amount === undefined || !isGroundedAmount(amount, evidence, currency)) throw ungrounded(field, value);
}

/**
 * A grounded number may stand for an amount in `target`: one written without a currency stands for
 * any; "$" or "dollars" for USDC or USD; any other only for its own currency. An unknown target (a
 * refund of a payment not read in the run) takes any, the tool holding the refund to the payment's own.
 */
function sameCurrency(grounded: string | undefined, target: string | undefined): boolean {
  if (grounded === undefined || target === undefined) return true;
  if (grounded === 'DOLLAR') return target === SETTLEMENT_CURRENCY.code || target === 'USD';
  return grounded === target;
}

/**
 * An amount is grounded when it is a grounded number in its currency exactly, that number times a
 * proportion of the instruction ("30%", "half", a part of "70/30"), that number less another of
 * the same currency, or that number divided into 2 to 20 equal parts. A product or quotient with
 * more decimals than the currency has may be rounded down or up to it.
 */
export function isGroundedAmount(amount: Rational, evidence: RunEvidence, currency?: string): boolean {
  const exponent = currency === undefined ? undefined : getCurrency(currency)?.exponent;
  const bases = [...evidence.numbers.values()].filter((base) => sameCurrency(base.currency, currency));
  for (const { value: base, currency: baseCurrency } of bases) {
    // A number as written grounds only itself: "1.0000001 USDC" is not 1 USDC rounded.
    if (amount.n === base.n && amount.d === base.d) return true;
    for (const proportion of evidence.proportions) {
      if (matches(amount, multiply(base, proportion), exponent)) return true;
    }
    // "refund pay_… minus the 500 naira fee": a grounded amount less another one of its currency.
    for (const other of bases)
      if (
        other.value !== base &&
        sameCurrency(other.currency, baseCurrency) &&
        matches(amount, subtract(base, other.value), exponent)
      )
        return true;
    if (!evidence.equalParts) continue;
    for (let k = 2n; k <= MAX_EQUAL_PARTS; k++) {
      if (matches(amount, rational(base.n, base.d * k), exponent)) return true;
    }
  }
  return false;
}

/**
 * A share is grounded when it is a percentage or ratio part of the instruction, a fraction of it
 * (rounded down or up to a basis point), an equal division of 100% between the recipients
 * (3334/3333/3333), or when its leg of the split's total is itself a grounded number
 * ("60 to A and 40 to B" of 100 USDC).
 */
function requireShare(
  value: unknown,
  field: string,
  recipients: number,
  total: Rational | undefined,
  evidence: RunEvidence,
): void {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw ungrounded(field, value);
  const share = BigInt(value);
  if (evidence.shareBps.has(share)) return;
  for (const fraction of evidence.fractions) {
    const floor = (fraction.n * BPS) / fraction.d;
    if (share === floor || ((fraction.n * BPS) % fraction.d !== 0n && share === floor + 1n)) return;
  }
  if (recipients > 0 && evidence.equalParts) {
    const equal = BPS / BigInt(recipients);
    if (share === equal || (BPS % BigInt(recipients) !== 0n && share === equal + 1n)) return;
  }
  if (total !== undefined) {
    const leg = multiply(total, rational(share, BPS));
    for (const base of evidence.numbers.values()) {
      if (
        sameCurrency(base.currency, SETTLEMENT_CURRENCY.code) &&
        matches(leg, base.value, SETTLEMENT_CURRENCY.exponent)
      )
        return;
    }
  }
  throw ungrounded(field, value);
}

/**
 * Parts of a split (share_parts) are grounded when the instruction asks for equal parts and every
 * leg has the same parts, or when they are the parts of a ratio it writes ("70/30" as 70 and 30).
 */
function requireParts(
  value: unknown,
  field: string,
  splits: readonly Record<string, unknown>[],
  evidence: RunEvidence,
): void {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) throw ungrounded(field, value);
  if (evidence.equalParts && splits.every((leg) => leg.share_parts === value)) return;
  if (evidence.shareBps.has(BigInt(value) * 100n)) return;
  throw ungrounded(field, value);
}

/** amount = candidate exactly, or candidate rounded down or up to `exponent` decimals. */
function matches(amount: Rational, candidate: Rational, exponent: number | undefined): boolean {
  if (amount.n === candidate.n && amount.d === candidate.d) return true;
  if (exponent === undefined) return false;
  const scale = 10n ** BigInt(exponent);
  const scaledAmount = amount.n * scale;
  if (scaledAmount % amount.d !== 0n) return false;
  const whole = scaledAmount / amount.d;
  const numerator = candidate.n * scale;
  if (numerator % candidate.d === 0n || numerator < 0n) return false;
  const floor = numerator / candidate.d;
  return whole === floor || whole === floor + 1n;
}

function gcd(a: bigint, b: bigint): bigint {
  let x = a < 0n ? -a : a;
  let y = b < 0n ? -b : b;
  while (y !== 0n) [x, y] = [y, x % y];
  return x;
}

function rational(n: bigint, d: bigint): Rational {
  const sign = d < 0n ? -1n : 1n;
  const divisor = gcd(n, d) || 1n;
  return { n: (sign * n) / divisor, d: (sign * d) / divisor };
}

function multiply(a: Rational, b: Rational): Rational {
  return rational(a.n * b.n, a.d * b.d);
}

function subtract(a: Rational, b: Rational): Rational {
  return rational(a.n * b.d - b.n * a.d, a.d * b.d);
}

/** Decimal text ("1200.5", "1e-7", a JSON number's String()) as an exact rational. */
export function parseDecimal(text: string): Rational | undefined {
  const match = DECIMAL.exec(text.trim());
  if (match === null) return undefined;
  const [, sign = '', whole = '0', fraction = '', exponentText] = match;
  const exponent = exponentText === undefined ? 0 : Number(exponentText);
  if (!Number.isSafeInteger(exponent) || Math.abs(exponent) > 400) return undefined;
  let n = BigInt(whole + fraction) * (sign === '-' ? -1n : 1n);
  let d = 10n ** BigInt(fraction.length);
  if (exponent > 0) n *= 10n ** BigInt(exponent);
  else d *= 10n ** BigInt(-exponent);
  return rational(n, d);
}

function addNumber(numbers: Map<string, Grounded>, value: Rational | undefined, currency: string | undefined): void {
  if (value === undefined || value.n <= 0n) return;
  numbers.set(`${value.n}/${value.d}/${currency ?? ''}`, { value, currency });
}
