import { isAddress } from 'viem';
import { isId } from '../../domain/ids.ts';
import {
  CURRENCIES,
  type Currency,
  type CurrencyCode,
  formatDisplay,
  getCurrency,
  minorToNumber,
  parseMajorAmount,
} from '../../domain/money.ts';
import { PAYMENT_STATUSES, type PaymentStatus } from '../../domain/payment-status.ts';
import type { AgentModel, AgentModelRequest, AgentModelResult, ToolCallOutcome } from '../model.ts';

/**
 * The offline planner: the default agent model when no ANTHROPIC_API_KEY is set. A deterministic
 * parser for the grammar documented in docs/agent.md ("Offline planner grammar"); keep the two in
 * step. Its rules, in order of importance:
 *
 * - It never guesses a recipient or an amount. Anything it cannot read exactly is "not understood".
 * - All or nothing: if any instruction in a message is not understood, nothing runs, not even the
 *   parts it did understand, so a message is never half-executed.
 * - Tool results are data. The only things it reads from a result are typed fields (a payment's
 *   amount, amount_refunded and currency for "refund half"; ids and statuses for the reply), never
 *   free text, so a description that says "pay out 5000 USDC to 0x…" can never become a payout.
 * - Every call goes through `callTool`, which runs the real pipeline (validation, scopes, policy,
 *   idempotency); the planner adds checks of its own in front of it, never instead of it.
 */

export const OFFLINE_PLANNER_NAME = 'offline-planner/1';

/** The payout and split asset: the custodial balance is held in USDC only. */
const PAYOUT_ASSET: Currency = CURRENCIES.USDC;

/** A bound on the steps of one message, so a pasted wall of text cannot fan out into many calls. */
export const MAX_INSTRUCTIONS_PER_MESSAGE = 10;
/** Longer messages are refused unread: no instruction in the grammar needs more, and it bounds the regex work. */
export const MAX_MESSAGE_LENGTH = 4000;

/** One line per supported form, shown when the planner does not understand (and in docs/agent.md). */
export const SUPPORTED_FORMS: readonly string[] = [
  'pay out 250 USDC to 0x… (optionally "for <memo>" and "ref <reference>")',
  'send 1,000 to 0x… for invoice 42 (no currency on a payout means USDC)',
  'refund pay_… (the full remaining amount)',
  'refund 500 NGN of pay_… / refund half of pay_… / refund 25% of pay_… (optionally "because <reason>")',
  'split pay_… 70/30 between 0x… and 0x… / split 500 USDC 50/50 between 0x… and 0x…',
  'create a 5,000 NGN payment for <description> redirect to https://…',
  "what's the status of pay_… / balance? / pending approvals / list paid payments",
];

// ---------------------------------------------------------------------------------------------
// Parsed steps
// ---------------------------------------------------------------------------------------------

/** A currency as the user wrote it; "dollars" is resolved by context (USDC on payouts, USD on payments). */
type CurrencyMention = { code: CurrencyCode | 'DOLLAR'; word: string };

type RefundAmount =
  | { type: 'full' }
  /** An amount in the payment's currency; checked against the payment before anything runs. */
  | { type: 'exact'; numberText: string; currency: CurrencyMention | undefined }
  /** A share of what is left to refund, in basis points: half is 5000. */
  | { type: 'share'; bps: bigint; label: string };

export type PlannedStep =
  | { kind: 'payout'; text: string; amountMinor: bigint; toAddress: string; memo?: string; reference?: string }
  | { kind: 'refund'; text: string; paymentId: string; amount: RefundAmount; reason?: string }
  | {
      kind: 'split';
      text: string;
      source: { paymentId: string } | { amountMinor: bigint };
      splits: { toAddress: string; shareBps: number }[];
      reference?: string;
    }
  | {
      kind: 'create_payment';
      text: string;
      amountMinor: bigint;
      currency: Currency;
      redirectUrl: string;
      description?: string;
      reference?: string;
    }
  | { kind: 'payment_status'; text: string; paymentId: string }
  | { kind: 'balance'; text: string }
  | { kind: 'pending_confirmations'; text: string }
  | { kind: 'list_payments'; text: string; status?: PaymentStatus; limit?: number };

export type ParsedInstruction = { ok: true; step: PlannedStep } | { ok: false; text: string; reason: string };

/** Thrown inside a rule when it recognised the form but an argument is unusable; carries the reason. */
class NotUnderstood extends Error {}

function fail(reason: string): never {
  throw new NotUnderstood(reason);
}

// ---------------------------------------------------------------------------------------------
// Splitting a message into instructions
// ---------------------------------------------------------------------------------------------

// Words that start an instruction. " and <verb>" splits a message, a bare " and " does not:
// "split pay_… 70/30 between 0xA and 0xB" must stay one instruction.
const COMMAND_START =
  /^(?:pay|payout|send|transfer|refund|issue|fully|partially|split|create|make|new|what|what's|whats|how|show|check|get|list|status|balance|fetch|look|any|is|tell|approve|confirm|reject)\b/i;

const COURTESY_ONLY = /^(?:thanks|thank you|thx|cheers|please|ok|okay|great|hi|hello|hey)$/i;

/**
 * Splits a message into instruction texts: lines, ";", sentence ends (". ", "? ", "! "), and the
 * connectors "and then", "then", "also", ", " and "and" when a command word follows.
 */
export function splitInstructions(message: string): string[] {
  const normalised = message
    .replace(/[\u2018\u2019\u02bc]/g, "'")
    .replace(/[\u201c\u201d]/g, '"')
    .replace(/[\u00a0\u2007\u202f]/g, ' ');
  const parts: string[] = [];
  for (const line of normalised.split(/[\r\n;]+/)) {
    // A sentence ends at . ! ? followed by a space: "1,000.50" and "https://x.example/a.b" stay whole.
    for (const sentence of line.split(/(?<=[.!?])\s+/)) {
      parts.push(...splitOnConnectors(sentence.replace(/\s+/g, ' ').trim()));
    }
  }
  return parts.map(cleanInstruction).filter((part) => part !== '' && !COURTESY_ONLY.test(part));
}

function splitOnConnectors(sentence: string): string[] {
  const out: string[] = [];
  let rest = sentence;
  const connector = /,?\s+(?:and\s+then|and\s+also|and|then|also|after\s+that)\s+|,\s+/gi;
  for (let match = connector.exec(rest); match !== null; match = connector.exec(rest)) {
    const after = rest.slice(match.index + match[0].length);
    if (!COMMAND_START.test(after)) continue;
    out.push(rest.slice(0, match.index));
    rest = after;
    connector.lastIndex = 0;
  }
  out.push(rest);
  return out;
}

const LEADING_FILLER =
  /^(?:(?:please|kindly|also|then|and|now|ok|okay|hi|hello|hey)\b[,!:]?\s*|(?:can|could|would|will)\s+you\s+(?:please\s+)?|i(?:'d|\s+would)\s+like\s+(?:you\s+)?to\s+|i\s+(?:want|need)\s+(?:you\s+)?to\s+)+/i;
const TRAILING_FILLER = /(?:[,\s]+(?:please|thanks|thank\s+you|thx))*[\s.!?,]*$/i;

function cleanInstruction(text: string): string {
  return text.replace(LEADING_FILLER, '').replace(TRAILING_FILLER, '').trim();
}

// ---------------------------------------------------------------------------------------------
// Tokens: amounts, currencies, addresses, payment ids
// ---------------------------------------------------------------------------------------------

// Currency words, longest first so "kenyan shillings" wins over "shillings". "shillings" alone
// means KES (the issue's choice); Ugandan and Tanzanian shillings must be named or given by code.
const CURRENCY_WORDS: ReadonlyMap<string, CurrencyCode | 'DOLLAR'> = new Map<string, CurrencyCode | 'DOLLAR'>([
  ['kenyan shillings', 'KES'],
  ['kenyan shilling', 'KES'],
  ['ugandan shillings', 'UGX'],
  ['ugandan shilling', 'UGX'],
  ['tanzanian shillings', 'TZS'],
  ['tanzanian shilling', 'TZS'],
  ['naira', 'NGN'],
  ['cedis', 'GHS'],
  ['cedi', 'GHS'],
  ['gh₵', 'GHS'],
  ['shillings', 'KES'],
  ['shilling', 'KES'],
  ['ksh', 'KES'],
  ['rand', 'ZAR'],
  ['euros', 'EUR'],
  ['euro', 'EUR'],
  ['dollars', 'DOLLAR'],
  ['dollar', 'DOLLAR'],
  ['usd', 'DOLLAR'],
  ['$', 'DOLLAR'],
  ['₦', 'NGN'],
  ['€', 'EUR'],
  ['£', 'GBP'],
  ...Object.keys(CURRENCIES)
    .filter((code) => code !== 'USD')
    .map((code) => [code.toLowerCase(), code as CurrencyCode] as const),
]);

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const CURRENCY_ALTERNATION = [...CURRENCY_WORDS.keys()]
  .sort((a, b) => b.length - a.length)
  .map((word) => escapeRegExp(word).replace(/ /g, '\\s+'))
  .join('|');

// "250 USDC", "USDC 250", "$250", "₦5,000", "5,000 naira", "1000.50", "5k" (refused below).
const MONEY = new RegExp(
  `^(?:(?<pre>${CURRENCY_ALTERNATION})\\s*)?(?<num>\\d[\\d,]*(?:\\.\\d+)?)(?<suffix>[km]|bn)?(?:\\s*(?<post>${CURRENCY_ALTERNATION}))?$`,
  'i',
);
const GROUPED_NUMBER = /^(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?$/;
const VAGUE_AMOUNT =
  /\b(?:all|everything|every\s*thing|the\s+rest|whatever|max(?:imum)?|entire|whole|remaining|balance|some|funds|money)\b/i;

interface Money {
  /** Plain decimal text, separators removed: "1000.50". */
  numberText: string;
  currency: CurrencyMention | undefined;
}

function lookupCurrency(word: string | undefined): CurrencyMention | undefined {
  if (word === undefined) return undefined;
  const key = word.toLowerCase().replace(/\s+/g, ' ');
  const code = CURRENCY_WORDS.get(key);
  return code === undefined ? undefined : { code, word };
}

/** Reads an amount phrase exactly or refuses; it never rounds, converts or fills in a number. */
function parseMoney(text: string, what = 'amount'): Money {
  const trimmed = text.trim();
  if (trimmed === '' || !/\d/.test(trimmed)) {
    if (VAGUE_AMOUNT.test(trimmed))
      fail(`"${trimmed}" is not an amount: I never pick an amount for you, say exactly how much (e.g. 250 USDC)`);
    fail(`no ${what} given: say exactly how much, in digits (e.g. 250 USDC or 5,000 NGN)`);
  }
  const match = MONEY.exec(trimmed);
  if (match === null || match.groups === undefined)
    fail(`"${trimmed}" is not an amount I can read: write digits and a currency, e.g. 1,000 or 1000.50 USDC`);
  const { pre, num = '', suffix, post } = match.groups;
  if (suffix !== undefined)
    fail(`"${trimmed}": write the amount in full (e.g. 5,000, not 5k) so there is no doubt about it`);
  if (!GROUPED_NUMBER.test(num))
    fail(`"${num}" is not a number I can read: group thousands by threes (1,000) or leave them out (1000)`);
  const first = lookupCurrency(pre);
  const second = lookupCurrency(post);
  if (first && second && first.code !== second.code)
    fail(`"${trimmed}" names two different currencies (${first.word} and ${second.word})`);
  return { numberText: num.replace(/,/g, ''), currency: first ?? second };
}

/** Exact minor units of `money` in `currency`, or a reason (too many decimals, zero). */
function toMinor(money: Money, currency: Currency): bigint {
  const parsed = parseMajorAmount(money.numberText, currency);
  if (parsed.ok) return parsed.minor;
  if (parsed.reason === 'too_many_decimals')
    fail(`${money.numberText} has more decimals than ${currency.code} has (${currency.exponent})`);
  if (parsed.reason === 'not_positive') fail(`the amount must be more than zero, not ${money.numberText}`);
  fail(`${money.numberText} is not an amount I can read`);
}

/** Payouts and splits move USDC: "dollars", "$", "usd", "usdc" or no currency at all mean USDC. */
function payoutMinor(money: Money): bigint {
  const code = money.currency?.code;
  if (code !== undefined && code !== 'DOLLAR' && code !== 'USDC')
    fail(
      `payouts and splits are paid in USDC, not ${money.currency?.word}: I do not convert currencies, say the amount in USDC`,
    );
  return toMinor(money, PAYOUT_ASSET);
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** A full 0x address (checksummed or all lower-case), or a refusal: never a guess. */
function parseAddress(token: string): string {
  const value = token.replace(/[,.;:!?)\]"']+$/, '').replace(/^["'(]+/, '');
  if (ADDRESS.test(value)) {
    // The same rule as the tools' schema: a wrong EIP-55 checksum is almost surely a typo.
    if (!isAddress(value, { strict: true }))
      fail(`${value} has an invalid checksum (mixed case that is not EIP-55): check it for a typo`);
    return value;
  }
  if (/^0x/i.test(value))
    fail(`"${value}" is not a full address (0x followed by 40 hex characters): I never guess a recipient`);
  fail(`"${value}" is not an address: recipients must be full 0x addresses, I never guess a recipient`);
}

/** A complete payment id (pay_ + 22 letters and digits), or a refusal naming what is wrong. */
function parsePaymentId(token: string): string {
  const value = token.replace(/[,.;:!?)\]"']+$/, '').replace(/^["'(]+/, '');
  if (isId('pay', value)) return value;
  if (/^pay_/i.test(value)) fail(`"${value}" is not a complete payment id (pay_ followed by 22 letters and digits)`);
  fail(`say which payment by its id (pay_…), not "${value}"`);
}

function parseReference(token: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9_\-.:#/]{0,63}$/.test(token))
    fail(`"${token}" is not a reference I can use (letters, digits and - _ . : # /, at most 64 characters)`);
  return token;
}

const REFERENCE_CLAUSE = /,?\s+(?:with\s+)?(?:ref|reference)\s*[:#]?\s*(?<ref>\S+)$/i;

/** Removes a trailing "ref <token>" clause; returns the rest and the reference, if any. */
function takeReference(text: string): { rest: string; reference: string | undefined } {
  const match = REFERENCE_CLAUSE.exec(text);
  if (match?.groups?.ref === undefined) return { rest: text, reference: undefined };
  return { rest: text.slice(0, match.index), reference: parseReference(match.groups.ref) };
}

function unquote(text: string): string {
  return text
    .trim()
    .replace(/^["'](.*)["']$/, '$1')
    .trim();
}

// ---------------------------------------------------------------------------------------------
// Grammar rules: each returns a step, throws NotUnderstood with a reason, or returns undefined
// when the instruction is not of its form.
// ---------------------------------------------------------------------------------------------

const PAYOUT_VERB = /^(?:pay\s+out|payout|send|transfer|pay)\s+/i;

function parsePayout(text: string): PlannedStep | undefined {
  const verb = PAYOUT_VERB.exec(text);
  if (verb === null) return undefined;
  const body = text.slice(verb[0].length);
  const match = /^(?<money>.*?)\s*\bto\s+(?<to>\S+)(?<rest>.*)$/i.exec(body);
  if (match?.groups === undefined) {
    if (/\b0x/i.test(body)) fail('write payouts as "pay out <amount> USDC to 0x…"');
    fail('a payout needs a recipient: "to 0x…" with a full address (I never guess a recipient)');
  }
  const { money = '', to = '', rest = '' } = match.groups;
  const amountMinor = payoutMinor(parseMoney(money));
  const toAddress = parseAddress(to);
  const { rest: afterRef, reference } = takeReference(rest);
  let memo: string | undefined;
  if (afterRef.trim() !== '') {
    const memoMatch = /^,?\s+(?:for|memo:?|with\s+memo|note:?)\s+(?<memo>.+)$/i.exec(afterRef);
    if (memoMatch?.groups?.memo === undefined) {
      if (/^\s*(?:,|and|&)\s*0x/i.test(afterRef))
        fail('one recipient per payout: to share an amount between addresses, use "split … between 0x… and 0x…"');
      fail(`I could not read "${afterRef.trim()}" after the recipient (use "for <memo>" or "ref <reference>")`);
    }
    memo = unquote(memoMatch.groups.memo);
  }
  return {
    kind: 'payout',
    text,
    amountMinor,
    toAddress,
    ...(memo ? { memo } : {}),
    ...(reference ? { reference } : {}),
  };
}

const REFUND_VERB =
  /^(?:refund|fully\s+refund|partially\s+refund|issue\s+(?:a\s+)?(?:full\s+|partial\s+)?refund\s+(?:of|for|on))\s+/i;

type RefundStep = Extract<PlannedStep, { kind: 'refund' }>;

function parseRefund(text: string): RefundStep | undefined {
  const verb = REFUND_VERB.exec(text);
  if (verb === null) {
    if (/^(?:refund|issue\s+(?:a\s+)?refund)\b/i.test(text))
      fail('say which payment to refund by its id: "refund pay_…"');
    return undefined;
  }
  let body = text.slice(verb[0].length);
  let reason: string | undefined;
  const because = /,?\s+(?:because|reason:|with\s+reason:?)\s+(?<reason>.+)$/i.exec(body);
  if (because?.groups?.reason !== undefined) {
    reason = unquote(because.groups.reason);
    body = body.slice(0, because.index);
  }
  const withReason = (step: RefundStep): RefundStep => (reason ? { ...step, reason } : step);

  // "refund pay_…" (full), "refund pay_… in full", "refund pay_… 500 NGN" / "by 500 NGN".
  const whole = /^(?<id>pay_\S*)(?:\s+(?<tail>.+))?$/i.exec(body);
  if (whole?.groups !== undefined) {
    const paymentId = parsePaymentId(whole.groups.id ?? '');
    const tail = whole.groups.tail?.trim();
    if (tail === undefined || /^(?:in\s+full|fully|completely|entirely|\(full\))$/i.test(tail))
      return withReason({ kind: 'refund', text, paymentId, amount: { type: 'full' } });
    const amountText = tail.replace(/^(?:by|for)\s+/i, '');
    return withReason({ kind: 'refund', text, paymentId, amount: exactRefund(amountText) });
  }

  // "refund <amount | half | N%> of|on|from|for pay_…"
  const partial = /^(?<amount>.+?)\s+(?:of|on|from|for)\s+(?:payment\s+)?(?<id>\S+)$/i.exec(body);
  if (partial?.groups === undefined) {
    if (/\bpay_/i.test(body))
      fail('write refunds as "refund pay_…", "refund 500 NGN of pay_…" or "refund half of pay_…"');
    fail('say which payment to refund by its id (pay_…): I never pick one for you');
  }
  const paymentId = parsePaymentId(partial.groups.id ?? '');
  const amountText = (partial.groups.amount ?? '').trim();
  const share = parseShare(amountText);
  if (share !== undefined) return withReason({ kind: 'refund', text, paymentId, amount: share });
  return withReason({ kind: 'refund', text, paymentId, amount: exactRefund(amountText) });
}

function exactRefund(amountText: string): RefundAmount {
  // "all of pay_…" and "the rest of pay_…" say the same as "refund pay_…": what is left, in full.
  if (/^(?:all|everything|the\s+rest|the\s+(?:remaining|full|whole)\s+amount|in\s+full)$/i.test(amountText))
    return { type: 'full' };
  const money = parseMoney(amountText, 'refund amount');
  return { type: 'exact', numberText: money.numberText, currency: money.currency };
}

/** "half", "all"/"the rest" are not shares; "half" and "N%" (1 to 100, up to 2 decimals) are. */
function parseShare(text: string): RefundAmount | undefined {
  if (/^(?:a\s+)?half$/i.test(text)) return { type: 'share', bps: 5000n, label: 'half' };
  const percent = /^(?<int>\d{1,3})(?:\.(?<frac>\d{1,2}))?\s*(?:%|percent)$/i.exec(text);
  if (percent?.groups === undefined) return undefined;
  const bps = BigInt(percent.groups.int ?? '0') * 100n + BigInt((percent.groups.frac ?? '').padEnd(2, '0'));
  if (bps <= 0n || bps > 10_000n) fail(`${text} is not a share between 0% and 100%`);
  return { type: 'share', bps, label: text };
}

function parseSplit(text: string): PlannedStep | undefined {
  if (!/^split\b/i.test(text)) return undefined;
  const { rest: withoutRef, reference } = takeReference(text);
  const body = withoutRef
    .replace(/^split\s+(?:the\s+)?(?:(?:revenue|proceeds|income|money)\s+(?:of|from)\s+)?/i, '')
    .trim();

  // "split <source> 70/30 between 0xA and 0xB" or "split <source> equally between 0xA and 0xB"
  const ratio =
    /^(?<source>.+?)\s+(?<shares>\d[\d.]*\s*%?(?:\s*\/\s*\d[\d.]*\s*%?)+|equally|evenly|50-50)\s+(?:between|among|across|to)\s+(?<addresses>.+)$/i.exec(
      body,
    );
  // "split <source>: 70% to 0xA and 30% to 0xB"
  // Addresses are [^\s,]+, not \S+: a token that could end with or without the comma would make
  // this pattern backtrack exponentially on a long list that fails to match.
  const pairs =
    /^(?<source>.+?)\s*:?\s+(?<pairs>\d[\d.]*\s*%\s+to\s+[^\s,]+(?:(?:\s*,\s*|\s+)(?:and\s+)?\d[\d.]*\s*%\s+to\s+[^\s,]+)+)$/i.exec(
      body,
    );

  let sourceText: string;
  let addresses: string[];
  let shares: bigint[];
  if (pairs?.groups !== undefined) {
    sourceText = pairs.groups.source ?? '';
    const entries = [...(pairs.groups.pairs ?? '').matchAll(/(?<share>\d[\d.]*)\s*%\s+to\s+(?<to>[^\s,]+)/gi)];
    addresses = entries.map((entry) => parseAddress(entry.groups?.to ?? ''));
    shares = entries.map((entry) => parsePercentBps(entry.groups?.share ?? ''));
  } else if (ratio?.groups !== undefined) {
    sourceText = ratio.groups.source ?? '';
    addresses = splitAddressList(ratio.groups.addresses ?? '');
    const sharesText = ratio.groups.shares ?? '';
    if (/^(?:equally|evenly)$/i.test(sharesText)) {
      // Equal shares only when they are exact: 3 ways is 33.33…%, and who gets the extra basis point would be a guess.
      if (10_000 % addresses.length !== 0)
        fail(`${addresses.length} equal shares do not divide exactly: give the percentages, e.g. 34/33/33`);
      shares = addresses.map(() => BigInt(10_000 / addresses.length));
    } else {
      shares = sharesText
        .replace(/^50-50$/, '50/50')
        .split('/')
        .map((share) => parsePercentBps(share.trim().replace(/%$/, '').trim()));
    }
  } else {
    if (!/\b0x/i.test(body)) fail('a split needs its recipients as full 0x addresses: I never guess a recipient');
    fail('write splits as "split pay_… 70/30 between 0x… and 0x…" or "split 500 USDC 50/50 between 0x… and 0x…"');
  }

  if (shares.length !== addresses.length)
    fail(`${shares.length} shares for ${addresses.length} recipients: give one percentage per address`);
  if (addresses.length < 2) fail('a split needs at least two recipients');
  if (new Set(addresses.map((address) => address.toLowerCase())).size !== addresses.length)
    fail('the same address appears twice in the split');
  const total = shares.reduce((sum, share) => sum + share, 0n);
  if (total !== 10_000n) fail(`the shares add up to ${formatBps(total)}%, not 100%`);

  const source = sourceText.trim().replace(/^payment\s+/i, '');
  const splits = addresses.map((toAddress, index) => ({ toAddress, shareBps: Number(shares[index]) }));
  const base = { kind: 'split' as const, text, splits, ...(reference ? { reference } : {}) };
  if (/^pay_/i.test(source)) return { ...base, source: { paymentId: parsePaymentId(source) } };
  return { ...base, source: { amountMinor: payoutMinor(parseMoney(source, 'amount to split')) } };
}

function splitAddressList(text: string): string[] {
  return text
    .trim()
    .split(/\s*,\s*(?:and\s+)?|\s+and\s+|\s*&\s*/i)
    .filter((part) => part !== '')
    .map(parseAddress);
}

function parsePercentBps(text: string): bigint {
  const match = /^(?<int>\d{1,3})(?:\.(?<frac>\d{1,2}))?$/.exec(text);
  if (match?.groups === undefined) fail(`"${text}" is not a percentage I can read (at most 2 decimals)`);
  const bps = BigInt(match.groups.int ?? '0') * 100n + BigInt((match.groups.frac ?? '').padEnd(2, '0'));
  if (bps <= 0n) fail('every share must be more than 0%');
  return bps;
}

function formatBps(bps: bigint): string {
  const whole = bps / 100n;
  const cents = bps % 100n;
  return cents === 0n ? whole.toString() : `${whole}.${cents.toString().padStart(2, '0').replace(/0$/, '')}`;
}

const CREATE_VERB = /^(?:create|make|generate|open|start|new)\b/i;
// Only an explicit URL counts: "for return shipping" must not be read as a redirect.
const REDIRECT_CLAUSE =
  /,?\s+(?:and\s+)?(?:with\s+)?(?:(?:a|the)\s+)?(?:redirect(?:ing)?(?:[_\s]+url)?(?:\s+(?:to|at|of))?|return(?:ing)?\s+to)\s*:?\s*(?<url>https?:\/\/\S+)/i;

function parseCreatePayment(text: string): PlannedStep | undefined {
  if (!CREATE_VERB.test(text) || !/\b(?:payment|checkout)\b/i.test(text)) return undefined;
  let body = text;
  const redirect = REDIRECT_CLAUSE.exec(body);
  if (redirect?.groups?.url === undefined) {
    if (/\bredirect/i.test(body))
      fail('redirect to an absolute http(s) URL, e.g. "redirect to https://shop.example/thanks"');
    fail('a payment needs the page to send the payer back to: add "redirect to https://…" (I do not invent one)');
  }
  const redirectUrl = redirect.groups.url.replace(/[,;)]+$/, '');
  if (!isHttpUrl(redirectUrl)) fail(`"${redirectUrl}" is not an absolute http(s) URL to redirect the payer to`);
  body = (body.slice(0, redirect.index) + body.slice(redirect.index + redirect[0].length)).trim();
  const { rest, reference } = takeReference(body);

  const article = String.raw`(?:create|make|generate|open|start)\s+(?:(?:a|an)\s+)?(?:new\s+)?|new\s+`;
  const noun = String.raw`(?:payment|checkout)(?:\s+(?:link|session|request))?`;
  // "create a payment of 5,000 NGN for shoes" (amount after the noun, one or two words)
  const after = new RegExp(
    `^(?:${article})${noun}\\s+(?:of|for)\\s+(?<money>\\S+(?:\\s+\\S+)?)(?:\\s+for\\s+(?<desc>.+))?$`,
    'i',
  ).exec(rest);
  // "create a 5,000 NGN payment for shoes" (amount before the noun)
  const before = new RegExp(`^(?:${article})(?<money>.+?)\\s+${noun}(?:\\s+for\\s+(?<desc>.+))?$`, 'i').exec(rest);
  const match = after ?? before;
  if (match?.groups === undefined)
    fail('write payments as "create a 5,000 NGN payment for <description> redirect to https://…"');

  const money = parseMoney(match.groups.money ?? '', 'payment amount');
  if (money.currency === undefined)
    fail(`which currency is ${money.numberText} in? Say it, e.g. "5,000 NGN" (I do not assume one)`);
  const code = money.currency.code === 'DOLLAR' ? 'USD' : money.currency.code;
  const currency = getCurrency(code) ?? fail(`${money.currency.word} is not a supported currency`);
  const amountMinor = toMinor(money, currency);
  const description = match.groups.desc === undefined ? undefined : unquote(match.groups.desc);
  if (description !== undefined && description.length > 300) fail('the description is longer than 300 characters');
  return {
    kind: 'create_payment',
    text,
    amountMinor,
    currency,
    redirectUrl,
    ...(description ? { description } : {}),
    ...(reference ? { reference } : {}),
  };
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

const STATUS_PREFIX =
  /^(?:(?:what(?:'s|s|\s+is)\s+(?:the\s+)?(?:current\s+)?status\s+(?:of|for|on)|(?:the\s+)?status\s+(?:of|for|on)|status|check(?:\s+on|\s+the\s+status\s+of)?|show(?:\s+me)?|get|fetch|look\s+up|lookup|tell\s+me\s+about|where\s+is|what(?:'s|s|\s+is)(?:\s+up\s+with)?|how\s+is|is)\s+(?:payment\s+)?)?(?<id>pay_\S*)(?:\s+(?<tail>.+))?$/i;

function parseStatus(text: string): PlannedStep | undefined {
  const match = STATUS_PREFIX.exec(text);
  if (match?.groups === undefined) return undefined;
  const tail = match.groups.tail;
  if (
    tail !== undefined &&
    !/^(?:status|paid|settled|refunded|expired|done|complete|(?:paid|settled|refunded)\s+yet)$/i.test(tail)
  )
    return undefined;
  return { kind: 'payment_status', text, paymentId: parsePaymentId(match.groups.id ?? '') };
}

const BALANCE =
  /^(?:(?:what(?:'s|s|\s+is)|show(?:\s+me)?|check|get|tell\s+me)\s+)?(?:(?:my|the|our)\s+)?(?:(?:current|available|usdc|custodial)\s+)*balances?(?:\s+in\s+usdc)?$|^how\s+much\s+(?:usdc\s+|money\s+)?(?:do\s+(?:i|we)\s+have|is\s+available|can\s+(?:i|we)\s+pay\s+out)$/i;

const PENDING =
  /^(?:(?:list|show(?:\s+me)?|what(?:'s|s|\s+is|\s+are)|any|get|check)\s+)?(?:(?:the|my|our|all)\s+)?(?:pending\s+(?:approvals?|confirmations?)|(?:approvals?|confirmations?)\s+pending|(?:things|actions|anything)\s+(?:waiting|pending)\s+(?:for\s+)?(?:my\s+)?(?:approval|confirmation))$|^what\s+needs\s+(?:my\s+)?approval$/i;

const LIST_STATUS_WORDS: ReadonlyMap<string, PaymentStatus> = new Map(
  PAYMENT_STATUSES.map((status) => [status.replace('_', ' '), status] as const),
);

const LIST =
  /^(?:list|show(?:\s+me)?|get)\s+(?:(?:all|my|the|our)\s+)*(?:(?:last|latest|recent|most\s+recent)\s+(?:(?<n>\d+)\s+)?)?(?:(?<status>[a-z]+(?:\s+refunded)?)\s+)?payments(?:\s+(?:that\s+are\s+)?(?<status2>[a-z]+(?:\s+refunded)?))?$/i;

function parseRead(text: string): PlannedStep | undefined {
  if (BALANCE.test(text)) return { kind: 'balance', text };
  if (PENDING.test(text)) return { kind: 'pending_confirmations', text };
  const list = LIST.exec(text);
  if (list?.groups !== undefined) {
    const statusWord = (list.groups.status ?? list.groups.status2)?.toLowerCase();
    const status = statusWord === undefined ? undefined : LIST_STATUS_WORDS.get(statusWord);
    if (statusWord !== undefined && status === undefined)
      fail(`"${statusWord}" is not a payment status (${PAYMENT_STATUSES.join(', ')})`);
    const limit = list.groups.n === undefined ? undefined : Number(list.groups.n);
    if (limit !== undefined && (limit < 1 || limit > 100)) fail('list at most 100 payments at a time');
    return { kind: 'list_payments', text, ...(status ? { status } : {}), ...(limit ? { limit } : {}) };
  }
  return parseStatus(text);
}

const RULES: readonly ((text: string) => PlannedStep | undefined)[] = [
  parseRefund,
  parseSplit,
  parseCreatePayment,
  parseRead,
  parsePayout,
];

/** Parses one instruction text against the grammar. */
export function parseInstruction(text: string): ParsedInstruction {
  if (/^(?:approve|confirm|reject|deny)\b/i.test(text))
    return {
      ok: false,
      text,
      reason:
        'I cannot approve or reject confirmations: a person does that from the dashboard or with an approvals key',
    };
  try {
    for (const rule of RULES) {
      const step = rule(text);
      if (step !== undefined) return { ok: true, step };
    }
    return { ok: false, text, reason: 'this is not an instruction I know' };
  } catch (error) {
    if (error instanceof NotUnderstood) return { ok: false, text, reason: error.message };
    throw error;
  }
}

/** Splits a message and parses every instruction; the caller runs it only if every part parsed. */
export function parseMessage(message: string): ParsedInstruction[] {
  if (message.length > MAX_MESSAGE_LENGTH)
    return [
      {
        ok: false,
        text: `${message.slice(0, 60)}…`,
        reason: `the message is longer than ${MAX_MESSAGE_LENGTH} characters`,
      },
    ];
  const texts = splitInstructions(message);
  if (texts.length === 0) return [{ ok: false, text: message.trim(), reason: 'the message has no instruction' }];
  if (texts.length > MAX_INSTRUCTIONS_PER_MESSAGE)
    return [
      {
        ok: false,
        text: `${texts.length} instructions`,
        reason: `at most ${MAX_INSTRUCTIONS_PER_MESSAGE} instructions per message`,
      },
    ];
  return texts.map(parseInstruction);
}

// ---------------------------------------------------------------------------------------------
// Running a plan
// ---------------------------------------------------------------------------------------------

/** The typed facts the planner reads from a payment result; nothing else in it is looked at. */
interface PaymentFacts {
  currency: Currency;
  amountMinor: bigint;
  refundedMinor: bigint;
}

function readPaymentFacts(output: unknown): PaymentFacts | undefined {
  if (typeof output !== 'object' || output === null) return undefined;
  const { currency: code, amount, amount_refunded: refunded } = output as Record<string, unknown>;
  if (typeof code !== 'string' || typeof amount !== 'number') return undefined;
  const currency = getCurrency(code.toUpperCase());
  if (currency === undefined) return undefined;
  const amountMinor = numberToMinor(amount, currency);
  const refundedMinor =
    refunded === undefined ? 0n : typeof refunded === 'number' ? numberToMinor(refunded, currency) : undefined;
  if (amountMinor === undefined || refundedMinor === undefined) return undefined;
  return { currency, amountMinor, refundedMinor };
}

function numberToMinor(value: number, currency: Currency): bigint | undefined {
  if (value === 0) return 0n;
  const parsed = parseMajorAmount(value, currency);
  return parsed.ok ? parsed.minor : undefined;
}

function toolsFor(step: PlannedStep): string[] {
  switch (step.kind) {
    case 'payout':
      return ['create_payout'];
    case 'refund':
      return step.amount.type === 'full' ? ['refund_payment'] : ['get_payment', 'refund_payment'];
    case 'split':
      return ['split_revenue'];
    case 'create_payment':
      return ['create_payment'];
    case 'payment_status':
      return ['get_payment'];
    case 'balance':
      return ['get_balance'];
    case 'pending_confirmations':
      return ['list_pending_confirmations'];
    case 'list_payments':
      return ['list_payments'];
  }
}

/** A step resolved to the exact tool call it makes. */
interface PlannedCall {
  step: PlannedStep;
  tool: string;
  input: Record<string, unknown>;
  /** What the reply calls this step, e.g. "Pay out 250.000000 USDC to 0x…". */
  label: string;
}

/**
 * Turns a step into its call. Refunds of a part need the payment's facts (read first, before
 * anything runs); every other step's input comes from the instruction alone.
 */
function resolveCall(
  step: PlannedStep,
  payments: ReadonlyMap<string, PaymentFacts>,
  remaining: Map<string, bigint>,
): PlannedCall {
  switch (step.kind) {
    case 'payout': {
      const input: Record<string, unknown> = {
        amount: minorToNumber(step.amountMinor, PAYOUT_ASSET),
        asset: PAYOUT_ASSET.code,
        to_address: step.toAddress,
      };
      if (step.reference) input.reference = step.reference;
      if (step.memo) input.memo = step.memo;
      return {
        step,
        tool: 'create_payout',
        input,
        label: `Pay out ${formatDisplay(step.amountMinor, PAYOUT_ASSET)} to ${step.toAddress}`,
      };
    }
    case 'refund': {
      const input: Record<string, unknown> = { payment_id: step.paymentId };
      let label = `Refund the remaining amount of ${step.paymentId}`;
      const facts = payments.get(step.paymentId);
      if (step.amount.type === 'full') {
        // A later step on the same payment finds nothing left, as it will when it runs.
        if (facts !== undefined) remaining.set(step.paymentId, 0n);
      } else {
        if (facts === undefined) fail(`I could not read ${step.paymentId}`);
        const left = remaining.get(step.paymentId) ?? 0n;
        const minor = refundMinor(step.paymentId, step.amount, facts.currency, left);
        // Several refunds of one payment in one message apply in order: "half, then half" is 50% then 25%.
        remaining.set(step.paymentId, left - minor);
        input.amount = minorToNumber(minor, facts.currency);
        label = `Refund ${formatDisplay(minor, facts.currency)} of ${step.paymentId}`;
      }
      if (step.reason) input.reason = step.reason;
      return { step, tool: 'refund_payment', input, label };
    }
    case 'split': {
      const splits = step.splits.map((split) => ({ to_address: split.toAddress, share_bps: split.shareBps }));
      const shares = step.splits
        .map((split) => `${formatBps(BigInt(split.shareBps))}% to ${split.toAddress}`)
        .join(', ');
      const input: Record<string, unknown> =
        'paymentId' in step.source
          ? { payment_id: step.source.paymentId, splits }
          : { amount: minorToNumber(step.source.amountMinor, PAYOUT_ASSET), asset: PAYOUT_ASSET.code, splits };
      if (step.reference) input.reference = step.reference;
      const what =
        'paymentId' in step.source ? step.source.paymentId : formatDisplay(step.source.amountMinor, PAYOUT_ASSET);
      return { step, tool: 'split_revenue', input, label: `Split ${what}: ${shares}` };
    }
    case 'create_payment': {
      const input: Record<string, unknown> = {
        amount: minorToNumber(step.amountMinor, step.currency),
        currency: step.currency.code,
        redirect_url: step.redirectUrl,
      };
      if (step.description) input.description = step.description;
      if (step.reference) input.reference = step.reference;
      return {
        step,
        tool: 'create_payment',
        input,
        label: `Create a ${formatDisplay(step.amountMinor, step.currency)} payment`,
      };
    }
    case 'payment_status':
      return { step, tool: 'get_payment', input: { payment_id: step.paymentId }, label: `Status of ${step.paymentId}` };
    case 'balance':
      return { step, tool: 'get_balance', input: {}, label: 'Balance' };
    case 'pending_confirmations':
      return { step, tool: 'list_pending_confirmations', input: {}, label: 'Pending approvals' };
    case 'list_payments': {
      const input: Record<string, unknown> = {};
      if (step.status) input.status = step.status;
      if (step.limit) input.limit = step.limit;
      return { step, tool: 'list_payments', input, label: `Payments${step.status ? ` (${step.status})` : ''}` };
    }
  }
}

/** The refund amount in the payment's minor units; shares of what is left round DOWN. */
function refundMinor(paymentId: string, amount: RefundAmount, currency: Currency, remaining: bigint): bigint {
  if (remaining <= 0n) fail(`${paymentId} has nothing left to refund`);
  if (amount.type === 'share') {
    const minor = (remaining * amount.bps) / 10_000n;
    if (minor <= 0n) fail(`${amount.label} of what is left on ${paymentId} rounds down to nothing`);
    return minor;
  }
  if (amount.type !== 'exact') fail('internal: a full refund has no amount');
  const mention = amount.currency;
  if (mention !== undefined) {
    const matches =
      mention.code === 'DOLLAR' ? currency.code === 'USD' || currency.code === 'USDC' : mention.code === currency.code;
    if (!matches)
      fail(`${paymentId} is in ${currency.code}, not ${mention.word}: refunds are in the payment's own currency`);
  }
  const minor = toMinor({ numberText: amount.numberText, currency: mention }, currency);
  if (minor > remaining)
    fail(
      `${formatDisplay(minor, currency)} is more than what is left to refund on ${paymentId} (${formatDisplay(remaining, currency)})`,
    );
  return minor;
}

function notUnderstoodReply(parts: readonly ParsedInstruction[]): string {
  const failures = parts.filter((part): part is Extract<ParsedInstruction, { ok: false }> => !part.ok);
  const lines = failures.map((failure) => `- "${truncate(failure.text, 120)}": ${failure.reason}.`);
  const understoodSome = failures.length < parts.length;
  return [
    `I did not understand ${failures.length === 1 && parts.length === 1 ? 'your instruction' : 'part of your message'}, so I did nothing${understoodSome ? ', not even the parts I understood' : ''}:`,
    ...lines,
    '',
    'I can:',
    ...SUPPORTED_FORMS.map((form) => `- ${form}`),
    'Put several instructions on separate lines or join them with "and then".',
  ].join('\n');
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** A short, safe id from a result (po_…, rf_…): anything else in a result is not echoed. */
function resultId(output: unknown): string | undefined {
  if (typeof output !== 'object' || output === null) return undefined;
  const id = (output as Record<string, unknown>).id;
  return typeof id === 'string' && /^[a-z]{2,6}_[0-9A-Za-z]{1,40}$/.test(id) ? id : undefined;
}

function resultStatus(output: unknown): string | undefined {
  if (typeof output !== 'object' || output === null) return undefined;
  const status = (output as Record<string, unknown>).status;
  return typeof status === 'string' && /^[a-z_]{1,30}$/.test(status) ? status : undefined;
}

/**
 * The reply line for a read. Only typed fields are shown (ids, statuses, amounts): descriptions,
 * metadata and merchant names are untrusted text and stay out of the reply.
 */
function describeRead(call: PlannedCall, output: unknown): string {
  switch (call.step.kind) {
    case 'payment_status': {
      const facts = readPaymentFacts(output);
      const status = resultStatus(output) ?? 'in an unknown status';
      if (facts === undefined) return `${call.step.paymentId} is ${status}.`;
      return `${call.step.paymentId} is ${status}: ${formatDisplay(facts.amountMinor, facts.currency)}, ${formatDisplay(facts.refundedMinor, facts.currency)} refunded.`;
    }
    case 'balance': {
      // get_balance: { available: [{ asset, amount }], pending_payouts: [{ asset, amount }] }.
      const record = (typeof output === 'object' && output !== null ? output : {}) as Record<string, unknown>;
      const available = assetAmounts(record.available).map(display);
      const pending = assetAmounts(record.pending_payouts)
        .filter((entry) => entry.minor > 0n)
        .map(display);
      const queued = pending.length > 0 ? ` (${pending.join(', ')} in queued payouts)` : '';
      return `Balance: ${available.length > 0 ? available.join(', ') : 'nothing'} available${queued}.`;
    }
    case 'pending_confirmations': {
      const items = listItems(output);
      if (items.length === 0) return 'No actions are waiting for approval.';
      const ids = items.map(resultId).filter((id): id is string => id !== undefined);
      return `${items.length} action${items.length === 1 ? ' is' : 's are'} waiting for approval${ids.length > 0 ? `: ${ids.join(', ')}` : ''}.`;
    }
    case 'list_payments': {
      const items = listItems(output);
      if (items.length === 0) return 'No payments match.';
      const shown = items.map((item) => {
        const facts = readPaymentFacts(item);
        const id = resultId(item) ?? '(unknown id)';
        const amount = facts ? `, ${formatDisplay(facts.amountMinor, facts.currency)}` : '';
        return `${id} (${resultStatus(item) ?? 'unknown'}${amount})`;
      });
      return `${items.length} payment${items.length === 1 ? '' : 's'}: ${shown.join('; ')}.`;
    }
    default:
      return `${call.label}: done.`;
  }
}

interface AssetAmount {
  minor: bigint;
  currency: Currency;
}

/** The { asset, amount } entries of a result with a known asset and a readable amount. */
function assetAmounts(entries: unknown): AssetAmount[] {
  if (!Array.isArray(entries)) return [];
  return entries.flatMap((entry: unknown) => {
    const { asset, amount } = (typeof entry === 'object' && entry !== null ? entry : {}) as Record<string, unknown>;
    const currency = typeof asset === 'string' ? getCurrency(asset) : undefined;
    const minor = currency !== undefined && typeof amount === 'number' ? numberToMinor(amount, currency) : undefined;
    return currency === undefined || minor === undefined ? [] : [{ minor, currency }];
  });
}

const display = ({ minor, currency }: AssetAmount): string => formatDisplay(minor, currency);

function listItems(output: unknown): unknown[] {
  if (Array.isArray(output)) return output;
  const data = (output as { data?: unknown } | null)?.data;
  return Array.isArray(data) ? data : [];
}

const DRY_RUN_VERDICTS: Readonly<Record<string, string>> = {
  allow: 'policy would allow it',
  require_confirmation: 'policy would hold it for approval',
  deny: 'policy would deny it',
};

/** In a dry run a write or money call returns its plan ({ dry_run: true, would_be }) instead of a result. */
function dryRunVerdict(output: unknown): string | undefined {
  if (typeof output !== 'object' || output === null) return undefined;
  const { dry_run: dryRun, would_be: wouldBe } = output as Record<string, unknown>;
  if (dryRun !== true) return undefined;
  return (typeof wouldBe === 'string' ? DRY_RUN_VERDICTS[wouldBe] : undefined) ?? 'planned';
}

function describeOutcome(call: PlannedCall, outcome: ToolCallOutcome): string {
  if (outcome.status === 'confirmation_required') {
    const { id, approve_url: url, expires_at: expires } = outcome.confirmation;
    return `${call.label}: held for approval (${id}). Approve it at ${url} before ${expires}; nothing has moved yet.`;
  }
  if (outcome.status === 'error') {
    const code = outcome.error.code ?? outcome.error.type;
    return `${call.label}: failed (${code}): ${outcome.error.message}`;
  }
  const isRead = call.tool.startsWith('get_') || call.tool.startsWith('list_');
  if (isRead) return describeRead(call, outcome.output);
  const plan = dryRunVerdict(outcome.output);
  if (plan !== undefined) return `${call.label}: dry run, ${plan}; nothing was done.`;
  if (call.tool === 'create_payment') {
    const checkout = (outcome.output as { checkout_url?: unknown } | null)?.checkout_url;
    const link = typeof checkout === 'string' && isHttpUrl(checkout) ? `; checkout at ${checkout}` : '';
    const id = resultId(outcome.output);
    return `${call.label}: created${id ? ` ${id}` : ''}${link}.`;
  }
  const id = resultId(outcome.output);
  const status = resultStatus(outcome.output);
  return `${call.label}: done${id ? ` (${id}${status ? `, ${status}` : ''})` : ''}.`;
}

async function runPlan(parts: readonly PlannedStep[], request: AgentModelRequest): Promise<AgentModelResult> {
  const { callTool, signal } = request;

  // The key's tools, checked before anything runs: a message is never half-executed because a
  // later step needs a scope the key lacks.
  const available = new Set(request.tools.map((tool) => tool.name));
  const missing = [...new Set(parts.flatMap(toolsFor))].filter((name) => !available.has(name));
  if (missing.length > 0)
    return {
      understood: false,
      reply: `This API key cannot use ${missing.join(', ')}, so I did nothing. Ask for a key with the needed scope.`,
    };

  // Reads that money steps depend on come first, so a problem with any of them stops the whole
  // message before money moves (the same all-or-nothing rule as parsing).
  const payments = new Map<string, PaymentFacts>();
  for (const step of parts) {
    if (step.kind !== 'refund' || step.amount.type === 'full' || payments.has(step.paymentId)) continue;
    if (signal.aborted)
      return { understood: true, reply: "Stopped before doing anything: the run's step or time budget was spent." };
    const outcome = await callTool('get_payment', { payment_id: step.paymentId });
    if (outcome.status !== 'ok') {
      const message = outcome.status === 'error' ? outcome.error.message : 'unexpected confirmation on a read';
      return { understood: true, reply: `I could not read ${step.paymentId} (${message}), so I did nothing.` };
    }
    const facts = readPaymentFacts(outcome.output);
    if (facts === undefined)
      return { understood: false, reply: `${step.paymentId} has no amount I can read, so I did nothing.` };
    payments.set(step.paymentId, facts);
  }

  const remaining = new Map([...payments].map(([id, facts]) => [id, facts.amountMinor - facts.refundedMinor]));
  let calls: PlannedCall[];
  try {
    calls = parts.map((step) => resolveCall(step, payments, remaining));
  } catch (error) {
    if (!(error instanceof NotUnderstood)) throw error;
    return { understood: false, reply: `I cannot do that as asked: ${error.message}. I did nothing.` };
  }

  const lines: string[] = [];
  for (const [index, call] of calls.entries()) {
    if (signal.aborted) {
      lines.push(`Stopped: the run's step or time budget was spent. Not done: ${skipped(calls.slice(index))}.`);
      break;
    }
    const outcome = await callTool(call.tool, call.input);
    lines.push(describeOutcome(call, outcome));
    // Later steps may rely on earlier ones ("and then"): after a failure, stop and say what did not run.
    if (outcome.status === 'error' && index < calls.length - 1) {
      lines.push(`Stopped after that failure. Not done: ${skipped(calls.slice(index + 1))}.`);
      break;
    }
  }
  return { understood: true, reply: lines.join('\n') };
}

function skipped(calls: readonly PlannedCall[]): string {
  return calls.map((call) => call.label).join('; ');
}

/** The offline planner (docs/agent.md, "Offline planner grammar"). */
export function createOfflinePlanner(): AgentModel {
  return {
    name: OFFLINE_PLANNER_NAME,
    async run(request: AgentModelRequest): Promise<AgentModelResult> {
      const parts = parseMessage(request.instruction);
      const steps = parts.flatMap((part) => (part.ok ? [part.step] : []));
      if (steps.length !== parts.length) return { understood: false, reply: notUnderstoodReply(parts) };
      return runPlan(steps, request);
    },
  };
}
