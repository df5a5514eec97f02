import { CURRENCIES, type Currency } from '../../domain/money.ts';
import type { PaymentStatus } from '../../domain/payment-status.ts';
import type { PaymentLookup } from './clause.ts';
import type { CurrencyMention, DateRange, NumberValue } from './token-types.ts';

/**
 * What the offline planner's plan is made of: a step (a payout, a refund, a split, a new payment, a
 * read), the refund amount a step may carry, the answer understand() gives (steps, or the problems
 * and perhaps a proposed reading), and `problem`, which stops a message with a reason the reply
 * names. Every later module of the plan speaks in these types.
 */

/** Payouts and splits move the custodial balance, held in USDC. */
export const PAYOUT_ASSET: Currency = CURRENCIES.USDC;
/** A pasted wall of text cannot fan out into many calls. */
export const MAX_STEPS_PER_MESSAGE = 10;
export const MAX_MESSAGE_LENGTH = 4000;

export type RefundAmount =
  | { type: 'full' }
  | { type: 'exact'; number: NumberValue; text: string; currency: CurrencyMention | undefined }
  | { type: 'share'; numerator: bigint; denominator: bigint; label: string }
  /** "minus the 500 naira delivery fee": the payment's amount less this. */
  | { type: 'less'; number: NumberValue; text: string; currency: CurrencyMention | undefined };

export type Step =
  | { kind: 'payout'; amountMinor: bigint; toAddress: string; memo?: string; reference?: string }
  | { kind: 'refund'; paymentId: string; amount: RefundAmount; reason?: string; lookup?: PaymentLookup }
  | { kind: 'refund_period'; range: DateRange; currency?: string; reason?: string }
  | {
      kind: 'split';
      source: { paymentId: string; lookup?: PaymentLookup } | { amountMinor: bigint } | { range: DateRange };
      /** Basis points of 10000 as written ("70/30", "60%"), or equal parts ("equally", "three ways"). */
      splits: ({ toAddress: string; shareBps: number } | { toAddress: string; shareParts: number })[];
      reference?: string;
    }
  | {
      kind: 'create_payment';
      amountMinor: bigint;
      currency: Currency;
      redirectUrl: string;
      description?: string;
      reference?: string;
    }
  | { kind: 'payment_status'; paymentId: string; lookup?: PaymentLookup }
  | { kind: 'balance' }
  | { kind: 'pending_confirmations' }
  | { kind: 'list_payments'; status?: PaymentStatus; limit?: number; range?: DateRange }
  | { kind: 'revenue'; range: DateRange; currency?: string };

/** The payment id of a step whose payment is named by reference or description, until it is found. */
export const FOUND_LATER = '';

/**
 * `proposal`: when the message is asked back but one reading of it is most likely, the steps of
 * that reading, shown with the question and run only if the merchant answers yes (docs/agent.md,
 * "The conversation").
 */
export type Understanding = { ok: true; steps: Step[] } | { ok: false; problems: string[]; proposal?: Step[] };

export class Problem extends Error {}
export function problem(reason: string): never {
  throw new Problem(reason);
}
