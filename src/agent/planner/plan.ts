import { explainAll, truncate, type Unplaced, unplacedTokens } from './checks.ts';
import { type Clause, type Intent, type Slots, text } from './clause.ts';
import { correctionAt, splitClauses, VALUE_KINDS } from './clauses.ts';
import { intentOf, leadingWord, MONEY_VERBS } from './intents.ts';
import { referenceAt } from './phrases.ts';
import { buyerDescription, fillSlots, isItemCount, mergeCorrection } from './slots.ts';
import { isCountNoun, isCountOf, isSignificant, PAST } from './counts.ts';
import { HOLD_WORDS, UNSUPPORTED_ACTIONS } from './lexicon.ts';
import type { Token } from './token-types.ts';
import { tokenize } from './tokens.ts';
import { MAX_MESSAGE_LENGTH, MAX_STEPS_PER_MESSAGE, Problem, type Step, type Understanding } from './steps.ts';
import { stepsOf } from './clause-steps.ts';

/**
 * Stage 3 of the offline planner: from a message to its steps. understand() and readInstruction()
 * run the lexer and the grammar, weigh corrections, pass over the clauses (address lines, list
 * headers, stories told as reasons, intents and wallets carried from one clause to the next) and
 * turn each clause into steps (clause-steps.ts). A step is complete or it is a problem the reply
 * names; nothing is guessed (no recipient, no amount, no currency). The steps become exact tool
 * calls in calls.ts; their types are in steps.ts.
 */

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
 * What the merchant's instruction says that every model's money calls answer to (docs/agent.md,
 * "Untrusted text and grounding"; issue 32): its tokens (amounts with their currencies, addresses, ids, shares), the values a
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
  const dropped = new Set<number>();
  insteadOf(tokens, dropped);
  excludedAlternatives(tokens, dropped);
  ruledOutEverywhere(tokens, dropped);
  restatedInBrackets(tokens, dropped);
  const kept = tokens.filter((token) => !dropped.has(token.index));
  /** Values the merchant ruled out or corrected ("not 300", "3k … no make it 2k"): never evidence. */
  const superseded = new Set(
    tokens.filter((token) => dropped.has(token.index) && VALUE_KINDS.includes(token.kind)).map((token) => token.index),
  );
  const { marker, markerLength, negation } = correctionMarker(kept);
  // "don't pay A, pay B 50 usdc": the negated action's words are the correction's own.
  if (negation !== undefined) for (const token of kept.slice(0, negation.length)) consumed0.add(token.index);
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
  const wantsPaymentFromContext = paymentFromContext(intent, slots, tokens);
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

/**
 * "X instead of Y": Y is the discarded value; "send 100 usdc not to A but to B": A is. Adds their
 * tokens to `dropped`.
 */
function insteadOf(tokens: readonly Token[], dropped: Set<number>): void {
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
}

/**
 * Where a clause's correction starts and how long its marker is: after a negated action ("don't
 * pay A, pay B …", at its comma), or at the first marker with a value or an action said before it.
 * With only greetings before it ("no send am o, I just dey test: …", "oga abeg no send 50 usdc …":
 * Pidgin for "don't send") a marker corrects nothing: its words stay to be placed, and the clause
 * is asked back. marker is -1 when there is no correction.
 */
function correctionMarker(kept: readonly Token[]): {
  marker: number;
  markerLength: number;
  negation: ReturnType<typeof negationLead>;
} {
  const negation = negationLead(kept);
  if (negation !== undefined) return { marker: negation.comma, markerLength: 0, negation };
  for (let i = 0; i < kept.length; i++) {
    const length = correctionAt(kept, i);
    const said = kept.slice(0, i);
    const contentBefore =
      said.some((token) => isSignificant(token) && token.kind !== 'word') || intentOf(said) !== undefined;
    if (length > 0 && contentBefore) return { marker: i, markerLength: length, negation };
  }
  return { marker: -1, markerLength: 0, negation };
}

/** Whether a refund or a status read with no payment named means the one the message named elsewhere. */
function paymentFromContext(intent: Intent | undefined, slots: Slots, tokens: readonly Token[]): boolean {
  return (
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
      ))
  );
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
