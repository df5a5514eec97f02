import type { PaymentStatus } from '../../domain/payment-status.ts';
import type { CurrencyMention, DateRange, Token } from './token-types.ts';

/**
 * The shapes the offline planner's grammar reads a message into: a clause, its intent and its
 * slots (the amounts, recipients, payments and words it names), and the small token helpers every
 * later module shares. Nothing here reads a message; intents.ts, clauses.ts and slots.ts fill these
 * shapes, and plan.ts turns them into steps.
 */

export type Intent =
  | 'payout'
  | 'refund'
  | 'split'
  | 'create_payment'
  | 'payment_status'
  | 'balance'
  | 'pending_confirmations'
  | 'list_payments'
  | 'revenue'
  | 'approve';

export type AmountToken = Extract<Token, { kind: 'amount' }>;

export interface Slots {
  addresses: Extract<Token, { kind: 'address' }>[];
  amounts: AmountToken[];
  paymentIds: string[];
  percents: Extract<Token, { kind: 'percent' }>[];
  ratio?: bigint[];
  fraction?: { numerator: bigint; denominator: bigint; text: string };
  /** "equally", "evenly", "three ways": equal shares; the count when the ways are given. */
  equal?: { ways: number | undefined };
  /** "among these 6 people", "our 3 partners": how many recipients the merchant counts. */
  recipients?: number;
  each: boolean;
  /** "in full", "everything", "all of it": a full refund. */
  full: boolean;
  /** "all payments", "every payment": the refund covers every payment of a date range. */
  allPayments: boolean;
  /** "paid twice", "duplicates": the merchant means some payments, and which is not typed data. */
  duplicates: boolean;
  date?: DateRange;
  url?: string;
  memo?: string;
  /** Every memo written; several only make sense with several "amount to address" pairs. */
  memos: string[];
  reason?: string;
  reference?: string;
  currency?: CurrencyMention;
  status?: PaymentStatus;
  limit?: number;
  /** The clause mentions revenue, sales or takings (split or read a period's proceeds). */
  revenueWord: boolean;
  /** "check if …": a read phrased as a question; harmless alone, a condition beside a money step. */
  questionIf?: boolean;
  /** "minus the 500 naira delivery fee": a refund of all but this amount. */
  less?: AmountToken;
  /** "order ORD-1042", "the blue kente cloth order": a payment named by the merchant's own words. */
  lookup?: PaymentLookup;
}

/**
 * A payment the merchant names without its id: by its reference ("order ORD-1042", "#GH-2210",
 * "order 1042"), or by words of its description ("the blue kente cloth order"). The planner looks
 * it up with list_payments before anything else runs (calls.ts, lookupRead; the offline model in
 * models/offline-planner.ts runs it).
 */
export type PaymentLookup = { reference: string } | { words: string[]; all?: true };

export interface Clause {
  intent: Intent | undefined;
  tokens: Token[];
  slots: Slots;
  /** Indexes (Token.index) of the tokens this clause accounts for. */
  consumed: Set<number>;
  /** Indexes of values a correction or a "not" ruled out: accounted for, and never meant. */
  superseded: Set<number>;
  /** Set when the clause says something the grammar recognises but cannot accept. */
  problem?: string;
  /** A pronoun ("refund it", "their money back") stands for a payment named elsewhere. */
  wantsPaymentFromContext: boolean;
}

export const isMoneyIntent = (intent: Intent | undefined): boolean =>
  intent === 'payout' || intent === 'refund' || intent === 'split' || intent === 'create_payment';

export const text = (tokens: readonly Token[]): string =>
  tokens
    .map((token) => token.text)
    .join(' ')
    .replace(/\s+([,.;:!?])/g, '$1')
    .trim();

export const isWord = (token: Token | undefined, ...words: string[]): boolean =>
  token?.kind === 'word' && words.includes(token.lower);
