import {
  CURRENCIES,
  type Currency,
  formatDisplay,
  getCurrency,
  minorToNumber,
  parseMajorAmount,
} from '../../domain/money.ts';
import type { PaymentStatus } from '../../domain/payment-status.ts';
import { explainAll, truncate, type Unplaced, unplacedTokens } from './checks.ts';
import { type AmountToken, type Clause, type Intent, type PaymentLookup, type Slots, text } from './clause.ts';
import { correctionAt, splitClauses, VALUE_KINDS } from './clauses.ts';
import { intentOf, leadingWord, MONEY_VERBS } from './intents.ts';
import { referenceAt } from './phrases.ts';
import { buyerDescription, fillSlots, isItemCount, mergeCorrection } from './slots.ts';
import {
  type CurrencyMention,
  type DateRange,
  HOLD_WORDS,
  isCountNoun,
  isCountOf,
  isSignificant,
  type NumberValue,
  type Token,
  PAST,
  tokenize,
  UNSUPPORTED_ACTIONS,
} from './tokens.ts';

/**
 * Stage 3 of the offline planner: from clauses to steps, and from steps to exact tool calls. A
 * step is complete or it is a problem the reply names; nothing is guessed (no recipient, no
 * amount, no currency). Amounts are bigint minor units; shares are basis points.
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

class Problem extends Error {}
function problem(reason: string): never {
  throw new Problem(reason);
}

// ---------------------------------------------------------------------------------------------
// Message → clauses → steps
// ---------------------------------------------------------------------------------------------

/** Reads a whole message; any problem anywhere means nothing runs. */
/** Stages 1 and 2, and the words no clause placed: what understand and readInstruction share. */
function analyse(message: string, now: Date): { tokens: Token[]; clauses: Clause[]; unplaced: Unplaced[] } {
  const tokens = tokenize(message, now);
  const { clauses: raw, sequencers } = splitClauses(tokens);
  const clauses = joinAddressLines(raw).map(parseClause);
  inheritIntents(clauses, sequencers);
  dropListHeaders(clauses);
  relaxReadOnly(clauses);
  const borrowed = borrowContextIds(clauses);
  keptAside(clauses, borrowed);
  storiesAsReasons(clauses, now);
  return { tokens, clauses, unplaced: unplacedTokens(clauses, sequencers, borrowed, now) };
}

/**
 * What the merchant's instruction says that every model's money calls answer to (DESIGN.md §9,
 * issue 32): its tokens (amounts with their currencies, addresses, ids, shares), the values a
 * correction or a "not" ruled out, and what holds money back: a word of condition, wait, negation,
 * test or repetition the grammar could not place, a date still to come, quoted text holding a
 * value, a letter that may hide a word, and every figure the number reader could not read.
 */
export interface InstructionReading {
  tokens: Token[];
  superseded: ReadonlySet<number>;
  holds: Token[];
  /** The grammar read a request for equal parts ("equally", "three ways", "sawa sawa"). */
  equalParts: boolean;
  /** Shares the grammar read, in basis points: ratios ("70/30", "sixty forty") and percentages. */
  shareBps: bigint[];
}

export function readInstruction(message: string, now: Date): InstructionReading {
  const { tokens, clauses, unplaced } = analyse(message.slice(0, MAX_MESSAGE_LENGTH), now);
  const superseded = new Set(clauses.flatMap((clause) => [...clause.superseded]));
  const holds = unplaced
    .map((item) => item.token)
    .filter(
      (token) =>
        (token.kind === 'word' && HOLD_WORDS.has(token.lower)) ||
        // A date still to come, or one the reader could not place in time ("on Friday").
        (token.kind === 'date' && (token.range === undefined || token.range.from.getTime() >= now.getTime())) ||
        (token.kind === 'quoted' && token.carries) ||
        // Letters of another script, or one that may hide a word ("ıf").
        (token.kind === 'punct' && /\p{L}/u.test(token.text)),
    );
  // A figure the merchant corrected ("pay 2.000 USDC …" then "sorry, pay 2 USDC …") holds nothing:
  // only the correction runs, and it is read on its own.
  for (const token of tokens)
    if (
      token.kind === 'amount' &&
      token.number.type === 'unreadable' &&
      !superseded.has(token.index) &&
      !holds.includes(token)
    )
      holds.push(token);
  const equalParts = clauses.some((clause) => clause.slots.equal !== undefined);
  const shareBps = clauses.flatMap((clause) => [
    ...(clause.slots.ratio ?? []),
    ...clause.slots.percents.flatMap((percent) => (percent.bps === undefined ? [] : [percent.bps])),
  ]);
  return { tokens, superseded, holds, equalParts, shareBps };
}

export function understand(message: string, now: Date): Understanding {
  if (message.length > MAX_MESSAGE_LENGTH)
    return { ok: false, problems: [`the message is longer than ${MAX_MESSAGE_LENGTH} characters`] };
  const { clauses, unplaced } = analyse(message, now);
  const problems: string[] = [];

  for (const clause of clauses)
    if (clause.problem) problems.push(`"${truncate(text(clause.tokens), 100)}": ${clause.problem}`);
  problems.push(...explainAll(unplaced));
  const actionable = clauses.filter((clause) => clause.intent !== undefined);
  if (problems.length === 0 && actionable.length === 0)
    problems.push(
      'I found no instruction in the message: say what to do, e.g. "pay out 250 USDC to 0x…" or "refund pay_…"',
    );

  const steps: Step[] = [];
  if (problems.length === 0) {
    for (const clause of actionable) {
      try {
        steps.push(...stepsOf(clause));
      } catch (error) {
        if (!(error instanceof Problem)) throw error;
        problems.push(`"${truncate(text(clause.tokens), 100)}": ${error.message}`);
      }
    }
  }
  // "check if pay_… settled, and refund it": beside a money step the question is a condition.
  if (
    clauses.some((clause) => clause.slots.questionIf) &&
    clauses.some((clause) => clause.intent === 'payout' || clause.intent === 'refund' || clause.intent === 'split')
  )
    problems.push(
      '"if" beside a money step makes it conditional, and I do not act on conditions: ask the question first, then send the instruction',
    );
  // "half of pay_…, then half of pay_…": after the first, "half" could mean of the payment or of what is left.
  const shared = steps.filter(
    (step): step is Extract<Step, { kind: 'refund' }> => step.kind === 'refund' && step.amount.type === 'share',
  );
  for (const step of shared)
    if (steps.filter((other) => other.kind === 'refund' && other.paymentId === step.paymentId).length > 1) {
      problems.push(
        `${step.paymentId} is refunded more than once by shares, and a second share could mean a share of the payment or of what is left: say the amounts`,
      );
      break;
    }
  if (problems.length === 0 && steps.length > MAX_STEPS_PER_MESSAGE)
    problems.push(`at most ${MAX_STEPS_PER_MESSAGE} actions per message (this one has ${steps.length})`);
  if (problems.length === 0) return { ok: true, steps };
  const proposal = proposedReading(message, now);
  return proposal === undefined ? { ok: false, problems } : { ok: false, problems, proposal };
}

/**
 * "Correction: 400 usdc not 600, to 0x… for the freezer": a message that opens with a label of
 * correction corrects an earlier one the run cannot see, which may already have run, so it is
 * asked; the message without its label is the most likely reading, and is proposed.
 */
const CORRECTION_LABEL = /^\s*(?:correction|corrected|update|updated|amended|amendment|edit|edited)\s*[:\-–—]\s*/i;

function proposedReading(message: string, now: Date): Step[] | undefined {
  const label = CORRECTION_LABEL.exec(message);
  if (label === null) return undefined;
  const rest = understand(message.slice(label[0].length), now);
  return rest.ok ? rest.steps : undefined;
}

/** "don't pay A, pay B …": a negated action, then a comma and the action that replaces it. */
function negationLead(tokens: readonly Token[]): { length: number; comma: number } | undefined {
  const wordAt = (i: number): string | undefined => {
    const token = tokens[i];
    return token?.kind === 'word' ? token.lower : undefined;
  };
  let length = 0;
  if (["don't", 'dont', 'never'].includes(wordAt(0) ?? '')) length = 1;
  else if (wordAt(0) === 'do' && wordAt(1) === 'not') length = 2;
  if (length === 0) return undefined;
  // The action that replaces it starts at the next money verb after the negated one.
  const comma = tokens.findIndex((_token, i) => i > length + 1 && MONEY_VERBS.has(wordAt(i) ?? ''));
  return comma > 0 ? { length, comma } : undefined;
}

/** Two values of one kind written the same way ("30 usdc" and "30"; pay_A and pay_A). */
function sameValue(a: Token, b: Token): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind === 'amount' && b.kind === 'amount')
    return a.number.type === 'exact' && b.number.type === 'exact' && a.number.text === b.number.text;
  if (a.kind === 'address' && b.kind === 'address') return a.value.toLowerCase() === b.value.toLowerCase();
  return a.kind === 'payment_id' && b.kind === 'payment_id' && a.value === b.value;
}

/**
 * "refund only pay_A, not pay_B", "to 0xB not 0xA", "400 usdc not 600", "30 usdc. not 300, 30":
 * a negated value the merchant rules out, beside another value of its kind that stays. The negation
 * and the value ruled out are set aside (they change nothing that runs); a value that only restates
 * one kept ("not 300, 30" after "30 usdc") is too. Without another value of its kind, or when the
 * value ruled out is the one kept, nothing is set aside and the "not" is asked about.
 */
function excludedAlternatives(tokens: readonly Token[], dropped: Set<number>): void {
  for (let i = 0; i + 1 < tokens.length; i++) {
    const not = tokens[i]!;
    // "not the usual 50", "not the old 0x…": the words between name which value is ruled out.
    let at = i + 1;
    while (
      tokens[at]?.kind === 'word' &&
      ['the', 'usual', 'same', 'previous', 'old', 'original', 'last', 'full', 'whole', 'entire'].includes(
        (tokens[at] as { lower: string }).lower,
      )
    )
      at++;
    const value = tokens[at];
    // "refund pay_B (the duplicate), keep pay_A", "…, leave pay_A alone": a payment kept is ruled
    // out as "not pay_A" is. ("keep 500 naira" changes the amount and stays to be asked.)
    const keeps =
      not.kind === 'word' && ['keep', 'leave'].includes(not.lower) && at === i + 1 && value?.kind === 'payment_id';
    if (
      value === undefined ||
      not.kind !== 'word' ||
      (not.lower !== 'not' && !keeps) ||
      !VALUE_KINDS.includes(value.kind) ||
      dropped.has(not.index)
    )
      continue;
    const others = tokens.filter((t, k) => k !== at && t.kind === value.kind && !dropped.has(t.index));
    if (others.every((t) => sameValue(t, value))) continue;
    // "leave pay_A alone", "keep pay_A untouched": the word after says the same.
    const after = tokens[at + 1];
    if (keeps && after?.kind === 'word' && ['alone', 'untouched'].includes(after.lower)) {
      for (const word of tokens.slice(i, at + 2)) dropped.add(word.index);
      continue;
    }
    const following = tokens[at + 1];
    // "not 300 but 30" is read by the rule for "not … but …".
    if (following?.kind === 'word' && following.lower === 'but') continue;
    for (const word of tokens.slice(i, at + 1)) dropped.add(word.index);
    // "not 300, 30": the value after the comma restates the one kept.
    const restated = following?.kind === 'punct' && following.text === ',' ? tokens[at + 2] : undefined;
    if (restated !== undefined && others.some((t) => t !== restated && sameValue(t, restated))) {
      dropped.add(following!.index).add(restated.index);
    }
  }
}

/**
 * "send 200 usdc to 0x… — 20 not 200", "50 usdc, not 50 but 60": a value the merchant rules out is
 * ruled out wherever it was written, when a value of its kind is left to stand instead.
 */
function ruledOutEverywhere(tokens: readonly Token[], dropped: Set<number>): void {
  const ruledOut = tokens.filter((t) => dropped.has(t.index) && VALUE_KINDS.includes(t.kind));
  for (const value of ruledOut) {
    const same = tokens.filter((t) => !dropped.has(t.index) && sameValue(t, value));
    const standing = tokens.filter((t) => !dropped.has(t.index) && t.kind === value.kind && !same.includes(t));
    if (same.length > 0 && standing.length > 0) for (const t of same) dropped.add(t.index);
  }
}

/**
 * "20 usdc (twenty, not 200)", "₦5,000 (five thousand naira)": an amount in brackets right after an
 * amount of the same value says it again in other words; it is set aside with its brackets' other
 * words of restatement. A different value in the brackets is left to be placed (and asked about).
 */
function restatedInBrackets(tokens: readonly Token[], dropped: Set<number>): void {
  for (let open = 1; open < tokens.length; open++) {
    if (tokens[open]!.text !== '(' || tokens[open - 1]!.kind !== 'amount') continue;
    const close = tokens.findIndex((t, k) => k > open && t.text === ')');
    if (close < 0) return;
    const inside = tokens.slice(open + 1, close).filter((t) => !dropped.has(t.index));
    const said = tokens[open - 1]!;
    if (
      inside.some((t) => t.kind === 'amount') &&
      inside.every(
        (t) =>
          t.kind === 'punct' ||
          (t.kind === 'amount' && sameAmount(t, said)) ||
          (t.kind === 'word' && ['in', 'words'].includes(t.lower)),
      )
    )
      for (const t of tokens.slice(open, close + 1)) dropped.add(t.index);
  }
}

/** Two amounts of one value; a currency written on both must be the same. */
function sameAmount(a: Token, b: Token): boolean {
  if (!sameValue(a, b) || a.kind !== 'amount' || b.kind !== 'amount') return false;
  return a.currency === undefined || b.currency === undefined || a.currency.code === b.currency.code;
}

/**
 * "…, pay_B not the first one", "…, 0xB, not that one": after a correction, the words that say
 * again what it replaces. They change nothing (the "one" is no amount).
 */
function restatedReplacement(after: readonly Token[]): Token[] {
  const word = (k: number): string => {
    const token = after[k];
    return token?.kind === 'word' || token?.kind === 'amount' ? token.text.toLowerCase() : '';
  };
  for (let k = 0; k < after.length; k++) {
    if (word(k) !== 'not') continue;
    if (
      word(k + 1) === 'the' &&
      ['first', 'other', 'previous', 'wrong', 'old'].includes(word(k + 2)) &&
      word(k + 3) === 'one'
    )
      return after.slice(k, k + 4);
    if (word(k + 1) === 'that' && word(k + 2) === 'one') return after.slice(k, k + 3);
  }
  return [];
}

/**
 * "send 60 usdc to 0x…, no 50, sorry 55": a correction corrected again. The last one stands; what
 * the earlier ones said is replaced, when every value in it is of a kind the last one gives again
 * (otherwise nothing is replaced, and the clause is read, or asked, as written).
 */
function lastCorrection(after: readonly Token[]): { after: Token[]; replaced: Token[] } {
  for (let k = after.length - 1; k > 0; k--) {
    const length = correctionAt(after, k);
    if (length === 0) continue;
    const replaced = after.slice(0, k + length);
    const rest = after.slice(k + length);
    const values = replaced.filter((t) => isSignificant(t) && t.kind !== 'word' && t.kind !== 'punct');
    if (values.length > 0 && values.every((t) => rest.some((r) => r.kind === t.kind))) return { after: rest, replaced };
  }
  return { after: [...after], replaced: [] };
}

function parseClause(tokens: Token[]): Clause {
  const significant = isSignificant;
  const consumed0 = new Set<number>();
  // "X instead of Y": Y is the discarded value.
  const dropped = new Set<number>();
  for (let i = 0; i + 2 < tokens.length; i++) {
    const word = tokens[i]!;
    if (
      word.kind === 'word' &&
      word.lower === 'instead' &&
      tokens[i + 1]?.kind === 'word' &&
      (tokens[i + 1] as { lower: string }).lower === 'of'
    ) {
      dropped
        .add(word.index)
        .add(tokens[i + 1]!.index)
        .add(tokens[i + 2]!.index);
    }
  }
  // "send 100 usdc not to A but to B": A is the discarded value.
  for (let i = 0; i + 2 < tokens.length; i++) {
    const word = tokens[i]!;
    if (word.kind !== 'word' || word.lower !== 'not') continue;
    const valueAt =
      tokens[i + 1]?.kind === 'word' && (tokens[i + 1] as { lower: string }).lower === 'to' ? i + 2 : i + 1;
    const value = tokens[valueAt];
    const but = tokens[valueAt + 1];
    if (
      value !== undefined &&
      ['address', 'amount', 'payment_id'].includes(value.kind) &&
      but?.kind === 'word' &&
      but.lower === 'but'
    )
      for (const token of tokens.slice(i, valueAt + 2)) dropped.add(token.index);
  }
  excludedAlternatives(tokens, dropped);
  ruledOutEverywhere(tokens, dropped);
  restatedInBrackets(tokens, dropped);
  const kept = tokens.filter((token) => !dropped.has(token.index));
  /** Values the merchant ruled out or corrected ("not 300", "3k … no make it 2k"): never evidence. */
  const superseded = new Set(
    tokens.filter((token) => dropped.has(token.index) && VALUE_KINDS.includes(token.kind)).map((token) => token.index),
  );
  let marker = -1;
  let markerLength = 0;
  const negation = negationLead(kept);
  if (negation !== undefined) {
    // "don't pay A, pay B 50 usdc": the negated action is corrected by the one after the comma.
    for (const token of kept.slice(0, negation.length)) consumed0.add(token.index);
    marker = negation.comma;
    markerLength = 0;
  } else {
    for (let i = 0; i < kept.length; i++) {
      const length = correctionAt(kept, i);
      // A marker corrects a value or an action said before it. With only greetings before it
      // ("no send am o, I just dey test: …", "oga abeg no send 50 usdc …": Pidgin for "don't
      // send") it corrects nothing: its words stay to be placed, and the clause is asked back.
      const said = kept.slice(0, i);
      const contentBefore =
        said.some((token) => isSignificant(token) && token.kind !== 'word') || intentOf(said) !== undefined;
      if (length > 0 && contentBefore) {
        marker = i;
        markerLength = length;
        break;
      }
    }
  }
  const before = marker >= 0 ? kept.slice(negation?.length ?? 0, marker) : kept;
  const restating = marker >= 0 ? restatedReplacement(kept.slice(marker + markerLength)) : [];
  const corrected = marker >= 0 ? kept.slice(marker + markerLength).filter((t) => !restating.includes(t)) : [];
  const { after, replaced } = lastCorrection(corrected);
  for (const token of replaced) if (VALUE_KINDS.includes(token.kind)) superseded.add(token.index);
  const intent = intentOf(before) ?? intentOf(after);
  const left = fillSlots(intent, before, significant);
  const consumed = new Set([
    ...left.consumed,
    ...dropped,
    ...consumed0,
    ...restating.map((t) => t.index),
    ...replaced.map((t) => t.index),
  ]);
  let slots = left.slots;
  let clauseProblem = left.problem;
  if (marker >= 0) {
    for (const token of kept.slice(marker, marker + markerLength)) consumed.add(token.index);
    const hasContentBefore = before.some((token) => isSignificant(token) || token.kind === 'word');
    const right = fillSlots(intent, after, significant);
    for (const index of right.consumed) consumed.add(index);
    clauseProblem ??= right.problem;
    // "…, use that instead", "or rather …": the correction's own words.
    for (const token of after)
      if (token.kind === 'word' && ['instead', 'rather', 'meant', 'actually'].includes(token.lower))
        consumed.add(token.index);
    if (
      !after.some((token) => token.kind !== 'punct' && token.kind !== 'word') &&
      !after.some((t) => t.kind === 'word' && ['full', 'all', 'everything', 'half', 'each'].includes(t.lower))
    )
      clauseProblem ??=
        'the correction says what not to do but not what to do instead, so I did nothing: write the instruction as it should run';
    if (hasContentBefore) {
      // Everything the correction replaced is accounted for: the correction consumed it.
      for (const token of before) if (isSignificant(token) && token.kind !== 'word') consumed.add(token.index);
      // A value of a kind the correction gives again is no longer meant: it grounds nothing.
      for (const token of before)
        if (VALUE_KINDS.includes(token.kind) && after.some((t) => t.kind === token.kind)) superseded.add(token.index);
      const merged = mergeCorrection(left.slots, right.slots);
      slots = merged.slots;
      clauseProblem ??= merged.problem;
    } else {
      slots = right.slots;
    }
  }
  // A clause without an intent acts on nothing, so it accounts for nothing: its values stay unplaced,
  // and what its slots would have been raises no problem of its own.
  if (intent === undefined) {
    consumed.clear();
    clauseProblem = undefined;
  }
  const wantsPaymentFromContext =
    (intent === 'refund' || intent === 'payment_status') &&
    slots.paymentIds.length === 0 &&
    slots.lookup === undefined &&
    // "Please confirm status." asks about the one payment the message named; so does "Please refund
    // in full." under a sentence naming the order. Else a refund needs "it".
    (intent === 'payment_status' ||
      (slots.full && !slots.allPayments && slots.date === undefined) ||
      tokens.some(
        (token) =>
          token.kind === 'word' &&
          [
            'it',
            // Pidgin "refund am": it.
            'am',
            'them',
            'their',
            'this',
            'that',
            'customer',
            'client',
            'buyer',
            'him',
            'her',
            'payment',
            'order',
            // "he paid shipping two times on pay_…, refund the extra GH₵ 30": the part paid over,
            // on that payment ("the duplicate" could be another charge than the one named: asked).
            'extra',
          ].includes(token.lower),
      ));
  return {
    intent,
    tokens,
    slots,
    consumed,
    superseded,
    wantsPaymentFromContext,
    ...(clauseProblem ? { problem: clauseProblem } : {}),
  };
}

const FORM_LABELS = new Set([
  'amount',
  'wallet',
  'address',
  'to',
  'recipient',
  'ref',
  'reference',
  'memo',
  'note',
  'reason',
  'description',
  'payment',
  'transaction',
  'currency',
  'asset',
]);

/** "…to each of these:" followed by one address per line: the addresses belong to the clause above. */
function joinAddressLines(clauses: readonly Token[][]): Token[][] {
  const out: Token[][] = [];
  for (const clause of clauses) {
    const onlyAddresses =
      clause.some((token) => token.kind === 'address' || token.kind === 'bad_address') &&
      clause.every(
        (token) =>
          token.kind === 'address' ||
          token.kind === 'bad_address' ||
          token.kind === 'punct' ||
          (token.kind === 'word' && token.lower === 'and'),
      );
    // A ticket's labelled lines ("Amount: 850 USDC", "Wallet: 0x…", "Ref: CLN-0326") are one request.
    const first = clause.find((token) => token.kind !== 'punct');
    const label = first?.kind === 'word' && clause[clause.indexOf(first) + 1]?.text === ':';
    const labelledLine = label && FORM_LABELS.has(first.lower) && out.length > 0;
    // Under a form, a line of any other label ("Status: sent") or one telling what was done ("Paid
    // on 12 March") belongs to it too, so its words are placed or asked about with the form's values:
    // a record of a payout made is no request to make it again.
    const previous = out.at(-1)?.find((token) => token.kind !== 'punct');
    const underForm =
      previous?.kind === 'word' &&
      FORM_LABELS.has(previous.lower) &&
      out.at(-1)![out.at(-1)!.indexOf(previous) + 1]?.text === ':' &&
      (label ||
        (first?.kind === 'word' &&
          PAST.has(first.lower) &&
          clause[clause.indexOf(first) + 1]?.text.toLowerCase() !== 'by'));
    if ((onlyAddresses || labelledLine || underForm) && out.length > 0)
      out[out.length - 1] = [...out[out.length - 1]!, ...clause];
    else out.push(clause);
  }
  return out;
}

/** "kindly process the following payouts:" above "- 150 usdc to 0x…" lines is a heading, not a payout. */
function dropListHeaders(clauses: Clause[]): void {
  for (const clause of clauses) {
    if (clause.intent !== 'payout' && clause.intent !== 'refund' && clause.intent !== 'split') continue;
    if (clause.wantsPaymentFromContext) continue;
    const { slots } = clause;
    const hasValues =
      slots.addresses.length + slots.amounts.length + slots.paymentIds.length + slots.percents.length > 0 ||
      slots.fraction !== undefined ||
      slots.ratio !== undefined ||
      slots.date !== undefined ||
      slots.url !== undefined ||
      slots.lookup !== undefined ||
      clause.tokens.some((token) => token.kind === 'bad_address' || token.kind === 'bad_payment_id');
    if (hasValues) continue;
    // A money verb with nothing to act on, said of something ("a customer who wants to pay online")
    // or heading a list ("kindly process the following payouts:" above the lines), is context. An
    // empty request ("then pay the tailor what we owe him") stays, and is asked back.
    const lead = leadingWord(clause.tokens);
    const at = clauses.indexOf(clause);
    const headingWords =
      clause.tokens.at(-1)?.text === ':' ||
      clause.tokens.some((t) => t.kind === 'word' && ['following', 'below', 'these', 'list'].includes(t.lower));
    const heading = headingWords && clauses.slice(at + 1).some((later) => later.intent === clause.intent);
    if (heading || lead === undefined || !MONEY_VERBS.has(lead)) clause.intent = undefined;
  }
}

/**
 * A message that only reads ("the customer says they paid but I can't see it — pay_…, can you
 * check?") cannot move money whatever its words say, so its words of condition or negation are
 * accounted for by the reads. Beside any write or money step they are not (checks.ts refuses).
 */
function relaxReadOnly(clauses: Clause[]): void {
  const writes = clauses.some(
    (clause) =>
      clause.intent !== undefined &&
      !['payment_status', 'balance', 'pending_confirmations', 'list_payments', 'revenue'].includes(clause.intent),
  );
  if (writes || !clauses.some((clause) => clause.intent !== undefined)) return;
  // "pay everyone who sold to me last month" reads as revenue by its words, but asks to pay: no relief.
  if (clauses.some((clause) => clause.tokens.some((token) => token.kind === 'word' && MONEY_VERBS.has(token.lower))))
    return;
  // "convert my USDC balance to naira" asks for what no tool does; reading the balance is no answer.
  if (clauses.some((clause) => UNSUPPORTED_ACTIONS.has(leadingWord(clause.tokens) ?? ''))) return;
  for (const clause of clauses)
    for (const token of clause.tokens)
      if (isSignificant(token) && (token.kind === 'word' || (clause.intent === undefined && isStoryValue(token))))
        clause.consumed.add(token.index);
}

/**
 * What a context sentence of a read-only message may say without being asked about: dates and
 * counts ("placed by one of our customers last Tuesday"). An address, an id or an amount of money
 * there could be a request the merchant expects to see acted on, so it is still asked about.
 */
function isStoryValue(token: Token): boolean {
  return token.kind === 'date' || (token.kind === 'amount' && token.currency === undefined);
}

/**
 * "customer was charged twice for the same jollof order, refund the duplicate pay_…", "please
 * refund pay_…. The customer received a damaged item yesterday.": the sentence told just before
 * (else just after) a refund that gives no reason of its own is why it is asked. Only a story of
 * words (a verb in the past, no money, address or id in it; a day gone by) is taken; it moves nothing.
 */
function storiesAsReasons(clauses: Clause[], now: Date): void {
  const tellsStory = (tokens: readonly Token[], refunded: readonly string[] = []): boolean =>
    tokens.some((t) => t.kind === 'word' && PAST.has(t.lower)) &&
    tokens.every(
      (t) =>
        t.kind === 'word' ||
        t.kind === 'punct' ||
        t.kind === 'code' ||
        // "he paid shipping two times on pay_…, refund the extra GH₵ 30": the payment refunded.
        (t.kind === 'payment_id' && refunded.includes(t.value)) ||
        // "customer returned 2 crates", "Guest in room 204 checked out 2 nights early": counts and
        // numbers naming things, never money (no currency), are words of the story.
        (t.kind === 'amount' &&
          t.currency === undefined &&
          t.number.type === 'exact' &&
          /^\d{1,4}$/.test(t.number.text)) ||
        (t.kind === 'date' && t.range !== undefined && t.range.to.getTime() <= now.getTime()),
    );
  for (const [i, clause] of clauses.entries()) {
    if (clause.intent !== 'refund' || clause.slots.reason !== undefined) continue;
    const isStory = (other: Clause | undefined): other is Clause =>
      other !== undefined && other.intent === undefined && tellsStory(other.tokens, clause.slots.paymentIds);
    const story = [clauses[i - 1], clauses[i + 1]].find(isStory);
    if (story !== undefined) {
      clause.slots.reason = truncate(text(story.tokens), 200);
      // "refund pay_…. 2 items came back.": a count in the story beside a refund that says no
      // amount, share or "in full" may be what the refund is for (those items only), as in the
      // same sentence (slots.ts): asked, never a full refund.
      if (saysNoExtent(clause.slots) && countsItems(story.tokens))
        clause.problem ??= 'the story counts items but the refund says no amount: say how much to refund, or "in full"';
      continue;
    }
    // "paid double by mistake, pls refund pay_… in full": the story told before the verb, in the
    // same sentence, up to its comma or dash.
    const verb = clause.tokens.findIndex((t) => t.kind === 'word' && MONEY_VERBS.has(t.lower));
    const before = clause.tokens.slice(0, Math.max(verb, 0));
    const comma = before.findLastIndex((t) => t.kind === 'punct' && /^[,;—–-]$/.test(t.text));
    if (comma > 0 && tellsStory(before.slice(0, comma))) {
      clause.slots.reason = truncate(text(before.slice(0, comma)), 200);
      continue;
    }
    // "refund the blue kente cloth order, it came torn": the story told after the request's last comma.
    const last = clause.tokens.findLastIndex((t) => t.kind === 'punct' && /^[,;—–-]$/.test(t.text));
    const after = clause.tokens.slice(last + 1);
    if (verb >= 0 && last > verb && tellsStory(after)) clause.slots.reason = truncate(text(after), 200);
  }
}

/**
 * "refund pay_B. Leave pay_A alone.": a sentence of its own that keeps a payment out, beside a
 * refund of another one, rules it out as "…, leave pay_A alone" does in the same sentence. Its
 * words are placed and the id is never evidence; kept beside no other refund, it is asked.
 */
function keptAside(clauses: readonly Clause[], borrowed: Set<number>): void {
  const refunded = clauses.flatMap((clause) => (clause.intent === 'refund' ? clause.slots.paymentIds : []));
  // "refund half of pay_…; they keep the other half": the rest of the share a refund took.
  const shares = clauses.flatMap((clause) =>
    clause.intent === 'refund'
      ? clause.tokens.filter((t) => t.kind === 'fraction').map((t) => t.text.toLowerCase())
      : [],
  );
  for (const clause of clauses) {
    if (clause.intent !== undefined) continue;
    const other = clause.tokens.findIndex(
      (t, k) =>
        t.kind === 'fraction' &&
        shares.includes(t.text.toLowerCase()) &&
        clause.tokens[k - 1]?.kind === 'word' &&
        (clause.tokens[k - 1] as { lower: string }).lower === 'other',
    );
    if (
      other >= 0 &&
      clause.tokens.some(
        (t) => t.kind === 'word' && ['keep', 'keeps', 'kept', 'retain', 'retains'].includes(t.lower),
      ) &&
      clause.tokens.every(
        (t, k) =>
          k === other ||
          t.kind === 'punct' ||
          (t.kind === 'word' && !isSignificant(t)) ||
          isWordIn(t, ['keep', 'keeps', 'kept', 'retain', 'retains', 'other']),
      )
    ) {
      for (const token of clause.tokens) borrowed.add(token.index);
      continue;
    }
    const words = clause.tokens.filter((t) => t.kind !== 'punct');
    const [verb, id, how] = words;
    if (
      words.length === 3 &&
      verb?.kind === 'word' &&
      ['leave', 'keep'].includes(verb.lower) &&
      id?.kind === 'payment_id' &&
      how?.kind === 'word' &&
      ['alone', 'untouched', 'out'].includes(how.lower) &&
      refunded.length > 0 &&
      !refunded.includes(id.value)
    ) {
      for (const token of clause.tokens) borrowed.add(token.index);
      clause.superseded.add(id.index);
    }
  }
}

function isWordIn(token: Token, words: readonly string[]): boolean {
  return token.kind === 'word' && words.includes(token.lower);
}

/** A refund that says neither an amount, a share nor "in full". */
function saysNoExtent(slots: Slots): boolean {
  return slots.amounts.length === 0 && slots.fraction === undefined && slots.percents.length === 0 && !slots.full;
}

/** "2 items", "3 of the shoes", "2 of 3": a number with no currency that counts things. */
function countsItems(tokens: readonly Token[]): boolean {
  return tokens.some(
    (token, k) =>
      // "2 items"; "charged 2 times" says how often it happened, and counts no items.
      (token.kind === 'amount' &&
        token.currency === undefined &&
        isCountNoun(tokens[k + 1]) &&
        !/^times?$/.test(tokens[k + 1]?.kind === 'word' ? tokens[k + 1]!.text.toLowerCase() : '')) ||
      isCountOf(tokens, k) ||
      isItemCount(tokens, k),
  );
}

/** "then 9,000 USDC to 0x…": a fragment after a sequencer continues the action before it. */
function inheritIntents(clauses: Clause[], sequencers: readonly Token[]): void {
  if (sequencers.length === 0) return;
  for (let i = 1; i < clauses.length; i++) {
    const clause = clauses[i]!;
    const previous = clauses[i - 1]!;
    if (clause.intent !== undefined || previous.intent === undefined) continue;
    const carriesValues = clause.tokens.some(
      (token) => token.kind === 'amount' || token.kind === 'address' || token.kind === 'payment_id',
    );
    if (!carriesValues || !['payout', 'refund'].includes(previous.intent)) continue;
    clauses[i] = parseClause([
      ...previous.tokens.filter((t) => t.kind === 'word' && isVerbLike(t.lower)).slice(0, 1),
      ...clause.tokens,
    ]);
    clauses[i]!.intent ??= previous.intent;
  }
}

function isVerbLike(word: string): boolean {
  return ['pay', 'send', 'transfer', 'payout', 'remit', 'wire', 'refund', 'reimburse', 'give'].includes(word);
}

/** Words that say a wallet named is no longer the one to pay. */
const STALE = new Set(['old', 'previous', 'former', 'earlier', 'last', 'used', 'wrong', 'not', 'no', 'never']);

/**
 * "Olu's wallet: 0x…. Pay him 100 USDC for the Lekki delivery": a sentence that gives one wallet
 * and nothing else, then a single payout to "him"/"her"/"them" that names no address, pays that
 * wallet. Any other shape (two wallets, two payouts, an address in the payout) is left to be asked.
 */
function borrowNamedWallet(clauses: readonly Clause[], borrowed: Set<number>): void {
  const payouts = clauses.filter((clause) => clause.intent !== undefined);
  if (payouts.length !== 1) return;
  const payout = payouts[0]!;
  const verb = payout.tokens.findIndex((t) => t.kind === 'word' && MONEY_VERBS.has(t.lower));
  const pronoun = payout.tokens[verb + 1];
  if (
    payout.intent !== 'payout' ||
    payout.slots.addresses.length > 0 ||
    payout.tokens.some((t) => t.kind === 'address' || t.kind === 'bad_address') ||
    pronoun?.kind !== 'word' ||
    !['him', 'her', 'them'].includes(pronoun.lower)
  )
    return;
  const wallets = clauses
    .filter((clause) => clause.intent === undefined)
    .flatMap((clause) => {
      const address = clause.tokens.filter((t) => t.kind === 'address' || t.kind === 'bad_address');
      const names = clause.tokens.some((t) => t.kind === 'word' && ['wallet', 'address'].includes(t.lower));
      // "Olu's old wallet was 0x…" names one no longer to be paid.
      const plain = clause.tokens.every(
        (t) =>
          (t.kind === 'word' && !PAST.has(t.lower) && !STALE.has(t.lower)) ||
          t.kind === 'punct' ||
          t.kind === 'address',
      );
      return address.length === 1 && names && plain ? [{ clause, address: address[0]! }] : [];
    });
  const wallet = wallets[0];
  if (wallets.length !== 1 || wallet?.address.kind !== 'address') return;
  payout.slots.addresses.push(wallet.address);
  payout.consumed.add(pronoun.index);
  borrowed.add(wallet.address.index);
}

/**
 * "Refund it" uses the one payment the clause before named ("check pay_… then refund it"), or the
 * one payment id of the message's context sentences; a payment's redirect link written in its own
 * sentence ("… for a phone case? Redirect to https://…") belongs to it the same way.
 */
function borrowContextIds(clauses: Clause[]): Set<number> {
  const borrowed = new Set<number>();
  for (let i = 1; i < clauses.length; i++) {
    const clause = clauses[i]!;
    const previous = clauses[i - 1]!;
    // "money back for order #A-7731, refund it": the pronoun's clause says the request before it
    // again (the same intent, on the payment that one names by reference or description), so the
    // two are one request, read together: one refund, never two.
    if (
      clause.intent !== undefined &&
      clause.intent === previous.intent &&
      clause.wantsPaymentFromContext &&
      previous.slots.lookup !== undefined &&
      previous.slots.paymentIds.length === 0
    ) {
      const merged = parseClause([...previous.tokens, ...clause.tokens]);
      if (merged.intent === previous.intent && !merged.wantsPaymentFromContext && merged.slots.lookup !== undefined) {
        clauses.splice(i - 1, 2, merged);
        i--;
        continue;
      }
    }
    if (
      clause.intent !== undefined &&
      clause.wantsPaymentFromContext &&
      previous.intent !== undefined &&
      previous.slots.paymentIds.length === 1
    ) {
      clause.slots.paymentIds.push(previous.slots.paymentIds[0]!);
      clause.wantsPaymentFromContext = false;
    }
  }
  const creating = clauses.filter((clause) => clause.intent === 'create_payment' && clause.slots.url === undefined);
  const urls = clauses
    .filter((clause) => clause.intent === undefined)
    .flatMap((clause) => clause.tokens.filter((t): t is Extract<Token, { kind: 'url' }> => t.kind === 'url'));
  if (creating.length === 1 && urls.length === 1) {
    creating[0]!.slots.url = urls[0]!.value;
    borrowed.add(urls[0]!.index);
  }
  borrowNamedWallet(clauses, borrowed);
  const wanting = clauses.filter((clause) => clause.intent !== undefined && clause.wantsPaymentFromContext);
  if (wanting.length !== 1) return borrowed;
  const contextIds = clauses
    .filter((clause) => clause.intent === undefined)
    .flatMap((clause) =>
      clause.tokens.filter((token): token is Extract<Token, { kind: 'payment_id' }> => token.kind === 'payment_id'),
    );
  const distinct = [...new Set(contextIds.map((token) => token.value))];
  if (distinct.length === 0) {
    // "Customer wants money back for order #A-7731, refund it": the order named beside the request.
    const references = clauses
      .filter((clause) => clause.intent === undefined)
      .flatMap((clause) =>
        clause.tokens.flatMap((_token, i) => {
          const reference = referenceAt(clause.tokens, i);
          return reference === undefined ? [] : [{ reference, token: clause.tokens[i]! }];
        }),
      );
    if (references.length === 0) {
      // "the customer wey buy the carton of Indomie, refund am abeg": what was bought, told in a
      // clause of its own beside the request, describes the payment (found as in one clause).
      const described = clauses.flatMap((other) => {
        const found = other.intent === undefined ? buyerDescription(other.tokens) : undefined;
        return found === undefined || found.words.length === 0 ? [] : [found];
      });
      if (described.length !== 1 || !['refund', 'payment_status', 'split'].includes(wanting[0]!.intent ?? ''))
        return borrowed;
      wanting[0]!.slots.lookup = { words: described[0]!.words };
      wanting[0]!.wantsPaymentFromContext = false;
      for (const token of described[0]!.used) borrowed.add(token.index);
      return borrowed;
    }
    if (new Set(references.map((found) => found.reference)).size !== 1) return borrowed;
    wanting[0]!.slots.lookup = { reference: references[0]!.reference };
    wanting[0]!.wantsPaymentFromContext = false;
    for (const found of references) borrowed.add(found.token.index);
    return borrowed;
  }
  if (distinct.length !== 1) return borrowed;
  wanting[0]!.slots.paymentIds.push(distinct[0]!);
  for (const token of contextIds) borrowed.add(token.index);
  return borrowed;
}

// ---------------------------------------------------------------------------------------------
// Numbers and currencies
// ---------------------------------------------------------------------------------------------

/** The decimal text of a number; one the reader could not read exactly is asked back, quoted. */
function numberIn(value: NumberValue): string {
  if (value.type === 'unreadable') problem(value.reason);
  return value.text;
}

function toMinor(value: NumberValue, written: string, currency: Currency): bigint {
  const decimal = numberIn(value);
  const parsed = parseMajorAmount(decimal, currency);
  if (parsed.ok) return parsed.minor;
  if (parsed.reason === 'too_many_decimals')
    problem(`${written} has more decimals than ${currency.code} has (${currency.exponent})`);
  if (parsed.reason === 'not_positive') problem(`the amount must be more than zero, not ${written}`);
  if (parsed.reason === 'too_large') problem(`${written} is more than the largest amount I accept`);
  problem(`${written} is not an amount I can read`);
}

function checkAmountToken(amount: AmountToken): void {
  if (amount.negative) problem(`${amount.text} is negative: amounts are always positive`);
}

/** Payouts and splits move USDC: no currency, "$", "dollars", "bucks", "usd" and "usdc" all mean USDC. */
function payoutMinor(amount: AmountToken, standalone: CurrencyMention | undefined): bigint {
  checkAmountToken(amount);
  const mention = amount.currency ?? standalone;
  if (amount.currency && standalone && amount.currency.code !== standalone.code)
    problem(`${amount.text} and "${standalone.word}" name two different currencies`);
  if (mention !== undefined && mention.code !== 'DOLLAR' && mention.code !== 'USDC')
    problem(
      `payouts and splits are paid in USDC, not ${mention.word}: I do not convert currencies, say the amount in USDC`,
    );
  return toMinor(amount.number, amount.text, PAYOUT_ASSET);
}

function formatBps(bps: bigint): string {
  const whole = bps / 100n;
  const cents = bps % 100n;
  return cents === 0n ? whole.toString() : `${whole}.${cents.toString().padStart(2, '0').replace(/0$/, '')}`;
}

// ---------------------------------------------------------------------------------------------
// Clause → steps
// ---------------------------------------------------------------------------------------------

/**
 * The slots each intent's step reads. A word the grammar filed into a slot the step then ignores
 * ("split half of 100 USDC …", "split yesterday's NGN revenue …") would be a word not acted on:
 * such a clause is asked back, never run without it.
 */
/** "for my approval", "for the board report": a read's asides change nothing it reads. */
const READ_ASIDES: readonly (keyof Slots)[] = ['memo', 'memos', 'reason'];

const SLOTS_READ: Readonly<Record<Intent, readonly (keyof Slots)[]>> = {
  payout: ['addresses', 'amounts', 'each', 'recipients', 'memo', 'memos', 'reference', 'currency'],
  refund: [
    'lookup',
    'paymentIds',
    'amounts',
    'fraction',
    'percents',
    'ratio',
    'full',
    'reason',
    'currency',
    'allPayments',
    'date',
    'duplicates',
    'less',
  ],
  split: [
    'lookup',
    'addresses',
    'paymentIds',
    'amounts',
    'percents',
    'ratio',
    'equal',
    'recipients',
    'date',
    'reference',
    'currency',
    'revenueWord',
    'memo',
    'memos',
  ],
  create_payment: ['amounts', 'url', 'memo', 'memos', 'reference', 'currency'],
  payment_status: ['paymentIds', 'lookup', ...READ_ASIDES],
  balance: ['currency', ...READ_ASIDES],
  pending_confirmations: [...READ_ASIDES],
  list_payments: ['status', 'limit', 'date', 'revenueWord', ...READ_ASIDES],
  revenue: ['date', 'currency', 'revenueWord', ...READ_ASIDES],
  approve: [],
};

const SLOT_WORDS: Partial<Record<keyof Slots, string>> = {
  addresses: 'an address',
  amounts: 'an amount',
  paymentIds: 'a payment id',
  percents: 'a percentage',
  ratio: 'shares',
  fraction: 'a fraction',
  equal: '"equally"',
  recipients: 'a count of recipients',
  each: '"each"',
  full: '"in full"',
  allPayments: '"all payments"',
  duplicates: '"paid twice"',
  date: 'a date',
  url: 'a link',
  memo: 'a memo',
  reason: 'a reason',
  lookup: 'an order named by reference or description',
  reference: 'a reference',
  currency: 'a currency',
  status: 'a status',
  limit: 'a count',
  less: 'an amount to keep back',
};

function unreadSlots(intent: Intent, slots: Slots): (keyof Slots)[] {
  const read = new Set<keyof Slots>(SLOTS_READ[intent]);
  return (Object.keys(SLOT_WORDS) as (keyof Slots)[]).filter((key) => {
    if (read.has(key)) return false;
    const value = slots[key];
    return Array.isArray(value) ? value.length > 0 : value !== undefined && value !== false;
  });
}

function stepsOf(clause: Clause): Step[] {
  const { slots } = clause;
  if (clause.intent !== undefined && clause.intent !== 'approve') {
    const unread = unreadSlots(clause.intent, slots);
    if (unread.length > 0)
      problem(
        `I could not place ${unread.map((key) => SLOT_WORDS[key]).join(', ')} in this instruction, so I did not act on it`,
      );
  }
  const badAddress = clause.tokens.find((token) => token.kind === 'bad_address');
  if (badAddress?.kind === 'bad_address') problem(badAddress.reason);
  const badId = clause.tokens.find((token) => token.kind === 'bad_payment_id');
  if (badId) problem(`"${badId.text}" is not a complete payment id (pay_ followed by 22 letters and digits)`);
  switch (clause.intent) {
    case 'approve':
      return problem(
        'I cannot approve or reject held actions: a person does that on the dashboard or with an approvals key',
      );
    case 'payout':
      return payoutSteps(clause);
    case 'refund': {
      const narrowing = slots.allPayments ? narrowingWord(clause.tokens) : undefined;
      if (narrowing)
        problem(
          `"${narrowing.text}" narrows which payments to refund, and I only refund every payment of a period as a whole: list the payment ids (pay_…) to refund`,
        );
      return refundSteps(slots);
    }
    case 'split':
      return [splitStep(slots)];
    case 'create_payment':
      return [createPaymentStep(slots)];
    case 'payment_status':
      if (slots.lookup !== undefined && slots.paymentIds.length === 0)
        return [{ kind: 'payment_status', paymentId: FOUND_LATER, lookup: slots.lookup }];
      if (slots.paymentIds.length === 0) problem('say which payment by its id (pay_…)');
      return slots.paymentIds.map((paymentId) => ({ kind: 'payment_status' as const, paymentId }));
    case 'balance':
      return [{ kind: 'balance' }];
    case 'pending_confirmations':
      return [{ kind: 'pending_confirmations' }];
    case 'list_payments':
      if (slots.limit !== undefined && (slots.limit < 1 || slots.limit > 100))
        problem('I list 1 to 100 payments at a time');
      return [
        {
          kind: 'list_payments',
          ...(slots.status ? { status: slots.status } : {}),
          ...(slots.limit ? { limit: slots.limit } : {}),
          ...(slots.date ? { range: slots.date } : {}),
        },
      ];
    case 'revenue': {
      if (slots.date === undefined) problem('say which period, e.g. "yesterday", "last week" or "since March 1"');
      const currency = slots.currency ? currencyCode(slots.currency) : undefined;
      return [{ kind: 'revenue', range: slots.date, ...(currency ? { currency } : {}) }];
    }
    default:
      return [];
  }
}

/** The words a refund of a whole period may hold; anything else ("failed", "by john", "from the Lagos store") narrows it. */
const PERIOD_REFUND_WORDS = new Set([
  'refund',
  'refunds',
  'reimburse',
  'reverse',
  'refnd',
  'all',
  'every',
  'each',
  'everything',
  'payment',
  'payments',
  'transaction',
  'transactions',
  'order',
  'orders',
  'charge',
  'charges',
  'sale',
  'sales',
  'from',
  'of',
  'on',
  'for',
  'made',
  'taken',
  'received',
  'the',
  'my',
  'our',
  'please',
  'pls',
  'kindly',
  'can',
  'could',
  'you',
  'i',
  'we',
  'want',
  'need',
  'to',
  'a',
  'in',
  'full',
  'fully',
  'them',
  'those',
  'these',
  'that',
  'were',
  'was',
  'paid',
  'today',
  "today's",
  'yesterday',
  "yesterday's",
  'hi',
  'hello',
  'thanks',
  'thank',
  'and',
  'just',
  'go',
  'ahead',
  'u',
  'naira',
  'cedis',
  'shillings',
  'dollars',
  'usd',
  'ngn',
  'ghs',
  'kes',
  'wey',
  'enter',
  'came',
  'which',
  'got',
  'abeg',
  'batch',
  'ticket',
  'approved',
  'by',
]);
const REASON_MARKERS = new Set(['because', 'reason', 'due', 'since', 'cos', 'as']);
const STATEMENT_VERBS = new Set(['was', 'were', 'is', 'are', 'got', 'has', 'had', 'have', 'been']);

function narrowingWord(tokens: readonly Token[]): Token | undefined {
  for (const [i, token] of tokens.entries()) {
    // "…, the event was cancelled": a statement after a comma says why, it picks no payments.
    // "(checkout outage)": a note in brackets says why, it picks no payments.
    if (token.kind === 'punct' && token.text === '(') return undefined;
    if (token.kind === 'punct' && /^[,—–-]$/.test(token.text)) {
      const tail = tokens.slice(i + 1);
      if (tail.some((t) => t.kind === 'word' && STATEMENT_VERBS.has(t.lower))) return undefined;
    }
    if (token.kind === 'word' && REASON_MARKERS.has(token.lower)) return undefined;
    if (token.kind === 'word' && !PERIOD_REFUND_WORDS.has(token.lower) && !isSignificant(token)) return token;
    if (token.kind === 'code' || token.kind === 'quoted') return token;
  }
  return undefined;
}

function currencyCode(mention: CurrencyMention): string {
  const code = mention.code === 'DOLLAR' ? 'USD' : mention.code;
  if (getCurrency(code) === undefined) problem(`${mention.word} is not a supported currency`);
  return code;
}

function payoutSteps(clause: Clause): Step[] {
  const { slots } = clause;
  const { addresses, amounts } = slots;
  if (addresses.length === 0)
    problem('a payout needs its recipient as a full 0x address (I never guess a recipient, and I do not know names)');
  if (amounts.length === 0) problem('say exactly how much to pay, e.g. 250 USDC');
  if (slots.recipients !== undefined && slots.recipients !== addresses.length)
    problem(
      `${slots.recipients} recipients counted but ${addresses.length} addresses given: give every recipient's address`,
    );
  if (slots.paymentIds.length > 0)
    problem(
      'a payout pays an address you write: I do not take a recipient or an amount from a payment (to give a payer money back, say "refund pay_…")',
    );
  if (slots.fraction || slots.percents.length > 0 || slots.ratio)
    problem(
      'a payout needs an amount in USDC, not a share: to share an amount between addresses, say "split 500 USDC 70/30 between 0x… and 0x…"',
    );
  if (amounts.length === 1 && addresses.length === 1) {
    if (slots.memos.length > 1) problem(`two memos for one payout ("${slots.memos.join('" and "')}")`);
    return [payout(amounts[0]!, addresses[0]!.value, slots)];
  }
  if (amounts.length === 1 && slots.each) {
    if (slots.memos.length > 1) problem(`several memos for one amount each: write one payout per memo`);
    const distinct = new Set(addresses.map((a) => a.value.toLowerCase()));
    if (distinct.size !== addresses.length) problem('the same address appears twice');
    return addresses.map((address) => payout(amounts[0]!, address.value, { ...slots, memo: slots.memo }));
  }
  if (amounts.length === 1)
    problem(
      `one amount for ${addresses.length} recipients: say "${amounts[0]!.text} each" to pay each of them that much, or "split ${amounts[0]!.text} equally between …" to share it`,
    );
  if (amounts.length !== addresses.length)
    problem(`${amounts.length} amounts for ${addresses.length} recipients: write one "amount to address" per payout`);
  if (slots.each) problem('"each" with several amounts: write one "amount to address" per payout');
  // Several "amount to address" pairs in one sentence: pair them in order, each with its own memo.
  return pairSegments(clause).map((segment) => {
    const filled = fillSlots('payout', segment, isSignificant).slots;
    if (filled.amounts.length !== 1 || filled.addresses.length !== 1)
      problem(`"${text(segment)}": write one "amount to address" per payout`);
    return payout(filled.amounts[0]!, filled.addresses[0]!.value, {
      ...filled,
      currency: filled.currency ?? slots.currency,
    });
  });
}

/** Splits "1,000 to A for x and 2,000 to B for y" (or "A 1,000, B 2,000") into one segment per pair. */
function pairSegments(clause: Clause): Token[][] {
  const tokens = clause.tokens;
  // Only the clause's amounts lead a pair: "for 2 crates" counts things inside a pair's memo.
  const amounts = new Set(clause.slots.amounts.map((amount) => amount.index));
  const firstAmount = tokens.findIndex((t) => amounts.has(t.index));
  const firstAddress = tokens.findIndex((t) => t.kind === 'address');
  const leader: Token['kind'] = firstAmount < firstAddress ? 'amount' : 'address';
  const leads = (t: Token): boolean => t.kind === leader && (leader === 'address' || amounts.has(t.index));
  const segments: Token[][] = [];
  let current: Token[] = [];
  let seenLeader = false;
  for (const token of tokens) {
    if (leads(token)) {
      if (seenLeader) {
        while (
          current.length > 0 &&
          (current.at(-1)!.kind === 'punct' ||
            (current.at(-1)!.kind === 'word' &&
              ['and', 'to', '&'].includes((current.at(-1) as { lower: string }).lower)))
        ) {
          const popped = current.pop()!;
          // "… and 2,000 to B": "to" belongs to the next pair when the address follows.
          if (popped.kind === 'word' && (popped as { lower: string }).lower === 'to' && leader === 'address') {
            segments.push(current);
            current = [popped];
            break;
          }
        }
        if (current.length > 0 || segments.length === 0) segments.push(current);
        current = [];
      }
      seenLeader = true;
    }
    current.push(token);
  }
  segments.push(current);
  return segments.filter((segment) => segment.length > 0);
}

function payout(amount: AmountToken, toAddress: string, slots: Pick<Slots, 'memo' | 'reference' | 'currency'>): Step {
  const amountMinor = payoutMinor(amount, slots.currency);
  return {
    kind: 'payout',
    amountMinor,
    toAddress,
    ...(slots.memo ? { memo: slots.memo.slice(0, 300) } : {}),
    ...(slots.reference ? { reference: slots.reference } : {}),
  };
}

function refundSteps(slots: Slots): Step[] {
  const reason = slots.reason ? { reason: slots.reason.slice(0, 300) } : {};
  if (slots.duplicates)
    problem('I cannot tell from the data which payments were paid twice: list the payment ids to refund (pay_…)');
  if (slots.allPayments) {
    if (slots.paymentIds.length > 0)
      problem('"all" and a payment id: say either "refund pay_…" or "refund all payments from <period>"');
    if (slots.date === undefined)
      problem('say which period to refund ("all payments from yesterday"); I never refund everything at once');
    if (slots.amounts.length > 0 || slots.fraction || slots.percents.length > 0)
      problem('a refund of every payment of a period refunds each in full; give payment ids to refund part of one');
    const currency = slots.currency ? currencyCode(slots.currency) : undefined;
    return [{ kind: 'refund_period', range: slots.date, ...(currency ? { currency } : {}), ...reason }];
  }
  if (slots.date !== undefined) problem('a refund of one payment takes its id, not a date');
  if (slots.paymentIds.length === 0 && slots.lookup === undefined)
    problem('say which payment to refund by its id (pay_…) or its order reference: I never pick one for you');
  if (slots.paymentIds.length > 0 && slots.lookup !== undefined)
    problem('a payment id and an order reference: say which payment, once');
  if (slots.addresses.length > 0)
    problem('a refund goes back to the payer, not to an address: to pay an address, say "pay out … to 0x…"');
  // "refund 3/4 of pay_…": a fraction written with a slash.
  if (slots.ratio && slots.ratio.length === 2 && !slots.fraction) {
    const [numerator, denominator] = slots.ratio as [bigint, bigint];
    if (numerator <= 0n || numerator > denominator)
      problem(`"${numerator / 100n}/${denominator / 100n}" is not a share of a payment`);
    slots.fraction = { numerator, denominator, text: `${numerator / 100n}/${denominator / 100n}` };
    slots.ratio = undefined;
  } else if (slots.ratio) problem('a refund takes one amount or one share, not a split');
  const sizes = (slots.amounts.length > 0 ? 1 : 0) + (slots.fraction ? 1 : 0) + (slots.percents.length > 0 ? 1 : 0);
  if (sizes > 1 || slots.amounts.length > 1 || slots.percents.length > 1)
    problem('two refund amounts: say one amount, or a share such as "half"');
  if (sizes > 0 && slots.paymentIds.length > 1)
    problem('one refund amount for several payments: write one refund per payment');
  let amount: RefundAmount = { type: 'full' };
  const written = slots.amounts[0];
  if (written !== undefined) {
    checkAmountToken(written);
    if (written.number.type === 'unreadable') problem(written.number.reason);
    // "refund 12.3456 GHS": more decimals than the currency written has is asked before any read.
    const mention = written.currency ?? slots.currency;
    const named = mention === undefined ? undefined : getCurrency(mention.code === 'DOLLAR' ? 'USD' : mention.code);
    if (named !== undefined) toMinor(written.number, written.text, named);
    amount = {
      type: 'exact',
      number: written.number,
      text: written.text,
      currency: written.currency ?? slots.currency,
    };
  } else if (slots.fraction) {
    amount = {
      type: 'share',
      numerator: slots.fraction.numerator,
      denominator: slots.fraction.denominator,
      label: slots.fraction.text,
    };
  } else if (slots.percents[0]) {
    const bps = slots.percents[0].bps;
    if (bps === undefined || bps <= 0n || bps > 10_000n)
      problem(`${slots.percents[0].text} is not a share between 0% and 100%`);
    amount = { type: 'share', numerator: bps, denominator: 10_000n, label: slots.percents[0].text };
  }
  if (slots.less !== undefined) {
    if (amount.type !== 'full') problem('an amount and an amount to keep back: say the amount to refund');
    checkAmountToken(slots.less);
    if (slots.less.number.type === 'unreadable') problem(slots.less.number.reason);
    amount = {
      type: 'less',
      number: slots.less.number,
      text: slots.less.text,
      currency: slots.less.currency ?? slots.currency,
    };
  }
  if (slots.full && amount.type !== 'full' && amount.type !== 'less')
    problem('"in full" and an amount: say one of them');
  // "refund naira of pay_…": a currency written with no amount beside it lost its amount somewhere.
  if (amount.type === 'full' && slots.currency !== undefined)
    problem(`"${slots.currency.word}" without an amount: say how much to refund, or "in full"`);
  if (slots.lookup !== undefined && 'all' in slots.lookup && amount.type !== 'full')
    problem('a refund of every order the words describe refunds each in full; give payment ids to refund part of one');
  if (slots.lookup !== undefined)
    return [{ kind: 'refund', paymentId: FOUND_LATER, lookup: slots.lookup, amount, ...reason }];
  return slots.paymentIds.map((paymentId) => ({ kind: 'refund' as const, paymentId, amount, ...reason }));
}

function splitStep(slots: Slots): Step {
  const addresses = slots.addresses.map((a) => a.value);
  if (addresses.length < 2)
    problem('a split needs at least two recipients as full 0x addresses (I never guess a recipient)');
  if (new Set(addresses.map((a) => a.toLowerCase())).size !== addresses.length)
    problem('the same address appears twice in the split');
  if (slots.recipients !== undefined && slots.recipients !== addresses.length)
    problem(
      `${slots.recipients} recipients counted but ${addresses.length} addresses given: give every recipient's address`,
    );
  let splits: Extract<Step, { kind: 'split' }>['splits'];
  if (slots.equal && !slots.ratio && slots.percents.length === 0) {
    if (slots.equal.ways !== undefined && slots.equal.ways !== addresses.length)
      problem(`${slots.equal.ways} ways but ${addresses.length} recipients`);
    // Equal to the smallest unit (split_revenue's share_parts), never 3334/3333/3333 basis points.
    splits = addresses.map((toAddress) => ({ toAddress, shareParts: 1 }));
  } else {
    let shares: bigint[];
    if (slots.ratio) shares = slots.ratio;
    else if (slots.percents.length > 0)
      shares = slots.percents.map((p) => p.bps ?? problem(`"${p.text}" is not a percentage I can read`));
    else problem('say how to share it: "70/30", "50% to 0x… and 50% to 0x…" or "equally"');
    if (shares.length !== addresses.length)
      problem(`${shares.length} shares for ${addresses.length} recipients: give one share per address`);
    if (shares.some((share) => share <= 0n)) problem('every share must be more than 0%');
    const total = shares.reduce((sum, share) => sum + share, 0n);
    if (total !== 10_000n) problem(`the shares add up to ${formatBps(total)}%, not 100%`);
    splits = addresses.map((toAddress, i) => ({ toAddress, shareBps: Number(shares[i]) }));
  }
  const reference = slots.reference ? { reference: slots.reference } : {};

  const sources =
    (slots.paymentIds.length > 0 || slots.lookup !== undefined ? 1 : 0) +
    (slots.amounts.length > 0 ? 1 : 0) +
    (slots.date ? 1 : 0);
  if (sources === 0)
    problem('say what to split: a payment (pay_…), an amount in USDC, or a period\'s revenue ("yesterday\'s revenue")');
  if (sources > 1 || slots.paymentIds.length > 1 || slots.amounts.length > 1)
    problem('say one thing to split: a payment, an amount, or a period');
  if (slots.currency && slots.amounts.length === 0)
    problem(`a split shares the USDC credited to you, not ${slots.currency.word}: say it without the currency`);
  if (slots.paymentIds[0]) return { kind: 'split', source: { paymentId: slots.paymentIds[0] }, splits, ...reference };
  if (slots.lookup)
    return { kind: 'split', source: { paymentId: FOUND_LATER, lookup: slots.lookup }, splits, ...reference };
  if (slots.date) return { kind: 'split', source: { range: slots.date }, splits, ...reference };
  return {
    kind: 'split',
    source: { amountMinor: payoutMinor(slots.amounts[0]!, slots.currency) },
    splits,
    ...reference,
  };
}

function createPaymentStep(slots: Slots): Step {
  if (slots.amounts.length !== 1)
    problem(slots.amounts.length === 0 ? 'say the amount and currency, e.g. 5,000 NGN' : 'one payment has one amount');
  if (slots.url === undefined)
    problem('a payment needs the page to send the payer back to: add "redirect to https://…" (I do not invent one)');
  if (slots.addresses.length > 0)
    problem('I create payments without a payout address here; set one with the API if you need it');
  const amount = slots.amounts[0]!;
  checkAmountToken(amount);
  const mention = amount.currency ?? slots.currency;
  if (mention === undefined)
    problem(`which currency is ${amount.text} in? Say it, e.g. "5,000 NGN" (I do not assume one)`);
  const currency = getCurrency(currencyCode(mention))!;
  let url: URL;
  try {
    url = new URL(slots.url);
  } catch {
    problem(`"${slots.url}" is not an absolute http(s) URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') problem(`"${slots.url}" is not an http(s) URL`);
  return {
    kind: 'create_payment',
    amountMinor: toMinor(amount.number, amount.text, currency),
    currency,
    redirectUrl: slots.url,
    ...(slots.memo ? { description: slots.memo.slice(0, 300) } : {}),
    ...(slots.reference ? { reference: slots.reference } : {}),
  };
}

// ---------------------------------------------------------------------------------------------
// Steps → tool calls
// ---------------------------------------------------------------------------------------------

/** The typed facts read from a payment result; nothing else in it is looked at. */
export interface PaymentFacts {
  currency: Currency;
  amountMinor: bigint;
  refundedMinor: bigint;
  status: string;
}

/** The typed facts read from get_revenue. */
export interface RevenueFacts {
  settlementMinor: bigint;
  /** Payments of the period that can be refunded (settled or partially refunded), as listed. */
  refundable: string[];
  hasMore: boolean;
}

export interface PlannedCall {
  tool: string;
  input: Record<string, unknown>;
  /** The action in plain words: "Pay out 250.000000 USDC to 0x… (memo: invoice 42)". */
  label: string;
}

/** The reads a step needs before any call runs (partial refunds read the payment; periods read revenue). */
export function readsFor(step: Step): PlannedCall[] {
  if (step.kind === 'refund' && step.amount.type !== 'full')
    return [{ tool: 'get_payment', input: { payment_id: step.paymentId }, label: `Read ${step.paymentId}` }];
  if (step.kind === 'refund_period' || (step.kind === 'split' && 'range' in step.source)) {
    const range = step.kind === 'refund_period' ? step.range : (step.source as { range: DateRange }).range;
    const input = rangeInput(range);
    if (step.kind === 'refund_period' && step.currency) input.currency = step.currency;
    return [{ tool: 'get_revenue', input, label: `Revenue ${describeRange(range)}` }];
  }
  return [];
}

export function rangeInput(range: DateRange): Record<string, unknown> {
  return { from: range.from.toISOString(), to: range.to.toISOString() };
}

export function describeRange(range: DateRange): string {
  return `from ${range.from.toISOString().replace('T00:00:00.000Z', '').replace('.000Z', 'Z')} to ${range.to.toISOString().replace('T00:00:00.000Z', '').replace('.000Z', 'Z')}`;
}

export function toolsFor(step: Step): string[] {
  return [...(lookupOf(step) ? ['list_payments'] : []), ...readsFor(step).map((call) => call.tool), toolOf(step)];
}

// ---------------------------------------------------------------------------------------------
// Payments named by reference or description
// ---------------------------------------------------------------------------------------------

/** The lookup a step's payment waits for, if it is named without its id. */
export function lookupOf(step: Step): PaymentLookup | undefined {
  if (step.kind === 'refund' || step.kind === 'payment_status') return step.lookup;
  if (step.kind === 'split' && 'paymentId' in step.source) return step.source.lookup;
  return undefined;
}

/** A payment as list_payments lists it: its typed fields, and its description (only to match words). */
export interface ListedPayment {
  id: string;
  reference: string | null;
  description: string | null;
  status: string;
  facts: PaymentFacts;
}

/**
 * The read that finds a lookup's payment: a reference with letters through list_payments' own
 * reference filter ("ORD-1042" is exact); a bare number or a description among the newest 100.
 */
export function lookupRead(lookup: PaymentLookup): PlannedCall {
  // A reference with capitals is looked up as written; one typed all in lower case ("ord-5521")
  // may be stored in capitals, so it is matched, ignoring case, among the newest payments.
  if ('reference' in lookup && /[A-Z]/.test(lookup.reference))
    return {
      tool: 'list_payments',
      input: { reference: lookup.reference },
      label: `Find the payment with reference ${lookup.reference}`,
    };
  return { tool: 'list_payments', input: { limit: 100 }, label: `Find ${describeLookup(lookup)}` };
}

export function describeLookup(lookup: PaymentLookup): string {
  if ('reference' in lookup) return `order ${lookup.reference}`;
  return `${'all' in lookup ? 'every order' : 'the order'} "${lookup.words.join(' ')}"`;
}

/** Statuses a refund can take: the selection of "refund all the … orders" is these payments. */
const REFUNDABLE_STATUSES = new Set(['settled', 'partially_refunded']);

/**
 * The payments a lookup selects: exactly one; or for "all the … orders" every match, when each can
 * still be refunded (one that cannot, a pending one say, makes "all" unclear) and they fit in one
 * message. Undefined when the selection is empty or unclear; the caller asks back.
 */
export function selectLookup(lookup: PaymentLookup, matches: readonly ListedPayment[]): ListedPayment[] | undefined {
  if (!('all' in lookup)) return matches.length === 1 ? [...matches] : undefined;
  const clear =
    matches.length > 0 &&
    matches.length <= MAX_STEPS_PER_MESSAGE &&
    matches.every((payment) => REFUNDABLE_STATUSES.has(payment.status));
  return clear ? [...matches] : undefined;
}

const stem = (word: string): string => word.replace(/(?<=\w{3})(?:es|s)$/, '');
const wordsOf = (text: string): string[] =>
  text
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word !== '')
    .map(stem);

/**
 * The listed payments a lookup names: the reference as written (a bare number matches a reference
 * that holds it as a whole group: "1042" names ORD-1042 and INV-1042), or every word of the
 * description. The caller acts on exactly one and asks back when there are none or several.
 */
export function matchLookup(lookup: PaymentLookup, listed: readonly ListedPayment[]): ListedPayment[] {
  if ('reference' in lookup) {
    const wanted = lookup.reference.toLowerCase();
    if (/[a-z]/.test(wanted)) return listed.filter((payment) => payment.reference?.toLowerCase() === wanted);
    return listed.filter((payment) => new RegExp(`(?:^|\\D)${wanted}(?:$|\\D)`).test(payment.reference ?? ''));
  }
  const wanted = lookup.words.map((word) => stem(word.normalize('NFD').replace(/\p{M}/gu, '')));
  return listed.filter((payment) => {
    const words = wordsOf(payment.description ?? '');
    return wanted.every((word) => words.includes(word));
  });
}

/** A step with its payment found: the id written in, the lookup gone. */
export function withPayment(step: Step, paymentId: string): Step {
  if (step.kind === 'refund' || step.kind === 'payment_status') {
    const { lookup: _found, ...rest } = step;
    return { ...rest, paymentId };
  }
  if (step.kind === 'split' && 'paymentId' in step.source) return { ...step, source: { paymentId } };
  return step;
}

function toolOf(step: Step): string {
  switch (step.kind) {
    case 'payout':
      return 'create_payout';
    case 'refund':
    case 'refund_period':
      return 'refund_payment';
    case 'split':
      return 'split_revenue';
    case 'create_payment':
      return 'create_payment';
    case 'payment_status':
      return 'get_payment';
    case 'balance':
      return 'get_balance';
    case 'pending_confirmations':
      return 'list_pending_confirmations';
    case 'list_payments':
      return 'list_payments';
    case 'revenue':
      return 'get_revenue';
  }
}

export interface ReadFacts {
  payments: ReadonlyMap<string, PaymentFacts>;
  revenue: ReadonlyMap<string, RevenueFacts>;
}

export const rangeKey = (range: DateRange): string => `${range.from.toISOString()}/${range.to.toISOString()}`;

/** Turns steps into the exact calls they make, with what was read; a Problem if a step cannot run as asked. */
export function resolveCalls(steps: readonly Step[], facts: ReadFacts): PlannedCall[] | { problem: string } {
  const remaining = new Map([...facts.payments].map(([id, f]) => [id, f.amountMinor - f.refundedMinor]));
  try {
    return steps.flatMap((step) => callsOf(step, facts, remaining));
  } catch (error) {
    if (error instanceof Problem) return { problem: error.message };
    throw error;
  }
}

function callsOf(step: Step, facts: ReadFacts, remaining: Map<string, bigint>): PlannedCall[] {
  switch (step.kind) {
    case 'payout': {
      const input: Record<string, unknown> = {
        amount: minorToNumber(step.amountMinor, PAYOUT_ASSET),
        asset: PAYOUT_ASSET.code,
        to_address: step.toAddress,
      };
      if (step.reference) input.reference = step.reference;
      if (step.memo) input.memo = step.memo;
      const memo = step.memo ? ` (memo: ${step.memo})` : '';
      return [
        {
          tool: 'create_payout',
          input,
          label: `Pay out ${formatDisplay(step.amountMinor, PAYOUT_ASSET)} to ${step.toAddress}${memo}`,
        },
      ];
    }
    case 'refund':
      return [refundCall(step, facts, remaining)];
    case 'refund_period': {
      const revenue = facts.revenue.get(rangeKey(step.range));
      if (revenue === undefined) problem(`I could not read the payments ${describeRange(step.range)}`);
      if (revenue.hasMore)
        problem(
          `there are more payments ${describeRange(step.range)} than I refund in one message: list the payment ids`,
        );
      if (revenue.refundable.length === 0) problem(`no settled payment ${describeRange(step.range)} can be refunded`);
      return revenue.refundable.map((paymentId) => ({
        tool: 'refund_payment',
        input: { payment_id: paymentId, ...(step.reason ? { reason: step.reason } : {}) },
        label: `Refund ${paymentId} in full`,
      }));
    }
    case 'split': {
      const splits = step.splits.map((split) =>
        'shareParts' in split
          ? { to_address: split.toAddress, share_parts: split.shareParts }
          : { to_address: split.toAddress, share_bps: split.shareBps },
      );
      const shares = step.splits
        .map((split) =>
          'shareParts' in split
            ? `an equal part (1 of ${step.splits.length}) to ${split.toAddress}`
            : `${formatBps(BigInt(split.shareBps))}% to ${split.toAddress}`,
        )
        .join(', ');
      let input: Record<string, unknown>;
      let what: string;
      if ('paymentId' in step.source) {
        input = { payment_id: step.source.paymentId, splits };
        what = `the proceeds of ${step.source.paymentId}`;
      } else {
        let amountMinor: bigint;
        if ('range' in step.source) {
          const revenue = facts.revenue.get(rangeKey(step.source.range));
          if (revenue === undefined) problem(`I could not read the revenue ${describeRange(step.source.range)}`);
          if (revenue.settlementMinor <= 0n)
            problem(`there is no settled revenue ${describeRange(step.source.range)} to split`);
          amountMinor = revenue.settlementMinor;
          what = `the revenue ${describeRange(step.source.range)} (${formatDisplay(amountMinor, PAYOUT_ASSET)})`;
        } else {
          amountMinor = step.source.amountMinor;
          what = formatDisplay(amountMinor, PAYOUT_ASSET);
        }
        input = { amount: minorToNumber(amountMinor, PAYOUT_ASSET), asset: PAYOUT_ASSET.code, splits };
      }
      if (step.reference) input.reference = step.reference;
      return [{ tool: 'split_revenue', input, label: `Split ${what}: ${shares}` }];
    }
    case 'create_payment': {
      const input: Record<string, unknown> = {
        amount: minorToNumber(step.amountMinor, step.currency),
        currency: step.currency.code,
        redirect_url: step.redirectUrl,
      };
      if (step.description) input.description = step.description;
      if (step.reference) input.reference = step.reference;
      return [
        {
          tool: 'create_payment',
          input,
          label: `Create a ${formatDisplay(step.amountMinor, step.currency)} payment${step.description ? ` for ${step.description}` : ''}`,
        },
      ];
    }
    case 'payment_status':
      return [{ tool: 'get_payment', input: { payment_id: step.paymentId }, label: `Status of ${step.paymentId}` }];
    case 'balance':
      return [{ tool: 'get_balance', input: {}, label: 'Balance' }];
    case 'pending_confirmations':
      return [{ tool: 'list_pending_confirmations', input: {}, label: 'Pending approvals' }];
    case 'list_payments': {
      const input: Record<string, unknown> = {};
      if (step.status) input.status = step.status;
      if (step.limit) input.limit = step.limit;
      if (step.range) {
        // list_payments' range is inclusive at both ends; the period's end is exclusive.
        input.created_gte = step.range.from.toISOString();
        input.created_lte = new Date(step.range.to.getTime() - 1).toISOString();
      }
      return [
        {
          tool: 'list_payments',
          input,
          label: `Payments${step.status ? ` (${step.status})` : ''}${step.range ? ` created ${describeRange(step.range)}` : ''}`,
        },
      ];
    }
    case 'revenue': {
      const input = rangeInput(step.range);
      if (step.currency) input.currency = step.currency;
      return [{ tool: 'get_revenue', input, label: `Revenue ${describeRange(step.range)}` }];
    }
  }
}

function refundCall(
  step: Extract<Step, { kind: 'refund' }>,
  facts: ReadFacts,
  remaining: Map<string, bigint>,
): PlannedCall {
  const input: Record<string, unknown> = { payment_id: step.paymentId };
  if (step.reason) input.reason = step.reason;
  if (step.amount.type === 'full') {
    if (facts.payments.has(step.paymentId)) remaining.set(step.paymentId, 0n);
    return {
      tool: 'refund_payment',
      input,
      label: `Refund what is left of ${step.paymentId}${step.reason ? ` (reason: ${step.reason})` : ''}`,
    };
  }
  const payment = facts.payments.get(step.paymentId) ?? problem(`I could not read ${step.paymentId}`);
  const left = remaining.get(step.paymentId) ?? 0n;
  if (left <= 0n) problem(`${step.paymentId} has nothing left to refund`);
  let minor: bigint;
  if (step.amount.type === 'share') {
    // "half of pay_…" is half of the payment. After an earlier refund it could mean half of what is left: ask.
    if (payment.refundedMinor > 0n || left !== payment.amountMinor)
      problem(
        `${step.paymentId} was already partly refunded, so "${step.amount.label}" could mean a share of the payment or of what is left: say the amount`,
      );
    const product = payment.amountMinor * step.amount.numerator;
    if (product % step.amount.denominator !== 0n)
      problem(
        `${step.amount.label} of ${formatDisplay(payment.amountMinor, payment.currency)} is not a whole amount in ${payment.currency.code}: say the exact amount`,
      );
    minor = product / step.amount.denominator;
    if (minor <= 0n) problem(`${step.amount.label} of ${step.paymentId} is nothing`);
  } else {
    const mention = step.amount.currency;
    if (mention !== undefined) {
      const matches =
        mention.code === 'DOLLAR' ? payment.currency.code === 'USD' : mention.code === payment.currency.code;
      if (!matches)
        problem(
          `${step.paymentId} is in ${payment.currency.code}, not ${mention.word}: refunds are in the payment's own currency`,
        );
    }
    const written = toMinor(step.amount.number, step.amount.text, payment.currency);
    if (step.amount.type === 'less') {
      // "all but ₦500": of the payment, so only while nothing was refunded yet (else: of what?).
      if (payment.refundedMinor > 0n || left !== payment.amountMinor)
        problem(
          `${step.paymentId} was already partly refunded, so "less ${step.amount.text}" is unclear: say the amount`,
        );
      minor = payment.amountMinor - written;
      if (minor <= 0n)
        problem(
          `${step.amount.text} is not less than ${formatDisplay(payment.amountMinor, payment.currency)}: nothing is left to refund`,
        );
    } else minor = written;
  }
  if (minor > left)
    problem(
      `${formatDisplay(minor, payment.currency)} is more than what is left to refund on ${step.paymentId} (${formatDisplay(left, payment.currency)})`,
    );
  remaining.set(step.paymentId, left - minor);
  input.amount = minorToNumber(minor, payment.currency);
  return {
    tool: 'refund_payment',
    input,
    label: `Refund ${formatDisplay(minor, payment.currency)} of ${step.paymentId}${step.reason ? ` (reason: ${step.reason})` : ''}`,
  };
}
