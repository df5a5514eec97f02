import { type Currency, formatDisplay, minorToNumber } from '../../domain/money.ts';
import type { PaymentLookup } from './clause.ts';
import type { DateRange } from './token-types.ts';
import { MAX_STEPS_PER_MESSAGE, PAYOUT_ASSET, Problem, problem, type Step } from './steps.ts';
import { formatBps, toMinor } from './clause-steps.ts';

/**
 * From steps to the exact tool calls they make: the reads a step needs first (a payment, revenue
 * over a range, a list of payments for one named by reference or description), how a payment so
 * named is matched and chosen, and resolveCalls, which turns the steps and what was read into the
 * calls that run. The typed facts read from results (PaymentFacts, RevenueFacts, ListedPayment)
 * are defined here too, for reply.ts.
 */

/** The typed facts read from a payment result; nothing else in it is looked at. */
export interface PaymentFacts {
  currency: Currency;
  amountMinor: bigint;
  refundedMinor: bigint;
  status: string;
}

/** The typed facts read from get_revenue. */
export interface RevenueFacts {
  settlementMinor: bigint;
  /** Payments of the period that can be refunded (settled or partially refunded), as listed. */
  refundable: string[];
  hasMore: boolean;
}

export interface PlannedCall {
  tool: string;
  input: Record<string, unknown>;
  /** The action in plain words: "Pay out 250.000000 USDC to 0x… (memo: invoice 42)". */
  label: string;
}

/** The reads a step needs before any call runs (partial refunds read the payment; periods read revenue). */
export function readsFor(step: Step): PlannedCall[] {
  if (step.kind === 'refund' && step.amount.type !== 'full')
    return [{ tool: 'get_payment', input: { payment_id: step.paymentId }, label: `Read ${step.paymentId}` }];
  if (step.kind === 'refund_period' || (step.kind === 'split' && 'range' in step.source)) {
    const range = step.kind === 'refund_period' ? step.range : (step.source as { range: DateRange }).range;
    const input = rangeInput(range);
    if (step.kind === 'refund_period' && step.currency) input.currency = step.currency;
    return [{ tool: 'get_revenue', input, label: `Revenue ${describeRange(range)}` }];
  }
  return [];
}

export function rangeInput(range: DateRange): Record<string, unknown> {
  return { from: range.from.toISOString(), to: range.to.toISOString() };
}

export function describeRange(range: DateRange): string {
  return `from ${range.from.toISOString().replace('T00:00:00.000Z', '').replace('.000Z', 'Z')} to ${range.to.toISOString().replace('T00:00:00.000Z', '').replace('.000Z', 'Z')}`;
}

export function toolsFor(step: Step): string[] {
  return [...(lookupOf(step) ? ['list_payments'] : []), ...readsFor(step).map((call) => call.tool), toolOf(step)];
}

// ---------------------------------------------------------------------------------------------
// Payments named by reference or description
// ---------------------------------------------------------------------------------------------

/** The lookup a step's payment waits for, if it is named without its id. */
export function lookupOf(step: Step): PaymentLookup | undefined {
  if (step.kind === 'refund' || step.kind === 'payment_status') return step.lookup;
  if (step.kind === 'split' && 'paymentId' in step.source) return step.source.lookup;
  return undefined;
}

/** A payment as list_payments lists it: its typed fields, and its description (only to match words). */
export interface ListedPayment {
  id: string;
  reference: string | null;
  description: string | null;
  status: string;
  facts: PaymentFacts;
}

/**
 * The read that finds a lookup's payment: a reference with letters through list_payments' own
 * reference filter ("ORD-1042" is exact); a bare number or a description among the newest 100.
 */
export function lookupRead(lookup: PaymentLookup): PlannedCall {
  // A reference with capitals is looked up as written; one typed all in lower case ("ord-5521")
  // may be stored in capitals, so it is matched, ignoring case, among the newest payments.
  if ('reference' in lookup && /[A-Z]/.test(lookup.reference))
    return {
      tool: 'list_payments',
      input: { reference: lookup.reference },
      label: `Find the payment with reference ${lookup.reference}`,
    };
  return { tool: 'list_payments', input: { limit: 100 }, label: `Find ${describeLookup(lookup)}` };
}

export function describeLookup(lookup: PaymentLookup): string {
  if ('reference' in lookup) return `order ${lookup.reference}`;
  return `${'all' in lookup ? 'every order' : 'the order'} "${lookup.words.join(' ')}"`;
}

/** Statuses a refund can take: the selection of "refund all the … orders" is these payments. */
const REFUNDABLE_STATUSES = new Set(['settled', 'partially_refunded']);

/**
 * The payments a lookup selects: exactly one; or for "all the … orders" every match, when each can
 * still be refunded (one that cannot, a pending one say, makes "all" unclear) and they fit in one
 * message. Undefined when the selection is empty or unclear; the caller asks back.
 */
export function selectLookup(lookup: PaymentLookup, matches: readonly ListedPayment[]): ListedPayment[] | undefined {
  if (!('all' in lookup)) return matches.length === 1 ? [...matches] : undefined;
  const clear =
    matches.length > 0 &&
    matches.length <= MAX_STEPS_PER_MESSAGE &&
    matches.every((payment) => REFUNDABLE_STATUSES.has(payment.status));
  return clear ? [...matches] : undefined;
}

const stem = (word: string): string => word.replace(/(?<=\w{3})(?:es|s)$/, '');
const wordsOf = (text: string): string[] =>
  text
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word !== '')
    .map(stem);

/**
 * The listed payments a lookup names: the reference as written (a bare number matches a reference
 * that holds it as a whole group: "1042" names ORD-1042 and INV-1042), or every word of the
 * description. The caller acts on exactly one and asks back when there are none or several.
 */
export function matchLookup(lookup: PaymentLookup, listed: readonly ListedPayment[]): ListedPayment[] {
  if ('reference' in lookup) {
    const wanted = lookup.reference.toLowerCase();
    if (/[a-z]/.test(wanted)) return listed.filter((payment) => payment.reference?.toLowerCase() === wanted);
    return listed.filter((payment) => new RegExp(`(?:^|\\D)${wanted}(?:$|\\D)`).test(payment.reference ?? ''));
  }
  const wanted = lookup.words.map((word) => stem(word.normalize('NFD').replace(/\p{M}/gu, '')));
  return listed.filter((payment) => {
    const words = wordsOf(payment.description ?? '');
    return wanted.every((word) => words.includes(word));
  });
}

/** A step with its payment found: the id written in, the lookup gone. */
export function withPayment(step: Step, paymentId: string): Step {
  if (step.kind === 'refund' || step.kind === 'payment_status') {
    const { lookup: _found, ...rest } = step;
    return { ...rest, paymentId };
  }
  if (step.kind === 'split' && 'paymentId' in step.source) return { ...step, source: { paymentId } };
  return step;
}

function toolOf(step: Step): string {
  switch (step.kind) {
    case 'payout':
      return 'create_payout';
    case 'refund':
    case 'refund_period':
      return 'refund_payment';
    case 'split':
      return 'split_revenue';
    case 'create_payment':
      return 'create_payment';
    case 'payment_status':
      return 'get_payment';
    case 'balance':
      return 'get_balance';
    case 'pending_confirmations':
      return 'list_pending_confirmations';
    case 'list_payments':
      return 'list_payments';
    case 'revenue':
      return 'get_revenue';
  }
}

export interface ReadFacts {
  payments: ReadonlyMap<string, PaymentFacts>;
  revenue: ReadonlyMap<string, RevenueFacts>;
}

export const rangeKey = (range: DateRange): string => `${range.from.toISOString()}/${range.to.toISOString()}`;

/** Turns steps into the exact calls they make, with what was read; a Problem if a step cannot run as asked. */
export function resolveCalls(steps: readonly Step[], facts: ReadFacts): PlannedCall[] | { problem: string } {
  const remaining = new Map([...facts.payments].map(([id, f]) => [id, f.amountMinor - f.refundedMinor]));
  try {
    return steps.flatMap((step) => callsOf(step, facts, remaining));
  } catch (error) {
    if (error instanceof Problem) return { problem: error.message };
    throw error;
  }
}

function callsOf(step: Step, facts: ReadFacts, remaining: Map<string, bigint>): PlannedCall[] {
  switch (step.kind) {
    case 'payout': {
      const input: Record<string, unknown> = {
        amount: minorToNumber(step.amountMinor, PAYOUT_ASSET),
        asset: PAYOUT_ASSET.code,
        to_address: step.toAddress,
      };
      if (step.reference) input.reference = step.reference;
      if (step.memo) input.memo = step.memo;
      const memo = step.memo ? ` (memo: ${step.memo})` : '';
      return [
        {
          tool: 'create_payout',
          input,
          label: `Pay out ${formatDisplay(step.amountMinor, PAYOUT_ASSET)} to ${step.toAddress}${memo}`,
        },
      ];
    }
    case 'refund':
      return [refundCall(step, facts, remaining)];
    case 'refund_period': {
      const revenue = facts.revenue.get(rangeKey(step.range));
      if (revenue === undefined) problem(`I could not read the payments ${describeRange(step.range)}`);
      if (revenue.hasMore)
        problem(
          `there are more payments ${describeRange(step.range)} than I refund in one message: list the payment ids`,
        );
      if (revenue.refundable.length === 0) problem(`no settled payment ${describeRange(step.range)} can be refunded`);
      return revenue.refundable.map((paymentId) => ({
        tool: 'refund_payment',
        input: { payment_id: paymentId, ...(step.reason ? { reason: step.reason } : {}) },
        label: `Refund ${paymentId} in full`,
      }));
    }
    case 'split': {
      const splits = step.splits.map((split) =>
        'shareParts' in split
          ? { to_address: split.toAddress, share_parts: split.shareParts }
          : { to_address: split.toAddress, share_bps: split.shareBps },
      );
      const shares = step.splits
        .map((split) =>
          'shareParts' in split
            ? `an equal part (1 of ${step.splits.length}) to ${split.toAddress}`
            : `${formatBps(BigInt(split.shareBps))}% to ${split.toAddress}`,
        )
        .join(', ');
      let input: Record<string, unknown>;
      let what: string;
      if ('paymentId' in step.source) {
        input = { payment_id: step.source.paymentId, splits };
        what = `the proceeds of ${step.source.paymentId}`;
      } else {
        let amountMinor: bigint;
        if ('range' in step.source) {
          const revenue = facts.revenue.get(rangeKey(step.source.range));
          if (revenue === undefined) problem(`I could not read the revenue ${describeRange(step.source.range)}`);
          if (revenue.settlementMinor <= 0n)
            problem(`there is no settled revenue ${describeRange(step.source.range)} to split`);
          amountMinor = revenue.settlementMinor;
          what = `the revenue ${describeRange(step.source.range)} (${formatDisplay(amountMinor, PAYOUT_ASSET)})`;
        } else {
          amountMinor = step.source.amountMinor;
          what = formatDisplay(amountMinor, PAYOUT_ASSET);
        }
        input = { amount: minorToNumber(amountMinor, PAYOUT_ASSET), asset: PAYOUT_ASSET.code, splits };
      }
      if (step.reference) input.reference = step.reference;
      return [{ tool: 'split_revenue', input, label: `Split ${what}: ${shares}` }];
    }
    case 'create_payment': {
      const input: Record<string, unknown> = {
        amount: minorToNumber(step.amountMinor, step.currency),
        currency: step.currency.code,
        redirect_url: step.redirectUrl,
      };
      if (step.description) input.description = step.description;
      if (step.reference) input.reference = step.reference;
      return [
        {
          tool: 'create_payment',
          input,
          label: `Create a ${formatDisplay(step.amountMinor, step.currency)} payment${step.description ? ` for ${step.description}` : ''}`,
        },
      ];
    }
    case 'payment_status':
      return [{ tool: 'get_payment', input: { payment_id: step.paymentId }, label: `Status of ${step.paymentId}` }];
    case 'balance':
      return [{ tool: 'get_balance', input: {}, label: 'Balance' }];
    case 'pending_confirmations':
      return [{ tool: 'list_pending_confirmations', input: {}, label: 'Pending approvals' }];
    case 'list_payments': {
      const input: Record<string, unknown> = {};
      if (step.status) input.status = step.status;
      if (step.limit) input.limit = step.limit;
      if (step.range) {
        // list_payments' range is inclusive at both ends; the period's end is exclusive.
        input.created_gte = step.range.from.toISOString();
        input.created_lte = new Date(step.range.to.getTime() - 1).toISOString();
      }
      return [
        {
          tool: 'list_payments',
          input,
          label: `Payments${step.status ? ` (${step.status})` : ''}${step.range ? ` created ${describeRange(step.range)}` : ''}`,
        },
      ];
    }
    case 'revenue': {
      const input = rangeInput(step.range);
      if (step.currency) input.currency = step.currency;
      return [{ tool: 'get_revenue', input, label: `Revenue ${describeRange(step.range)}` }];
    }
  }
}

function refundCall(
  step: Extract<Step, { kind: 'refund' }>,
  facts: ReadFacts,
  remaining: Map<string, bigint>,
): PlannedCall {
  const input: Record<string, unknown> = { payment_id: step.paymentId };
  if (step.reason) input.reason = step.reason;
  if (step.amount.type === 'full') {
    if (facts.payments.has(step.paymentId)) remaining.set(step.paymentId, 0n);
    return {
      tool: 'refund_payment',
      input,
      label: `Refund what is left of ${step.paymentId}${step.reason ? ` (reason: ${step.reason})` : ''}`,
    };
  }
  const payment = facts.payments.get(step.paymentId) ?? problem(`I could not read ${step.paymentId}`);
  const left = remaining.get(step.paymentId) ?? 0n;
  if (left <= 0n) problem(`${step.paymentId} has nothing left to refund`);
  let minor: bigint;
  if (step.amount.type === 'share') {
    // "half of pay_…" is half of the payment. After an earlier refund it could mean half of what is left: ask.
    if (payment.refundedMinor > 0n || left !== payment.amountMinor)
      problem(
        `${step.paymentId} was already partly refunded, so "${step.amount.label}" could mean a share of the payment or of what is left: say the amount`,
      );
    const product = payment.amountMinor * step.amount.numerator;
    if (product % step.amount.denominator !== 0n)
      problem(
        `${step.amount.label} of ${formatDisplay(payment.amountMinor, payment.currency)} is not a whole amount in ${payment.currency.code}: say the exact amount`,
      );
    minor = product / step.amount.denominator;
    if (minor <= 0n) problem(`${step.amount.label} of ${step.paymentId} is nothing`);
  } else {
    const mention = step.amount.currency;
    if (mention !== undefined) {
      const matches =
        mention.code === 'DOLLAR' ? payment.currency.code === 'USD' : mention.code === payment.currency.code;
      if (!matches)
        problem(
          `${step.paymentId} is in ${payment.currency.code}, not ${mention.word}: refunds are in the payment's own currency`,
        );
    }
    const written = toMinor(step.amount.number, step.amount.text, payment.currency);
    if (step.amount.type === 'less') {
      // "all but ₦500": of the payment, so only while nothing was refunded yet (else: of what?).
      if (payment.refundedMinor > 0n || left !== payment.amountMinor)
        problem(
          `${step.paymentId} was already partly refunded, so "less ${step.amount.text}" is unclear: say the amount`,
        );
      minor = payment.amountMinor - written;
      if (minor <= 0n)
        problem(
          `${step.amount.text} is not less than ${formatDisplay(payment.amountMinor, payment.currency)}: nothing is left to refund`,
        );
    } else minor = written;
  }
  if (minor > left)
    problem(
      `${formatDisplay(minor, payment.currency)} is more than what is left to refund on ${step.paymentId} (${formatDisplay(left, payment.currency)})`,
    );
  remaining.set(step.paymentId, left - minor);
  input.amount = minorToNumber(minor, payment.currency);
  return {
    tool: 'refund_payment',
    input,
    label: `Refund ${formatDisplay(minor, payment.currency)} of ${step.paymentId}${step.reason ? ` (reason: ${step.reason})` : ''}`,
  };
}
