import type { CurrencyCode } from '../../domain/money.ts';
import type { NumberValue } from '../numbers.ts';

/**
 * The shapes the offline planner's lexer produces: a token (a word, an amount, an address, a
 * payment id, a share, a date range, ...) with where it stands in the message and whether it
 * carries meaning, and the currency and date-range values a token may hold. Every later stage reads
 * these types; tokens.ts makes them.
 */

export type { NumberValue } from '../numbers.ts';

/** A currency as written; "dollars"/"$" is resolved by context (USDC on payouts, USD on payments). */
export interface CurrencyMention {
  code: CurrencyCode | 'DOLLAR';
  word: string;
}

interface Span {
  /** The text as written. */
  text: string;
  /** Index of the token in the message's token list. */
  index: number;
}

export type Token = Span &
  (
    | { kind: 'address'; value: string }
    | { kind: 'bad_address'; reason: string }
    | { kind: 'payment_id'; value: string }
    | { kind: 'bad_payment_id' }
    /** Another object's id (po_…, conf_…): meaningful, and no instruction here takes one. */
    | { kind: 'object_id'; value: string }
    | { kind: 'url'; value: string }
    | { kind: 'amount'; number: NumberValue; currency: CurrencyMention | undefined; negative: boolean }
    | { kind: 'percent'; bps: bigint | undefined }
    /** "70/30", "50-50", "50/30/20": shares in basis points. */
    | { kind: 'ratio'; parts: bigint[] }
    /** "half", "a quarter", "three quarters", "a third". */
    | { kind: 'fraction'; numerator: bigint; denominator: bigint }
    | { kind: 'currency'; mention: CurrencyMention }
    /** `past`: every reading of it is before today ("on 12/03": the 12th of March or the 3rd of December). */
    | { kind: 'date'; range: DateRange | undefined; since: boolean; past: boolean }
    /** Text in quotes; `carries` when it holds a value or a word that changes meaning (never placed). */
    | { kind: 'quoted'; value: string; carries: boolean }
    /** An identifier that is not an amount: "#42", "PO-17", "INV2024", the 42 of "invoice 42". */
    | { kind: 'code'; value: string }
    | { kind: 'word'; lower: string }
    | { kind: 'punct' }
  );

export type TokenKind = Token['kind'];
export interface DateRange {
  /** Inclusive. */
  from: Date;
  /** Exclusive; never after the clock's now. */
  to: Date;
}
