import type { PaymentStatus } from '../../domain/payment-status.ts';
import { PAYMENT_STATUSES } from '../../domain/payment-status.ts';
import {
  CONTROL_WORDS,
  type CurrencyMention,
  type DateRange,
  HARD_CONTROL_WORDS,
  isCountCode,
  isCount,
  isCountNoun,
  isCountOf,
  isQuantity,
  PAST,
  REPETITION,
  tellsThePast,
  NEGATIONS,
  type Token,
} from './tokens.ts';

/**
 * Stage 2 of the offline planner: the grammar. It splits a message into clauses, finds each
 * clause's intent from its verbs and nouns (in any word order), and fills the intent's slots from
 * the tokens, marking every token it uses as consumed. Corrections ("500, actually 50") replace
 * the slot they correct. It never decides whether a clause is complete: plan.ts does, and
 * checks.ts refuses a message with any meaningful token left unconsumed.
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
 * it up with list_payments before anything else runs (plan.ts, resolveLookups).
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

const isMoneyIntent = (intent: Intent | undefined): boolean =>
  intent === 'payout' || intent === 'refund' || intent === 'split' || intent === 'create_payment';

export const text = (tokens: readonly Token[]): string =>
  tokens
    .map((token) => token.text)
    .join(' ')
    .replace(/\s+([,.;:!?])/g, '$1')
    .trim();

const isWord = (token: Token | undefined, ...words: string[]): boolean =>
  token?.kind === 'word' && words.includes(token.lower);

// ---------------------------------------------------------------------------------------------
// Intents
// ---------------------------------------------------------------------------------------------

// Misspelt action words are read by the lexer's typo rule (tokens.ts, typoOf). Verbs merchants mix
// in: Swahili lipa/tuma (pay/send), rudisha (give back), gawanya (divide); Twi tua, Hausa biya (pay);
// French:
// rembourser (refund), payer / envoyer (pay, send). "semd" and "rfd" are kept as written:
// no edit rule reaches them without reaching real words too.
const PAYOUT_VERBS = new Set([
  'payez',
  'payer',
  'envoyez',
  'envoyer',
  'lipa',
  'tuma',
  'tua',
  'biya',
  'semd',
  'pay',
  'payout',
  'payouts',
  'send',
  'transfer',
  'remit',
  'wire',
  'disburse',
  'give',
  'settle',
  'move',
]);
const REFUND_VERBS = new Set([
  'rembourser',
  'remboursez',
  'rembourse',
  'rfd',
  'rudisha',
  'refund',
  'reimburse',
  'chargeback',
  'reverse',
  'refunding',
]);
const SPLIT_VERBS = new Set(['split', 'divide', 'distribute', 'share', 'gawanya']);
/** Every verb that moves money, in any form the grammar reads ("moving all funds", "paying"). */
export const MONEY_VERBS: ReadonlySet<string> = new Set([
  ...PAYOUT_VERBS,
  ...REFUND_VERBS,
  ...SPLIT_VERBS,
  'moving',
  'sending',
  'paying',
]);
const CREATE_VERBS = new Set(['create', 'make', 'generate', 'open', 'new', 'raise', 'issue', 'setup', 'set', 'start']);
const PAYMENT_NOUNS = new Set(['payment', 'checkout', 'link', 'session', 'invoice', 'request']);
const REVENUE_WORDS = new Set([
  // Swahili: mauzo (sales), mapato (income).
  'mauzo',
  'mapato',
  'sell',
  'revenue',
  'revenues',
  'sales',
  'takings',
  'turnover',
  'income',
  'earnings',
  'proceeds',
  'earned',
  'made',
  'take',
  'took',
  'taken',
  'collected',
  'received',
  'sold',
]);
const STATUS_WORDS = new Set([
  // Swahili: angalia (check), hali (state), imelipwa (has it been paid), imefika (has it arrived).
  'angalia',
  'hali',
  'imelipwa',
  'imefika',
  'status',
  'settled',
  // "did pay_… settle?", "did it clear?": the verb after "did".
  'settle',
  'clear',
  'arrive',
  'succeed',
  'fail',
  'paid',
  'through',
  'complete',
  'completed',
  'succeeded',
  'successful',
  'failed',
  'expired',
  'happened',
  'update',
  'news',
  'check',
  'track',
  'state',
  'cleared',
  'confirmed',
  'landed',
  // Pidgin "e don land?", "e don enter?": has it arrived?
  'land',
  'enter',
  'arrived',
  'done',
  'went',
  'go',
  'gone',
  'pending',
  'refunded',
  'info',
  'details',
  'show',
  'fetch',
  'view',
  'see',
  'find',
  'get',
  'tell',
  'lookup',
  'look',
]);

const LEADING_FILLERS = new Set([
  'please',
  'pls',
  'plz',
  'kindly',
  'can',
  'could',
  'would',
  'will',
  'you',
  'u',
  'abeg',
  'oya',
  'just',
  'also',
  'so',
  'ok',
  'okay',
  'and',
  'then',
  'i',
  'we',
  'need',
  'want',
  'wanna',
  'to',
  'like',
  "i'd",
  "we'd",
  'hi',
  'hello',
  'hey',
  'now',
  'tafadhali',
  'chale',
  'uh',
  'um',
  'first',
  'firstly',
  'next',
  'lastly',
  'finally',
  'me',
  'help',
]);

/** The clause's first word that is not a filler: its verb when the clause asks for something. */
export function leadingWord(tokens: readonly Token[]): string | undefined {
  for (const token of tokens) {
    if (token.kind === 'punct') continue;
    if (token.kind !== 'word') return undefined;
    if (!LEADING_FILLERS.has(token.lower)) return token.lower;
  }
  return undefined;
}

/** Each clause's intent, from its words; undefined when it has none (chatter, or a fragment). */
export function intentOf(tokens: readonly Token[]): Intent | undefined {
  const words = tokens.flatMap((token) => (token.kind === 'word' ? [token.lower] : []));
  const has = (...list: string[]): boolean => list.some((word) => words.includes(word));
  const hasId = tokens.some((token) => token.kind === 'payment_id' || token.kind === 'bad_payment_id');
  const hasReference = tokens.some((_token, i) => referenceAt(tokens, i) !== undefined);
  const hasAddress = tokens.some((token) => token.kind === 'address' || token.kind === 'bad_address');
  const hasDate = tokens.some((token) => token.kind === 'date');
  // "how much is in my account now?": "now" asks about the present, not a period.
  const hasPeriod = tokens.some((token) => token.kind === 'date' && !/^(?:right\s+)?now$/i.test(token.text));
  const hasUrl = tokens.some((token) => token.kind === 'url');
  const hasAmount = tokens.some((token) => token.kind === 'amount');
  const pronoun = has('it', 'this', 'that', 'they', 'them');
  const first = words[0];

  if (first !== undefined && ['approve', 'reject', 'deny', 'confirm', 'authorise', 'authorize'].includes(first))
    return 'approve';
  // "Ticket #4550: please approve all pending confirmations": approving is asked, not a status read.
  const approving = tokens.findIndex((token) => isWord(token, 'approve', 'reject', 'authorise', 'authorize'));
  if (
    approving >= 0 &&
    tokens
      .slice(approving + 1, approving + 3)
      .some(
        (token) =>
          isWord(token, 'all', 'the', 'it', 'them', 'this', 'these', 'that', 'everything', 'every') ||
          token.kind === 'object_id',
      )
  )
    return 'approve';
  if (words.some((word) => REFUND_VERBS.has(word) || word === 'refunds')) {
    // "has pay_… been refunded?" asks; "refund pay_…" acts.
    if (has('refunded') && !words.some((word) => REFUND_VERBS.has(word))) return 'payment_status';
    return 'refund';
  }
  // "money back for order #A-7731": an order named by its reference stands for the payment; "the
  // customer wants money back for order #A-7731" tells what someone wants, which a request may follow.
  const aboutSomeone = STATEMENT_SUBJECTS.includes(words[0] === 'the' ? (words[1] ?? '') : (first ?? ''));
  if (
    (hasId || (hasReference && !aboutSomeone)) &&
    has('back') &&
    has('money', 'give', 'pay', 'send', 'return', 'cash', 'funds', 'customer', 'client', 'buyer')
  )
    return 'refund';
  if (hasId && has('return') && has('money', 'funds', 'payment', 'cash')) return 'refund';
  if (words.some((word) => SPLIT_VERBS.has(word)) && (hasAddress || has('between', 'among', 'amongst', 'with')))
    return 'split';
  // "create a payment …" asks; "the new checkout links worked great" tells: the verb must lead.
  const lead = leadingWord(tokens);
  const createVerb =
    (lead !== undefined && (CREATE_VERBS.has(lead) || lead === 'charge' || lead === 'bill')) ||
    has('create', 'generate');
  const paymentNoun = words.some((word) => PAYMENT_NOUNS.has(word));
  if (createVerb && (paymentNoun || has('charge', 'bill')) && !hasAddress) return 'create_payment';
  if (hasUrl && (paymentNoun || has('charge', 'bill')) && !hasAddress && !hasId) return 'create_payment';
  // "The customer received a damaged item yesterday": a sentence about someone tells a story; what
  // they received or took is no revenue question (aboutSomeone).
  if (
    hasDate &&
    !hasAddress &&
    !hasId &&
    !aboutSomeone &&
    (words.some((word) => REVENUE_WORDS.has(word)) ||
      (has('much', 'many', 'what') &&
        has('make', 'earn', 'get', 'receive', 'collect', 'do', 'bring', 'came', 'come', 'in')))
  ) {
    return 'revenue';
  }
  // "how much today?", "how much yesterday", "total last month?": a period alone asks what came in;
  // so does "any money come in today?", and Pidgin "naira wey enter today, how much?" (money, or a
  // currency named alone, that came in over a period).
  if (
    hasPeriod &&
    !hasAddress &&
    !hasId &&
    !hasAmount &&
    !aboutSomeone &&
    (((has('much') || has('total', 'totals')) && words.length <= 4) ||
      ((has('money', 'cash', 'payments') || tokens.some((token) => token.kind === 'currency')) &&
        has('come', 'came', 'received', 'enter', 'entered')))
  )
    return 'revenue';
  if (
    !hasAddress &&
    !hasAmount &&
    // "bal?", Swahili "salio langu?", Pidgin "wetin remain?" and "how much dey my account?"
    (has('balance', 'balances', 'bal', 'salio') ||
      (has('what', 'much') && has('remain', 'remains') && !hasDate && !hasId) ||
      (has('much', 'what', "what's", 'whats') && has('account', 'wallet') && !hasPeriod && !hasId) ||
      (has('much') && has('have', 'available', 'left', 'get') && !hasDate && !hasId) ||
      (has('much') && has('can') && has('pay', 'send', 'withdraw', 'spend')) ||
      (has('available') && has('pay', 'payout', 'spend', 'withdraw') && !hasId))
  )
    return 'balance';
  if (
    (has('approval', 'approvals', 'confirmation', 'confirmations', 'approve') &&
      has(
        'pending',
        'waiting',
        'awaiting',
        'needs',
        'need',
        'held',
        'hold',
        'outstanding',
        'open',
        'any',
        'what',
        'which',
      )) ||
    (has('needs', 'need', 'waiting') && has('approving', 'approved', 'sign-off', 'signoff')) ||
    (has('held', 'hold') && has('actions', 'payouts', 'payments', 'refunds') && !hasId && !hasAmount)
  )
    return 'pending_confirmations';
  // "100 USDC → 0x…", "0x… gets 60 usdc", "30 usdc each to 0x…": a payout without a verb.
  const arrow =
    tokens.some((token) => token.kind === 'punct' && ['->', '→', '=>'].includes(token.text)) ||
    has('gets', 'receives', 'receive') ||
    tokens.some(
      (token, i) =>
        token.kind === 'address' && /^[-—–:]$/.test(tokens[i + 1]?.text ?? '') && tokens[i + 2]?.kind === 'amount',
    ) ||
    (has('payment', 'payout', 'transfer') && hasAmount && hasAddress && !has('refund', 'split')) ||
    tokens.some((token, i) => token.kind === 'amount' && tokens.slice(i + 1, i + 4).some((t) => isWord(t, 'to')));
  // "Amount: 275 USDC / Wallet: 0x… / Ref: MSA-0318 / Approved by: Achieng": a payout ticket's
  // labelled lines. One that tells what already happened ("Status: sent", "Paid: …") is a receipt.
  const labelled = (...labels: string[]): boolean =>
    tokens.some((token, i) => isWord(token, ...labels) && tokens[i + 1]?.text === ':');
  const ticket =
    labelled('amount') &&
    tokens.some(
      (token, i) =>
        isWord(token, 'wallet', 'address', 'recipient', 'beneficiary') &&
        tokens[i + 1]?.text === ':' &&
        tokens[i + 2]?.kind === 'address',
    ) &&
    !words.some(
      (word, k) =>
        STATUS_WORDS.has(word) ||
        (PAST.has(word) && !(['approved', 'authorised', 'authorized'].includes(word) && words[k + 1] === 'by')),
    );
  const payoutVerb = words.some((word) => PAYOUT_VERBS.has(word)) || ((arrow || ticket) && hasAddress && hasAmount);
  if (payoutVerb && (hasAddress || !hasId)) {
    if (has('paid', 'settled') && !hasAddress && hasId) return 'payment_status';
    return 'payout';
  }
  if (
    !hasId &&
    !hasAddress &&
    has('payments', 'transactions') &&
    (has('list', 'show', 'recent', 'latest', 'last', 'see', 'get', 'view', 'all', 'which', 'any') ||
      // "pending payments?", "refunded payments": a status names which.
      words.some((word) => LIST_STATUS_WORDS.has(word)))
  )
    return 'list_payments';
  const statusWord =
    words.some((word) => STATUS_WORDS.has(word)) || has('where', 'what', "what's", 'whats', 'how', 'happened');
  // "he paid shipping two times on pay_…" tells what someone did more than once (a story the
  // request beside it may use), where "has pay_… been paid?" asks.
  const tellsOfSomeone =
    aboutSomeone &&
    tokens.at(-1)?.text !== '?' &&
    words.some((word) => PAST.has(word)) &&
    words.some((word) => REPETITION.has(word) || word === 'times');
  if (
    hasId &&
    !tellsOfSomeone &&
    (statusWord ||
      tokens.every(
        (token) =>
          token.kind === 'payment_id' ||
          token.kind === 'punct' ||
          (token.kind === 'word' && !CONTROL_WORDS.has(token.lower) && token.lower.length <= 3),
      ))
  )
    return 'payment_status';
  // "can you confirm it came through?", "pls check whether order KSM-2291 was paid": a request to
  // check is a question too.
  const asksToCheck = words.findIndex((word) => ['confirm', 'check', 'verify'].includes(word));
  const checks =
    asksToCheck > 0 &&
    words
      .slice(0, asksToCheck)
      .every((word) => ['can', 'could', 'would', 'you', 'please', 'pls', 'kindly'].includes(word)) &&
    words.slice(asksToCheck + 1).some((word) => STATUS_WORDS.has(word) && word !== 'check');
  // "has order INV-330 been paid?": a question about an order named by its reference.
  if (
    hasReference &&
    !hasId &&
    !hasAddress &&
    !hasAmount &&
    statusWord &&
    // "where is the payment for order A-77?", "any update on order A-77?": a question word leads too.
    (['has', 'is', 'did', 'was', 'status', 'where', "where's", 'any', 'what', "what's", 'whats', 'how'].includes(
      lead ?? '',
    ) ||
      tokens.at(-1)?.text === '?' ||
      checks)
  )
    return 'payment_status';
  // "has the customer who bought the shea butter paid?": a payment described by what was bought;
  // "has the 'wedding cake deposit' been paid?": by its quoted description.
  if (
    !hasId &&
    !hasAddress &&
    !hasAmount &&
    (words.some((word) => BOUGHT.has(word)) || tokens.some((t) => t.kind === 'quoted' && !t.carries)) &&
    words.some((word) => STATUS_WORDS.has(word) && word !== 'check') &&
    ['has', 'is', 'did', 'was', 'have'].includes(lead ?? '')
  )
    return 'payment_status';
  // "did the payment for the 2 crates of Malta Guinness go through?": a payment described by what
  // it was for; a count there describes the order, an amount with a currency would be another ask.
  if (
    !hasId &&
    !hasAddress &&
    tokens.every((token) => token.kind !== 'amount' || token.currency === undefined) &&
    tokens.some((token, i) => isWord(token, 'payment', 'order') && isWord(tokens[i + 1], 'for')) &&
    (words.some((word) => STATUS_WORDS.has(word) && word !== 'check') ||
      tokens.some((token, i) => isWord(token, 'come', 'came') && isWord(tokens[i + 1], 'in'))) &&
    ['has', 'is', 'did', 'was', 'have'].includes(lead ?? '')
  )
    return 'payment_status';
  if (
    !hasId &&
    !hasAddress &&
    pronoun &&
    words.some((word) => STATUS_WORDS.has(word) && word !== 'check') &&
    // A question ("has it cleared?"), not a statement ("they insist they paid").
    (['has', 'is', 'did', 'was', 'does', 'have', "hasn't", "isn't", "didn't"].includes(lead ?? '') || checks)
  )
    return 'payment_status';
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Clauses
// ---------------------------------------------------------------------------------------------

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

/** How many times a word repeats an action. */
const REPEATS: ReadonlyMap<string, number> = new Map([
  ['twice', 2],
  ['thrice', 3],
]);

/** "once to 0x…": one payout to that recipient. */
function onceTo(tokens: readonly Token[], i: number): boolean {
  return isWord(tokens[i], 'once') && isWord(tokens[i + 1], 'to') && tokens[i + 2]?.kind === 'address';
}

function countOnceTo(tokens: readonly Token[]): number {
  return tokens.filter((_t, i) => onceTo(tokens, i)).length;
}

/** Nouns a split's recipients are counted in: "our 7 riders", "these 6 people". */
const RECIPIENT_NOUNS = new Set([
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
function recipientsNamed(tokens: readonly Token[], i: number, significant: (t: Token) => boolean): number | undefined {
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
const STORY_VERBS = new Set([
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
    const t = tokens[i]!;
    if (
      isWord(t, 'let') &&
      isWord(tokens[i + 1], 'me', 'us') &&
      isWord(tokens[i + 2], 'know') &&
      isWord(tokens[i + 3], 'if', 'when', 'once', 'whether', 'how', 'as', 'that', 'you')
    ) {
      // The rest of the sentence is the courtesy ("let me know if you need anything").
      while (i < tokens.length && !(tokens[i]!.kind === 'punct' && /^[.;!?]$/.test(tokens[i]!.text))) i++;
      i--;
      continue;
    }
    if (isWord(t, 'if') && isWord(tokens[i + 1], 'possible', 'you')) {
      const next = tokens[i + 1] as Extract<Token, { kind: 'word' }>;
      if (next.lower === 'possible') {
        i += 1;
        continue;
      }
      // "if you can", "if you don't mind", "if you could"
      if (isWord(tokens[i + 2], 'can', 'could', 'would', 'please')) {
        i += 2;
        continue;
      }
      if (isWord(tokens[i + 2], "don't", 'dont') && isWord(tokens[i + 3], 'mind')) {
        i += 3;
        continue;
      }
    }
    // "when you have a minute", "whenever you get a chance": when the message is read.
    if (
      isWord(t, 'when', 'whenever') &&
      isWord(tokens[i + 1], 'you') &&
      isWord(tokens[i + 2], 'have', 'get') &&
      isWord(tokens[i + 3], 'a', 'the') &&
      isWord(tokens[i + 4], 'minute', 'moment', 'chance', 'sec', 'second')
    ) {
      i += 4;
      continue;
    }
    // "whenever you see this", "when you get this", "when you can": when the message is read.
    if (
      isWord(t, 'when', 'whenever') &&
      isWord(tokens[i + 1], 'you') &&
      ((isWord(tokens[i + 2], 'see', 'get', 'read') && isWord(tokens[i + 3], 'this', 'it', 'am')) ||
        (isWord(tokens[i + 2], 'can') && !tokens[i + 3]?.kind.match(/word|amount|date/)))
    ) {
      i += isWord(tokens[i + 2], 'can') ? 2 : 3;
      continue;
    }
    // "that is all", "that's all": the message ends.
    if (
      (isWord(t, 'that') && isWord(tokens[i + 1], 'is') && isWord(tokens[i + 2], 'all')) ||
      (isWord(t, "that's", 'thats') && isWord(tokens[i + 1], 'all'))
    ) {
      const end = isWord(t, 'that') ? i + 2 : i + 1;
      // "…, that is all, thank you": only thanks may follow before the message or sentence ends.
      let after = end + 1;
      while (tokens[after]?.text === ',' || isWord(tokens[after], 'thank', 'thanks', 'you', 'cheers', 'bye')) after++;
      if (tokens[after] === undefined || /^[.;!?]$/.test(tokens[after]!.text)) {
        i = end;
        continue;
      }
    }
    if (isWord(t, 'no') && isWord(tokens[i + 1], 'problem', 'worries', 'rush', 'hurry', 'pressure', 'stress')) {
      // "no rush, but please pay …": courtesy, and the "but" that leads to the request.
      i += 1;
      while (tokens[i + 1]?.text === ',') i++;
      if (isWord(tokens[i + 1], 'but')) i++;
      continue;
    }
    // "(…, pls just once)", "…, only once.": the message asks for one run, as it does anyway.
    // "…, just once this time", "so only once please".
    const onceEnd =
      isWord(tokens[i + 2], 'this') && isWord(tokens[i + 3], 'time')
        ? i + 3
        : isWord(tokens[i + 2], 'please', 'pls', 'abeg')
          ? i + 2
          : i + 1;
    if (
      isWord(t, 'just', 'only') &&
      isWord(tokens[i + 1], 'once') &&
      (tokens[onceEnd + 1] === undefined || /^[.;!?,)]$/.test(tokens[onceEnd + 1]!.text))
    ) {
      i = onceEnd;
      continue;
    }
    // "…, just one payment", "only one transfer": the message asks for one, as it says.
    if (
      isWord(t, 'just', 'only') &&
      ['one', '1', 'a'].includes(tokens[i + 1]?.text.toLowerCase() ?? '') &&
      (isWord(tokens[i + 2], 'payment', 'payout', 'transfer', 'time') ||
        (isWord(tokens[i + 2], 'single') && isWord(tokens[i + 3], 'payment', 'payout', 'transfer'))) &&
      (tokens[i + (isWord(tokens[i + 2], 'single') ? 4 : 3)] === undefined ||
        /^[.;!?,]$/.test(tokens[i + (isWord(tokens[i + 2], 'single') ? 4 : 3)]!.text))
    ) {
      i += isWord(tokens[i + 2], 'single') ? 3 : 2;
      continue;
    }
    // "exactly 33 usdc, no more no less": emphasis on the amount said.
    if (
      isWord(t, 'no', 'nothing') &&
      isWord(tokens[i + 1], 'more') &&
      tokens.slice(i + 2, i + 5).some((u, k, rest) => isWord(u, 'no', 'nothing') && isWord(rest[k + 1], 'less'))
    ) {
      while (!isWord(tokens[i], 'less')) i++;
      continue;
    }
    // "just send 15 usdc to 0x…, nothing more", "— not a cent more": emphasis on the amount said,
    // at the end of a sentence.
    const coin =
      isWord(t, 'not') &&
      isWord(tokens[i + 1], 'a') &&
      isWord(tokens[i + 2], 'cent', 'kobo', 'penny', 'pesewa', 'dime');
    const more = coin ? i + 3 : i + 1;
    if (
      (isWord(t, 'nothing') || coin) &&
      isWord(tokens[more], 'more', 'else', 'extra') &&
      (tokens[more + 1] === undefined || /^[.;!?]$/.test(tokens[more + 1]!.text))
    ) {
      i = more;
      continue;
    }
    if (isWord(t, 'not') && isWord(tokens[i + 1], 'urgent')) {
      // "it's not urgent but pls pay …": courtesy, and the "but" that leads to the request.
      i += isWord(tokens[i + 2], 'but') ? 2 : 1;
      continue;
    }
    if (isWord(t, 'thanks', 'thank') && isWord(tokens[i + 1], 'in') && isWord(tokens[i + 2], 'advance')) {
      i += 2;
      continue;
    }
    if (
      isWord(t, 'as') &&
      isWord(tokens[i + 1], 'soon') &&
      isWord(tokens[i + 2], 'as') &&
      isWord(tokens[i + 3], 'possible', 'you')
    ) {
      i += 3;
      continue;
    }
    out.push(t);
  }
  return out;
}

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

// ---------------------------------------------------------------------------------------------
// Slots
// ---------------------------------------------------------------------------------------------

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
      // "return to https://…" names a payment's redirect; "customer return one of the bags" tells
      // what the buyer did, and stays in the story.
      const returnsTo =
        !isWord(token, 'return', 'returning') || next?.kind === 'url' || isWord(next, 'to', 'url', 'link', ':');
      if (FREE_TEXT_STOP.has(token.lower) && returnsTo) break;
      if (SELF_CORRECTION.has(token.lower) || (isWord(token, 'my') && isWord(next, 'oops'))) break;
      // "refund the customer for order NB-4410": the order named is the payment, not the reason.
      // Beside a payment id it is the story ("refund pay_…, customer cancelled order #4471").
      if (kind === 'reason' && referenceAt(tokens, i + 1) !== undefined && !tokens.some((t) => t.kind === 'payment_id'))
        break;
      if (isWord(token, 'to') && (next?.kind === 'address' || next?.kind === 'url')) break;
      if (isWord(token, 'with') && next?.kind === 'word' && FREE_TEXT_STOP.has(next.lower)) break;
      const quantityNext = next !== undefined && isQuantity(next, tokens[i + 2]);
      if (
        isWord(token, 'and', '&') &&
        !quantityNext &&
        (next === undefined || (next.kind !== 'word' && next.kind !== 'code' && next.kind !== 'quoted'))
      )
        break;
      if (NEGATIONS.has(token.lower)) {
        // "…, not 500 naira", "…, not all of it": a negation of a value or of how much is no reason;
        // it ends the text and is left for the grammar to place (or ask about).
        let k = i + 1;
        while (isWord(tokens[k], 'a', 'an', 'the')) k++;
        const negated = tokens[k];
        // "…, not yet", "…, not now", "…, no": a negation of the request itself.
        if (negated === undefined || negated.kind === 'punct' || isWord(negated, 'yet', 'now', 'today', 'anymore'))
          break;
        if (
          ['amount', 'fraction', 'percent', 'ratio', 'payment_id', 'address'].includes(negated.kind) ||
          (negated.kind === 'word' && (WHOLE_EXTENT.has(negated.lower) || PART_EXTENT.has(negated.lower)))
        )
          break;
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
        if (!allowed) break;
        consumed.push(token.index);
      }
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

/** Words that say a refund is whole, or a part of the payment. */
const WHOLE_EXTENT = new Set(['full', 'fully', 'all', 'everything', 'whole', 'entire', 'entirely', 'completely']);
const PART_EXTENT = new Set(['partially', 'partly', 'partial', 'part', 'half']);

/**
 * "not (a|the) full refund", "not all of it", "not half", "not partially" at `at`: the words of a
 * negated extent, when the rest of the clause states the other extent (an amount or a share
 * against "full"; "fully", "in full" against "half"). Otherwise undefined: the "not" stays to be
 * placed, and the clause is asked back.
 */
function negatedExtent(tokens: readonly Token[], at: number): Token[] | undefined {
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

/** Words that start a sentence about what happened: who or what it is about. */
const STATEMENT_SUBJECTS = [
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

const LIST_STATUS_WORDS: ReadonlyMap<string, PaymentStatus> = new Map(
  PAYMENT_STATUSES.map((status) => [status.replace('_', ' '), status] as const),
);

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
      case 'amount': {
        // "refund ₦4,000 of pay_… - she paid the delivery fee twice, so return the extra ₦4,000",
        // "refund the extra GH₵ 30": the part paid over, said with its currency, is the refund's
        // amount; said again, the same amount is no second one.
        if (
          intent === 'refund' &&
          token.currency !== undefined &&
          isWord(tokens[i - 1], 'extra') &&
          isWord(tokens[i - 2], 'the')
        ) {
          use(tokens[i - 1]!);
          if (slots.amounts.some((amount) => sameAmount(amount, token))) {
            use(token);
            break;
          }
        }
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
          i++;
          break;
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
          if (next?.kind === 'word') {
            use(next);
            i++;
          }
          break;
        }
        // "evenly among our 6 stall keepers:": a count after "among", named by any plain words up
        // to the colon before the list, counts the recipients too (the addresses must match it).
        const named = recipientsNamed(tokens, i, significant);
        if (
          intent === 'split' &&
          token.currency === undefined &&
          token.number.type === 'exact' &&
          named !== undefined
        ) {
          slots.recipients = Number(token.number.text);
          use(token, ...tokens.slice(i + 1, named));
          i = named - 1;
          break;
        }
        // "three ways", "3 ways": the number of equal shares.
        if (isWord(next, 'ways', 'way') && token.number.type === 'exact' && /^\d+$/.test(token.number.text)) {
          slots.equal = { ways: Number(token.number.text) };
          use(token, next!);
          i++;
          break;
        }
        // "Guest checked out 2 nights early — refund KSh 9,000": a count in the story told before
        // the request. After the verb a count shapes the action ("in two instalments", "among 3
        // people") and is left to be placed.
        // After the request, a statement of its own after a comma tells the story too: "refund 2,000
        // naira on order ORD-7781, customer returned one plate".
        const verb = tokens.findIndex((t) => t.kind === 'word' && MONEY_VERBS.has(t.lower));
        if (
          isQuantity(token, next) &&
          i < verb &&
          tokens.slice(0, i).some((t) => t.kind === 'word' && STORY_VERBS.has(t.lower)) &&
          tokens.some((t, k) => k > verb && t.kind === 'amount')
        ) {
          use(token);
          break;
        }
        // "…, one cup was chipped", "…, 2 items came back", "— size 44 was too small": a bare number
        // in a statement after the request tells the story. Beside an amount said with its currency
        // it is left out; with none, the refund may be meant for those items only, so it stays to be
        // placed and the clause is asked back.
        if (token.currency === undefined && toldAfterRequest(tokens, i)) {
          // "…, card was charged 2 times": how often it happened, which no refund is for.
          // "…, 3 times as was agreed" says how often to act, and stays to be placed.
          if (isWord(next, 'times') && tellsThePast(tokens, i + 1)) use(token, next!);
          // "…, customer ordered 5 but only 3 arrived": beside the part said, every count there is story.
          const partSaid =
            slots.full ||
            slots.fraction !== undefined ||
            slots.percents.length > 0 ||
            slots.amounts.some((amount) => amount.currency !== undefined);
          if (partSaid && (isQuantity(token, next) || (isCount(token) && !isWord(next, 'times', 'as', 'x'))))
            use(token);
          break;
        }
        // "refund 2 of the plates on pay_…": a count of things is no amount of money; it stays to be
        // placed, and the clause is asked back.
        if (isCountOf(tokens, i)) break;
        // "last 5 payments": a list's length.
        if (intent === 'list_payments' && token.number.type === 'exact' && /^\d+$/.test(token.number.text)) {
          slots.limit = Number(token.number.text);
          use(token);
          break;
        }
        // "in two instalments", "2 crates", "3 people": a number before a count noun counts things and
        // is never an amount; left unplaced, the clause is asked back.
        if (token.currency === undefined && isCountNoun(next)) break;
        // "customer charged two times" tells how often it happened; "refund pay_… 2 times" says how
        // often to act, which is asked. Either way the number is no amount (it refunded 2).
        if (token.currency === undefined && isWord(next, 'times')) {
          if (tellsThePast(tokens, i + 1)) use(token, next!);
          break;
        }
        slots.amounts.push(token);
        use(token);
        if (isWord(next, 'each', 'apiece')) {
          slots.each = true;
          use(next!);
          i++;
        }
        break;
      }
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
          break;
        }
        if (isWord(tokens[i - 1], 'by') && (intent === 'payout' || intent === 'refund') && !slots.allPayments) {
          // "he needs it by Friday": a deadline, which paying now meets.
          use(tokens[i - 1]!, token);
          break;
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
          break;
        }
        if (intent === 'revenue' || intent === 'split' || intent === 'refund' || intent === 'list_payments') {
          if (token.range === undefined) problem = `"${token.text}" is not a past period I can read`;
          if (slots.date !== undefined) problem = 'two periods: say one ("from March 1 to March 5" is one)';
          slots.date = token.range;
          use(token);
        }
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
        if (token.text === '(' && (intent === 'payout' || intent === 'create_payment' || intent === 'refund')) {
          const {
            value,
            end,
            consumed: inText,
            runsInto,
          } = freeText(tokens, i + 1, intent === 'refund' ? 'reason' : 'memo');
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
      case 'word': {
        const w = token.lower;
        const labelled = tokens.slice(i + 1, i + 3).find((t) => t.kind !== 'punct');
        if ((w === 'address' || w === 'wallet') && labelled?.kind === 'address') {
          // "to_address=0x…", "Wallet: 0x…": the word labels the address that follows.
          use(token);
        } else if ((w === 'approved' || w === 'authorised' || w === 'authorized') && isWord(next, 'by')) {
          // "Approved by: Ngozi" on the merchant's own ticket: who signed it off, not an approval
          // of a held action (only a person on the dashboard or an approvals key does that).
          use(token);
        } else if (w === 'each' || w === 'apiece' || (w === 'kila' && isWord(next, 'mmoja'))) {
          // Swahili "kila mmoja": each one.
          slots.each = true;
          use(token);
          if (w === 'kila') i++;
        } else if (
          ['first', 'firstly', 'secondly', 'finally', 'lastly'].includes(w) &&
          tokens
            .slice(0, i)
            .every((t) => t.kind === 'punct' || isWord(t, 'okay', 'ok', 'so', 'and', 'uh', 'um', 'then'))
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
        } else if (w === 'sawa' && isWord(next, 'sawa')) {
          // Swahili "sawa sawa": equally.
          slots.equal = { ways: undefined };
          i++;
        } else if (
          ['minus', 'less', 'except', 'excluding', 'without'].includes(w) &&
          intent === 'refund' &&
          slots.less === undefined
        ) {
          // "refund pay_… minus the 500 naira delivery fee": all but that amount.
          const kept = tokens.slice(i + 1, i + 3).find((t): t is AmountToken => t.kind === 'amount');
          if (kept !== undefined) {
            slots.less = kept;
            use(token, kept);
            i = tokens.indexOf(kept);
            // "… the 500 naira delivery fee": the words naming what is kept back.
            for (const word of tokens.slice(i + 1, i + 4))
              if (word.kind === 'word' && ['fee', 'fees', 'charge', 'charges', 'cost', 'costs'].includes(word.lower))
                use(word);
          }
        } else if (w === 'equal' && isWord(next, 'equal')) {
          // Pidgin "equal equal": equally.
          slots.equal = { ways: undefined };
          use(token, next!);
          i++;
        } else if (w === 'equally' || w === 'evenly' || (w === 'equal' && isWord(next, 'shares', 'parts', 'split'))) {
          slots.equal = { ways: undefined };
          use(token);
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
          i = tokens.indexOf(phrase.at(-1)!);
        } else if ((w === 'not' || w === 'no') && intent === 'refund' && negatedExtent(tokens, i) !== undefined) {
          // "not the full amount, just 5000 naira", "in full, not half", "half, not all of it": the
          // extent ruled out is the other one from the extent the refund states.
          const phrase = negatedExtent(tokens, i)!;
          use(...phrase);
          // "refund pay_… but not in full — half": the "but" that leads it.
          if (isWord(tokens[i - 1], 'but')) use(tokens[i - 1]!);
          i = tokens.indexOf(phrase.at(-1)!);
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
            i++;
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
        } else if (
          intent === 'payout' &&
          (onceTo(tokens, i) || (REPEATS.has(w) && REPEATS.get(w) === countOnceTo(tokens)))
        ) {
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
          const which =
            intent === 'refund' && slots.paymentIds.length === 0 && !tokens.some((t) => t.kind === 'payment_id');
          if (which) slots.duplicates = true;
          if (intent === 'refund' && (which || w.startsWith('duplicate'))) use(token);
        } else if ((w === 'only' || w === 'just') && isMoneyIntent(intent)) {
          // "but only half of it", "just 1,000 naira though", "send only 20 usdc", "refund only
          // pay_A": the value that follows is the one meant, no more. "only once" stresses one run,
          // unless something follows it ("only once delivered" is a condition).
          // "only part of pay_…: GH₵ 120", "only the deposit of 150 USDC": the value said after a
          // few plain words naming it (no word of condition between).
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
          } else if (
            isWord(next, 'once') &&
            (after === undefined || isWord(after, 'pls', 'please', 'thanks', 'abeg'))
          ) {
            use(token, next!);
            i++;
          }
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
        } else if ((w === 'last' || w === 'latest' || w === 'recent') && intent === 'list_payments') {
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
        } else if (MEMO_LABELS.has(w)) {
          if (w === 'for' && next?.kind === 'date') break;
          // "did the payment for order AB-12 come through?": the order named is the payment.
          if (
            w === 'for' &&
            FINDS_PAYMENTS.has(intent ?? 'approve') &&
            referenceAt(tokens, i + 2) !== undefined &&
            !tokens.some((t) => t.kind === 'payment_id')
          )
            break;
          const start = next?.kind === 'punct' && (next.text === ':' || next.text === '=') ? i + 2 : i + 1;
          const {
            value,
            end,
            consumed: inText,
            runsInto,
          } = freeText(tokens, start, intent === 'refund' ? 'reason' : 'memo');
          if (runsInto)
            problem ??= `"${value}" runs into "${runsInto.text}": I cannot tell whether it belongs to the text; put it in its own words, or after a comma`;
          if (
            value !== '' &&
            !(w === 'for' && /^(?:me|us|it|them|this|that|the\s+(?:customer|client))$/i.test(value))
          ) {
            use(token);
            for (const index of inText) consumed.add(index);
            if (intent === 'refund') slots.reason ??= value;
            else {
              slots.memos.push(value);
              slots.memo ??= value;
            }
            i = end - 1;
          }
        } else if (
          w === 'because' ||
          w === 'reason' ||
          w === 'cos' ||
          w === 'since' ||
          (w === 'due' && isWord(next, 'to')) ||
          (w === 'as' && isWord(next, 'per', 'requested'))
        ) {
          const start = w === 'due' || (w === 'reason' && next?.kind === 'punct') ? i + 2 : i + 1;
          // "pay 50 usdc to 0x… because he fixed the roof", a ticket's "Reason: March commission":
          // why a payout is made is what it is for, its memo (one only: a second text is asked).
          const memo = intent === 'payout' && slots.memo === undefined;
          const { value, end, consumed: inText, runsInto } = freeText(tokens, start, memo ? 'memo' : 'reason');
          if (runsInto)
            problem ??= `"${value}" runs into "${runsInto.text}": I cannot tell whether it belongs to the text; put it in its own words, or after a comma`;
          if (value !== '') {
            for (const index of inText) consumed.add(index);
            if (memo) {
              slots.memos.push(value);
              slots.memo = value;
            } else slots.reason ??= value;
            i = end - 1;
          }
        } else if (w === 'ref' || w === 'reference' || w === 'ref.') {
          let j = i + 1;
          while (tokens[j]?.kind === 'punct' && /^[:#]$/.test(tokens[j]!.text)) j++;
          if (isWord(tokens[j], 'no', 'number')) j++;
          const ref = tokens[j];
          if (
            ref !== undefined &&
            (ref.kind === 'code' ||
              (ref.kind === 'word' && !significant(ref)) ||
              (ref.kind === 'amount' &&
                ref.number.type === 'exact' &&
                ref.currency === undefined &&
                /^\d+$/.test(ref.text)))
          ) {
            const value = ref.kind === 'code' ? ref.value.replace(/^#/, '') : ref.text;
            // A refund's or a status read's "ref" names the payment; a payout's or a split's, its own.
            if ((intent === 'refund' || intent === 'payment_status') && slots.paymentIds.length === 0)
              slots.lookup = { reference: value };
            else slots.reference = value;
            use(token, ref);
            i = j;
          }
        } else if (intent === 'list_payments' && LIST_STATUS_WORDS.has(w)) {
          slots.status = LIST_STATUS_WORDS.get(w);
        } else if (intent === 'list_payments' && w === 'partially' && isWord(next, 'refunded')) {
          slots.status = 'partially_refunded';
          use(token);
          i++;
        } else if (REVENUE_WORDS.has(w)) {
          slots.revenueWord = true;
        }
        break;
      }
      default:
        break;
    }
  }
  // "refund pay_… for the 3 missing items", "…, she kept one of the two bags": a count in the
  // reason of a refund that says no amount, share or "in full" may be what the refund is for (those
  // items only): it stays to be placed, and the clause is asked back.
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
  return problem === undefined ? { slots, consumed } : { slots, consumed, problem };
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
/** "the customer wey buy …", "who bought …": the words after describe what was paid for. */
const BOUGHT = new Set(['buy', 'bought', 'purchased', 'ordered']);

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
