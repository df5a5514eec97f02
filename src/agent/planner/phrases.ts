import type { PaymentStatus } from '../../domain/payment-status.ts';
import { PAYMENT_STATUSES } from '../../domain/payment-status.ts';
import { isWord } from './clause.ts';
import type { Token } from './token-types.ts';

/**
 * Small phrase readers and word lists that several grammar modules share: an order reference
 * ("order #GH-2210"), a negated extent ("not the full refund"), the subjects that open a statement
 * about what happened, the payment statuses a list can ask for, and the verbs of buying. They sit
 * below intents.ts, clauses.ts and slots.ts so that none of those needs another to read them.
 */

/** Words before which a code names one of the merchant's orders: "order ORD-1042", "invoice INV-330". */
const ORDER_WORDS = new Set(['order', 'invoice', 'receipt', 'transaction', 'booking']);

/** The reference a code at `i` gives for an order ("order #GH-2210" → "GH-2210"), if it is one. */
export function referenceAt(tokens: readonly Token[], i: number): string | undefined {
  const token = tokens[i];
  if (token?.kind !== 'code') return undefined;
  const previous = tokens[i - 1];
  const value = token.value.replace(/^#/, '');
  // "order 7 of 10": which one of a series (markCounts), not the order's reference.
  if (isWord(tokens[i + 1], 'of') && tokens[i + 2]?.kind === 'code' && /^\d+$/.test(value)) return undefined;
  if (previous?.kind === 'word' && ORDER_WORDS.has(previous.lower)) return value;
  // "order no. 4471", "order number 4471": the number of the order.
  if (isWord(previous, 'number', 'nr') && isWord(tokens[i - 2], ...ORDER_WORDS)) return value;
  // "refund #ORD-2291": a hash before letters and digits marks the merchant's own reference.
  if (token.value.startsWith('#') && /[a-z]/i.test(value) && /\d/.test(value)) return value;
  // "refund 1,000 naira on ORD-332", "money back for #A-7731": a code shaped like an order
  // reference (letters, a dash, digits) after a preposition names the order too.
  // "is ORD-2210 paid?", "has KE-88 settled?": so does one a question opens with.
  const shaped = /^[a-z]{1,6}-[a-z0-9-]*\d[a-z0-9-]*$/i.test(value);
  if (isWord(previous, 'on', 'for', 'of') && shaped) return value;
  // "status A-77", "status of A-77": what a status is asked of.
  if (shaped && isWord(previous, 'status') && tokens.slice(0, i - 1).every((t) => t.kind === 'punct')) return value;
  if (shaped && isWord(previous, 'is', 'has', 'was', 'did') && tokens.slice(0, i - 1).every((t) => t.kind === 'punct'))
    return value;
  return undefined;
}

/** Words that say a refund is whole, or a part of the payment. */
export const WHOLE_EXTENT = new Set([
  'full',
  'fully',
  'all',
  'everything',
  'whole',
  'entire',
  'entirely',
  'completely',
]);
export const PART_EXTENT = new Set(['partially', 'partly', 'partial', 'part', 'half']);

/**
 * "not (a|the) full refund", "not all of it", "not half", "not partially" at `at`: the words of a
 * negated extent, when the rest of the clause states the other extent (an amount or a share
 * against "full"; "fully", "in full" against "half"). Otherwise undefined: the "not" stays to be
 * placed, and the clause is asked back.
 */
export function negatedExtent(tokens: readonly Token[], at: number): Token[] | undefined {
  // Pidgin "no be all di money": "no be" is "is not", "di" is "the".
  let k = isWord(tokens[at + 1], 'be') ? at + 2 : at + 1;
  while (isWord(tokens[k], 'a', 'an', 'the', 'di') || (isWord(tokens[k], 'in') && isWord(tokens[k + 1], 'full'))) k++;
  const word = tokens[k];
  // "not half", "not a quarter": a share is a part.
  const whole = word?.kind === 'word' && WHOLE_EXTENT.has(word.lower);
  if (!whole && !(word?.kind === 'fraction' || (word?.kind === 'word' && PART_EXTENT.has(word.lower))))
    return undefined;
  let end = k;
  while (isWord(tokens[end + 1], 'refund', 'amount', 'thing', 'of', 'it', 'money')) end++;
  // "not the full 5,000": the figure is the whole ruled out, not the part to refund; which part is
  // meant is unsaid (it refunded 5,000).
  if (tokens[end + 1]?.kind === 'amount') return undefined;
  const phrase = tokens.slice(at, end + 1);
  const rest = tokens.filter((t) => !phrase.includes(t));
  const statesPart = rest.some((t) => t.kind === 'amount' || t.kind === 'fraction' || t.kind === 'percent');
  const statesWhole = rest.some(
    (t, i) =>
      isWord(t, 'fully', 'entirely', 'completely', 'integralement') ||
      (isWord(t, 'full') && isWord(rest[i + 1], 'refund', 'amount')) ||
      (isWord(t, 'in') && isWord(rest[i + 1], 'full')),
  );
  return (whole ? statesPart && !statesWhole : statesWhole && !statesPart) ? phrase : undefined;
}

/** Words that start a sentence about what happened: who or what it is about. */
export const STATEMENT_SUBJECTS = [
  'customer',
  'client',
  'buyer',
  'guest',
  'she',
  'he',
  'they',
  'item',
  'items',
  'goods',
  'order',
  'parcel',
  'package',
];

export const LIST_STATUS_WORDS: ReadonlyMap<string, PaymentStatus> = new Map(
  PAYMENT_STATUSES.map((status) => [status.replace('_', ' '), status] as const),
);

/** "the customer wey buy …", "who bought …": the words after describe what was paid for. */
export const BOUGHT = new Set(['buy', 'bought', 'purchased', 'ordered']);
