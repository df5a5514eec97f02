import { isWord } from './clause.ts';
import { negatedExtent } from './phrases.ts';
import { CREATE_VERBS, PAYOUT_VERBS, REFUND_VERBS, SPLIT_VERBS } from './intents.ts';
import type { Token } from './token-types.ts';

/**
 * The offline planner's clause splitter: it cuts a message into clauses at sequencers ("then",
 * "also") and where a new action starts, keeps a correction ("500, actually 50") with the clause it
 * corrects, and drops courtesy words. It also holds the correction markers and the counts of
 * repeated actions ("twice", "once to 0x…") the slot filler reads.
 */

const SEQUENCERS = new Set(['then', 'also', 'next', 'afterwards', 'afterward', 'thereafter']);
/**
 * The vocabulary of a correction ("no wait", "sorry typo", "oops I meant", "scratch that", "make it",
 * "wrong one", Pidgin "sorry o" and "no be that one", Swahili "hapana" (no) and "samahani" (sorry),
 * Twi "daabi" (no), Yoruba "rara" (no)). A marker is a run of these words that holds at least one
 * word of correction.
 */
const CORRECTION_WORDS = new Set([
  'no',
  'sorry',
  'wait',
  'actually',
  'oops',
  'typo',
  'mistake',
  'meant',
  'mean',
  'correction',
  'scratch',
  'rather',
  'wrong',
  'bad',
  'hapana',
  'samahani',
  'daabi',
  'rara',
  'edit',
  'update',
  'amend',
  'amended',
  'revised',
  'corrected',
]);
/** Words that stand inside a marker without making one: "I meant", "my bad", "make that", "wrong one". */
const CORRECTION_GLUE = new Set([
  'i',
  'my',
  'that',
  'it',
  'o',
  'oh',
  'ah',
  'eish',
  'be',
  'or',
  'make',
  'change',
  'one',
  '1',
]);
/** Glue words that may open a marker: "make it …", "I meant …", "my bad", "or rather", "ah no". */
const CORRECTION_OPENERS = new Set(['make', 'change', 'i', 'my', 'or', 'ah', 'oh', 'eish']);
/**
 * Words between a marker and the new value that say again what it is: "the amount should read USD
 * 200", "the real recipient is 0x…", Pidgin "na 150" (it is 150), "make am 60/40", "send it to 0x…".
 */
const RESTATING = new Set([
  ...['the', 'amount', 'sum', 'figure', 'total', 'should', 'read', 'be', 'is', 'was', "it's", 'its', 'it'],
  ...['real', 'right', 'correct', 'recipient', 'address', 'wallet', 'payment', 'one', 'supposed', 'to', 'that'],
  ...['na', 'am', 'make', 'send', 'pay', 'refund', 'split', 'transfer', 'use', 'i', 'mean', 'meant', 'please'],
]);
/** The kinds of token that give a correction its new value. */
const NEW_VALUES: readonly Token['kind'][] = ['amount', 'address', 'payment_id', 'ratio', 'percent', 'fraction'];

/** The length of the run of correction words at `i` ("no wait", "sorry typo", "make that"), or 0. */
function correctionMarker(tokens: readonly Token[], i: number): number {
  const wordAt = (k: number): string | undefined => {
    const token = tokens[k];
    // "one" in "wrong one" is lexed as a number word.
    return token?.kind === 'word' || (token?.kind === 'amount' && /^(?:one|1)$/i.test(token.text))
      ? token.text.toLowerCase()
      : undefined;
  };
  const first = wordAt(i);
  if (first === undefined || !(CORRECTION_WORDS.has(first) || CORRECTION_OPENERS.has(first))) return 0;
  let end = i;
  let corrects = false;
  const run: string[] = [];
  for (let k = i; k < tokens.length; k++) {
    if (tokens[k]?.kind === 'punct' && k > i && !/^[.;!?]$/.test(tokens[k]!.text)) continue;
    const word = wordAt(k);
    if (word === undefined || !(CORRECTION_WORDS.has(word) || CORRECTION_GLUE.has(word))) break;
    // "one" only in "wrong one", "that one"; "make" only as the marker's first word ("ah no, make
    // am 60/40": Pidgin "make it" belongs to what follows).
    if ((word === 'one' || word === '1') && !['wrong', 'that'].includes(run.at(-1) ?? '')) break;
    if (word === 'make' && run.length > 0) break;
    run.push(word);
    corrects ||= CORRECTION_WORDS.has(word);
    end = k + 1;
  }
  // "make that 40", "change it to 5 usdc": the action words themselves mark it.
  return corrects || /^(?:make|change) (?:that|it)\b/.test(run.join(' ')) ? end - i : 0;
}

/**
 * The marker's length when a correction starts at `i` (punctuation between its words is skipped),
 * or 0. A new value must follow within a few words that restate what it is, so that a word of
 * negation or waiting that corrects nothing ("no longer wants it", "wait until Friday") stays to
 * be placed.
 */
export function correctionAt(tokens: readonly Token[], i: number): number {
  const length = correctionMarker(tokens, i);
  if (length === 0) return 0;
  let words = 0;
  for (let k = i + length; k < tokens.length && words <= 5; k++) {
    const token = tokens[k]!;
    if (NEW_VALUES.includes(token.kind)) return length;
    if (token.kind === 'punct' && !/^[.;!?]$/.test(token.text)) continue;
    if (token.kind !== 'word' || !RESTATING.has(token.lower)) return 0;
    words++;
  }
  return 0;
}

/** How many times a word repeats an action. */
export const REPEATS: ReadonlyMap<string, number> = new Map([
  ['twice', 2],
  ['thrice', 3],
]);

/** "once to 0x…": one payout to that recipient. */
export function onceTo(tokens: readonly Token[], i: number): boolean {
  return isWord(tokens[i], 'once') && isWord(tokens[i + 1], 'to') && tokens[i + 2]?.kind === 'address';
}

export function countOnceTo(tokens: readonly Token[]): number {
  return tokens.filter((_t, i) => onceTo(tokens, i)).length;
}

/** Nouns a split's recipients are counted in: "our 7 riders", "these 6 people". */
export const RECIPIENT_NOUNS = new Set([
  'people',
  'persons',
  'recipients',
  'partners',
  'riders',
  'drivers',
  'staff',
  'workers',
  'members',
  'friends',
  'suppliers',
  'vendors',
  'agents',
  'sellers',
  'wallets',
  'addresses',
  'of',
]);

/**
 * Where the words naming a count of recipients end ("among our 6 stall keepers:" → the colon's
 * index), if the count at `i` follows "among"/"between" (with "our", "my", "the", "these" or "all"
 * between) and up to three plain words lead to a colon ("between these 3:").
 */
export function recipientsNamed(
  tokens: readonly Token[],
  i: number,
  significant: (t: Token) => boolean,
): number | undefined {
  const token = tokens[i];
  if (token?.kind !== 'amount' || token.number.type !== 'exact' || !/^\d{1,2}$/.test(token.number.text))
    return undefined;
  const before = isWord(tokens[i - 1], 'our', 'my', 'the', 'these', 'those', 'all') ? i - 2 : i - 1;
  if (!isWord(tokens[before], 'among', 'amongst', 'between')) return undefined;
  let j = i + 1;
  while (j <= i + 3 && tokens[j]?.kind === 'word' && !significant(tokens[j]!)) j++;
  return tokens[j]?.text === ':' ? j : undefined;
}

/** Verbs in the past that start a story before a request ("Guest checked out 2 nights early"). */
export const STORY_VERBS = new Set([
  'checked',
  'bought',
  'ordered',
  'returned',
  'paid',
  'was',
  'were',
  'had',
  'got',
  'came',
  'kept',
  'arrived',
  'delivered',
  'damaged',
  'broke',
  'lost',
  'missing',
]);

/** The kinds of token a negation may exclude ("not 300", "not pay_B", "not 0xA…"). */
export const VALUE_KINDS: readonly Token['kind'][] = ['amount', 'address', 'payment_id'];

/** Courtesy phrases whose condition words carry no condition: "let me know if …", "if possible". */
function dropCourtesy(tokens: Token[]): Token[] {
  const out: Token[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const end = courtesyEnd(tokens, i);
    if (end === undefined) out.push(tokens[i]!);
    else i = end;
  }
  return out;
}

/** Where a courtesy phrase starting at i ends (its last token), or undefined when none starts there. */
function courtesyEnd(tokens: readonly Token[], i: number): number | undefined {
  for (const phrase of COURTESY_PHRASES) {
    const end = phrase(tokens, i);
    if (end !== undefined) return end;
  }
  return undefined;
}

type CourtesyPhrase = (tokens: readonly Token[], i: number) => number | undefined;

/** "let me know if …": the rest of the sentence is the courtesy ("let me know if you need anything"). */
const letMeKnow: CourtesyPhrase = (tokens, i) => {
  if (
    !(
      isWord(tokens[i], 'let') &&
      isWord(tokens[i + 1], 'me', 'us') &&
      isWord(tokens[i + 2], 'know') &&
      isWord(tokens[i + 3], 'if', 'when', 'once', 'whether', 'how', 'as', 'that', 'you')
    )
  )
    return undefined;
  let end = i;
  while (end < tokens.length && !(tokens[end]!.kind === 'punct' && /^[.;!?]$/.test(tokens[end]!.text))) end++;
  return end - 1;
};

/** "if possible", "if you can", "if you could", "if you don't mind". */
const ifPossible: CourtesyPhrase = (tokens, i) => {
  if (!isWord(tokens[i], 'if')) return undefined;
  if (isWord(tokens[i + 1], 'possible')) return i + 1;
  if (!isWord(tokens[i + 1], 'you')) return undefined;
  if (isWord(tokens[i + 2], 'can', 'could', 'would', 'please')) return i + 2;
  if (isWord(tokens[i + 2], "don't", 'dont') && isWord(tokens[i + 3], 'mind')) return i + 3;
  return undefined;
};

/**
 * When the message is read: "when you have a minute", "whenever you get a chance", "whenever you
 * see this", "when you get this", "when you can".
 */
const whenYouCan: CourtesyPhrase = (tokens, i) => {
  if (!isWord(tokens[i], 'when', 'whenever') || !isWord(tokens[i + 1], 'you')) return undefined;
  if (
    isWord(tokens[i + 2], 'have', 'get') &&
    isWord(tokens[i + 3], 'a', 'the') &&
    isWord(tokens[i + 4], 'minute', 'moment', 'chance', 'sec', 'second')
  )
    return i + 4;
  if (isWord(tokens[i + 2], 'see', 'get', 'read') && isWord(tokens[i + 3], 'this', 'it', 'am')) return i + 3;
  if (isWord(tokens[i + 2], 'can') && !tokens[i + 3]?.kind.match(/word|amount|date/)) return i + 2;
  return undefined;
};

/** "that is all", "that's all": the message ends; only thanks may follow before it or the sentence does. */
const thatIsAll: CourtesyPhrase = (tokens, i) => {
  const t = tokens[i];
  if (
    !(
      (isWord(t, 'that') && isWord(tokens[i + 1], 'is') && isWord(tokens[i + 2], 'all')) ||
      (isWord(t, "that's", 'thats') && isWord(tokens[i + 1], 'all'))
    )
  )
    return undefined;
  const end = isWord(t, 'that') ? i + 2 : i + 1;
  // "…, that is all, thank you".
  let after = end + 1;
  while (tokens[after]?.text === ',' || isWord(tokens[after], 'thank', 'thanks', 'you', 'cheers', 'bye')) after++;
  return tokens[after] === undefined || /^[.;!?]$/.test(tokens[after]!.text) ? end : undefined;
};

/** "no rush, but please pay …": courtesy, and the "but" that leads to the request. */
const noRush: CourtesyPhrase = (tokens, i) => {
  if (!isWord(tokens[i], 'no') || !isWord(tokens[i + 1], 'problem', 'worries', 'rush', 'hurry', 'pressure', 'stress'))
    return undefined;
  let end = i + 1;
  while (tokens[end + 1]?.text === ',') end++;
  if (isWord(tokens[end + 1], 'but')) end++;
  return end;
};

/**
 * "(…, pls just once)", "…, only once.", "…, just once this time", "so only once please": the
 * message asks for one run, as it does anyway.
 */
const justOnce: CourtesyPhrase = (tokens, i) => {
  const end =
    isWord(tokens[i + 2], 'this') && isWord(tokens[i + 3], 'time')
      ? i + 3
      : isWord(tokens[i + 2], 'please', 'pls', 'abeg')
        ? i + 2
        : i + 1;
  return isWord(tokens[i], 'just', 'only') &&
    isWord(tokens[i + 1], 'once') &&
    (tokens[end + 1] === undefined || /^[.;!?,)]$/.test(tokens[end + 1]!.text))
    ? end
    : undefined;
};

/** "…, just one payment", "only one transfer": the message asks for one, as it says. */
const justOne: CourtesyPhrase = (tokens, i) => {
  const single = isWord(tokens[i + 2], 'single');
  const after = tokens[i + (single ? 4 : 3)];
  return isWord(tokens[i], 'just', 'only') &&
    ['one', '1', 'a'].includes(tokens[i + 1]?.text.toLowerCase() ?? '') &&
    (isWord(tokens[i + 2], 'payment', 'payout', 'transfer', 'time') ||
      (single && isWord(tokens[i + 3], 'payment', 'payout', 'transfer'))) &&
    (after === undefined || /^[.;!?,]$/.test(after.text))
    ? i + (single ? 3 : 2)
    : undefined;
};

/** "exactly 33 usdc, no more no less": emphasis on the amount said. */
const noMoreNoLess: CourtesyPhrase = (tokens, i) => {
  if (
    !(
      isWord(tokens[i], 'no', 'nothing') &&
      isWord(tokens[i + 1], 'more') &&
      tokens.slice(i + 2, i + 5).some((u, k, rest) => isWord(u, 'no', 'nothing') && isWord(rest[k + 1], 'less'))
    )
  )
    return undefined;
  let end = i;
  while (!isWord(tokens[end], 'less')) end++;
  return end;
};

/**
 * "just send 15 usdc to 0x…, nothing more", "— not a cent more": emphasis on the amount said, at
 * the end of a sentence.
 */
const nothingMore: CourtesyPhrase = (tokens, i) => {
  const t = tokens[i];
  const coin =
    isWord(t, 'not') && isWord(tokens[i + 1], 'a') && isWord(tokens[i + 2], 'cent', 'kobo', 'penny', 'pesewa', 'dime');
  const more = coin ? i + 3 : i + 1;
  return (isWord(t, 'nothing') || coin) &&
    isWord(tokens[more], 'more', 'else', 'extra') &&
    (tokens[more + 1] === undefined || /^[.;!?]$/.test(tokens[more + 1]!.text))
    ? more
    : undefined;
};

/** "it's not urgent but pls pay …": courtesy, and the "but" that leads to the request. */
const notUrgent: CourtesyPhrase = (tokens, i) =>
  isWord(tokens[i], 'not') && isWord(tokens[i + 1], 'urgent')
    ? isWord(tokens[i + 2], 'but')
      ? i + 2
      : i + 1
    : undefined;

/** "thanks in advance", "as soon as possible", "as soon as you …". */
const thanksAndSoon: CourtesyPhrase = (tokens, i) => {
  if (isWord(tokens[i], 'thanks', 'thank') && isWord(tokens[i + 1], 'in') && isWord(tokens[i + 2], 'advance'))
    return i + 2;
  if (
    isWord(tokens[i], 'as') &&
    isWord(tokens[i + 1], 'soon') &&
    isWord(tokens[i + 2], 'as') &&
    isWord(tokens[i + 3], 'possible', 'you')
  )
    return i + 3;
  return undefined;
};

/** In the order they are tried; each starts with words of its own, so none hides another. */
const COURTESY_PHRASES: readonly CourtesyPhrase[] = [
  letMeKnow,
  ifPossible,
  whenYouCan,
  thatIsAll,
  noRush,
  justOnce,
  justOne,
  noMoreNoLess,
  nothingMore,
  notUrgent,
  thanksAndSoon,
];

function startsNewAction(tokens: readonly Token[], i: number): boolean {
  // "…, send them back to https://…": a payment's redirect, not a new action.
  const rest = tokens.slice(
    i,
    tokens.findIndex((t, k) => k >= i && t.kind === 'punct' && /^[.;!?]$/.test(t.text)) >>> 0,
  );
  if (
    rest.some((t) => t.kind === 'url') &&
    !rest.some((t) => t.kind === 'address' || t.kind === 'amount' || t.kind === 'payment_id')
  )
    return false;
  let j = i;
  // "…, please refund …", "…, abeg refund …", "…, tafadhali tuma …": courtesy before the verb.
  while (
    isWord(
      tokens[j],
      ...['please', 'pls', 'plz', 'kindly', 'can', 'could', 'you', 'i', 'we', 'need', 'want', 'to', 'would'],
      ...['like', 'now', 'abeg', 'oga', 'oya', 'tafadhali', 'biko', 'chale', 'boss', 'madam', 'sir', 'bro'],
    )
  )
    j++;
  const token = tokens[j];
  if (token?.kind !== 'word') return false;
  return (
    PAYOUT_VERBS.has(token.lower) ||
    REFUND_VERBS.has(token.lower) ||
    SPLIT_VERBS.has(token.lower) ||
    CREATE_VERBS.has(token.lower) ||
    [
      'check',
      'show',
      'list',
      'what',
      "what's",
      'whats',
      'how',
      'is',
      'has',
      'did',
      'tell',
      'give',
      'approve',
      'any',
      'which',
      'balance',
      'pending',
    ].includes(token.lower)
  );
}

/** "…, no wait, send it to B": what follows a correction marker belongs to its clause. */
function endsWithCorrection(tokens: readonly Token[]): boolean {
  for (let k = Math.max(0, tokens.length - 4); k < tokens.length; k++) {
    const length = correctionMarker(tokens, k);
    if (length > 0 && tokens.slice(k + length).every((t) => t.kind === 'punct')) return true;
  }
  return false;
}

/**
 * Splits tokens into clauses: at sentence ends and ";" (a new line counts as one), at
 * "then"/"also"/"after that" (consumed), and at "and"/"," when a new verb follows. A clause that
 * starts with a correction marker ("actually …", "no wait, …") is joined to the one before it.
 */
export function splitClauses(all: readonly Token[]): { clauses: Token[][]; sequencers: Token[] } {
  const tokens = dropCourtesy([...all]);
  const clauses: Token[][] = [];
  const sequencers: Token[] = [];
  let current: Token[] = [];
  const close = (): void => {
    if (current.length > 0) clauses.push(current);
    current = [];
  };
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (token.kind === 'punct' && /^[.;!?]$/.test(token.text)) {
      close();
      continue;
    }
    if (
      token.kind === 'word' &&
      (SEQUENCERS.has(token.lower) || (token.lower === 'after' && isWord(tokens[i + 1], 'that', 'which')))
    ) {
      // "if … then …" keeps its "then": the condition is refused whole, not split in two.
      const conditional = current.some((t) => isWord(t, 'if', 'when', 'once', 'unless'));
      if (!conditional && current.some((t) => t.kind !== 'punct' && !isWord(t, 'and'))) {
        while (current.length > 0 && (isWord(current.at(-1), 'and') || current.at(-1)!.kind === 'punct')) current.pop();
        sequencers.push(token);
        if (token.lower === 'after') {
          sequencers.push(tokens[i + 1]!);
          i++;
        }
        close();
        continue;
      }
    }
    if (
      (isWord(token, 'and') || (token.kind === 'punct' && token.text === ',')) &&
      current.length > 0 &&
      !endsWithCorrection(current) &&
      // "not everything, refund GH₵ 40 on pay_…": a negated extent leads the request it qualifies.
      !(isWord(current[0], 'not') && negatedExtent([...current, ...tokens.slice(i)], 0) !== undefined) &&
      startsNewAction(tokens, i + 1)
    ) {
      close();
      continue;
    }
    current.push(token);
  }
  close();

  // A correction clause joins the clause it corrects; a clause of only fillers disappears later.
  const joined: Token[][] = [];
  for (const raw of clauses) {
    // "1) refund pay_…", "2. send …": list numbering is not an amount.
    let clause = raw;
    if (
      clause[0]?.kind === 'amount' &&
      /^\d{1,2}$/.test(clause[0].text) &&
      clause[1]?.kind === 'punct' &&
      /^[).:]$/.test(clause[1].text)
    )
      clause = clause.slice(2);
    if (clause.length === 1 && clause[0]?.kind === 'amount' && /^\d{1,2}$/.test(clause[0].text)) continue;
    if (clause.length === 0) continue;
    // "ah no, make am 60/40", "uh, actually …": an interjection before the marker.
    const firstWord = clause.findIndex((t) => t.kind !== 'punct' && !isWord(t, 'ah', 'oh', 'uh', 'um', 'er', 'hmm'));
    const previous = joined.at(-1);
    const negated =
      previous !== undefined &&
      isWord(
        previous.find((t) => t.kind !== 'punct'),
        "don't",
        'dont',
        'never',
        'do',
      );
    // "pay 0x… 30 usdc. not 300, 30.": the merchant stresses the amount of the clause before.
    const restated =
      firstWord >= 0 &&
      isWord(clause[firstWord], 'not') &&
      VALUE_KINDS.includes(clause[firstWord + 1]?.kind ?? 'punct') &&
      clause.slice(firstWord + 2).some((t) => t.kind === clause[firstWord + 1]!.kind);
    if (joined.length > 0 && ((firstWord >= 0 && correctionAt(clause, firstWord) > 0) || negated || restated)) {
      joined[joined.length - 1] = [...joined[joined.length - 1]!, ...clause];
      continue;
    }
    joined.push(clause);
  }
  return { clauses: joined, sequencers };
}
