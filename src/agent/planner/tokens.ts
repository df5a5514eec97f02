import { isAddress } from 'viem';
import { isId } from '../../domain/ids.ts';
import {
  isLetterLookAlike,
  lookAlike,
  NUMBER_WORDS,
  type NumberValue,
  readDigits,
  readNumberPhrase,
  readNumeral,
  SCALE_WORDS,
} from '../numbers.ts';
import type { CurrencyMention, Token } from './token-types.ts';
import { CONTROL_WORDS, CURRENCY_WORDS, FRACTION_WORDS, HARD_CONTROL_WORDS, SYMBOLS } from './lexicon.ts';
import { datePhrases } from './dates.ts';
import { isCountNoun, isQuantity, PAST } from './counts.ts';

/**
 * Stage 1 of the offline planner: the lexer. It turns a message into tokens and marks the ones
 * that carry meaning (amounts, addresses, ids, shares, dates, and the words that change what an
 * instruction means: conditions, negations, corrections, sequencing). The grammar must account for
 * every such token, or nothing runs (checks.ts). Numbers are kept as decimal text, never floats.
 * The token shapes are in token-types.ts, the word lists in lexicon.ts, date phrases in dates.ts
 * and the questions asked of tokens afterwards (counts, the past, significance) in counts.ts.
 */

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
/** A token before its place in the list is known. */
type NewToken = DistributiveOmit<Token, 'index'>;

// The lexer
// ---------------------------------------------------------------------------------------------

const ADDRESS_LIKE = /^0x[0-9a-zA-Z…]*$/;
const URL_LIKE = /^https?:\/\/\S+$/i;

// One raw piece: quoted text ("…", or '…' standing apart from the words around it), a URL, an id
// or address, a number with its attached symbols, a word in the Latin script with its accents and
// marks (Twi ɛ ɔ, Yoruba ẹ ọ ṣ, Ewe ɖ ƒ, é, ï; an apostrophe inside), an arrow, or one punctuation
// character (a letter of another script among them).
const PIECE =
  /"[^"]{0,300}"|(?<![\p{L}\p{N}])'[^'\n]{1,300}?'(?![\p{L}\p{N}])|https?:\/\/[^\s"'<>]+|0x[0-9a-zA-Z…]*|[a-z]{2,4}_[0-9A-Za-z]+|#[0-9a-z][\w\-/]*|[a-z]+[-/]?\d[\w\-/]*(?:[.,]\d[\w\-/]*)*|[a-z]+(?:-[a-z0-9]+)+|(?:us\$|gh₵|[$€£₦₵])?-?\d(?:[\da-z,.]*[\da-z])?(?:\s?(?:k|mn|m|bn|b)\b)?%?(?:\s?\/\s?\d+(?:\.\d+)?%?)*(?:[-+]\d+(?:\.\d+)?)?|[\p{sc=Latin}₦$€£₵][\p{sc=Latin}\p{M}'’₵$]*|->|=>|→|—|–|[^\sa-z0-9]/giu;

interface RawPiece {
  text: string;
  at: number;
}

function pieces(message: string): RawPiece[] {
  return [...message.matchAll(PIECE)].map((match) => ({ text: match[0], at: match.index ?? 0 }));
}

/**
 * An email reply's quoted history ("> pay 500 USDC to …" under "On Mon, … wrote:") is what was
 * said before, not what is asked now: it is left out, as a mail client shows it. A message that is
 * only quoted history is then no instruction at all.
 */
function withoutQuotedHistory(message: string): string {
  const lines = message.split(/\r?\n/);
  // Everything under "---------- Forwarded message ----------" was written by someone else.
  const forwarded = lines.findIndex((line) =>
    /^\s*-*\s*(?:forwarded message|begin forwarded message|original message)\b/i.test(line),
  );
  return (forwarded >= 0 ? lines.slice(0, forwarded) : lines)
    .filter((line) => !/^\s*>/.test(line) && !/^\s*On .{3,120} wrote:\s*$/.test(line))
    .join('\n');
}

/**
 * Shorthand and words of other languages read as the English words the grammar and the date parser
 * know, so a texted form of a word that holds money back holds it back too. Each entry is the
 * forms (a regular expression over whole words) and the word they stand for.
 */
const SHORTHAND: readonly (readonly [string, string])[] = [
  ['2da?y', 'today'],
  ['2mo?r+o?w?|2morrow|tmrw?|tmo?ro', 'tomorrow'],
  ['2nite', 'tonight'],
  ['wat', 'what'],
  // French: "pour le reçu 55" (for receipt 55).
  ['pour', 'for'],
  ['hw', 'how'],
  ['costumer', 'customer'],
  ['costumers', 'customers'],
  ['(?<=(?:this|last|past|next) )(?:weak|wk)', 'week'],
  ['(today|yesterday)s', "$1's"],
  // Swahili and Pidgin: "mauzo ya leo" (today's sales), "jana" (yesterday), "wetin" (what).
  ['jana|yday|ystd|yest|yesterdy', 'yesterday'],
  ['leo', 'today'],
  ['wetin', 'what'],
  // Texting and Swahili forms of conditions and waits: kama (if), baada (after), hadi/mpaka (until).
  ['wen|whn', 'when'],
  ['wenever', 'whenever'],
  ['b4|b[e4]for|bfr', 'before'],
  ['afta|aftr|baada', 'after'],
  ['untill|untl|hadi|mpaka', 'until'],
  ['w8t?', 'wait'],
  // Not "ltr": a litre.
  ['l8r|l8ter', 'later'],
  ['unles|unlss', 'unless'],
  ['kama', 'if'],
  // "invoice no 42", "order No. 5512", "no. 7": the abbreviation of number, before a document's
  // number; "50 usdc, no 40" stays a correction.
  [
    '(?<=(?:invoice|inv|order|receipt|ticket|room|ref|reference|item|account|acct|table|po|house|plot|box|case|job|batch|shipment)\\.?\\s+)no\\.?(?=\\s*#?\\d)|no\\.(?=\\s*#?\\d)',
    'number',
  ],
  // Weekdays in Swahili, Hausa and Twi, read as the days they are (a day to come is a wait).
  ['jumatatu|litinin|dwoada', 'monday'],
  ['jumanne|talata|benada', 'tuesday'],
  ['jumatano|laraba|wukuada', 'wednesday'],
  ['alhamisi|alhamis|yawoada|yawda', 'thursday'],
  ["ijumaa|juma'a|jumma|fiada|fida", 'friday'],
  ['jumamosi|asabar|memeneda', 'saturday'],
  ['jumapili|lahadi|kwasiada', 'sunday'],
  // Pidgin "no be 50, na 40": it is not 50, it is 40.
  ['no be(?=\\s+(?:\\d|[₦$]))', 'not'],
];

/** The same table as expressions; a word's edge is any letter or digit, in any script ("ɔhwɛfo" holds no "hw"). */
const SHORTHAND_PATTERNS = SHORTHAND.map(
  ([forms, word]) => [new RegExp(`(?<![\\p{L}\\p{N}_])(?:${forms})(?![\\p{L}\\p{N}_])`, 'giu'), word] as const,
);

function textingShorthand(message: string): string {
  let out = message;
  for (const [pattern, word] of SHORTHAND_PATTERNS) out = out.replace(pattern, word);
  return out
    .replace(/(?<=\s)n(?=\s)/g, 'and')
    .replace(/(?<=\s)u(?=\s|$|[?.!,])/g, 'you')
    .replace(/(?<=\s)4(?=\s+(?:my|me|the|a|an|you|us|him|her|them)\b|\s*(?:₦|\$|GH₵|KSh|€|£))/gi, 'for');
}

/** An N or n standing alone before a figure (with its separators and a k/m suffix, and nothing else glued to it). */
const NAIRA_LETTER = /(?<![\p{L}\p{N}_\-/#.])[Nn](?=\d[\d,.]*(?:k|m)?(?![\p{L}\p{N}_\-/]))/gu;

/** Tokens of one message. `now` resolves relative dates, in UTC. */
export function tokenize(message: string, now: Date): Token[] {
  const normalised = normaliseMessage(message);
  const dates = datePhrases(normalised, now);
  const raw = pieces(normalised);
  const lowered = raw.map((piece) => piece.text.toLowerCase());
  const tokens: Token[] = [];
  const push = (token: NewToken): void => {
    tokens.push({ ...token, index: tokens.length } as Token);
  };

  for (let i = 0; i < raw.length; i++) {
    const piece = raw[i]!;
    const date = dates.find((d) => d.at === piece.at);
    if (date !== undefined) {
      // A date phrase is one token; "since"/"from" before it makes it open-ended up to now.
      let end = i;
      while (end + 1 < raw.length && raw[end + 1]!.at < date.at + date.text.length) end++;
      const previous = tokens.at(-1);
      const since = previous?.kind === 'word' && previous.lower === 'since';
      if (since) tokens.pop();
      push({
        kind: 'date',
        text: date.text,
        range: since && date.range ? { from: date.range.from, to: now } : date.range,
        since,
        past: date.past,
      });
      i = end;
      continue;
    }
    const text = piece.text;
    const lower = text.toLowerCase();

    const shaped = shapedToken(text, lower, raw, i, tokens.at(-1), now);
    if (shaped !== undefined) {
      push(shaped);
      continue;
    }
    if (/\d/.test(text) && /^(?:us\$|gh₵|[$€£₦₵])?-?\d/iu.test(text)) {
      i = readFigure(text, raw, lowered, i, tokens, push);
      continue;
    }
    const fraction = fractionAt(raw, i);
    if (fraction !== undefined) {
      push({ kind: 'fraction', text: fraction.text, numerator: fraction.numerator, denominator: fraction.denominator });
      i = fraction.next - 1;
      continue;
    }
    if (NUMBER_WORDS.has(lower) || ((lower === 'a' || lower === 'an') && SCALE_WORDS.has(lowered[i + 1] ?? ''))) {
      const phrase = readNumberPhrase(lowered, i);
      push({
        kind: 'amount',
        text: raw
          .slice(i, phrase.next)
          .map((p) => p.text)
          .join(' '),
        number: phrase.value,
        currency: undefined,
        negative: false,
      });
      i = phrase.next - 1;
      continue;
    }
    if (lower === 'percent' || lower === 'pct' || (lower === 'per' && raw[i + 1]?.text.toLowerCase() === 'cent')) {
      // "30 percent": turn the amount before it into a percentage.
      const previous = tokens.at(-1);
      if (previous?.kind === 'amount' && previous.currency === undefined) {
        tokens.pop();
        push({ kind: 'percent', text: `${previous.text} ${text}`, bps: percentBps(previous.number) });
        if (lower === 'per') i++;
        continue;
      }
    }
    const currency = currencyAt(raw, i);
    if (currency !== undefined) {
      const previous = tokens.at(-1);
      if (previous?.kind === 'amount' && previous.currency === undefined) {
        previous.currency = currency.mention;
        previous.text = `${previous.text} ${currency.text}`;
      } else {
        push({ kind: 'currency', text: currency.text, mention: currency.mention });
      }
      i = currency.next - 1;
      continue;
    }
    if (/^\p{sc=Latin}/u.test(text) && !/[\uff00-\uffef]/u.test(text)) {
      push(latinWord(text, lowered, i, tokens.at(-1)));
      continue;
    }
    const previous = tokens.at(-1);
    const glued = i > 0 && raw[i - 1]!.at + raw[i - 1]!.text.length === piece.at;
    if ((text === '+' || text === '-') && glued && previous?.kind === 'amount') {
      // "100+" (at least 100) or "100-" (a range cut short) is no amount to pay.
      previous.number = {
        type: 'unreadable',
        reason: `"${previous.text}${text}" is not an exact amount: say exactly how much`,
      };
      previous.text = `${previous.text}${text}`;
      continue;
    }
    push({ kind: 'punct', text });
  }
  attachLeadingCurrencies(tokens);
  markDocumentNumbers(tokens);
  markPhoneNumbers(tokens);
  markListNumbers(tokens);
  markCounts(tokens);
  markPronounOne(tokens);
  markUnreadMoney(tokens);
  markToldRepeats(tokens);
  return tokens.map((token, index) => ({ ...token, index }));
}

/**
 * A figure: its amount (or its code, when letters are glued to it), then what reads on from it:
 * "3rd naira" beside a currency is an amount unread; "2 hundred", "1.5 million" read on in words.
 * Returns the index of the last piece read.
 */
function readFigure(
  text: string,
  raw: readonly RawPiece[],
  lowered: readonly string[],
  i: number,
  tokens: Token[],
  push: (token: NewToken) => void,
): number {
  pushNumber(text, push);
  const last = tokens.at(-1);
  if (last?.kind === 'code' && i + 1 < raw.length && currencyAt(raw, i + 1) !== undefined) {
    // "3rd naira", "5kg USDC": beside a currency it stands where an amount would, unread.
    tokens[tokens.length - 1] = {
      kind: 'amount',
      text,
      number: { type: 'unreadable', reason: `"${text}" is not an amount I can read: write it in digits` },
      currency: undefined,
      negative: false,
      index: last.index,
    };
    return i;
  }
  if (last?.kind === 'amount' && last.number.type === 'exact' && /^[\d.,]+$/.test(text)) {
    // "2 hundred", "1.5 million", "12 thousand 5 hundred": the words read on from the digits.
    const phrase = readNumberPhrase(lowered, i, last.number);
    if (phrase.next > i + 1) {
      last.number = phrase.value;
      last.text = raw
        .slice(i, phrase.next)
        .map((p) => p.text)
        .join(' ');
      i = phrase.next - 1;
    }
  }
  return i;
}

/** The message as the reader reads it: shorthand, the naira letter, labels, quotes and spaces made plain. */
function normaliseMessage(message: string): string {
  return (
    textingShorthand(withoutQuotedHistory(message.normalize('NFC')))
      // "N2,500.00": Nigerian merchants write the naira sign as the letter N before the figure.
      .replace(NAIRA_LETTER, '₦')
      // "[voice note] eh hello, um, please pay …": a transcript's label says how the merchant spoke.
      .replace(
        /^\s*[[(](?:(?:voice (?:note|message|memo)|audio(?: message)?)(?: transcri(?:pt|ption|bed))?|transcri(?:pt|ption|bed))[\])]\s*/i,
        '',
      )
      // "Order no. O-17", "ref no. 4471": the abbreviation of "number", whose dot ends no sentence.
      .replace(/\b(order|invoice|receipt|transaction|booking|ref|reference|till)\s+no\.\s*(?=[#\w])/gi, '$1 number ')
      .replace(/[\u2018\u2019\u02bc]/g, "'")
      .replace(/[\u201c\u201d]/g, '"')
      .replace(/[\u00a0\u2007\u202f]/g, ' ')
      .replace(/\s*[\r\n]+\s*/g, ' ; ')
  );
}

/**
 * A piece whose shape alone says what it is: quoted text, a URL, an address, a count ("x3"), an
 * amount written with look-alike letters or glued to letters, a reference code, an id. Undefined
 * for any other piece, which the reader goes on to read as a figure, a number word or a word.
 */
function shapedToken(
  text: string,
  lower: string,
  raw: readonly RawPiece[],
  i: number,
  previous: Token | undefined,
  now: Date,
): NewToken | undefined {
  if (
    text.length >= 2 &&
    ((text.startsWith('"') && text.endsWith('"')) || (text.startsWith("'") && text.endsWith("'")))
  ) {
    const value = text.slice(1, -1).trim();
    return { kind: 'quoted', text, value, carries: carriesMeaning(tokenize(value, now)) };
  }
  if (URL_LIKE.test(text)) return { kind: 'url', text, value: text.replace(/[.,;:!?)\]]+$/, '') };
  if (ADDRESS_LIKE.test(text) && text.length > 2) return addressToken(text);
  // "x3": three times.
  if (/^[x×]\d+$/i.test(text)) return { kind: 'word', text, lower: 'times' };
  if (
    isLetterLookAlike(text) &&
    ((i + 1 < raw.length && currencyAt(raw, i + 1) !== undefined) || previous?.kind === 'currency')
  ) {
    // "pay l00 USDC", "refund GH₵ I50": where an amount stands, letters among digits are asked back.
    return { kind: 'amount', text, number: lookAlike(text), currency: undefined, negative: false };
  }
  if (
    /^\p{L}+\d{1,3}(?:,\d{3})+(?:\.\d+)?$/u.test(text) ||
    /^\p{L}+\d+(?:\.\d+)?e[-+]?\d+$/iu.test(text) ||
    /^n\d/i.test(text)
  ) {
    // "X1,005", "AB12,500": letters glued to a grouped figure stand where an amount would; read
    // as a reference, the figure would be lost, and cut at its comma, a part of it paid. So do
    // letters before an exponent ("N1e4") and an N before a figure with anything glued to it
    // (an N before a clean figure is the naira sign, NAIRA_LETTER): never an order's reference.
    return {
      kind: 'amount',
      text,
      number: {
        type: 'unreadable',
        reason: `"${text}" is not an amount I can read: write the figure with its currency`,
      },
      currency: undefined,
      negative: false,
    };
  }
  if (
    /^#\w/.test(text) ||
    /^[a-z]+[-/]?\d[\w\-/]*(?:[.,]\d[\w\-/]*)*$/i.test(text) ||
    /^[a-z]+(?:-[a-z0-9]+)*-[a-z]*\d[\w-]*$/i.test(text)
  ) {
    return { kind: 'code', text, value: text.replace(/[.,;:!?]+$/, '') };
  }
  if (/^[a-z]{2,4}_[0-9a-z]+$/i.test(text)) {
    if (/^pay_/i.test(text))
      return isId('pay', text) ? { kind: 'payment_id', text, value: text } : { kind: 'bad_payment_id', text };
    // "po_…", "conf_…": an id has a long random body; "to_address", "redirect_url" are field names.
    if (/^[a-z]{2,4}_[0-9A-Za-z]{12,}$/.test(text) && /\d|[A-Z]/.test(text.slice(text.indexOf('_'))))
      return { kind: 'object_id', text, value: text };
    return { kind: 'word', text, lower };
  }
  return undefined;
}

/** A word in the Latin script, folded, with the readings its neighbours decide. */
function latinWord(text: string, lowered: readonly string[], i: number, previous: Token | undefined): NewToken {
  const folded = foldWord(text);
  // "ıf" (a dotless i), "рау" does not reach here (another script): a letter that could hide a
  // word of condition or negation is not read as a harmless word.
  if (mayHide(folded)) return { kind: 'punct', text };
  // "…, my bad" says the message is wrong, as "oops" does: read as that word of correction, it
  // corrects with the value after it ("₦500 my bad ₦300") and, with none, is asked, never dropped.
  if (folded === 'bad' && previous?.kind === 'word' && previous.lower === 'my')
    return { kind: 'word', text, lower: 'oops' };
  // "from Till 884422", "Till No. 303030": a shop's M-Pesa till, named by its number, never
  // "until" (a time or a day after "till" is still a wait: "till 5pm", "till Friday").
  if (
    folded === 'till' &&
    (lowered[i + 1] === 'number' ||
      (/^\d{5,8}[.,;:!?)]?$/.test(lowered[i + 1] ?? '') &&
        (text.startsWith('T') || (previous?.kind === 'word' && TILL_BEFORE.has(previous.lower)))))
  )
    return { kind: 'word', text, lower: TILL_NUMBER };
  // "for the double room booking", "a double bed frame": a kind of thing, not a multiplier.
  // "double the 40 usdc", "double it", "the double charge on pay_…" still multiply or name money.
  if (
    (folded === 'double' || folded === 'triple') &&
    previous?.kind === 'word' &&
    ['the', 'a', 'one', 'two', 'our', 'my', 'his', 'her', 'their'].includes(previous.lower) &&
    /^\p{L}{3,}$/u.test(lowered[i + 1] ?? '') &&
    !MULTIPLIED_NOUNS.has(lowered[i + 1] ?? '') &&
    !CONTROL_WORDS.has(lowered[i + 1] ?? '')
  )
    return { kind: 'word', text, lower: `${folded}-kind` };
  // "na part payment for the cement", "as part payment": a part payment is what the payout is
  // (a noun, its memo), not a share of it; "in part payments", "part of the 200" still ask.
  if (
    folded === 'part' &&
    /^(?:payment|pay)$/.test(lowered[i + 1] ?? '') &&
    !(previous?.kind === 'word' && ['in', 'by', 'into'].includes(previous.lower))
  )
    return { kind: 'word', text, lower: 'part-payment' };
  return { kind: 'word', text, lower: typoOf(folded) ?? folded };
}

/**
 * Money words the reader does not turn into a currency it can move: a currency's hundredth part
 * ("50 kobo" is ₦0.50, and paid 50 USDC), and currencies no payment here is in ("5 quid", "100
 * rupees"). The figure before one is asked back, quoted, on every model's path.
 */
const UNREAD_MONEY_WORDS = new Set([
  'kobo',
  'pesewa',
  'pesewas',
  'cent',
  'cents',
  'centavo',
  'centavos',
  'centime',
  'centimes',
  'penny',
  'pence',
  'senti',
  'quid',
  'sterling',
  'pound',
  'rands',
  'cfa',
  'fcfa',
  'franc',
  'francs',
  'birr',
  'dirham',
  'dirhams',
  'rupee',
  'rupees',
  'yen',
  'yuan',
  'rmb',
  'leone',
  'leones',
  'kwacha',
  'dalasi',
  'tether',
  'sats',
  'satoshi',
  'satoshis',
  'gwei',
  'wei',
  'tsh',
  'tshs',
  'ush',
]);

function markUnreadMoney(tokens: Token[]): void {
  for (let i = 0; i + 1 < tokens.length; i++) {
    const token = tokens[i]!;
    const next = tokens[i + 1]!;
    if (
      token.kind === 'amount' &&
      token.currency === undefined &&
      next.kind === 'word' &&
      UNREAD_MONEY_WORDS.has(next.lower)
    )
      token.number = {
        type: 'unreadable',
        reason: `"${token.text} ${next.text}": I read amounts in whole units of naira, cedis, shillings, rand, dollars, euros, pounds or USDC; say it in one of them`,
      };
  }
}

/**
 * "customer was charged 2x": a multiplier right after a verb in the past tells how often it
 * happened, as "twice" does; anywhere else ("pay … 2x") it multiplies and stays unreadable.
 */
function markToldRepeats(tokens: Token[]): void {
  for (let i = 1; i < tokens.length; i++) {
    const token = tokens[i]!;
    const previous = tokens[i - 1]!;
    const times =
      token.kind === 'amount' || token.kind === 'word' ? /^([23])\s*[x×]$|^[x×]\s*([23])$/i.exec(token.text) : null;
    if (times === null || previous.kind !== 'word' || !PAST.has(previous.lower)) continue;
    tokens[i] = {
      kind: 'word',
      text: token.text,
      lower: (times[1] ?? times[2]) === '2' ? 'twice' : 'thrice',
      index: i,
    };
  }
}

/** Words before "one" that make it a pronoun: "the extra one", "that one", "the wrong one". */
const ONE_POINTERS = new Set([
  'the',
  'that',
  'this',
  'which',
  'other',
  'another',
  'extra',
  'duplicate',
  'wrong',
  'right',
  'correct',
  'second',
  'first',
  'last',
  'same',
  'new',
  'old',
  'earlier',
  'later',
  'latest',
  'previous',
  'original',
]);

/**
 * "pay_… na the extra one", "not that one": "one" standing for a payment is a word, not the
 * number 1. A currency or a counted thing after it ("the one item") keeps it a number.
 */
function markPronounOne(tokens: Token[]): void {
  for (let i = 1; i < tokens.length; i++) {
    const token = tokens[i]!;
    const previous = tokens[i - 1]!;
    if (
      token.kind === 'amount' &&
      token.text.toLowerCase() === 'one' &&
      token.currency === undefined &&
      previous.kind === 'word' &&
      ONE_POINTERS.has(previous.lower) &&
      tokens[i + 1]?.kind !== 'currency' &&
      !isCountNoun(tokens[i + 1])
    )
      tokens[i] = { kind: 'word', text: token.text, lower: 'one', index: i };
  }
}

/**
 * A word as the grammar compares it: lower-case, accents and tone marks taken off ("intégralement",
 * "Ọlá's" → "ola's"); letters of their own (ɛ, ɔ, ɖ, ƒ) stay as written.
 */
export function foldWord(text: string): string {
  return text.normalize('NFD').replace(/\p{M}/gu, '').replace(/’/g, "'").toLowerCase();
}

/**
 * A folded word with letters outside a-z that would spell a word of control if those letters were
 * a-z ("ıf", "nοt" with a Latin look-alike): it might be one, so it is never taken as a harmless word.
 */
function mayHide(folded: string): boolean {
  if (/^[a-z0-9'-]*$/.test(folded) || CONTROL_WORDS.has(folded)) return false;
  for (const word of CONTROL_WORDS)
    if (word.length === folded.length && [...folded].every((char, i) => char === word[i] || !/[a-z0-9'-]/.test(char)))
      return true;
  return false;
}

/** Quoted text that holds a value or a word that changes meaning: it is never placed as a memo. */
function carriesMeaning(inner: readonly Token[]): boolean {
  return inner.some((token, i) => {
    switch (token.kind) {
      case 'word':
        return HARD_CONTROL_WORDS.has(token.lower);
      case 'amount':
        // "'Golden Olein Oil 1L'", "'Kings Oil 5L'": a size inside a quoted product name measures the
        // product (outside quotes "5l usdc" may hide 51 and is asked back; here no amount is read).
        if (token.number.type === 'unreadable' && MEASURE.test(token.text)) return false;
        return !isQuantity(token, inner[i + 1], 4);
      case 'quoted':
        return token.carries;
      case 'code':
      case 'currency':
      case 'punct':
        return false;
      default:
        return true;
    }
  });
}

/** A size written as digits and a unit of volume or weight: "1L", "35cl", "500ml", "2kg". */
const MEASURE = /^\d{1,4}(?:\.\d{1,2})?(?:l|ltr|ml|cl|g|kg|lb|lbs|oz)$/i;

/**
 * The action words merchants mistype, read as meant ("splt", "refudn", "snd", "chek my blance",
 * "stauts"): one letter dropped, added, changed (in a long word) or swapped with its neighbour, or
 * the word written without its vowels, as texting does. Only these words, only when exactly one of
 * them is that close, and only when the typed word is not itself a word the agent or English uses
 * ("crate", "layout", "spit", "spend"). Ids and addresses are other tokens: never corrected.
 */
const TYPO_TARGETS = [
  'pay',
  'split',
  'refund',
  'payout',
  'transfer',
  'send',
  'create',
  'payment',
  'check',
  'balance',
  'status',
];
const REAL_WORDS = new Set([
  'play',
  'pray',
  'spay',
  'pays',
  'paid',
  'spit',
  'slit',
  'splat',
  'crate',
  'crates',
  'created',
  'creates',
  'cheek',
  'chuck',
  'chick',
  'chock',
  'checks',
  'checked',
  'layout',
  'payouts',
  'payments',
  'statue',
  'statues',
  'stats',
  'balanced',
  'balances',
  'refunds',
  'transfers',
  'splits',
  'sends',
  'spend',
  'seend',
]);

/** A word without its vowels after the first letter: "refund" → "rfnd", "balance" → "blnc". */
const consonants = (word: string): string => word.charAt(0) + word.slice(1).replace(/[aeiou]/g, '');

function typoOf(word: string): string | undefined {
  if (word.length < 3 || REAL_WORDS.has(word) || TYPO_TARGETS.includes(word)) return undefined;
  const found = TYPO_TARGETS.filter(
    (target) =>
      (word.length >= 4 && oneEditApart(word, target)) ||
      (word === consonants(word) && word === consonants(target)) ||
      // "blanace", "tranfser": in a long word, two slips (each a swap, a letter dropped or added),
      // the first letter kept.
      (target.length >= 7 && word[0] === target[0] && twoEditsApart(word, target)),
  );
  return found.length === 1 ? found[0] : undefined;
}

/** One deletion, insertion, substitution (in a word of 6 letters or more) or swap of neighbours turns `a` into `b`. */
function oneEditApart(a: string, b: string): boolean {
  if (Math.abs(a.length - b.length) > 1) return false;
  if (a.length === b.length) {
    const diff = [...a].flatMap((char, i) => (char === b[i] ? [] : [i]));
    if (diff.length === 1) return b.length >= 6;
    return diff.length === 2 && diff[1] === diff[0]! + 1 && a[diff[0]!] === b[diff[1]!] && a[diff[1]!] === b[diff[0]!];
  }
  const [short, long] = a.length < b.length ? [a, b] : [b, a];
  for (let i = 0; i < long.length; i++) if (long.slice(0, i) + long.slice(i + 1) === short) return true;
  return false;
}

/** Two deletions, insertions or swaps of neighbours (no change of a letter) turn `a` into `b`. */
function twoEditsApart(a: string, b: string): boolean {
  if (Math.abs(a.length - b.length) > 2) return false;
  const near = (x: string, y: string): boolean => oneEditApart(x, y) && !(x.length === y.length && sameLetters(x, y));
  const variants = (x: string): string[] => {
    const out: string[] = [];
    for (let i = 0; i < x.length; i++) out.push(x.slice(0, i) + x.slice(i + 1));
    for (let i = 0; i + 1 < x.length; i++) out.push(x.slice(0, i) + x[i + 1] + x[i] + x.slice(i + 2));
    return out;
  };
  return variants(a).some((v) => v === b || near(v, b)) || variants(b).some((v) => near(a, v));
}

/** Same letters in the same places but one: a change, which twoEditsApart does not count. */
function sameLetters(x: string, y: string): boolean {
  return [...x].filter((char, i) => char !== y[i]).length === 1;
}

function addressToken(text: string): NewToken {
  // "0x…9e2…" trailing off in an ellipsis is still the whole address; "0x12…ab" is not one.
  const value = text.replace(/[.,;:!?]+$/, '').replace(/(?<=^0x[0-9a-fA-F]{40})…+$/, '');
  if (/^0x[0-9a-fA-F]{40}$/.test(value)) {
    // The same rule as the tools' schema: a wrong EIP-55 checksum is almost surely a typo.
    if (!isAddress(value, { strict: true }))
      return {
        kind: 'bad_address',
        text,
        reason: `${value} has an invalid checksum (mixed case that is not EIP-55): check it for a typo`,
      };
    return { kind: 'address', text, value };
  }
  return {
    kind: 'bad_address',
    text,
    reason: `"${value}" is not a full address (0x followed by 40 hex characters): I never guess a recipient`,
  };
}

function pushNumber(text: string, push: (token: NewToken) => void): void {
  let rest = text;
  let symbol: string | undefined;
  for (const candidate of SYMBOLS) {
    if (rest.toLowerCase().startsWith(candidate) && /\d|-/.test(rest.charAt(candidate.length))) {
      symbol = rest.slice(0, candidate.length);
      rest = rest.slice(candidate.length);
      break;
    }
  }
  let currency = symbol === undefined ? undefined : mentionOf(symbol);
  const negative = rest.startsWith('-');
  if (negative) rest = rest.slice(1);
  // Ratios: "70/30", "50/30/20", "50-50", "70%/30%".
  if (/^\d+(?:\.\d+)?%?(?:\s?\/\s?\d+(?:\.\d+)?%?)+$/.test(rest) || /^\d+-\d+$/.test(rest)) {
    const parts = rest.split(/\s?[/-]\s?/).map((part) => percentBps(readDigits(part.replace('%', ''))));
    if (parts.every((part): part is bigint => part !== undefined) && currency === undefined) {
      push({ kind: 'ratio', text, parts });
      return;
    }
  }
  if (rest.endsWith('%')) {
    push({ kind: 'percent', text, bps: percentBps(readDigits(rest.slice(0, -1))) });
    return;
  }
  // "5 k": the suffix written apart.
  const numeral = readNumeral(rest.replace(/\s+(?=(?:k|mn|m|bn|b)$)/i, ''));
  if (numeral.kind === 'not_an_amount') {
    push({ kind: 'code', text, value: text });
    return;
  }
  let number = numeral.value;
  if (numeral.tail !== undefined) {
    // "50usdc", "100naira": a currency glued to the digits; any other word there is no amount.
    const glued = mentionOf(numeral.tail);
    if (glued === undefined || currency !== undefined)
      number = {
        type: 'unreadable',
        reason: `"${text}" is not a number I can read: write the amount in digits, e.g. 1,000 or 1000.50`,
      };
    else currency = glued;
  }
  push({ kind: 'amount', text, number, currency, negative });
}

function percentBps(value: NumberValue): bigint | undefined {
  if (value.type !== 'exact') return undefined;
  const match = /^(\d{1,3})(?:\.(\d{1,2}))?$/.exec(value.text);
  if (match === null) return undefined;
  return BigInt(match[1]!) * 100n + BigInt((match[2] ?? '').padEnd(2, '0'));
}

function fractionAt(
  raw: readonly RawPiece[],
  i: number,
): { text: string; numerator: bigint; denominator: bigint; next: number } | undefined {
  const word = raw[i]!.text.toLowerCase();
  const plain = (w: string): string => w.replace(/s$/, '');
  // "a quarter", "one third", "three quarters", "half".
  const count = word === 'a' || word === 'an' || word === 'one' ? 1n : NUMBER_WORDS.get(word);
  const nextWord = raw[i + 1]?.text.toLowerCase();
  if (count !== undefined && nextWord !== undefined && FRACTION_WORDS.has(plain(nextWord))) {
    const [, denominator] = FRACTION_WORDS.get(plain(nextWord))!;
    return { text: `${raw[i]!.text} ${raw[i + 1]!.text}`, numerator: count, denominator, next: i + 2 };
  }
  if (FRACTION_WORDS.has(word) && (word === 'half' || word === 'halve')) {
    return { text: raw[i]!.text, numerator: 1n, denominator: 2n, next: i + 1 };
  }
  return undefined;
}

function mentionOf(word: string): CurrencyMention | undefined {
  const code = CURRENCY_WORDS.get(word.toLowerCase());
  return code === undefined ? undefined : { code, word };
}

function currencyAt(
  raw: readonly RawPiece[],
  i: number,
): { text: string; mention: CurrencyMention; next: number } | undefined {
  const two = raw[i + 1] ? `${raw[i]!.text} ${raw[i + 1]!.text}` : undefined;
  if (two !== undefined) {
    const mention = mentionOf(two);
    if (mention !== undefined) return { text: two, mention, next: i + 2 };
  }
  const one = raw[i]!.text;
  // "bob" is Kenyan slang for shillings right after a number or in "in bob"; elsewhere it is a name.
  if (one.toLowerCase() === 'bob' && raw[i - 1]?.text.toLowerCase() !== 'in') return undefined;
  const mention = mentionOf(one);
  return mention === undefined ? undefined : { text: one, mention, next: i + 1 };
}

/** "USDC 250", "KSh 2,000", "NGN 5000": a currency word right before a bare number is its currency. */
function attachLeadingCurrencies(tokens: Token[]): void {
  for (let i = tokens.length - 2; i >= 0; i--) {
    const token = tokens[i]!;
    const next = tokens[i + 1]!;
    if (token.kind === 'currency' && next.kind === 'amount' && next.currency === undefined) {
      next.currency = token.mention;
      next.text = `${token.text} ${next.text}`;
      tokens.splice(i, 1);
    }
  }
  // "bob" after a number: "500 bob".
  for (let i = 1; i < tokens.length; i++) {
    const token = tokens[i]!;
    const previous = tokens[i - 1]!;
    if (
      token.kind === 'word' &&
      token.lower === 'bob' &&
      previous.kind === 'amount' &&
      previous.currency === undefined
    ) {
      previous.currency = { code: 'KES', word: token.text };
      previous.text = `${previous.text} ${token.text}`;
      tokens.splice(i, 1);
    }
  }
}

/** Nouns after "the double" that name money or an action, which "double" multiplies or repeats. */
const MULTIPLIED_NOUNS = new Set([
  ...['payment', 'payments', 'amount', 'charge', 'charges', 'refund', 'refunds', 'payout', 'payouts', 'fee'],
  ...['fees', 'price', 'money', 'sum', 'total', 'transfer', 'transaction', 'debit', 'deduction', 'pay', 'rate'],
  ...['usdc', 'naira', 'cedis', 'shillings', 'dollars', 'bucks', 'that', 'this', 'what', 'one', 'the', 'it'],
  ...['portion', 'share', 'quantity', 'salary', 'wage', 'wages', 'bonus', 'commission', 'allowance', 'cost'],
  ...['deposit', 'balance', 'order', 'time', 'times', 'dose', 'pack', 'packs', 'bill'],
]);

/** "Till" before a till's number: a noun that names a shop, not the word of a wait. */
const TILL_NUMBER = 'till-number';

/** Words before a till's number written in lower case: "from till 884422", "lipa na M-Pesa till …". */
const TILL_BEFORE = new Set(['from', 'at', 'via', 'mpesa', 'm-pesa', 'pesa', 'our', 'my', 'the', 'shop', 'store']);

/** Words after which a bare whole number names a document, not an amount: "invoice 42". */
const DOCUMENT_WORDS = new Set([
  TILL_NUMBER,
  'paybill',
  // Things a market or a building names by their number: "stall 14B", "shop 7", "order tag 7E2".
  'stall',
  'shop',
  'kiosk',
  'stand',
  'tag',
  'plot',
  'block',
  'unit',
  'flat',
  'apartment',
  'apt',
  'suite',
  'bay',
  'gate',
  'seat',
  'invoice',
  'inv',
  'order',
  'ord',
  'bill',
  'ticket',
  'receipt',
  'po',
  'number',
  'item',
  'batch',
  'job',
  'shipment',
  'room',
  // French receipt, invoice, order (folded: "reçu" is "recu").
  'recu',
  'facture',
  'commande',
  'size',
  'table',
  'contract',
  'case',
  'ref',
  'reference',
  'week',
  'month',
  'day',
  'episode',
  'lot',
  'unit',
  'account',
  'acct',
  'clause',
  'section',
  'article',
  'page',
  'line',
  'step',
  'box',
  'suite',
  'floor',
  'plot',
  'house',
  // "school fees term 2", "form 4": a school's or a season's number.
  'term',
  'semester',
  'grade',
  'form',
  'phase',
  'stage',
  'round',
  'season',
  'chapter',
]);

const PHONE_WORDS = new Set(['tel', 'phone', 'mobile', 'whatsapp', 'cell', 'call', 'fax', 'mob', 'tel.']);

/** A phone number ("Tel: +234 803 555 0192", "+254 712 345678") is an identifier, not amounts. */
function markPhoneNumbers(tokens: Token[]): void {
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    const startsPhone =
      (token.kind === 'word' && PHONE_WORDS.has(token.lower)) || (token.kind === 'punct' && token.text === '+');
    if (!startsPhone) continue;
    let j = i + 1;
    while (tokens[j]?.kind === 'punct' && /^[:+(]$/.test(tokens[j]!.text)) j++;
    let marked = 0;
    for (; j < tokens.length; j++) {
      const part = tokens[j]!;
      if (part.kind === 'punct' && /^[-()]$/.test(part.text)) continue;
      if (part.kind !== 'amount' || part.currency !== undefined || !/^\d+$/.test(part.text)) break;
      tokens[j] = { kind: 'code', text: part.text, value: part.text, index: j };
      marked++;
    }
    if (marked > 0) i = j - 1;
  }
  // Without a word before it, a phone number is told by its shape: groups of digits that start with
  // 0 ("0803 555 1234", "024-412-7788") and hold 9 digits or more. No amount starts with a 0 digit.
  for (let i = 0; i < tokens.length; i++) {
    // "0244-123-456": the groups after a dash are read as negative numbers.
    const bare = (t: Token | undefined): boolean =>
      t?.kind === 'amount' && t.currency === undefined && /^-?\d+(?:-\d+)*$/.test(t.text);
    if (!bare(tokens[i]) || !/^0\d/.test(tokens[i]!.text)) continue;
    const group = [i];
    for (let j = i + 1; j < tokens.length; j++) {
      if (tokens[j]?.text === '-' && bare(tokens[j + 1])) continue;
      if (!bare(tokens[j])) break;
      group.push(j);
    }
    if (group.map((k) => tokens[k]!.text.replace(/\D/g, '')).join('').length < 9) continue;
    for (const k of group) tokens[k] = { kind: 'code', text: tokens[k]!.text, value: tokens[k]!.text, index: k };
    i = group.at(-1)!;
  }
}

/**
 * "2 of 3 instalments", "order 7 of 10", "1 night early out of 3": which one of how many, a count
 * in the text and never an amount. Both numbers are bare whole numbers; "2 of 3 usdc" is no count.
 */
function markCounts(tokens: Token[]): void {
  const count = (t: Token | undefined): boolean =>
    t?.kind === 'amount' &&
    t.currency === undefined &&
    t.number.type === 'exact' &&
    /^\d{1,4}$/.test(t.text) &&
    !t.negative;
  const isOf = (t: Token | undefined): boolean => t?.kind === 'word' && t.lower === 'of';
  const asCode = (k: number): void => {
    tokens[k] = { kind: 'code', text: tokens[k]!.text, value: tokens[k]!.text, index: k };
  };
  for (let i = 0; i + 2 < tokens.length; i++) {
    const after = tokens[i + 3];
    if (after?.kind === 'currency' || (after?.kind === 'word' && ['each', 'apiece'].includes(after.lower))) continue;
    // "order 7 of 10": the document's number was set apart already (markDocumentNumbers).
    const first = tokens[i];
    const counted = count(first) || (first?.kind === 'code' && /^\d{1,4}$/.test(first.text));
    if (counted && isOf(tokens[i + 1]) && count(tokens[i + 2])) {
      asCode(i);
      asCode(i + 2);
    } else if (
      tokens[i]?.kind === 'word' &&
      (tokens[i] as { lower: string }).lower === 'out' &&
      isOf(tokens[i + 1]) &&
      count(tokens[i + 2])
    ) {
      asCode(i + 2);
    }
  }
}

/** "(1) Refund …, (2) Pay …": a list item's number in brackets is no amount. */
function markListNumbers(tokens: Token[]): void {
  for (let i = 1; i + 1 < tokens.length; i++) {
    const token = tokens[i]!;
    if (
      token.kind === 'amount' &&
      token.currency === undefined &&
      /^\d{1,2}$/.test(token.text) &&
      tokens[i - 1]?.text === '(' &&
      tokens[i + 1]?.text === ')'
    )
      tokens[i] = { kind: 'code', text: token.text, value: token.text, index: i };
  }
}

function markDocumentNumbers(tokens: Token[]): void {
  const isDocumentWord = (token: Token | undefined): boolean =>
    (token?.kind === 'word' && DOCUMENT_WORDS.has(token.lower.replace(/[.:]$/, ''))) ||
    (token?.kind === 'punct' && (token.text === '#' || token.text === '№'));
  for (let i = 1; i < tokens.length; i++) {
    const token = tokens[i]!;
    const previous = tokens[i - 1]!;
    if (token.kind !== 'amount' || token.currency !== undefined) continue;
    // "invoice 42", "invoice 2026-117": a document's number, never an amount.
    const documentNumber =
      isDocumentWord(previous) &&
      ((token.number.type === 'exact' && /^\d+$/.test(token.text)) || /^\d+(?:-\d+)+$/.test(token.text));
    // "market stall 14B", "Shop 7B here", "their order tag was 7E2": digits with a letter glued on
    // after a word that names a thing by its number are its label, never 14 billion or an exponent.
    // Beside a currency ("14B naira", "7E2 naira") or after no such word they stay amounts (asked).
    const label =
      LABEL_LIKE.test(token.text) &&
      (isDocumentWord(previous) ||
        (previous.kind === 'word' &&
          ['was', 'is', 'no', 'number'].includes(previous.lower) &&
          isDocumentWord(tokens[i - 2])));
    if (documentNumber || label) tokens[i] = { kind: 'code', text: token.text, value: token.text, index: i };
  }
}

/** Digits with one letter glued on, maybe more digits after it: "14B", "22C", "7E2", "3E5". */
const LABEL_LIKE = /^\d{1,4}[a-z]\d{0,3}$/i;
