import { CURRENCIES, type CurrencyCode } from '../../domain/money.ts';

/**
 * The offline planner's lexicon: the words that change what an instruction means and that no free
 * text may hold (conditions and waits, negations, tests, repetition, corrections, injected
 * authority), grouped as hard and soft control words; the words that hold money back on every
 * model's path; the actions the agent cannot take; and the fraction, currency and symbol words the
 * lexer reads amounts with. Plain lists: nothing here reads a message.
 */

// Words
// ---------------------------------------------------------------------------------------------

/**
 * Words that change what an instruction means and that free text (a memo, a reason, a description)
 * may never hold: conditions, waits, negations, corrections, sequencing, repetition, dry runs,
 * and the words of injected authority.
 */
/** Conditions and waits: "if", "after delivery", "wait until Friday", "kesho", "every month". */
const CONDITION_AND_WAIT_WORDS = [
  'if',
  'unless',
  'until',
  'till',
  'after',
  'before',
  'when',
  'whenever',
  'once',
  'only',
  'provided',
  'assuming',
  'otherwise',
  'wait',
  'hold',
  'later',
  'tomorrow',
  'tonight',
  'kesho',
  // "tomorrow" in Twi, Hausa, Igbo and Ewe: a wait, as kesho is in Swahili.
  'ɔkyena',
  'okyena',
  'gobe',
  'echi',
  'etsɔ',
  'baadaye',
  'ijayo',
  'schedule',
  'scheduled',
  'every',
  'daily',
  'weekly',
  'monthly',
  'recurring',
];

/** Repetitions: "twice", Swahili "mara" (times: "mara mbili", twice), "double". */
const REPETITION_WORDS = ['twice', 'thrice', 'mara', 'double', 'triple'];

/** Negations and stops: "don't send", "never", "cancel". */
const NEGATION_WORDS = ['not', "don't", 'dont', "doesn't", "didn't", "isn't", "won't", 'never', 'no', 'cancel', 'stop'];

/** Tests and pretence: "dry run", "just testing", "hypothetically". */
const TEST_WORDS = [
  'testing',
  'dry',
  'dry-run',
  'dryrun',
  'preview',
  'simulation',
  'hypothetically',
  'hypothetical',
  'pretend',
  'simulate',
];

export const HARD_CONTROL_WORDS: ReadonlySet<string> = new Set([
  ...CONDITION_AND_WAIT_WORDS,
  ...REPETITION_WORDS,
  'again',
  ...NEGATION_WORDS,
  // "refund pay_…, keep 500 naira for delivery": what to hold back changes the amount.
  'keep',
  'without',
  'except',
  'excluding',
  'actually',
  'instead',
  'rather',
  'meant',
  'correction',
  'scratch',
  'then',
  'each',
  'but',
  'or',
  'either',
  'plus',
  'minus',
  ...TEST_WORDS,
  'whoever',
  'address',
  'system',
  'admin',
  'administrator',
  'bypass',
  'override',
  'ignore',
  'authorize',
  'authorise',
  'authorized',
  'authorised',
  'pre-approved',
  'preapproved',
  'approved',
  'instruction',
  'instructions',
  'prompt',
  'metadata',
  'assistant',
  'verified',
  'other',
  'others',
  'another',
]);

/**
 * The words that hold money back on every model's path when the grammar cannot place them
 * (plan.ts, readInstruction): conditions, waits, negations, tests and repetitions. Sequencing,
 * correction and authority words are the grammar's business; these are the ones a model might act
 * through ("… but only after delivery", "don't actually send …", "… wait until Friday", "twice").
 */
export const HOLD_WORDS: ReadonlySet<string> = new Set([
  ...CONDITION_AND_WAIT_WORDS,
  ...REPETITION_WORDS,
  'times',
  ...NEGATION_WORDS,
  ...TEST_WORDS,
]);

/**
 * Words that change an amount or an action but may sit in free text ("school fees", "first
 * instalment"): quantities, approximations, values taken from elsewhere, actions the agent does
 * not have, other assets.
 */
const SOFT_CONTROL_WORDS: readonly string[] = [
  // Words of a correction: one that no new value follows ("… sorry typo") says something is wrong.
  'typo',
  'oops',
  'less',
  'extra',
  'more',
  'max',
  'maximum',
  'least',
  'most',
  'about',
  'around',
  'roughly',
  'approximately',
  'approx',
  'almost',
  'nearly',
  'over',
  'under',
  'remaining',
  'rest',
  'all',
  'everything',
  'everyone',
  'everybody',
  'whatever',
  'whole',
  'entire',
  'some',
  'including',
  'inclusive',
  'incl',
  'excl',
  'vat',
  'fake',
  'maybe',
  'perhaps',
  'probably',
  'first',
  'last',
  'previous',
  'same',
  'usual',
  'partially',
  'partial',
  'part',
  'parts',
  'portion',
  'times',
  'whether',
  'net',
  'gross',
  'per',
  'description',
  'memo',
  'note',
  'policy',
  'deduct',
  'subtract',
  'withhold',
  'retain',
  'delete',
  'remove',
  'void',
  'edit',
  'modify',
  'change',
  'forward',
  'empty',
  'drain',
  'sweep',
  'withdraw',
  'convert',
  'swap',
  'exchange',
  'lend',
  'loan',
  'borrow',
  'btc',
  'bitcoin',
  'eth',
  'ether',
  'usdt',
  'dai',
  'sol',
];

/** Verbs of actions no tool performs: asked for, they are refused, never answered by a read. */
export const UNSUPPORTED_ACTIONS: ReadonlySet<string> = new Set([
  'convert',
  'swap',
  'exchange',
  'withdraw',
  'drain',
  'sweep',
  'lend',
  'loan',
  'borrow',
  'delete',
  'void',
  'deduct',
  'withhold',
  'cancel',
]);

/**
 * Every word that changes meaning. Each must be consumed by a construction the grammar knows (a
 * correction, "each", a refund's "only half"), or nothing runs (checks.ts).
 */
export const CONTROL_WORDS: ReadonlySet<string> = new Set([...HARD_CONTROL_WORDS, ...SOFT_CONTROL_WORDS]);

/** Negations a reason may hold ("the order never arrived"): it describes the past, it is no condition. */
export const NEGATIONS: ReadonlySet<string> = new Set([
  'not',
  "don't",
  'dont',
  "doesn't",
  "didn't",
  "isn't",
  "wasn't",
  "won't",
  'never',
  'no',
]);

export const FRACTION_WORDS: ReadonlyMap<string, [bigint, bigint]> = new Map([
  ['half', [1n, 2n]],
  ['halve', [1n, 2n]],
  ['quarter', [1n, 4n]],
  ['third', [1n, 3n]],
  ['fifth', [1n, 5n]],
  ['tenth', [1n, 10n]],
]);

// Currency words, longest first when matched. "shillings" alone means KES; Ugandan and Tanzanian
// shillings must be named or given by code.
export const CURRENCY_WORDS: ReadonlyMap<string, CurrencyCode | 'DOLLAR'> = new Map<string, CurrencyCode | 'DOLLAR'>([
  ['kenyan shillings', 'KES'],
  ['kenyan shilling', 'KES'],
  ['ugandan shillings', 'UGX'],
  ['ugandan shilling', 'UGX'],
  ['tanzanian shillings', 'TZS'],
  ['tanzanian shilling', 'TZS'],
  ['us dollars', 'DOLLAR'],
  ['naira', 'NGN'],
  ['nairas', 'NGN'],
  ['cedis', 'GHS'],
  ['cedi', 'GHS'],
  ['gh₵', 'GHS'],
  ['ghc', 'GHS'],
  ['ghs', 'GHS'],
  ['₵', 'GHS'],
  ['shillings', 'KES'],
  ['shilling', 'KES'],
  ['bob', 'KES'],
  ['ksh', 'KES'],
  ['kshs', 'KES'],
  ['rand', 'ZAR'],
  ['euros', 'EUR'],
  ['euro', 'EUR'],
  ['pounds', 'GBP'],
  ['dollars', 'DOLLAR'],
  ['dollar', 'DOLLAR'],
  ['bucks', 'DOLLAR'],
  ['usd', 'DOLLAR'],
  ['us$', 'DOLLAR'],
  ['$', 'DOLLAR'],
  ['₦', 'NGN'],
  ['€', 'EUR'],
  ['£', 'GBP'],
  ['usdc', 'USDC'],
  ...Object.keys(CURRENCIES)
    .filter((code) => code !== 'USD' && code !== 'USDC')
    .map((code) => [code.toLowerCase(), code as CurrencyCode] as const),
]);

export const SYMBOLS = ['us$', 'gh₵', '₦', '$', '€', '£', '₵', 'ksh', 'kshs'];
