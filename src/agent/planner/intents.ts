import { type Intent, isWord } from './clause.ts';
import { BOUGHT, LIST_STATUS_WORDS, referenceAt, STATEMENT_SUBJECTS } from './phrases.ts';
import { PAST, REPETITION } from './counts.ts';
import { CONTROL_WORDS } from './lexicon.ts';
import type { Token } from './token-types.ts';

/**
 * The offline planner's intent reader: which action a clause asks for (a payout, a refund, a split,
 * a new payment, a status or revenue question, a list of payments), found from its verbs and nouns
 * in any word order, with the verb lists and the fillers a request may open with. It decides the
 * intent only; the clause's amounts and recipients are read by slots.ts.
 */

// Misspelt action words are read by the lexer's typo rule (tokens.ts, typoOf). Verbs merchants mix
// in: Swahili lipa/tuma (pay/send), rudisha (give back), gawanya (divide); Twi tua, Hausa biya (pay);
// French:
// rembourser (refund), payer / envoyer (pay, send). "semd" and "rfd" are kept as written:
// no edit rule reaches them without reaching real words too.
export const PAYOUT_VERBS = new Set([
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
export const REFUND_VERBS = new Set([
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
export const SPLIT_VERBS = new Set(['split', 'divide', 'distribute', 'share', 'gawanya']);
/** Every verb that moves money, in any form the grammar reads ("moving all funds", "paying"). */
export const MONEY_VERBS: ReadonlySet<string> = new Set([
  ...PAYOUT_VERBS,
  ...REFUND_VERBS,
  ...SPLIT_VERBS,
  'moving',
  'sending',
  'paying',
]);
export const CREATE_VERBS = new Set([
  'create',
  'make',
  'generate',
  'open',
  'new',
  'raise',
  'issue',
  'setup',
  'set',
  'start',
]);
export const PAYMENT_NOUNS = new Set(['payment', 'checkout', 'link', 'session', 'invoice', 'request']);
export const REVENUE_WORDS = new Set([
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
export const STATUS_WORDS = new Set([
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

export const LEADING_FILLERS = new Set([
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

/** What a clause's intent is read from: its words, and which kinds of token it holds. */
interface ClauseFeatures {
  readonly tokens: readonly Token[];
  readonly words: readonly string[];
  readonly has: (...list: string[]) => boolean;
  readonly hasId: boolean;
  readonly hasReference: boolean;
  readonly hasAddress: boolean;
  readonly hasDate: boolean;
  /** A date that names a period: "how much is in my account now?" asks about the present. */
  readonly hasPeriod: boolean;
  readonly hasUrl: boolean;
  readonly hasAmount: boolean;
  readonly pronoun: boolean;
  readonly first: string | undefined;
  /** The first word past the fillers: a verb must lead to ask ("create a payment …"). */
  readonly lead: string | undefined;
  /**
   * A sentence about someone ("the customer wants money back…", "The customer received a damaged
   * item yesterday") tells a story, which a request may follow.
   */
  readonly aboutSomeone: boolean;
}

/** One intent's reading: the intent when the clause says it, else undefined to try the next. */
type IntentReading = (clause: ClauseFeatures) => Intent | undefined;

/** Each clause's intent, from its words; undefined when it has none (chatter, or a fragment). */
export function intentOf(tokens: readonly Token[]): Intent | undefined {
  const words = tokens.flatMap((token) => (token.kind === 'word' ? [token.lower] : []));
  const first = words[0];
  const clause: ClauseFeatures = {
    tokens,
    words,
    has: (...list) => list.some((word) => words.includes(word)),
    hasId: tokens.some((token) => token.kind === 'payment_id' || token.kind === 'bad_payment_id'),
    hasReference: tokens.some((_token, i) => referenceAt(tokens, i) !== undefined),
    hasAddress: tokens.some((token) => token.kind === 'address' || token.kind === 'bad_address'),
    hasDate: tokens.some((token) => token.kind === 'date'),
    hasPeriod: tokens.some((token) => token.kind === 'date' && !/^(?:right\s+)?now$/i.test(token.text)),
    hasUrl: tokens.some((token) => token.kind === 'url'),
    hasAmount: tokens.some((token) => token.kind === 'amount'),
    pronoun: words.some((word) => ['it', 'this', 'that', 'they', 'them'].includes(word)),
    first,
    lead: leadingWord(tokens),
    aboutSomeone: STATEMENT_SUBJECTS.includes(words[0] === 'the' ? (words[1] ?? '') : (first ?? '')),
  };
  for (const read of INTENT_READINGS) {
    const intent = read(clause);
    if (intent !== undefined) return intent;
  }
  return undefined;
}

/** Approving a held action: "approve …", "please approve all pending confirmations". */
const approveIntent: IntentReading = ({ tokens, first }) => {
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
  return undefined;
};

/** A refund: its verbs, "money back" for a payment or an order, "return the money". */
const refundIntent: IntentReading = ({ words, has, hasId, hasReference, aboutSomeone }) => {
  if (words.some((word) => REFUND_VERBS.has(word) || word === 'refunds')) {
    // "has pay_… been refunded?" asks; "refund pay_…" acts.
    if (has('refunded') && !words.some((word) => REFUND_VERBS.has(word))) return 'payment_status';
    return 'refund';
  }
  // "money back for order #A-7731": an order named by its reference stands for the payment; "the
  // customer wants money back for order #A-7731" tells what someone wants, which a request may follow.
  if (
    (hasId || (hasReference && !aboutSomeone)) &&
    has('back') &&
    has('money', 'give', 'pay', 'send', 'return', 'cash', 'funds', 'customer', 'client', 'buyer')
  )
    return 'refund';
  if (hasId && has('return') && has('money', 'funds', 'payment', 'cash')) return 'refund';
  return undefined;
};

/** A split of revenue between recipients. */
const splitIntent: IntentReading = ({ words, has, hasAddress }) => {
  if (words.some((word) => SPLIT_VERBS.has(word)) && (hasAddress || has('between', 'among', 'amongst', 'with')))
    return 'split';
  return undefined;
};

/** A new payment: a create verb or a charge that leads, or a link to send the payer back to. */
const createIntent: IntentReading = ({ words, has, hasId, hasAddress, hasUrl, lead }) => {
  // "create a payment …" asks; "the new checkout links worked great" tells: the verb must lead.
  const createVerb =
    (lead !== undefined && (CREATE_VERBS.has(lead) || lead === 'charge' || lead === 'bill')) ||
    has('create', 'generate');
  const paymentNoun = words.some((word) => PAYMENT_NOUNS.has(word));
  if (createVerb && (paymentNoun || has('charge', 'bill')) && !hasAddress) return 'create_payment';
  if (hasUrl && (paymentNoun || has('charge', 'bill')) && !hasAddress && !hasId) return 'create_payment';
  return undefined;
};

/** What came in over a period. */
const revenueIntent: IntentReading = ({
  tokens,
  words,
  has,
  hasId,
  hasAddress,
  hasDate,
  hasPeriod,
  hasAmount,
  aboutSomeone,
}) => {
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
  return undefined;
};

/** The balance: what is available to pay out. */
const balanceIntent: IntentReading = ({ has, hasId, hasAddress, hasDate, hasPeriod, hasAmount }) => {
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
  return undefined;
};

/** What waits for approval. */
const pendingIntent: IntentReading = ({ has, hasId, hasAmount }) => {
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
  return undefined;
};

/** A payout: its verbs, an arrow ("100 USDC → 0x…"), or a payout ticket's labelled lines. */
const payoutIntent: IntentReading = ({ tokens, words, has, hasId, hasAddress, hasAmount }) => {
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
  return undefined;
};

/** A list of payments, with the status it names. */
const listIntent: IntentReading = ({ words, has, hasId, hasAddress }) => {
  if (
    !hasId &&
    !hasAddress &&
    has('payments', 'transactions') &&
    (has('list', 'show', 'recent', 'latest', 'last', 'see', 'get', 'view', 'all', 'which', 'any') ||
      // "pending payments?", "refunded payments": a status names which.
      words.some((word) => LIST_STATUS_WORDS.has(word)))
  )
    return 'list_payments';
  return undefined;
};

/** A question about one payment: by id, by reference, by what was bought or what it was for, or "it". */
const statusIntent: IntentReading = ({
  tokens,
  words,
  has,
  hasId,
  hasReference,
  hasAddress,
  hasAmount,
  pronoun,
  lead,
  aboutSomeone,
}) => {
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
};

/**
 * The readings in the order they are tried: the first intent a clause says is its intent (a refund
 * verb makes a refund before anything else is asked; a payout verb before a status word).
 */
const INTENT_READINGS: readonly IntentReading[] = [
  approveIntent,
  refundIntent,
  splitIntent,
  createIntent,
  revenueIntent,
  balanceIntent,
  pendingIntent,
  payoutIntent,
  listIntent,
  statusIntent,
];
