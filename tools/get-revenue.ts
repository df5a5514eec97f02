import { z } from 'zod';
import { defineTool } from '../src/core/tool.ts';
import { paidPaymentsWithin, type RevenueFilter, revenueByCurrency } from '../src/db/repositories/payments.ts';
import { minorToNumber, SETTLEMENT_CURRENCY } from '../src/domain/money.ts';
import { PAYMENT_STATUSES } from '../src/domain/payment-status.ts';
import { currencyOf } from '../src/domain/present-payment.ts';
import { isoTime } from '../src/core/validation.ts';
import { currencyCode } from './schemas.ts';

const MAX_RANGE_DAYS = 366;
const MAX_LISTED = 100;
const DAY_MS = 86_400_000;

const input = z
  .strictObject({
    from: isoTime(
      'from',
      'Start of the range, inclusive: payments paid at or after this instant. ISO 8601 with a time zone (2026-03-10T00:00:00Z, 2026-03-10T00:00:00+01:00) or a date (00:00 UTC).',
    ),
    to: isoTime(
      'to',
      'End of the range, exclusive: payments paid before this instant. After from, and at most 366 days after it. Same format as from.',
    ),
    currency: currencyCode
      .optional()
      .describe('Only payments in this currency (ISO 4217 code, e.g. NGN). Omit for every currency.'),
  })
  .superRefine((value, ctx) => {
    if (!(value.from instanceof Date) || !(value.to instanceof Date)) return;
    const span = value.to.getTime() - value.from.getTime();
    if (span <= 0) {
      ctx.addIssue({ code: 'custom', path: ['to'], message: 'to must be after from (the range is [from, to))' });
    } else if (span > MAX_RANGE_DAYS * DAY_MS) {
      ctx.addIssue({
        code: 'custom',
        path: ['to'],
        message: `to must be at most ${MAX_RANGE_DAYS} days after from; ask for a longer period in parts`,
      });
    }
  });

const currencyTotals = z.object({
  currency: z.string().describe("The payments' currency (ISO 4217 code)."),
  amount: z.number().describe('Gross amount the payers paid, in major units of this currency (refunds not deducted).'),
  refunded: z
    .number()
    .describe(
      'Refunded on these payments so far, in major units of this currency (including refunds made after the range).',
    ),
  count: z.number().int().describe('Number of payments paid in the range in this currency.'),
  settlement_amount: z
    .number()
    .describe(
      "USDC (major units) these payments credit the merchant: each payment's locked settlement quote (after the fee), minus the USDC its refunds took back. Payments still paid or settling count at their locked quote.",
    ),
});

const paidPayment = z.object({
  id: z.string().describe('Payment id (pay_…).'),
  object: z.literal('payment').describe('A payment, in brief: GET /v1/payments/:id reads it in full.'),
  amount: z.number().describe("Amount paid, in major units of the payment's currency."),
  currency: z.string().describe('ISO 4217 code.'),
  status: z.enum(PAYMENT_STATUSES).describe('Status now: paid, settling, settled, partially_refunded or refunded.'),
  reference: z.string().nullable().describe("The merchant's own reference for the payment, if it has one."),
  paid_at: z.string().describe('When the payer paid (ISO 8601, UTC).'),
});

export const getRevenue = defineTool({
  name: 'get_revenue',
  title: 'Get revenue for a period',
  description:
    "Totals of this account's payments paid in a time range [from, to): per currency the gross amount, the amount refunded, the count and the USDC credited (settlement_amount, net of refunds), plus overall count and USDC total. Also lists up to 100 of those payments (newest paid first; has_more says whether there were more), with id, amount, currency, status, reference and paid_at, for acting on them by id.",
  input,
  output: z.object({
    object: z.literal('revenue').describe("Always 'revenue'."),
    from: z.string().describe('Start of the range, inclusive (ISO 8601, UTC).'),
    to: z.string().describe('End of the range, exclusive (ISO 8601, UTC).'),
    currencies: z
      .array(currencyTotals)
      .describe(
        'One entry per currency with payments in the range, ordered by currency code (empty when there are none).',
      ),
    count: z.number().int().describe('Number of payments paid in the range, all currencies.'),
    settlement_amount: z.number().describe('USDC (major units) credited for all of them, net of refunds.'),
    asset: z.literal('USDC').describe('The settlement asset of every settlement_amount.'),
    payments: z
      .array(paidPayment)
      .describe('The payments paid in the range, newest paid first, at most 100 (the totals count them all).'),
    has_more: z
      .boolean()
      .describe('True when more than 100 payments were paid in the range (narrow the range to list them).'),
  }),
  effect: 'read',
  scope: 'payments:read',
  http: { method: 'GET', path: '/v1/revenue' },
  async handler(value, { db, actor }) {
    const filter: RevenueFilter = {
      accountId: actor.accountId,
      livemode: actor.livemode,
      from: value.from,
      to: value.to,
      currency: value.currency,
    };
    const totals = await revenueByCurrency(db, filter);
    const listed = await paidPaymentsWithin(db, filter, MAX_LISTED + 1);
    const asset = SETTLEMENT_CURRENCY;
    return {
      object: 'revenue' as const,
      from: value.from.toISOString(),
      to: value.to.toISOString(),
      currencies: totals.map((row) => {
        const currency = currencyOf(row);
        return {
          currency: row.currency,
          amount: minorToNumber(row.amountMinor, currency),
          refunded: minorToNumber(row.refundedMinor, currency),
          count: row.count,
          settlement_amount: minorToNumber(row.settlementMinor, asset),
        };
      }),
      count: totals.reduce((sum, row) => sum + row.count, 0),
      settlement_amount: minorToNumber(
        totals.reduce((sum, row) => sum + row.settlementMinor, 0n),
        asset,
      ),
      asset: 'USDC' as const,
      payments: listed.slice(0, MAX_LISTED).map((row) => ({
        id: row.id,
        object: 'payment' as const,
        amount: minorToNumber(row.amount_minor, currencyOf(row)),
        currency: row.currency,
        status: row.status,
        reference: row.reference,
        paid_at: paidAt(row).toISOString(),
      })),
      has_more: listed.length > MAX_LISTED,
    };
  },
});

function paidAt(row: { id: string; paid_at: Date | null }): Date {
  if (row.paid_at === null) throw new Error(`payment ${row.id} was selected as paid but has no paid_at`);
  return row.paid_at;
}
