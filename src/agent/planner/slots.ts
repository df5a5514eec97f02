import { type AmountToken, type Intent, isMoneyIntent, isWord, type Slots, text } from './clause.ts';
import {
  BOUGHT,
  LIST_STATUS_WORDS,
  negatedExtent,
  PART_EXTENT,
  referenceAt,
  STATEMENT_SUBJECTS,
  WHOLE_EXTENT,
} from './phrases.ts';
import {
  LEADING_FILLERS,
  leadingWord,
  MONEY_VERBS,
  PAYMENT_NOUNS,
  REFUND_VERBS,
  REVENUE_WORDS,
  SPLIT_VERBS,
  STATUS_WORDS,
} from './intents.ts';
import { countOnceTo, onceTo, RECIPIENT_NOUNS, recipientsNamed, REPEATS, STORY_VERBS, VALUE_KINDS } from './clauses.ts';
import { isCount, isCountCode, isCountNoun, isCountOf, isQuantity, PAST, tellsThePast } from './counts.ts';
import { CONTROL_WORDS, HARD_CONTROL_WORDS, NEGATIONS } from './lexicon.ts';
import type { Token } from './token-types.ts';

/**
 * The offline planner's slot filler: from one clause's tokens and its intent, it fills the slots
 * (amounts, addresses, payment ids, shares, memos, a payment named by reference or description),
 * marking every token it uses as consumed, and merges a correction into the slots it corrects. It
 * never decides whether a clause is complete: plan.ts does, and checks.ts refuses a message with
 * any meaningful token left unconsumed.
 */

export function emptySlots(): Slots {
  return {
    addresses: [],
    amounts: [],
    paymentIds: [],
    percents: [],
    memos: [],
    each: false,
    full: false,
    allPayments: false,
    duplicates: false,
    revenueWord: false,
  };
}

const FREE_TEXT_STOP = new Set([
  'ref',
  'reference',
  'memo',
  'note',
  'because',
  'reason',
  'redirect',
  'redirecting',
  'return',
  'returning',
]);

/**
 * Words with which the merchant says the message itself is wrong ("…, sorry typo", "…, oops wrong
 * amount", "…, my bad"): no memo or reason holds them, so the grammar leaves them unplaced and the
 * run asks what was meant instead of paying the figure written.
 */
const SELF_CORRECTION = new Set(['typo', 'typos', 'oops', 'meant', 'scratch', 'correction', 'mistyped']);

/** Words that open a memo, a description or a reason: "for rent", "memo: …", "description: …". */
const MEMO_LABELS = new Set(['for', 'memo', 'note', 'description', 'desc', 're', 'narration']);

/** Words a reason may hold that would be refused elsewhere: "charged twice", "never arrived". */
const REASON_WORDS = new Set([...NEGATIONS, 'twice', 'again', 'double', "wasn't", "weren't", "hasn't", "haven't"]);

/**
 * Free text after a marker ("for …", "because …", "memo: …"): words, codes, quoted text and
 * quantities ("2 bags") up to a value, a slot marker or a clause-internal boundary. It never holds
 * an amount, address, id, date, or a word of condition, negation, correction or sequencing: those
 * end it and are left for the grammar to place (or refuse). A reason may hold a negation or
 * "twice": it describes what happened, it sets no condition.
 */
function freeText(
  tokens: readonly Token[],
  start: number,
  kind: 'memo' | 'reason',
): { value: string; end: number; consumed: number[]; runsInto?: Token } {
  const taken: Token[] = [];
  const consumed: number[] = [];
  let i = start;
  let depth = 0;
  for (; i < tokens.length; i++) {
    const token = tokens[i]!;
    const next = tokens[i + 1];
    if (token.kind === 'quoted' || token.kind === 'code') {
      taken.push(token);
      continue;
    }
    // "paid twice on 12/03", "the 3pm delivery run", "last week's order": a day gone by, or a time
    // that names a thing ("the 3pm run"), describes; a day to come would defer, and ends the text.
    const namesAThing =
      token.kind === 'date' &&
      token.range === undefined &&
      isWord(tokens[i - 1], 'the') &&
      next?.kind === 'word' &&
      !LEADING_FILLERS.has(next.lower) &&
      !CONTROL_WORDS.has(next.lower);
    if (token.kind === 'date' && (token.past || namesAThing)) {
      consumed.push(token.index);
      taken.push(token);
      continue;
    }
    // "refund half of pay_…, the other half (of the order) was delivered": the rest of a share the
    // request already took, named in its story, is no second share.
    if (
      kind === 'reason' &&
      isWord(token, 'other') &&
      isWord(tokens[i - 1], 'the') &&
      next?.kind === 'fraction' &&
      tokens.slice(0, start).some((t) => t.kind === 'fraction' && t.text.toLowerCase() === next.text.toLowerCase())
    ) {
      consumed.push(token.index, next.index);
      taken.push(token, next);
      i++;
      continue;
    }
    if (token.kind === 'word') {
      if (endsFreeText(tokens, i, token, next, kind)) break;
      // A word of condition the text may hold ("paid twice", "never arrived") is placed by it.
      if (CONTROL_WORDS.has(token.lower)) consumed.push(token.index);
      taken.push(token);
      continue;
    }
    if (token.kind === 'amount') {
      // "(delivery 3 of 4)": which one of how many, in the text.
      const countOf =
        isWord(next, 'of') &&
        [token, tokens[i + 2]].every(
          (t) =>
            t?.kind === 'amount' &&
            t.currency === undefined &&
            t.number.type === 'exact' &&
            /^\d{1,3}$/.test(t.number.text),
        );
      if (countOf) {
        consumed.push(token.index, tokens[i + 2]!.index);
        taken.push(token, next!, tokens[i + 2]!);
        i += 2;
        continue;
      }
      // "2 bags of rice", "2 of the plates": a small whole number counting things, in the text.
      const quantity = isQuantity(token, next) || isCountOf(tokens, i);
      if (!quantity) break;
      consumed.push(token.index);
      taken.push(token);
      continue;
    }
    if (token.kind === 'punct') {
      // "for invoice 2031 (that's our packaging supplier)": the note in brackets is added on its own.
      if (token.text === '(' && taken.length > 0) break;
      if (token.text === '(') depth++;
      if (token.text === ')') {
        if (depth === 0) break;
        depth--;
      }
      if (/^[,;—–]$/.test(token.text)) break;
      taken.push(token);
      continue;
    }
    break;
  }
  return closeFreeText(tokens, i, taken, consumed, kind);
}

/**
 * Whether a word ends free text: a slot marker, a word of correction, an order named as the
 * payment, a recipient, a list's "and", a negation of a value or of the request, or a word of
 * condition the text may not hold.
 */
function endsFreeText(
  tokens: readonly Token[],
  i: number,
  token: Extract<Token, { kind: 'word' }>,
  next: Token | undefined,
  kind: 'memo' | 'reason',
): boolean {
  // "return to https://…" names a payment's redirect; "customer return one of the bags" tells
  // what the buyer did, and stays in the story.
  const returnsTo =
    !isWord(token, 'return', 'returning') || next?.kind === 'url' || isWord(next, 'to', 'url', 'link', ':');
  if (FREE_TEXT_STOP.has(token.lower) && returnsTo) return true;
  if (SELF_CORRECTION.has(token.lower) || (isWord(token, 'my') && isWord(next, 'oops'))) return true;
  // "refund the customer for order NB-4410": the order named is the payment, not the reason.
  // Beside a payment id it is the story ("refund pay_…, customer cancelled order #4471").
  if (kind === 'reason' && referenceAt(tokens, i + 1) !== undefined && !tokens.some((t) => t.kind === 'payment_id'))
    return true;
  if (isWord(token, 'to') && (next?.kind === 'address' || next?.kind === 'url')) return true;
  if (isWord(token, 'with') && next?.kind === 'word' && FREE_TEXT_STOP.has(next.lower)) return true;
  const quantityNext = next !== undefined && isQuantity(next, tokens[i + 2]);
  if (
    isWord(token, 'and', '&') &&
    !quantityNext &&
    (next === undefined || (next.kind !== 'word' && next.kind !== 'code' && next.kind !== 'quoted'))
  )
    return true;
  if (NEGATIONS.has(token.lower)) {
    // "…, not 500 naira", "…, not all of it": a negation of a value or of how much is no reason;
    // it ends the text and is left for the grammar to place (or ask about).
    let k = i + 1;
    while (isWord(tokens[k], 'a', 'an', 'the')) k++;
    const negated = tokens[k];
    // "…, not yet", "…, not now", "…, no": a negation of the request itself.
    if (negated === undefined || negated.kind === 'punct' || isWord(negated, 'yet', 'now', 'today', 'anymore'))
      return true;
    if (
      ['amount', 'fraction', 'percent', 'ratio', 'payment_id', 'address'].includes(negated.kind) ||
      (negated.kind === 'word' && (WHOLE_EXTENT.has(negated.lower) || PART_EXTENT.has(negated.lower)))
    )
      return true;
  }
  if (CONTROL_WORDS.has(token.lower)) {
    const allowed =
      kind === 'reason'
        ? REASON_WORDS.has(token.lower) ||
          // "paid 2 weeks ago but never delivered": the story goes on.
          (token.lower === 'but' && isWord(next, 'never', "wasn't", "didn't", 'nothing', 'still')) ||
          !HARD_CONTROL_WORDS.has(token.lower) ||
          // "she called yesterday to cancel": what the customer wanted, not an instruction.
          (token.lower === 'cancel' && isWord(tokens[i - 1], 'to')) ||
          // "…, customer only got part of the order": what happened, not a condition.
          (token.lower === 'only' && next?.kind === 'word' && PAST.has(next.lower))
        : !HARD_CONTROL_WORDS.has(token.lower);
    if (!allowed) return true;
  }
  return false;
}

/**
 * The free text taken, without trailing punctuation or fillers, and what it runs into: a value
 * glued to it by a preposition, or a payment its reason leads into, which the clause asks about.
 */
function closeFreeText(
  tokens: readonly Token[],
  i: number,
  taken: Token[],
  consumed: number[],
  kind: 'memo' | 'reason',
): { value: string; end: number; consumed: number[]; runsInto?: Token } {
  while (
    taken.length > 0 &&
    (taken.at(-1)!.kind === 'punct' ||
      isWord(taken.at(-1), 'and', 'please', 'pls', 'thanks', 'asap', 'though', 'thx', 'with', 'the', 'a'))
  ) {
    const dropped = taken.pop()!;
    const at = consumed.indexOf(dropped.index);
    if (at >= 0) consumed.splice(at, 1);
  }
  const value = text(taken)
    .replace(/^["'](.*)["']$/, '$1')
    .trim();
  // "returned 3 items of 5": a value glued to the text by a preposition belongs to the text, and
  // the text cannot hold it; the clause asks instead of taking it as the amount.
  const stop = tokens[i];
  const last = taken.at(-1);
  if (
    stop !== undefined &&
    ['amount', 'percent', 'fraction', 'ratio', 'date', 'address', 'payment_id'].includes(stop.kind) &&
    isWord(
      last,
      'of',
      'for',
      'at',
      'by',
      'with',
      'x',
      'per',
      'from',
      'than',
      'out',
      'about',
      'over',
      'under',
      'plus',
      'minus',
      'to',
    )
  )
    return { value, end: i, consumed, runsInto: stop };
  // "refund pay_B, skip pay_A", "…, exclude pay_A": words of a reason that lead straight into another
  // payment say something about it (often to leave it alone); it is never a second refund unasked.
  if (kind === 'reason' && stop?.kind === 'payment_id' && last?.kind === 'word')
    return { value, end: i, consumed, runsInto: stop };
  return { value, end: i, consumed };
}

/** Words before "N of M" that say which one of a series the payment is ("order 7 of 10"). */
const SERIES_WORDS = [
  'order',
  'ord',
  'invoice',
  'inv',
  'delivery',
  'shipment',
  'batch',
  'booking',
  'instalment',
  'installment',
];

/** Sounds that open a correction or a thought ("…, eh no, 4,500"), never a reason. */
const INTERJECTIONS = new Set([
  ...LEADING_FILLERS,
  'eh',
  'ehn',
  'ah',
  'oh',
  'er',
  'erm',
  'hmm',
  'ehm',
  'oops',
  'sorry',
  'wait',
]);

/** Words that say how much or how often, which a memo after a comma may not carry. */
const HOW_MUCH = new Set([
  'only',
  'each',
  'every',
  'more',
  'extra',
  'rest',
  'remaining',
  'remainder',
  'again',
  'twice',
  'double',
  'less',
  'instead',
  'same',
]);

/** The last token of a refund's request, after which a comma or a dash opens its reason. */
function endsTheRequest(tokens: readonly Token[], at: number): boolean {
  // "refund pay_… please, the customer was charged twice": courtesy closes the request.
  let k = at;
  while (isWord(tokens[k], 'please', 'pls', 'abeg', 'thanks', 'asap')) k--;
  const token = tokens[k];
  return (
    token?.kind === 'payment_id' || token?.kind === 'code' || (token?.kind === 'word' && WHOLE_EXTENT.has(token.lower))
  );
}

/**
 * Whether the token at `i` stands in a statement after the request that tells what happened: after
 * a comma or a dash that follows the money verb, in a stretch holding a verb of the story ("…, one
 * cup was chipped", "— size 44 was too small", "…, customer returned half the order").
 */
function toldAfterRequest(tokens: readonly Token[], i: number): boolean {
  const verb = tokens.findIndex((t) => t.kind === 'word' && MONEY_VERBS.has(t.lower));
  const statement = tokens.findLastIndex((t, k) => k < i && t.kind === 'punct' && /^[,—–-]$/.test(t.text));
  if (verb < 0 || statement < verb) return false;
  const end = tokens.findIndex((t, k) => k > i && t.kind === 'punct' && /^[,;.—–-]$/.test(t.text));
  const told = tokens.slice(statement + 1, end < 0 ? tokens.length : end);
  // "…, customer return one of the three bags" (Pidgin and West African English tell the past in
  // the verb's plain form): a statement that opens on who it is about, before any money verb, tells
  // the story too.
  const subject = isWord(told[0], 'the', 'my', 'our', 'di', 'de') ? 1 : 0;
  return (
    told.some((t) => t.kind === 'word' && (STORY_VERBS.has(t.lower) || PAST.has(t.lower))) ||
    (isWord(told[subject], ...STATEMENT_SUBJECTS) &&
      told[subject + 1]?.kind === 'word' &&
      !MONEY_VERBS.has((told[subject + 1] as { lower: string }).lower))
  );
}

/**
 * Fills the slots of one clause (or of one side of a correction) from its tokens, in any order.
 * Every token given a role is added to `consumed`.
 */
export function fillSlots(
  intent: Intent | undefined,
  tokens: readonly Token[],
  significant: (t: Token) => boolean,
): { slots: Slots; consumed: Set<number>; problem?: string } {
  const slots = emptySlots();
  const consumed = new Set<number>();
  const use = (...used: Token[]): void => {
    for (const token of used) consumed.add(token.index);
  };
  let problem: string | undefined;

  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    const next = tokens[i + 1];
    switch (token.kind) {
      case 'address':
        slots.addresses.push(token);
        use(token);
        break;
      case 'payment_id':
        if (!slots.paymentIds.includes(token.value)) slots.paymentIds.push(token.value);
        use(token);
        if (
          intent === 'refund' &&
          slots.reason === undefined &&
          (isWord(next, ...STATEMENT_SUBJECTS) || (isWord(next, 'the') && isWord(tokens[i + 2], ...STATEMENT_SUBJECTS)))
        ) {
          // "refund pay_… customer no longer wants it": a sentence about what happened, unpunctuated.
          const { value, end, consumed: inText } = freeText(tokens, i + 1, 'reason');
          // "refund pay_… customer paid 500 naira twice": a value inside the story may or may not
          // be what to refund; without a comma to tell, it is asked.
          const stop = tokens[end];
          if (stop !== undefined && VALUE_KINDS.includes(stop.kind))
            problem ??= `"${value}" runs into "${stop.text}": I cannot tell whether it belongs to the text; put it in its own words, or after a comma`;
          else if (value !== '') {
            for (const index of inText) consumed.add(index);
            slots.reason = value;
            i = end - 1;
          }
        }
        break;
      case 'amount':
        ({ i, problem } = amountSlot(intent, tokens, significant, i, token, next, slots, use, problem));
        break;
      case 'percent':
        // "refund ₦1,000 of pay_…, the food was 50% cold": a share in the story is no share of
        // the refund; beside an amount said with its currency it is left out, else asked about.
        if (toldAfterRequest(tokens, i)) {
          if (slots.amounts.some((amount) => amount.currency !== undefined)) use(token);
          break;
        }
        slots.percents.push(token);
        use(token);
        break;
      case 'ratio':
        if (slots.ratio !== undefined) problem = 'two sets of shares';
        slots.ratio = token.parts;
        use(token);
        break;
      case 'fraction':
        // "refund pay_…, customer returned half the order": a share in the story told after the
        // request is not the refund's share; it stays to be placed, and the clause is asked back.
        if (toldAfterRequest(tokens, i)) break;
        slots.fraction = { numerator: token.numerator, denominator: token.denominator, text: token.text };
        use(token);
        break;
      case 'date':
        problem = dateSlot(intent, tokens, i, token, slots, use, problem);
        break;
      case 'url':
        slots.url = token.value;
        use(token);
        // "send them back to https://… after": the redirect happens after payment.
        if (isWord(next, 'after', 'afterwards')) {
          use(next!);
          i++;
        }
        break;
      case 'punct':
        ({ i, problem } = punctSlot(intent, tokens, i, token, next, slots, consumed, problem));
        break;
      case 'currency':
        slots.currency = token.mention;
        break;
      case 'code': {
        const reference = referenceAt(tokens, i);
        if (reference !== undefined && FINDS_PAYMENTS.has(intent ?? 'approve') && slots.lookup === undefined) {
          slots.lookup = { reference };
          use(tokens[i - 1]!, token);
        }
        break;
      }
      case 'word':
        ({ i, problem } = wordSlot(intent, tokens, significant, i, token, next, slots, consumed, use, problem));
        break;
      default:
        break;
    }
  }
  problem = countedItemsOfRefund(intent, tokens, slots, consumed, problem);
  describedPaymentLookup(intent, tokens, slots, consumed);
  return problem === undefined ? { slots, consumed } : { slots, consumed, problem };
}

/**
 * After the tokens, for a refund that says no amount, share or "in full": "refund pay_… for the 3
 * missing items", "…, she kept one of the two bags": a count in the reason may be what the refund
 * is for (those items only): it stays to be placed, and the clause is asked back. Returns the
 * clause's problem.
 */
function countedItemsOfRefund(
  intent: Intent | undefined,
  tokens: readonly Token[],
  slots: Slots,
  consumed: Set<number>,
  problem: string | undefined,
): string | undefined {
  if (
    intent === 'refund' &&
    slots.amounts.length === 0 &&
    slots.fraction === undefined &&
    slots.percents.length === 0 &&
    !slots.full
  )
    for (const [k, token] of tokens.entries()) {
      // "…, customer says 3 of 4 arrived": which of the items is what the refund may be for.
      if (isItemCount(tokens, k))
        problem ??= `the message counts items ("${token.text} of …") but says no amount: say how much to refund, or "in full"`;
      if (
        token.kind === 'amount' &&
        token.currency === undefined &&
        consumed.has(token.index) &&
        (isQuantity(token, tokens[k + 1]) || isCountOf(tokens, k))
      )
        consumed.delete(token.index);
    }
  return problem;
}

/**
 * After the tokens, for an intent that acts on one payment and names none by id, reference or date:
 * the payment the clause's words describe ("the blue kente cloth order"), looked up later.
 */
function describedPaymentLookup(
  intent: Intent | undefined,
  tokens: readonly Token[],
  slots: Slots,
  consumed: Set<number>,
): void {
  if (
    FINDS_PAYMENTS.has(intent ?? 'approve') &&
    slots.lookup === undefined &&
    slots.paymentIds.length === 0 &&
    slots.date === undefined &&
    (!slots.allPayments || intent === 'refund')
  ) {
    const described = describedPayment(tokens);
    if (described !== undefined) {
      // "refund all the kente orders": every payment the words describe, each in full.
      slots.lookup = slots.allPayments ? { words: described.words, all: true } : { words: described.words };
      slots.allPayments = false;
      for (const token of described.used) consumed.add(token.index);
      // "the 2 crates of Malta Guinness": the count describes the order; it is no amount.
      slots.amounts = slots.amounts.filter((amount) => !described.used.includes(amount));
    }
  }
}

/**
 * A word in a clause, tried against each reading in turn (WORD_READINGS, in order): words that
 * frame the message, shares, how much of a refund, repetitions and "only", words of a read, free
 * text after a label, lists and revenue. Returns where the token loop goes on from and the
 * clause's problem.
 */
function wordSlot(
  intent: Intent | undefined,
  tokens: readonly Token[],
  significant: (t: Token) => boolean,
  i: number,
  token: Extract<Token, { kind: 'word' }>,
  next: Token | undefined,
  slots: Slots,
  consumed: Set<number>,
  use: (...used: Token[]) => void,
  problem: string | undefined,
): { i: number; problem: string | undefined } {
  const word: WordAt = { intent, tokens, significant, i, token, w: token.lower, next, slots, consumed, use, problem };
  // The first reading whose words match takes the word, even when it then places nothing.
  for (const read of WORD_READINGS) if (read(word)) break;
  return { i: word.i, problem: word.problem };
}

/** One word being read, and what its reading may move on: the loop's index and the clause's problem. */
interface WordAt {
  readonly intent: Intent | undefined;
  readonly tokens: readonly Token[];
  readonly significant: (t: Token) => boolean;
  i: number;
  readonly token: Extract<Token, { kind: 'word' }>;
  /** The word, lower case. */
  readonly w: string;
  readonly next: Token | undefined;
  readonly slots: Slots;
  readonly consumed: Set<number>;
  readonly use: (...used: Token[]) => void;
  problem: string | undefined;
}

/**
 * A reading of a word: true when its words match (it took the word), false to try the next. The
 * order matters where two readings share a word ("each" is read as a share before "every payment").
 */
type WordReading = (word: WordAt) => boolean;

/** Words that frame the message rather than move money: a label, a sign-off, the order of steps. */
const framingWords: WordReading = ({ intent, tokens, i, token, w, next, use }) => {
  const labelled = tokens.slice(i + 1, i + 3).find((t) => t.kind !== 'punct');
  if ((w === 'address' || w === 'wallet') && labelled?.kind === 'address') {
    // "to_address=0x…", "Wallet: 0x…": the word labels the address that follows.
    use(token);
  } else if ((w === 'approved' || w === 'authorised' || w === 'authorized') && isWord(next, 'by')) {
    // "Approved by: Ngozi" on the merchant's own ticket: who signed it off, not an approval
    // of a held action (only a person on the dashboard or an approvals key does that).
    use(token);
  } else if (
    ['first', 'firstly', 'secondly', 'finally', 'lastly'].includes(w) &&
    tokens.slice(0, i).every((t) => t.kind === 'punct' || isWord(t, 'okay', 'ok', 'so', 'and', 'uh', 'um', 'then'))
  ) {
    // "first pay …, then refund …": the order the message already runs in.
    use(token);
  } else if (
    (w === 'after' || w === 'afterwards') &&
    tokens.slice(i + 1).every((t) => t.kind === 'punct') &&
    (intent === 'balance' ||
      intent === 'payment_status' ||
      intent === 'list_payments' ||
      intent === 'pending_confirmations')
  ) {
    // "3. let me know our balance after": a read after the steps above, which is the order they run in.
    use(token);
  } else return false;
  return true;
};

/** Each and equal shares: "each", "apiece", "equally", Swahili "kila mmoja" and "sawa sawa", Pidgin "equal equal". */
const shareWords: WordReading = (word) => {
  const { token, w, next, slots, use } = word;
  if (w === 'each' || w === 'apiece' || (w === 'kila' && isWord(next, 'mmoja'))) {
    // Swahili "kila mmoja": each one.
    slots.each = true;
    use(token);
    if (w === 'kila') word.i++;
  } else if (w === 'sawa' && isWord(next, 'sawa')) {
    // Swahili "sawa sawa": equally.
    slots.equal = { ways: undefined };
    word.i++;
  } else if (w === 'equal' && isWord(next, 'equal')) {
    // Pidgin "equal equal": equally.
    slots.equal = { ways: undefined };
    use(token, next!);
    word.i++;
  } else if (w === 'equally' || w === 'evenly' || (w === 'equal' && isWord(next, 'shares', 'parts', 'split'))) {
    slots.equal = { ways: undefined };
    use(token);
  } else return false;
  return true;
};

/** How much of a refund: all but a fee, not in full, in full, all payments, part, the rest. */
const refundExtentWords: WordReading = (word) => {
  const { intent, tokens, i, token, w, next, slots, use } = word;
  if (
    ['minus', 'less', 'except', 'excluding', 'without'].includes(w) &&
    intent === 'refund' &&
    slots.less === undefined
  ) {
    // "refund pay_… minus the 500 naira delivery fee": all but that amount.
    const kept = tokens.slice(i + 1, i + 3).find((t): t is AmountToken => t.kind === 'amount');
    if (kept !== undefined) {
      slots.less = kept;
      use(token, kept);
      word.i = tokens.indexOf(kept);
      // "… the 500 naira delivery fee": the words naming what is kept back.
      for (const fee of tokens.slice(word.i + 1, word.i + 4))
        if (fee.kind === 'word' && ['fee', 'fees', 'charge', 'charges', 'cost', 'costs'].includes(fee.lower)) use(fee);
    }
  } else if (
    w === 'no' &&
    intent === 'refund' &&
    isWord(next, 'need') &&
    isWord(tokens[i + 2], 'for') &&
    negatedExtent(tokens, i + 2) !== undefined
  ) {
    // "no need for a full refund, ₦2,000 … is enough": as "not a full refund".
    const phrase = negatedExtent(tokens, i + 2)!;
    use(token, next!, ...phrase);
    word.i = tokens.indexOf(phrase.at(-1)!);
  } else if ((w === 'not' || w === 'no') && intent === 'refund' && negatedExtent(tokens, i) !== undefined) {
    // "not the full amount, just 5000 naira", "in full, not half", "half, not all of it": the
    // extent ruled out is the other one from the extent the refund states.
    const phrase = negatedExtent(tokens, i)!;
    use(...phrase);
    // "refund pay_… but not in full — half": the "but" that leads it.
    if (isWord(tokens[i - 1], 'but')) use(tokens[i - 1]!);
    word.i = tokens.indexOf(phrase.at(-1)!);
  } else if (
    (w === 'in' && isWord(next, 'full')) ||
    (w === 'full' && (intent === 'refund' || isWord(next, 'refund', 'amount'))) ||
    w === 'fully' ||
    w === 'integralement' ||
    w === 'completely' ||
    w === 'entirely'
  ) {
    slots.full = true;
    use(token);
    if (w === 'in') {
      use(next!);
      word.i++;
    }
  } else if (
    (w === 'all' || w === 'everything' || w === 'whole' || w === 'entire' || w === 'yote') &&
    intent === 'refund'
  ) {
    // "refund all of pay_…", "the whole thing"; "all payments from yesterday" is a batch.
    const rest = tokens.slice(i + 1, i + 4);
    if (
      rest.some((t) => isWord(t, 'payments', 'transactions', 'orders', 'charges', 'sales')) ||
      (w === 'everything' && rest.some((t) => t.kind === 'date')) ||
      (w === 'all' && tokens.some((t) => t.kind === 'date'))
    )
      slots.allPayments = true;
    else slots.full = true;
    use(token);
  } else if (
    intent === 'refund' &&
    ['payments', 'transactions', 'orders', 'charges', 'sales'].includes(w) &&
    tokens.some((t) => t.kind === 'date') &&
    !tokens.some((t) => t.kind === 'payment_id')
  ) {
    // "refund yesterday's payments"
    slots.allPayments = true;
  } else if (
    (w === 'every' || w === 'each') &&
    intent === 'refund' &&
    (isWord(next, 'payment', 'transaction', 'order', 'charge', 'sale') ||
      (next?.kind === 'currency' && isWord(tokens[i + 2], 'payment', 'transaction', 'order', 'charge', 'sale')))
  ) {
    slots.allPayments = true;
    use(token);
  } else if (
    (w === 'partial' || w === 'partially' || w === 'part') &&
    intent === 'refund' &&
    tokens.some((t) => t.kind === 'amount' || t.kind === 'fraction' || t.kind === 'percent')
  ) {
    // "a partial refund of 1.5k naira": the amount says how much.
    use(token);
  } else if ((w === 'rest' || w === 'remaining' || w === 'remainder') && intent === 'refund') {
    slots.full = true;
    use(token);
  } else return false;
  return true;
};

/** Repetitions ("twice", "once to 0x… and once to 0x…") and the value an "only" or "just" stresses. */
const repetitionWords: WordReading = (word) => {
  const { intent, tokens, i, token, w, next, slots, use } = word;
  if (intent === 'payout' && (onceTo(tokens, i) || (REPEATS.has(w) && REPEATS.get(w) === countOnceTo(tokens)))) {
    // "pay the same 25 usdc twice — once to 0xA… and once to 0xB…": one payout to each, the
    // count written out by the "once to" of each recipient.
    slots.each = true;
    use(token);
    if (isWord(tokens[i - 1], 'same') && isWord(tokens[i - 2], 'the')) use(tokens[i - 1]!);
  } else if (w === 'same' && intent === 'payout' && countOnceTo(tokens) > 1 && next?.kind === 'amount') {
    use(token);
  } else if (w === 'twice' || w === 'double' || w === 'duplicate' || w === 'duplicates' || w === 'duplicated') {
    // A refund of "payments made twice" needs the merchant to say which ones. "Refund pay_… twice"
    // multiplies: it is left to be placed (asked back), never taken as one refund.
    const which = intent === 'refund' && slots.paymentIds.length === 0 && !tokens.some((t) => t.kind === 'payment_id');
    if (which) slots.duplicates = true;
    if (intent === 'refund' && (which || w.startsWith('duplicate'))) use(token);
  } else if ((w === 'only' || w === 'just') && isMoneyIntent(intent)) {
    onlyWord(word);
  } else if (
    w === 'once' &&
    (intent === 'payout' || intent === 'refund') &&
    (next === undefined ||
      (next.kind === 'punct' && /^[.,;!?]$/.test(next.text)) ||
      isWord(next, 'pls', 'please', 'thanks', 'abeg', 'o'))
  ) {
    // "pay 20 usdc to 0x… once", "refund pay_… once pls": one time, as it runs; "once it
    // arrives" waits, and stays to be placed.
    use(token);
  } else if (w === 'but' && intent === 'refund' && isWord(next, 'only', 'just')) {
    // consumed with its "only"
  } else return false;
  return true;
};

/**
 * "but only half of it", "just 1,000 naira though", "send only 20 usdc", "refund only pay_A": the
 * value that follows is the one meant, no more. "only once" stresses one run, unless something
 * follows it ("only once delivered" is a condition). "only part of pay_…: GH₵ 120", "only the
 * deposit of 150 USDC": the value said after a few plain words naming it (no word of condition
 * between).
 */
function onlyWord(word: WordAt): void {
  const { intent, tokens, i, token, w, next, use } = word;
  const value = tokens
    .slice(i + 1, i + 7)
    .find(
      (t) =>
        t.kind !== 'punct' &&
        !(t.kind === 'word' && !CONTROL_WORDS.has(t.lower) && !FREE_TEXT_STOP.has(t.lower)) &&
        !isWord(t, 'part', 'partially', 'partly'),
    );
  const after = tokens.slice(i + 2).find((t) => t.kind !== 'punct');
  if (
    value?.kind === 'amount' ||
    value?.kind === 'fraction' ||
    value?.kind === 'percent' ||
    value?.kind === 'payment_id' ||
    value?.kind === 'address'
  ) {
    use(token);
    const before = tokens[i - 1];
    if (isWord(before, 'but') && intent === 'refund') use(before!);
  } else if (
    w === 'only' &&
    (tokens[i - 1]?.kind === 'amount' ||
      tokens[i - 1]?.kind === 'address' ||
      tokens[i - 1]?.kind === 'payment_id' ||
      /^(?:today|now)$/i.test(tokens[i - 1]?.text ?? '')) &&
    (next === undefined || (next.kind === 'punct' && /^[.,;!?]$/.test(next.text)))
  ) {
    // "pay 0x… 70 usdc only": the amount just said, and no more (as cheques write it);
    // "pay 30 usdc to 0x… only", "refund pay_… only": that one, as written.
    use(token);
  } else if (isWord(next, 'once') && (after === undefined || isWord(after, 'pls', 'please', 'thanks', 'abeg'))) {
    use(token, next!);
    word.i++;
  }
}

/** Words of a read: the latest payments, a question asked with "if", what is held. */
const readWords: WordReading = ({ intent, tokens, i, token, w, slots, use }) => {
  if ((w === 'last' || w === 'latest' || w === 'recent') && intent === 'list_payments') {
    use(token);
  } else if (
    (w === 'if' || w === 'whether') &&
    (intent === 'payment_status' ||
      intent === 'balance' ||
      intent === 'list_payments' ||
      intent === 'revenue' ||
      intent === 'pending_confirmations') &&
    isWord(tokens[i - 1], 'check', 'see', 'know', 'confirm', 'verify', 'me', 'ask', 'tell', 'wondering')
  ) {
    // "check if pay_… has settled" asks a question; read-only (plan.ts refuses it beside a money step).
    slots.questionIf = true;
    use(token);
  } else if ((w === 'hold' || w === 'held' || w === 'waiting') && intent === 'pending_confirmations') {
    use(token);
  } else return false;
  return true;
};

/** A memo label and the free text after it ("for rent", "memo: …"). */
const memoWords: WordReading = (word) => {
  const { intent, tokens, i, token, w, next, slots, consumed, use } = word;
  if (!MEMO_LABELS.has(w)) return false;
  if (w === 'for' && next?.kind === 'date') return true;
  // "did the payment for order AB-12 come through?": the order named is the payment.
  if (
    w === 'for' &&
    FINDS_PAYMENTS.has(intent ?? 'approve') &&
    referenceAt(tokens, i + 2) !== undefined &&
    !tokens.some((t) => t.kind === 'payment_id')
  )
    return true;
  const start = next?.kind === 'punct' && (next.text === ':' || next.text === '=') ? i + 2 : i + 1;
  const { value, end, consumed: inText, runsInto } = freeText(tokens, start, intent === 'refund' ? 'reason' : 'memo');
  if (runsInto) word.problem ??= runsIntoProblem(value, runsInto);
  if (value !== '' && !(w === 'for' && /^(?:me|us|it|them|this|that|the\s+(?:customer|client))$/i.test(value))) {
    use(token);
    for (const index of inText) consumed.add(index);
    if (intent === 'refund') slots.reason ??= value;
    else {
      slots.memos.push(value);
      slots.memo ??= value;
    }
    word.i = end - 1;
  }
  return true;
};

/** A reason ("because …", "Reason: …", "due to …"), which is a payout's memo when it has none. */
const reasonWords: WordReading = (word) => {
  const { intent, tokens, i, w, next, slots, consumed } = word;
  if (
    !(
      w === 'because' ||
      w === 'reason' ||
      w === 'cos' ||
      w === 'since' ||
      (w === 'due' && isWord(next, 'to')) ||
      (w === 'as' && isWord(next, 'per', 'requested'))
    )
  )
    return false;
  const start = w === 'due' || (w === 'reason' && next?.kind === 'punct') ? i + 2 : i + 1;
  // "pay 50 usdc to 0x… because he fixed the roof", a ticket's "Reason: March commission":
  // why a payout is made is what it is for, its memo (one only: a second text is asked).
  const memo = intent === 'payout' && slots.memo === undefined;
  const { value, end, consumed: inText, runsInto } = freeText(tokens, start, memo ? 'memo' : 'reason');
  if (runsInto) word.problem ??= runsIntoProblem(value, runsInto);
  if (value !== '') {
    for (const index of inText) consumed.add(index);
    if (memo) {
      slots.memos.push(value);
      slots.memo = value;
    } else slots.reason ??= value;
    word.i = end - 1;
  }
  return true;
};

function runsIntoProblem(value: string, runsInto: Token): string {
  return `"${value}" runs into "${runsInto.text}": I cannot tell whether it belongs to the text; put it in its own words, or after a comma`;
}

/** A reference: a refund's or a status read's names the payment; a payout's or a split's, its own. */
const referenceWords: WordReading = (word) => {
  const { intent, tokens, significant, i, token, w, slots, use } = word;
  if (!(w === 'ref' || w === 'reference' || w === 'ref.')) return false;
  let j = i + 1;
  while (tokens[j]?.kind === 'punct' && /^[:#]$/.test(tokens[j]!.text)) j++;
  if (isWord(tokens[j], 'no', 'number')) j++;
  const ref = tokens[j];
  if (
    ref !== undefined &&
    (ref.kind === 'code' ||
      (ref.kind === 'word' && !significant(ref)) ||
      (ref.kind === 'amount' && ref.number.type === 'exact' && ref.currency === undefined && /^\d+$/.test(ref.text)))
  ) {
    const value = ref.kind === 'code' ? ref.value.replace(/^#/, '') : ref.text;
    if ((intent === 'refund' || intent === 'payment_status') && slots.paymentIds.length === 0)
      slots.lookup = { reference: value };
    else slots.reference = value;
    use(token, ref);
    word.i = j;
  }
  return true;
};

/** The status a list asks for, and the words of revenue. */
const listWords: WordReading = (word) => {
  const { intent, token, w, next, slots, use } = word;
  if (intent === 'list_payments' && LIST_STATUS_WORDS.has(w)) {
    slots.status = LIST_STATUS_WORDS.get(w);
  } else if (intent === 'list_payments' && w === 'partially' && isWord(next, 'refunded')) {
    slots.status = 'partially_refunded';
    use(token);
    word.i++;
  } else if (REVENUE_WORDS.has(w)) {
    slots.revenueWord = true;
  } else return false;
  return true;
};

/**
 * The readings, in the order they are tried. Moved apart from the one chain they were, they keep
 * its order wherever two could take the same word: each earlier group's words are its own (framing
 * and share words share none with each other or with a refund's extent).
 */
const WORD_READINGS: readonly WordReading[] = [
  framingWords,
  shareWords,
  refundExtentWords,
  repetitionWords,
  readWords,
  memoWords,
  reasonWords,
  referenceWords,
  listWords,
];

/**
 * An amount in a clause: the refund's part paid over ("the extra GH₵ 30"), a payout's or split's
 * figure, an amount per recipient ("each"), or a count of things that is no amount at all. Returns
 * where the token loop goes on from and the clause's problem.
 */
function amountSlot(
  intent: Intent | undefined,
  tokens: readonly Token[],
  significant: (t: Token) => boolean,
  i: number,
  token: Extract<Token, { kind: 'amount' }>,
  next: Token | undefined,
  slots: Slots,
  use: (...used: Token[]) => void,
  problem: string | undefined,
): { i: number; problem: string | undefined } {
  const at: AmountAt = { intent, tokens, significant, i, token, next, slots, use };
  // The first reading that takes the number says where the loop goes on; none, and it is an amount.
  const taken = extraPaidOver(at) ?? sharesOrRecipients(at) ?? countInStory(at) ?? countOfThings(at);
  if (taken !== undefined) return { i: taken, problem };
  slots.amounts.push(token);
  use(token);
  if (isWord(next, 'each', 'apiece')) {
    slots.each = true;
    use(next!);
    return { i: i + 1, problem };
  }
  return { i, problem };
}

/** One number being read in a clause. */
interface AmountAt {
  readonly intent: Intent | undefined;
  readonly tokens: readonly Token[];
  readonly significant: (t: Token) => boolean;
  readonly i: number;
  readonly token: Extract<Token, { kind: 'amount' }>;
  readonly next: Token | undefined;
  readonly slots: Slots;
  readonly use: (...used: Token[]) => void;
}

/**
 * "refund ₦4,000 of pay_… - she paid the delivery fee twice, so return the extra ₦4,000", "refund
 * the extra GH₵ 30": the part paid over, said with its currency, is the refund's amount; said
 * again, the same amount is no second one. Returns where the loop goes on, or undefined to read on.
 */
function extraPaidOver({ intent, tokens, i, token, slots, use }: AmountAt): number | undefined {
  if (
    !(
      intent === 'refund' &&
      token.currency !== undefined &&
      isWord(tokens[i - 1], 'extra') &&
      isWord(tokens[i - 2], 'the')
    )
  )
    return undefined;
  use(tokens[i - 1]!);
  if (!slots.amounts.some((amount) => sameAmount(amount, token))) return undefined;
  use(token);
  return i;
}

/** Numbers that shape a split or a payout: "sixty forty", "among these 6 people", "three ways". */
function sharesOrRecipients({ intent, tokens, significant, i, token, next, slots, use }: AmountAt): number | undefined {
  // "split … sixty forty between …": two whole numbers adding up to 100 are shares.
  if (
    intent === 'split' &&
    next?.kind === 'amount' &&
    token.currency === undefined &&
    next.currency === undefined &&
    token.number.type === 'exact' &&
    next.number.type === 'exact' &&
    /^\d{1,2}$/.test(token.number.text) &&
    /^\d{1,2}$/.test(next.number.text) &&
    Number(token.number.text) + Number(next.number.text) === 100
  ) {
    slots.ratio = [BigInt(token.number.text) * 100n, BigInt(next.number.text) * 100n];
    use(token, next);
    return i + 1;
  }
  // "among these 6 people", "our 3 partners:", "equally among 3:", "pay my 3 workers 20 usdc
  // each": how many recipients, which the addresses written must match.
  if (
    (intent === 'split' || intent === 'payout') &&
    token.currency === undefined &&
    token.number.type === 'exact' &&
    /^\d{1,2}$/.test(token.number.text) &&
    (RECIPIENT_NOUNS.has(next?.kind === 'word' ? next.lower : '') ||
      (intent === 'split' && next?.text === ':' && isWord(tokens[i - 1], 'among', 'amongst', 'between')))
  ) {
    slots.recipients = Number(token.number.text);
    use(token);
    if (next?.kind !== 'word') return i;
    use(next);
    return i + 1;
  }
  // "evenly among our 6 stall keepers:": a count after "among", named by any plain words up
  // to the colon before the list, counts the recipients too (the addresses must match it).
  const named = recipientsNamed(tokens, i, significant);
  if (intent === 'split' && token.currency === undefined && token.number.type === 'exact' && named !== undefined) {
    slots.recipients = Number(token.number.text);
    use(token, ...tokens.slice(i + 1, named));
    return named - 1;
  }
  // "three ways", "3 ways": the number of equal shares.
  if (isWord(next, 'ways', 'way') && token.number.type === 'exact' && /^\d+$/.test(token.number.text)) {
    slots.equal = { ways: Number(token.number.text) };
    use(token, next!);
    return i + 1;
  }
  return undefined;
}

/**
 * A count in the story rather than the request: "Guest checked out 2 nights early — refund KSh
 * 9,000" (before the verb); "…, one cup was chipped", "…, 2 items came back" (a statement after it).
 */
function countInStory({ tokens, i, token, next, slots, use }: AmountAt): number | undefined {
  // Before the request. After the verb a count shapes the action ("in two instalments", "among 3
  // people") and is left to be placed.
  const verb = tokens.findIndex((t) => t.kind === 'word' && MONEY_VERBS.has(t.lower));
  if (
    isQuantity(token, next) &&
    i < verb &&
    tokens.slice(0, i).some((t) => t.kind === 'word' && STORY_VERBS.has(t.lower)) &&
    tokens.some((t, k) => k > verb && t.kind === 'amount')
  ) {
    use(token);
    return i;
  }
  // After the request, a statement of its own after a comma ("refund 2,000 naira on order
  // ORD-7781, customer returned one plate"), "— size 44 was too small": a bare number there tells
  // the story. Beside an amount said with its currency it is left out; with none, the refund may be
  // meant for those items only, so it stays to be placed and the clause is asked back.
  if (token.currency !== undefined || !toldAfterRequest(tokens, i)) return undefined;
  // "…, card was charged 2 times": how often it happened, which no refund is for.
  // "…, 3 times as was agreed" says how often to act, and stays to be placed.
  if (isWord(next, 'times') && tellsThePast(tokens, i + 1)) use(token, next!);
  // "…, customer ordered 5 but only 3 arrived": beside the part said, every count there is story.
  const partSaid =
    slots.full ||
    slots.fraction !== undefined ||
    slots.percents.length > 0 ||
    slots.amounts.some((amount) => amount.currency !== undefined);
  if (partSaid && (isQuantity(token, next) || (isCount(token) && !isWord(next, 'times', 'as', 'x')))) use(token);
  return i;
}

/** Numbers that count things, not money: "2 of the plates", "last 5 payments", "2 crates", "two times". */
function countOfThings({ intent, tokens, i, token, next, slots, use }: AmountAt): number | undefined {
  // "refund 2 of the plates on pay_…": a count of things is no amount of money; it stays to be
  // placed, and the clause is asked back.
  if (isCountOf(tokens, i)) return i;
  // "last 5 payments": a list's length.
  if (intent === 'list_payments' && token.number.type === 'exact' && /^\d+$/.test(token.number.text)) {
    slots.limit = Number(token.number.text);
    use(token);
    return i;
  }
  // "in two instalments", "2 crates", "3 people": a number before a count noun counts things and
  // is never an amount; left unplaced, the clause is asked back.
  if (token.currency === undefined && isCountNoun(next)) return i;
  // "customer charged two times" tells how often it happened; "refund pay_… 2 times" says how
  // often to act, which is asked. Either way the number is no amount (it refunded 2).
  if (token.currency === undefined && isWord(next, 'times')) {
    if (tellsThePast(tokens, i + 1)) use(token, next!);
    return i;
  }
  return undefined;
}

/**
 * Punctuation in a clause: an opening bracket or the colon, dash or comma before a memo or a
 * refund's reason, whose words are read as free text up to where it ends. Returns where the token
 * loop goes on from and the clause's problem.
 */
function punctSlot(
  intent: Intent | undefined,
  tokens: readonly Token[],
  i: number,
  token: Extract<Token, { kind: 'punct' }>,
  next: Token | undefined,
  slots: Slots,
  consumed: Set<number>,
  problem: string | undefined,
): { i: number; problem: string | undefined } {
  if (token.text === '(' && (intent === 'payout' || intent === 'create_payment' || intent === 'refund')) {
    const { value, end, consumed: inText, runsInto } = freeText(tokens, i + 1, intent === 'refund' ? 'reason' : 'memo');
    if (runsInto)
      problem ??= `"${value}" runs into "${runsInto.text}": I cannot tell whether it belongs to the text; put it in its own words, or after a comma`;
    if (value !== '' && tokens[end]?.kind === 'punct' && tokens[end]!.text === ')') {
      for (const index of inText) consumed.add(index);
      if (intent === 'refund') slots.reason ??= value;
      else if (slots.memo !== undefined && slots.memos.length === 1) {
        // "for invoice 2031 (that's our packaging supplier)": a note on the memo.
        slots.memo = `${slots.memo} (${value})`;
        slots.memos[0] = slots.memo;
      } else {
        slots.memos.push(value);
        slots.memo ??= value;
      }
      i = end;
    }
  } else if (
    intent === 'payout' &&
    /^[—–:-]$/.test(token.text) &&
    tokens[i - 1]?.kind === 'address' &&
    (next?.kind === 'word' || next?.kind === 'code') &&
    slots.memo === undefined
  ) {
    // "pay 100 USDC to 0x… - invoice #77", "…: rent"
    const { value, end, consumed: inText, runsInto } = freeText(tokens, i + 1, 'memo');
    if (runsInto)
      problem ??= `"${value}" runs into "${runsInto.text}": I cannot tell whether it belongs to the text; put it in its own words, or after a comma`;
    if (value !== '') {
      for (const index of inText) consumed.add(index);
      slots.memos.push(value);
      slots.memo = value;
      i = end - 1;
    }
  } else if (
    (intent === 'create_payment' || intent === 'payout') &&
    /^[—–:,-]$/.test(token.text) &&
    ((tokens[i - 1]?.kind === 'amount' && (tokens[i - 1] as AmountToken).currency !== undefined) ||
      (intent === 'payout' && tokens[i - 1]?.kind === 'address' && slots.amounts.length > 0) ||
      // "new checkout: 3 plates of jollof, ₦4,500, …"
      (intent === 'create_payment' && token.text === ':' && isWord(tokens[i - 1], ...PAYMENT_NOUNS))) &&
    next !== undefined &&
    (isQuantity(next, tokens[i + 2]) ||
      (next.kind === 'word' &&
        !FREE_TEXT_STOP.has(next.lower) &&
        !MEMO_LABELS.has(next.lower) &&
        // "… - Amount: 120 USDC - Wallet: 0x…": the next field's label is no memo.
        tokens[i + 2]?.text !== ':') ||
      // "…: GH₵ 85.50, 'Waakye, family bowl', redirect …": a quoted name of what is sold.
      (intent === 'create_payment' && next.kind === 'quoted' && !next.carries)) &&
    slots.memo === undefined
  ) {
    // "payment for 5 thousand cedis, 2 crates of Club beer", "pay 0x… 200 usdc, first instalment
    // of the rent": what the amount is for. Text that runs into a value ("…, he needs it by
    // friday") is no memo; the grammar places its words or asks.
    const { value, end, consumed: inText, runsInto } = freeText(tokens, i + 1, 'memo');
    // "…, that is all of it", "…, only the rest": words of how much are no memo here.
    const saysHowMuch = inText.some((k) => {
      const word = tokens.find((t) => t.index === k);
      return (
        word?.kind === 'word' &&
        (WHOLE_EXTENT.has(word.lower) || PART_EXTENT.has(word.lower) || HOW_MUCH.has(word.lower))
      );
    });
    // "…, last one went twice": a story is context (checks.ts), not what the payment is for.
    const tellsStory = value.split(/\s+/).some((word) => PAST.has(word.toLowerCase()));
    if (value !== '' && runsInto === undefined && !saysHowMuch && !tellsStory) {
      for (const index of inText) consumed.add(index);
      slots.memos.push(value);
      slots.memo = value;
      i = end - 1;
    }
  } else if (
    intent === 'refund' &&
    /^[—–:,-]$/.test(token.text) &&
    endsTheRequest(tokens, i - 1) &&
    (slots.paymentIds.length > 0 || slots.lookup !== undefined) &&
    (next?.kind === 'word' ||
      // "…, one item was missing": a count in the story, where the refund's amount is said.
      ((slots.full ||
        slots.fraction !== undefined ||
        slots.percents.length > 0 ||
        slots.amounts.some((amount) => amount.currency !== undefined)) &&
        next !== undefined &&
        (isQuantity(next, tokens[i + 2]) || isCountOf(tokens, i + 1)))) &&
    slots.reason === undefined
  ) {
    // "refund pay_… — item out of stock", "refund order SHP-7E3 in full, customer cancelled",
    // "refund ₦3,000 on order #LAG-0871, one item was missing": the story after the request.
    // "…, eh no, 4,500" opens a correction: a filler is no reason.
    const { value, end, consumed: inText, runsInto } = freeText(tokens, i + 1, 'reason');
    const fillerOnly = value.split(/\s+/).every((word) => INTERJECTIONS.has(word.toLowerCase()));
    if (runsInto && !fillerOnly)
      problem ??= `"${value}" runs into "${runsInto.text}": I cannot tell whether it belongs to the text; put it in its own words, or after a comma`;
    if (value !== '' && !fillerOnly) {
      for (const index of inText) consumed.add(index);
      slots.reason = value;
      i = end - 1;
    }
  }
  return { i, problem };
}

/**
 * A date in a clause: "today" on an action that runs now anyway, a deadline paying now meets ("by
 * Friday"), a day in the story told after a refund, or the period a question, split or refund is
 * over. Returns the clause's problem.
 */
function dateSlot(
  intent: Intent | undefined,
  tokens: readonly Token[],
  i: number,
  token: Extract<Token, { kind: 'date' }>,
  slots: Slots,
  use: (...used: Token[]) => void,
  problem: string | undefined,
): string | undefined {
  if (
    /^(?:today|now|right now|immediately|this (?:morning|afternoon|evening))$/i.test(token.text) &&
    (intent === 'payout' ||
      intent === 'create_payment' ||
      intent === 'balance' ||
      intent === 'payment_status' ||
      intent === 'pending_confirmations' ||
      (intent === 'refund' && !slots.allPayments))
  ) {
    // "transfer 150 USDC today": now is when it runs anyway.
    use(token);
    return problem;
  }
  if (isWord(tokens[i - 1], 'by') && (intent === 'payout' || intent === 'refund') && !slots.allPayments) {
    // "he needs it by Friday": a deadline, which paying now meets.
    use(tokens[i - 1]!, token);
    return problem;
  }
  // "refund pay_… fully - the POS swiped her card two times yesterday": a day gone by in the
  // story told after a refund of one payment is when it happened, no period to refund.
  if (
    intent === 'refund' &&
    token.past &&
    !slots.allPayments &&
    tokens.some((t) => t.kind === 'payment_id') &&
    toldAfterRequest(tokens, i)
  ) {
    use(token);
    return problem;
  }
  if (intent === 'revenue' || intent === 'split' || intent === 'refund' || intent === 'list_payments') {
    if (token.range === undefined) problem = `"${token.text}" is not a past period I can read`;
    if (slots.date !== undefined) problem = 'two periods: say one ("from March 1 to March 5" is one)';
    slots.date = token.range;
    use(token);
  }
  return problem;
}

/** Two amounts read exactly, to the same figure in the same currency. */
function sameAmount(a: AmountToken, b: AmountToken): boolean {
  return (
    a.number.type === 'exact' &&
    b.number.type === 'exact' &&
    a.number.text === b.number.text &&
    a.currency?.code === b.currency?.code
  );
}

/**
 * "3 of 4" at `k`, counting items: "…, customer says 3 of 4 arrived". "(order 7 of 10, wrong
 * colour)" says which order of a series, the one this payment is for: no count of items.
 */
export function isItemCount(tokens: readonly Token[], k: number): boolean {
  const first = isWord(tokens[k + 1], 'of') ? k : k - 2;
  return isCountCode(tokens, k) && !isWord(tokens[first - 1], ...SERIES_WORDS);
}

/** Intents that act on one payment, which may be named by reference or description instead of its id. */
const FINDS_PAYMENTS: ReadonlySet<Intent> = new Set(['refund', 'split', 'payment_status']);

/** Nouns that say the words around them describe an order: "the blue kente cloth order". */
const ORDER_NOUNS = new Set(['order', 'orders', 'purchase', 'sale', 'transaction', 'booking']);

/** Words that open what a buyer says or asks, after what they bought. */
const REQUEST_WORDS = [
  'say',
  'says',
  'said',
  'want',
  'wants',
  'wanted',
  'wan',
  'asked',
  'asks',
  'make',
  'abeg',
  'please',
  'pls',
  'needs',
];

/** Words that never describe what was bought: the request's own words, courtesy, grammar. */
const NOT_DESCRIPTIVE = new Set([
  ...REFUND_VERBS,
  ...SPLIT_VERBS,
  ...LEADING_FILLERS,
  ...ORDER_NOUNS,
  ...BOUGHT,
  'refunds',
  'the',
  'a',
  'an',
  'of',
  'for',
  'from',
  'on',
  'in',
  'my',
  'our',
  'their',
  'his',
  'her',
  'this',
  'that',
  'who',
  'which',
  'wey',
  'ya',
  'kwa',
  'pesa',
  'money',
  'back',
  'give',
  'return',
  'customer',
  'client',
  'buyer',
  'payment',
  'proceeds',
  'status',
  'has',
  'is',
  'was',
  'been',
  'paid',
  'did',
  'it',
  'between',
  'among',
  'with',
  'and',
]);

/**
 * "refund the blue kente cloth order", "abeg refund the customer wey buy the 2 crates of Malta
 * Guinness", "rudisha pesa ya order ya 'Kitenge dress'": the words that describe what was paid for,
 * when an order noun or a verb of buying says they do. Only plain words, quoted text and counts; a
 * clause with any other value, or no such word, names no payment this way.
 */
function describedPayment(tokens: readonly Token[]): { words: string[]; used: Token[] } | undefined {
  // A quoted description may name a payment as such ("refund the 'Smock (Northern)' payment").
  const quotedDescription = tokens.some((t) => t.kind === 'quoted' && !t.carries);
  const nouns = (word: string): boolean =>
    ORDER_NOUNS.has(word) || BOUGHT.has(word) || (quotedDescription && word === 'payment');
  const asksFirst = ['has', 'is', 'did', 'was', 'have'].includes(leadingWord(tokens) ?? '');
  // "has the 'wedding cake deposit' been paid?": a question about a quoted description names it.
  const hasNoun = tokens.some((t) => t.kind === 'word' && nouns(t.lower)) || (quotedDescription && asksFirst);
  const words: string[] = [];
  const used: Token[] = [];
  // A quoted description is the description; else the words up to a comma or a dash after them
  // (", the batch was spoilt" tells why, it describes nothing).
  const quoted = tokens.filter((t) => t.kind === 'quoted' && !t.carries);
  const asks = ['has', 'is', 'did', 'was', 'have'].includes(leadingWord(tokens) ?? '');
  // "the lady who bought the red agbada": what was bought describes the payment, not who bought it.
  let bought = tokens.findIndex((t) => t.kind === 'word' && BOUGHT.has(t.lower));
  // "customer wants a refund for the jollof party pack": what the refund is for describes it.
  if (bought < 0 && !hasNoun)
    bought = tokens.findIndex(
      (t, i) =>
        isWord(t, 'for', 'on') &&
        isWord(tokens[i + 1], 'the') &&
        // "for the blue kente cloth", "for the 2 crates of Malta": a count may open what was bought.
        (tokens[i + 2]?.kind === 'word' || isQuantity(tokens[i + 2]!, tokens[i + 3])),
    );
  if (bought < 0 && !hasNoun) return undefined;
  for (const [i, token] of tokens.entries()) {
    if (i < bought) continue;
    if (token.kind === 'punct' && /^[,;—–]$/.test(token.text) && words.length > 0) break;
    // "did the payment for the blue kente cloth go through?": the question's own verb ends what
    // describes the payment.
    if (
      asks &&
      words.length > 0 &&
      ((token.kind === 'word' && STATUS_WORDS.has(token.lower)) ||
        (isWord(token, 'go', 'gone', 'went', 'come', 'came') && isWord(tokens[i + 1], 'through', 'in')))
    )
      break;
    // "… wey buy the 2 crates of Malta Guinness say make we refund am": what the buyer says or asks
    // comes after what was bought, and describes nothing.
    if (
      i > bought &&
      bought >= 0 &&
      words.length > 0 &&
      (isWord(token, ...REQUEST_WORDS) || isWord(token, ...REFUND_VERBS))
    )
      break;
    if (quoted.length > 0 && token.kind !== 'quoted') continue;
    if (token.kind === 'word' && !NOT_DESCRIPTIVE.has(token.lower) && !CONTROL_WORDS.has(token.lower)) {
      words.push(token.lower);
    } else if (token.kind === 'quoted' && !token.carries) {
      words.push(
        ...token.value
          .toLowerCase()
          .split(/[^\p{L}\p{N}]+/u)
          .filter((w) => w !== '' && !NOT_DESCRIPTIVE.has(w)),
      );
      used.push(token);
    } else if (token.kind === 'amount' && isQuantity(token, tokens[i + 1])) {
      words.push(token.text);
      used.push(token);
    }
  }
  return words.length > 0 ? { words, used } : undefined;
}

/**
 * "the customer wey buy the carton of Indomie", "the person who bought the 2 crates of Malta
 * Guinness": a clause that only says what a buyer bought describes the payment a request beside it
 * means. A verb of buying must say so, and no reference or other value may stand in the clause.
 */
export function buyerDescription(tokens: readonly Token[]): { words: string[]; used: Token[] } | undefined {
  if (!tokens.some((t) => t.kind === 'word' && BOUGHT.has(t.lower))) return undefined;
  if (tokens.some((t) => t.kind !== 'word' && t.kind !== 'punct' && t.kind !== 'amount' && t.kind !== 'quoted'))
    return undefined;
  return describedPayment(tokens);
}

/** A correction's right side overrides the left side's slots of the same kind. */
export function mergeCorrection(before: Slots, after: Slots): { slots: Slots; problem?: string } {
  const merged: Slots = { ...before };
  const replaces = <K extends keyof Slots>(key: K, present: boolean): void => {
    if (present) merged[key] = after[key];
  };
  if (after.amounts.length > 0 && before.amounts.length > 1)
    return { slots: merged, problem: 'a correction of one of several amounts: write the whole instruction again' };
  if (after.addresses.length > 0 && before.addresses.length > 1)
    return { slots: merged, problem: 'a correction of one of several recipients: write the whole instruction again' };
  if (after.paymentIds.length > 0 && before.paymentIds.length > 1)
    return { slots: merged, problem: 'a correction of one of several payments: write the whole instruction again' };
  replaces('amounts', after.amounts.length > 0);
  replaces('addresses', after.addresses.length > 0);
  replaces('paymentIds', after.paymentIds.length > 0);
  replaces('percents', after.percents.length > 0);
  replaces('ratio', after.ratio !== undefined);
  replaces('date', after.date !== undefined);
  replaces('url', after.url !== undefined);
  replaces('memo', after.memo !== undefined);
  replaces('memos', after.memos.length > 0);
  replaces('reason', after.reason !== undefined);
  replaces('reference', after.reference !== undefined);
  replaces('lookup', after.lookup !== undefined);
  replaces('currency', after.currency !== undefined);
  if (after.fraction !== undefined || after.amounts.length > 0 || after.full) {
    // A new refund size replaces the old one, whatever its form.
    merged.fraction = after.fraction;
    merged.full = after.full;
    if (after.amounts.length === 0) merged.amounts = [];
  }
  merged.each = before.each || after.each;
  merged.equal = after.equal ?? before.equal;
  merged.allPayments = before.allPayments || after.allPayments;
  merged.duplicates = before.duplicates || after.duplicates;
  merged.revenueWord = before.revenueWord || after.revenueWord;
  return { slots: merged };
}
