import { type Currency, getCurrency, parseMajorAmount } from '../../domain/money.ts';
import { type AmountToken, type Clause, type Intent, type Slots, text } from './clause.ts';
import { fillSlots } from './slots.ts';
import { isSignificant } from './counts.ts';
import type { CurrencyMention, NumberValue, Token } from './token-types.ts';
import { FOUND_LATER, PAYOUT_ASSET, problem, type RefundAmount, type Step } from './steps.ts';

/**
 * From one understood clause to its steps: the numbers and currencies a step needs (exact minor
 * units, basis points), the slots each intent's step reads, and the builders of payout, refund,
 * split and new-payment steps. A clause whose slots are incomplete or contradictory is a problem,
 * never a guess: no recipient, no amount, no currency is made up here.
 */

/** The decimal text of a number; one the reader could not read exactly is asked back, quoted. */
function numberIn(value: NumberValue): string {
  if (value.type === 'unreadable') problem(value.reason);
  return value.text;
}

export function toMinor(value: NumberValue, written: string, currency: Currency): bigint {
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

export function formatBps(bps: bigint): string {
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

export function stepsOf(clause: Clause): Step[] {
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
