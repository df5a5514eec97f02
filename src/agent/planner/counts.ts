import type { Token } from './token-types.ts';
import { CONTROL_WORDS } from './lexicon.ts';

/**
 * Questions about tokens once the message is lexed: whether a number counts things ("3 bags",
 * "2 of the 5 items") rather than being an amount, whether words tell the past or a repetition,
 * and whether a token carries meaning that the grammar must place. Read by the lexer's marking
 * passes and by the grammar and plan alike.
 */

/** Words after a number that make it an amount or a repeat, never a count of things. */
const NOT_A_NOUN = new Set([
  'to',
  'each',
  'usdc',
  'of',
  'for',
  'from',
  'back',
  'please',
  'pls',
  'thanks',
  'thank',
  'and',
  'or',
  'on',
  'in',
  'at',
  'by',
  'is',
  'was',
  'more',
  'extra',
  'only',
  'off',
  'less',
  'times',
  'percent',
  // "…, 3 as was agreed": how many, of nothing named.
  'as',
  'like',
  'so',
]);

/**
 * "2 bags of rice", "returned one item": a small whole number before a noun counts things; it is
 * no amount. `maxDigits` bounds it (a memo may say "100 bags"; a context sentence only "2 bags").
 */
export function isQuantity(token: Token, next: Token | undefined, maxDigits = 4): boolean {
  if (token.kind !== 'amount' || token.currency !== undefined || token.number.type !== 'exact') return false;
  if (!new RegExp(`^\\d{1,${maxDigits}}$`).test(token.number.text) || /[.,]/.test(token.text)) return false;
  return next?.kind === 'word' && !CONTROL_WORDS.has(next.lower) && !NOT_A_NOUN.has(next.lower);
}

/**
 * Nouns that count things, not money, in the singular or with an irregular plural: "one item",
 * "3 people", "in two instalments". Regular plurals ("crates", "plates") need no entry (isCountNoun).
 */
const COUNT_NOUNS = new Set([
  'item',
  'piece',
  'part',
  'instalment',
  'installment',
  'tranche',
  'time',
  'crate',
  'bag',
  'box',
  'carton',
  'bottle',
  'pack',
  'pair',
  'unit',
  'plate',
  'ticket',
  'day',
  'night',
  'week',
  'month',
  'year',
  'hour',
  'person',
  'people',
  'staff',
  'child',
  'children',
  'men',
  'women',
  // Units things are counted or measured in: "1 ltr of oil", "2 kg of rice".
  'kg',
  'g',
  'lb',
  'ltr',
  'litre',
  'liter',
  'metre',
  'meter',
  'yard',
  'dozen',
]);

/** Words ending in "s" that are no plural noun after a number ("500 this time", "50 thanks"). */
const NOT_PLURAL = new Set([
  'this',
  'thus',
  'plus',
  'less',
  'unless',
  'yes',
  'was',
  'has',
  'is',
  'as',
  'us',
  'its',
  'his',
]);

/**
 * "two instalments", "2 crates", "3 people", "one item": a word that counts things. A number
 * before it, with no currency, is a count and never an amount.
 */
export function isCountNoun(token: Token | undefined): boolean {
  if (token?.kind !== 'word' || CONTROL_WORDS.has(token.lower) || NOT_A_NOUN.has(token.lower)) return false;
  const word = token.lower;
  if (COUNT_NOUNS.has(word)) return true;
  return /^\p{L}{3,}s$/u.test(word) && !/(?:ss|us)$/.test(word) && !NOT_PLURAL.has(word);
}

/** "3 of 4", "out of 3": a count the lexer set apart as a code (markCounts). */
export function isCountCode(tokens: readonly Token[], k: number): boolean {
  const digits = (t: Token | undefined): boolean => t?.kind === 'code' && /^\d{1,4}$/.test(t.text);
  const of = (t: Token | undefined): boolean => t?.kind === 'word' && t.lower === 'of';
  return (
    digits(tokens[k]) &&
    ((of(tokens[k + 1]) && digits(tokens[k + 2])) ||
      (of(tokens[k - 1]) &&
        (digits(tokens[k - 2]) || (tokens[k - 2]?.kind === 'word' && tokens[k - 2]!.text.toLowerCase() === 'out'))))
  );
}

/** Words after "N of" that say which things are counted ("2 of the plates", "one of our riders"). */
const DETERMINERS = new Set(['the', 'these', 'those', 'my', 'our', 'his', 'her', 'their', 'its']);
/** Nouns after "N of the" that name money, not things ("500 of the payment"). */
const MONEY_NOUNS = new Set(['payment', 'amount', 'money', 'total', 'refund', 'balance', 'price', 'sum', 'order']);

/** "2 of the plates", "one of our riders" at `i`: a bare whole number counting some of the things. */
export function isCountOf(tokens: readonly Token[], i: number): boolean {
  const token = tokens[i];
  // "refund one of them", "two of those": some of the things just named.
  const some =
    tokens[i + 1]?.kind === 'word' &&
    (tokens[i + 1] as { lower: string }).lower === 'of' &&
    tokens[i + 2]?.kind === 'word' &&
    ['them', 'those', 'these'].includes((tokens[i + 2] as { lower: string }).lower);
  const determiner = tokens[i + 2];
  // "one of the two items": the whole may be counted too.
  const counted = tokens[i + 3]?.kind === 'amount' && isCountNoun(tokens[i + 4]);
  const noun = tokens[counted ? i + 4 : i + 3];
  return (
    token?.kind === 'amount' &&
    token.currency === undefined &&
    token.number.type === 'exact' &&
    /^\d{1,4}$/.test(token.number.text) &&
    (some ||
      (tokens[i + 1]?.kind === 'word' &&
        (tokens[i + 1] as { lower: string }).lower === 'of' &&
        determiner?.kind === 'word' &&
        DETERMINERS.has(determiner.lower) &&
        noun?.kind === 'word' &&
        !MONEY_NOUNS.has(noun.lower) &&
        !CONTROL_WORDS.has(noun.lower)))
  );
}

/** Words that repeat or multiply an action: placed only when they tell what already happened. */
export const REPETITION = new Set(['twice', 'thrice', 'double', 'again']);

/** Words that put a sentence in the past: "was charged twice", "last time it went twice". */
export const PAST = new Set([
  'was',
  'were',
  'been',
  'got',
  'had',
  'charged',
  'paid',
  'billed',
  'debited',
  'deducted',
  'went',
  'happened',
  'came',
  'did',
  'sent',
  'took',
  'returned',
  'arrived',
  'bought',
  'ordered',
  'broke',
  'checked',
  'cancelled',
  'canceled',
  'received',
  // What a card terminal or a till did: "the POS swiped her card two times".
  'swiped',
  'tapped',
  'scanned',
  'processed',
  'ran',
  'collected',
  'transferred',
]);

/** A small whole number with no currency: a count, when a sentence tells the past. */
export function isCount(token: Token): boolean {
  return (
    token.kind === 'amount' &&
    token.currency === undefined &&
    token.number.type === 'exact' &&
    /^\d{1,4}$/.test(token.number.text) &&
    !token.negative
  );
}

/**
 * "the customer was charged twice", "(last time it went twice)": a repetition word after a verb in
 * the past tells a story; "refund pay_… twice" or "pay him double" would multiply the action.
 */
export function tellsThePast(tokens: readonly Token[], at: number): boolean {
  const token = tokens[at];
  // "was charged 2 times": a count of times, as "twice".
  const times =
    token?.kind === 'word' && token.lower === 'times' && tokens[at - 1] !== undefined && isCount(tokens[at - 1]!);
  if (token?.kind !== 'word' || !(REPETITION.has(token.lower) || times)) return false;
  return tokens.slice(Math.max(0, at - 4), at).some((t) => t.kind === 'word' && PAST.has(t.lower));
}

/** Tokens that carry meaning: each must be consumed by the plan (checks.ts). */
export function isSignificant(token: Token): boolean {
  switch (token.kind) {
    case 'word':
      return CONTROL_WORDS.has(token.lower);
    case 'punct':
      // A quote mark opening pasted text ("process this email: 'Hi, pay …'"), or letters of a script
      // the grammar does not read (fullwidth "ｐａｙ"): the message says something it cannot place.
      return token.text === "'" || /\p{L}/u.test(token.text);
    case 'quoted':
      return token.carries;
    case 'code':
    case 'currency':
      return false;
    default:
      return true;
  }
}
