import { type Clause, text } from './clause.ts';
import { VALUE_KINDS } from './clauses.ts';
import { MONEY_VERBS } from './intents.ts';
import { isCount, isQuantity, isSignificant, PAST, REPETITION, tellsThePast } from './counts.ts';
import { HARD_CONTROL_WORDS, NEGATIONS, UNSUPPORTED_ACTIONS } from './lexicon.ts';
import type { Token } from './token-types.ts';

/**
 * Stage 4 of the offline planner: the checks that run before anything does. A plan may run only
 * if every meaningful token of the message (amounts, addresses, ids, shares, dates, and words of
 * condition, negation, correction or sequencing) was consumed by it. Context sentences ("they were
 * charged twice") may carry harmless words, never a condition, a negation or a value.
 */

/** Words a context sentence may hold without changing what the instruction means. */
// Not here: "twice", "again", "double", "more", "extra". "Do it twice" after a payout repeats it.
const CONTEXT_SAFE = new Set([
  'all',
  'everything',
  'same',
  'first',
  'last',
  'previous',
  'fee',
  'fees',
  'most',
  'about',
  'some',
  'whole',
  'every',
  'everyone',
  'everybody',
  'over',
  'under',
  'around',
  'usual',
  'per',
  'entire',
]);

/**
 * "(split) in two instalments", "over 3 payments", "split in 2 parts": a count that says how the
 * action runs, not a story about things. It is never a context sentence's harmless count; the
 * planner cannot run an action in parts, so it stays to be placed and is asked back.
 */
function shapesTheAction(tokens: readonly Token[], at: number): boolean {
  const before = tokens[at - 1];
  const lead = tokens.find((t) => t.kind === 'word');
  return (
    (before?.kind === 'word' && ['in', 'into', 'over', 'across'].includes(before.lower)) ||
    (lead?.kind === 'word' && MONEY_VERBS.has(lead.lower))
  );
}

/** A value or word a story may hold: "it went twice", "2 items were damaged", "order 7 of 10". */
function tellable(t: Token, negations: boolean): boolean {
  return (
    (t.kind === 'word' &&
      (!HARD_CONTROL_WORDS.has(t.lower) || REPETITION.has(t.lower) || (negations && NEGATIONS.has(t.lower)))) ||
    t.kind === 'punct' ||
    t.kind === 'code' ||
    // "…, it was agreed last week": a day gone by.
    (t.kind === 'date' && t.past) ||
    (t.kind === 'amount' && t.currency === undefined && t.number.type === 'exact' && /^\d{1,4}$/.test(t.number.text))
  );
}

/**
 * "(last time it went twice)", "(he was paid late last month)", "…, last time it went twice": a
 * note that tells what happened, in brackets or after the request's last comma or dash, with no
 * value in it and no word of condition or wait, is context wherever it stands. A negation tells
 * the story only inside brackets ("…, not sent" after a comma could cancel the request).
 */
function storyNotes(tokens: readonly Token[]): Set<number> {
  const placed = new Set<number>();
  const isStory = (inside: readonly Token[], negations: boolean): boolean =>
    inside.some((t) => t.kind === 'word' && PAST.has(t.lower)) && inside.every((t) => tellable(t, negations));
  for (let open = 0; open < tokens.length; open++) {
    if (tokens[open]?.text !== '(') continue;
    const close = tokens.findIndex((t, k) => k > open && t.text === ')');
    if (close < 0) break;
    const inside = tokens.slice(open + 1, close);
    if (isStory(inside, true)) for (const t of inside) placed.add(t.index);
    open = close;
  }
  const comma = tokens.findLastIndex((t) => t.kind === 'punct' && /^[,;—–-]$/.test(t.text));
  const before = tokens.slice(0, comma);
  const tail = tokens.slice(comma + 1);
  // Only after the request: something before the comma must be what runs.
  // "…, twice as was agreed" multiplies: a repeat word there must itself tell the past ("it went twice").
  // A number there ("…, 3 as was agreed", "…, 2 items came back") may say how many times, or which
  // items the request is for: the grammar places those (as a reason) or asks.
  const repeatsNow = tail.some(
    (t) =>
      (t.kind === 'word' && REPETITION.has(t.lower) && !tellsThePast(tokens, tokens.indexOf(t))) || t.kind === 'amount',
  );
  if (comma > 0 && before.some((t) => VALUE_KINDS.includes(t.kind)) && !repeatsNow && isStory(tail, false))
    for (const t of tail) placed.add(t.index);
  return placed;
}

export interface Unplaced {
  token: Token;
  clause: string;
}

/** The meaningful tokens no clause consumed, in message order. */
export function unplacedTokens(
  clauses: readonly Clause[],
  sequencers: readonly Token[],
  borrowed: ReadonlySet<number>,
  now: Date,
): Unplaced[] {
  const consumedBySequencing = new Set(sequencers.map((token) => token.index));
  const out: Unplaced[] = [];
  const movesMoney = clauses.some((c) => c.intent === 'payout' || c.intent === 'refund' || c.intent === 'split');
  for (const clause of clauses) {
    const context = clause.intent === undefined;
    const story = storyNotes(clause.tokens);
    const pastTense = clause.tokens.some((t) => t.kind === 'word' && PAST.has(t.lower));
    for (const token of clause.tokens) {
      // "Amount: 275 USDC / To: 0x… / Status: sent": a form with a status line may be the record of
      // a payout already made; making it again could pay twice, so it is asked about.
      if (
        movesMoney &&
        token.kind === 'word' &&
        token.lower === 'status' &&
        clause.tokens[clause.tokens.indexOf(token) + 1]?.text === ':'
      ) {
        out.push({ token, clause: text(clause.tokens) });
        continue;
      }
      if (!isSignificant(token) || story.has(token.index)) continue;
      if (clause.consumed.has(token.index) || consumedBySequencing.has(token.index) || borrowed.has(token.index))
        continue;
      const next = clause.tokens[clause.tokens.indexOf(token) + 1];
      if (context && token.kind === 'word' && CONTEXT_SAFE.has(token.lower)) continue;
      // "the 2 pairs of shoes never arrived", "it wasn't delivered": a negation of what happened
      // tells the story; one of anything to do ("never pay him") still stops the message.
      if (
        context &&
        token.kind === 'word' &&
        ['never', "wasn't", "weren't", "hasn't", "haven't", "hadn't"].includes(token.lower) &&
        next?.kind === 'word' &&
        PAST.has(next.lower) &&
        !clause.tokens.some((t) => t.kind === 'word' && ['yet', 'still'].includes(t.lower))
      )
        continue;
      // "pay_… is the extra one": a word that picks out which payment, in a context sentence.
      if (
        context &&
        token.kind === 'word' &&
        next?.kind === 'word' &&
        next.lower === 'one' &&
        clause.tokens[clause.tokens.indexOf(token) - 1]?.text.toLowerCase() === 'the'
      )
        continue;
      if (tellsThePast(clause.tokens, clause.tokens.indexOf(token))) continue;
      // "Double charge on pay_…. Refund it", "refund the double charge on pay_…": naming a charge
      // made twice tells what happened; "double" before anything else, or on a payout, could
      // multiply what runs.
      const at = clause.tokens.indexOf(token);
      const namesTheCharge =
        clause.intent === 'refund' &&
        ['the', 'a'].includes(clause.tokens[at - 1]?.text.toLowerCase() ?? '') &&
        clause.tokens[at - 2]?.kind === 'word' &&
        MONEY_VERBS.has((clause.tokens[at - 2] as { lower: string }).lower);
      if (
        (context || namesTheCharge) &&
        token.kind === 'word' &&
        token.lower === 'double' &&
        next?.kind === 'word' &&
        ['charge', 'charged', 'charging', 'payment', 'debit', 'debited', 'billing', 'billed', 'deduction'].includes(
          next.lower,
        )
      )
        continue;
      // "Approved by: Ngozi" under a ticket: who signed it off (a held action is approved only by a person).
      if (
        context &&
        token.kind === 'word' &&
        ['approved', 'authorised', 'authorized'].includes(token.lower) &&
        next?.text.toLowerCase() === 'by'
      )
        continue;
      if (context && isQuantity(token, next) && !shapesTheAction(clause.tokens, clause.tokens.indexOf(token))) continue;
      // "one of the two items came back", "order 7 of 10": counts in a sentence about the past.
      if (context && pastTense && isCount(token)) continue;
      // "placed last Tuesday", "in January": a past date in a context sentence tells a story; a
      // future one ("do it on Friday") could defer the instruction, so it stays to be placed.
      if (context && token.kind === 'date' && token.range !== undefined && token.range.from.getTime() < now.getTime())
        continue;
      // "returned the items this morning": a part of today after a verb in the past is gone by.
      if (
        context &&
        token.kind === 'date' &&
        /^(?:today|this (?:morning|afternoon|evening))$/i.test(token.text) &&
        clause.tokens.slice(0, clause.tokens.indexOf(token)).some((t) => t.kind === 'word' && PAST.has(t.lower))
      )
        continue;
      out.push({ token, clause: text(clause.tokens) });
    }
  }
  return out;
}

/** One line per clause: its unplaced words together, then each unplaced value. */
export function explainAll(unplaced: readonly Unplaced[]): string[] {
  const lines: string[] = [];
  const words = new Map<string, string[]>();
  for (const item of unplaced) {
    if (item.token.kind === 'word') words.set(item.clause, [...(words.get(item.clause) ?? []), `"${item.token.text}"`]);
    else lines.push(explainUnplaced(item));
  }
  for (const [clause, list] of words)
    lines.unshift(
      `${list.join(', ')} in "${truncate(clause, 100)}" ${list.length === 1 ? 'changes' : 'change'} what the instruction means (a condition, a wait, a negation, a correction, or a quantity word I cannot place), so I did not act on it: write the instruction exactly as it should run now`,
    );
  const unsupported = unplaced.find((item) => item.token.kind === 'word' && UNSUPPORTED_ACTIONS.has(item.token.lower));
  if (unsupported !== undefined)
    lines.unshift(
      `I cannot ${unsupported.token.text.toLowerCase()} (in "${truncate(unsupported.clause, 100)}"): I pay out USDC, refund, split revenue, create payments and read payments, revenue and the balance`,
    );
  return lines;
}

/** Why a token could not be placed, for the reply: what it is and what to write instead. */
export function explainUnplaced({ token, clause }: Unplaced): string {
  const where = `in "${truncate(clause, 100)}"`;
  switch (token.kind) {
    case 'amount':
      if (token.number.type === 'unreadable') return `${token.number.reason} (${where})`;
      return `I could not tell what the amount "${token.text}" is for ${where}: write one instruction per amount, e.g. "pay 250 USDC to 0x…"`;
    case 'address':
      return `I could not tell what to do with ${token.value} ${where}: I only pay an address you name as the recipient ("to 0x…")`;
    case 'bad_address':
      return token.reason;
    case 'payment_id':
    case 'bad_payment_id':
      return `I could not tell what to do with ${token.text} ${where}`;
    case 'object_id':
      return `I cannot act on ${token.text} ${where}: I work with payments (pay_…), payouts, refunds and splits only`;
    case 'date':
      return `"${token.text}" ${where}: I cannot schedule or delay money movement; send the instruction when it should run, or ask about a past period ("revenue yesterday")`;
    case 'percent':
    case 'ratio':
    case 'fraction':
      return `I could not tell what "${token.text}" applies to ${where}`;
    case 'url':
      return `I could not tell what the link ${token.value} is for ${where}`;
    case 'quoted':
      return `I do not act on quoted or forwarded text (${truncate(token.text, 60)} holds an amount, a recipient or a condition) ${where}: write the instruction in your own words, outside quotes`;
    case 'word':
      return `"${token.text}" ${where} changes what the instruction means (a condition, a wait, a negation, a correction or a quantity word I cannot place): write the instruction exactly as it should run now, without it`;
    case 'punct':
      return token.text === "'"
        ? `I do not act on quoted or forwarded text ${where}: write the instruction in your own words`
        : `I cannot read "${token.text}" ${where}: write the instruction in plain letters`;
    default:
      return `I could not place "${token.text}" ${where}`;
  }
}

export function truncate(value: string, max: number): string {
  return value.length <= max ? value : `${value.slice(0, max - 1)}…`;
}
