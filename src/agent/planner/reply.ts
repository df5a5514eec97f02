import type { ToolCallOutcome } from '../model.ts';
import { type Currency, formatDisplay, getCurrency, parseMajorAmount } from '../../domain/money.ts';
import { isId } from '../../domain/ids.ts';
import { describeLookup, type ListedPayment, type PaymentFacts, type PlannedCall, type RevenueFacts } from './calls.ts';
import { PAYOUT_ASSET } from './steps.ts';
import type { PaymentLookup } from './clause.ts';

/**
 * Stage 5 of the offline planner: the reply. Every action is restated in plain words (amount,
 * currency, recipient or payment, memo) with its outcome: done, held for approval (with the link)
 * or refused and why. Only typed fields of results are shown (ids, statuses, amounts):
 * descriptions, metadata and merchant names are untrusted text and stay out of the reply.
 */

/** What the planner could not place, and what to write instead; nothing was done. */
export function notUnderstoodReply(problems: readonly string[]): string {
  return [
    'I did not act on this message, so nothing was done:',
    ...problems.map((problem) => `- ${problem.replace(/\.$/, '')}.`),
    '',
    'I understand, for example: "pay out 250 USDC to 0x… for invoice 42", "send 300 USDC each to 0x… and 0x…",',
    '"refund pay_…", "refund half of pay_…", "split pay_… 70/30 between 0x… and 0x…",',
    '"split yesterday\'s revenue 50/50 between 0x… and 0x…", "how much did I take last week?",',
    '"create a 5,000 NGN payment for shoes redirect to https://…", "has pay_… settled?", "balance?".',
  ].join('\n');
}

function numberToMinor(value: number, currency: Currency): bigint | undefined {
  if (value === 0) return 0n;
  const parsed = parseMajorAmount(value, currency);
  return parsed.ok ? parsed.minor : undefined;
}

/** The typed facts of a payment result (get_payment). */
export function readPaymentFacts(output: unknown): PaymentFacts | undefined {
  if (typeof output !== 'object' || output === null) return undefined;
  const { currency: code, amount, amount_refunded: refunded, status } = output as Record<string, unknown>;
  if (typeof code !== 'string' || typeof amount !== 'number') return undefined;
  const currency = getCurrency(code.toUpperCase());
  if (currency === undefined) return undefined;
  const amountMinor = numberToMinor(amount, currency);
  const refundedMinor =
    refunded === undefined ? 0n : typeof refunded === 'number' ? numberToMinor(refunded, currency) : undefined;
  if (amountMinor === undefined || refundedMinor === undefined) return undefined;
  return { currency, amountMinor, refundedMinor, status: typeof status === 'string' ? status : 'unknown' };
}

/**
 * The payments of a list_payments result, with their typed fields. The description is kept only
 * for matching the merchant's words against it (calls.ts, matchLookup); it is never shown or acted on.
 */
export function readListedPayments(output: unknown): ListedPayment[] {
  const data = typeof output === 'object' && output !== null ? (output as Record<string, unknown>).data : undefined;
  return (Array.isArray(data) ? data : []).flatMap((record: unknown) => {
    const fields = (typeof record === 'object' && record !== null ? record : {}) as Record<string, unknown>;
    const facts = readPaymentFacts(record);
    if (typeof fields.id !== 'string' || !isId('pay', fields.id) || facts === undefined) return [];
    return [
      {
        id: fields.id,
        reference: typeof fields.reference === 'string' ? fields.reference : null,
        description: typeof fields.description === 'string' ? fields.description : null,
        status: facts.status,
        facts,
      },
    ];
  });
}

/** A found payment in typed fields only: "pay_… (ref ORD-1042): settled, ₦6,500.00". */
export function describeListed(payment: ListedPayment): string {
  const reference = payment.reference === null ? '' : ` (ref ${payment.reference})`;
  return `${payment.id}${reference}: ${payment.status}, ${formatDisplay(payment.facts.amountMinor, payment.facts.currency)}`;
}

/** Why a payment named by reference or description was not acted on: none or several match. */
export function lookupProblem(lookup: PaymentLookup, matches: readonly ListedPayment[]): string {
  if ('all' in lookup && matches.length > 0)
    return `${matches.length} payments match ${describeLookup(lookup)}, and not all of them can be refunded (or they are more than I refund in one message), so I did nothing: ${matches.map(describeListed).join('; ')}. List the payment ids to refund`;
  if (matches.length === 0)
    return `I found no payment for ${describeLookup(lookup)} among your payments, so I did nothing: say which payment by its id (pay_…)`;
  return `${matches.length} payments match ${describeLookup(lookup)}, so I did nothing: ${matches.map(describeListed).join('; ')}. Say which one by its id`;
}

const REFUNDABLE = new Set(['settled', 'partially_refunded']);

/** The typed facts of a get_revenue result. */
export function readRevenueFacts(output: unknown): RevenueFacts | undefined {
  if (typeof output !== 'object' || output === null) return undefined;
  const record = output as Record<string, unknown>;
  if (typeof record.settlement_amount !== 'number') return undefined;
  const settlementMinor = numberToMinor(record.settlement_amount, PAYOUT_ASSET);
  if (settlementMinor === undefined) return undefined;
  const payments = Array.isArray(record.payments) ? record.payments : [];
  const refundable = payments.flatMap((payment: unknown) => {
    const { id, status } = (typeof payment === 'object' && payment !== null ? payment : {}) as Record<string, unknown>;
    return typeof id === 'string' && isId('pay', id) && typeof status === 'string' && REFUNDABLE.has(status)
      ? [id]
      : [];
  });
  return { settlementMinor, refundable, hasMore: record.has_more === true };
}

function describeRevenue(call: PlannedCall, output: unknown): string {
  const record = (typeof output === 'object' && output !== null ? output : {}) as Record<string, unknown>;
  const period = `${String(call.input.from).slice(0, 16).replace('T', ' ')} to ${String(call.input.to).slice(0, 16).replace('T', ' ')} UTC`;
  const lines = (Array.isArray(record.currencies) ? record.currencies : []).flatMap((entry: unknown) => {
    const {
      currency: code,
      amount,
      count,
    } = (typeof entry === 'object' && entry !== null ? entry : {}) as Record<string, unknown>;
    const currency = typeof code === 'string' ? getCurrency(code) : undefined;
    const minor = currency && typeof amount === 'number' ? numberToMinor(amount, currency) : undefined;
    return currency && minor !== undefined
      ? [
          `${formatDisplay(minor, currency)} in ${typeof count === 'number' ? count : '?'} payment${count === 1 ? '' : 's'}`,
        ]
      : [];
  });
  const settled =
    typeof record.settlement_amount === 'number' ? numberToMinor(record.settlement_amount, PAYOUT_ASSET) : undefined;
  if (lines.length === 0) return `Revenue ${period}: no paid payments.`;
  return `Revenue ${period}: ${lines.join('; ')}${settled !== undefined ? ` (${formatDisplay(settled, PAYOUT_ASSET)} credited after fees)` : ''}.`;
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
export function describeRead(call: PlannedCall, output: unknown): string {
  switch (call.tool) {
    case 'get_payment': {
      const facts = readPaymentFacts(output);
      const status = resultStatus(output) ?? 'in an unknown status';
      const id = String(call.input.payment_id);
      if (facts === undefined) return `${id} is ${status}.`;
      return `${id} is ${status}: ${formatDisplay(facts.amountMinor, facts.currency)}, ${formatDisplay(facts.refundedMinor, facts.currency)} refunded.`;
    }
    case 'get_balance': {
      // get_balance: { available: [{ asset, amount }], pending_payouts: [{ asset, amount }] }.
      const record = (typeof output === 'object' && output !== null ? output : {}) as Record<string, unknown>;
      const available = assetAmounts(record.available).map(display);
      const pending = assetAmounts(record.pending_payouts)
        .filter((entry) => entry.minor > 0n)
        .map(display);
      const queued = pending.length > 0 ? ` (${pending.join(', ')} in queued payouts)` : '';
      return `Balance: ${available.length > 0 ? available.join(', ') : 'nothing'} available${queued}.`;
    }
    case 'list_pending_confirmations': {
      const items = listItems(output);
      if (items.length === 0) return 'No actions are waiting for approval.';
      const ids = items.map(resultId).filter((id): id is string => id !== undefined);
      return `${items.length} action${items.length === 1 ? ' is' : 's are'} waiting for approval${ids.length > 0 ? `: ${ids.join(', ')}` : ''}.`;
    }
    case 'get_revenue':
      return describeRevenue(call, output);
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

export function describeOutcome(call: PlannedCall, outcome: ToolCallOutcome, isRead: boolean): string {
  if (outcome.status === 'confirmation_required') {
    const { id, approve_url: url, expires_at: expires } = outcome.confirmation;
    return `${call.label}: held for approval (${id}). Approve it at ${url} before ${expires}; nothing has moved yet.`;
  }
  if (outcome.status === 'error') {
    const code = outcome.error.code ?? outcome.error.type;
    return `${call.label}: failed (${code}): ${outcome.error.message}`;
  }
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

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}
