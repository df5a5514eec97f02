import { z } from 'zod';
import { exactRequestHash } from '../src/core/canonical-json.ts';
import { AppError } from '../src/core/errors.ts';
import { parseStoredJson, stringifyJson } from '../src/core/json-text.ts';
import { writtenWholeNumber } from '../src/core/validation.ts';
import { defineTool, type ToolContext } from '../src/core/tool.ts';
import type { NewPayment, PaymentRow } from '../src/db/database.ts';
import {
  type CreationSettings,
  findCreationSettings,
  findPaymentByReference,
} from '../src/db/repositories/payments.ts';
import { insertPayment, insertPaymentWithSettings } from '../src/db/money-writes/payments.ts';
import { quoteFromTable } from '../src/domain/fx.ts';
import { newId } from '../src/domain/ids.ts';
import { getCurrency, parseMajorAmount, SETTLEMENT_CURRENCY } from '../src/domain/money.ts';
import { presentPayment } from '../src/domain/present-payment.ts';
import { validateWebhookUrl } from '../src/webhooks/webhook-url.ts';
import { paymentOutput } from './payment-output.ts';
import {
  currencyCode,
  evmAddress,
  httpUrl,
  METADATA_DESCRIPTION,
  metadata,
  optionalText,
  PAYMENT_SETTLEMENT_SCHEDULE_DESCRIPTION,
  paymentSettlementSchedule,
  tooManyDecimalsForAnyCurrency,
  writtenAmount,
} from './schemas.ts';

export const DEFAULT_TTL_MINUTES = 60;

const input = z
  .strictObject({
    amount: writtenAmount(
      'amount',
      z
        .number({ error: 'amount must be a number, e.g. 5000 or 5000.50' })
        .positive('amount must be positive')
        .max(1_000_000_000, 'amount must be at most 1,000,000,000'),
      tooManyDecimalsForAnyCurrency('amount'),
    ).describe(
      'Amount to charge, a positive number in major units of currency (at most 1,000,000,000, no more decimals than the currency has).',
    ),
    currency: currencyCode.describe('Currency code, 2 to 8 characters, e.g. NGN, GHS, KES. Case-insensitive.'),
    redirect_url: httpUrl('redirect_url').describe('Absolute http(s) URL the payer is sent to when finished.'),
    reference: optionalText('reference', 64).describe(
      'Your own id for this payment, at most 64 characters. A repeated reference returns the existing payment if the parameters match, else 409.',
    ),
    merchant_name: optionalText('merchant_name', 80).describe('Shown on the checkout page, at most 80 characters.'),
    description: optionalText('description', 300).describe('What is paid for, at most 300 characters.'),
    webhook_url: httpUrl('webhook_url')
      .nullish()
      .describe("URL that receives this payment's events by POST (public http(s) only)."),
    payout_address: evmAddress('payout_address')
      .nullish()
      .describe(
        '0x EVM address to settle this payment to. Without it the account default, else the custodial balance.',
      ),
    metadata: metadata.nullish().describe(METADATA_DESCRIPTION),
    settlement_schedule: paymentSettlementSchedule.nullish().describe(PAYMENT_SETTLEMENT_SCHEDULE_DESCRIPTION),
    ttl_minutes: writtenWholeNumber(
      z
        .number({ error: 'ttl_minutes must be an integer number of minutes' })
        .int('ttl_minutes must be an integer')
        .min(1, 'ttl_minutes must be between 1 and 1440')
        .max(1440, 'ttl_minutes must be between 1 and 1440'),
      'ttl_minutes must be an integer',
    )
      .default(DEFAULT_TTL_MINUTES)
      .describe(`How long the session stays open, 1 to 1440 minutes (default ${DEFAULT_TTL_MINUTES}).`),
  })
  .superRefine((value, ctx) => {
    const currency = getCurrency(value.currency);
    if (!currency) return;
    const parsed = parseMajorAmount(value.amount, currency);
    if (!parsed.ok && parsed.reason === 'too_many_decimals') {
      ctx.addIssue({
        code: 'custom',
        path: ['amount'],
        message:
          currency.exponent === 0
            ? `amount must be a whole number for ${currency.code}`
            : `amount must have at most ${currency.exponent} decimal places for ${currency.code}`,
      });
    }
  });

export const createPayment = defineTool({
  name: 'create_payment',
  title: 'Create a payment',
  description:
    'Creates a hosted checkout session for a payer to pay in local currency. Returns the payment with its checkout_url (send the payer there) and status pending. The settlement amount is locked now from the FX quote.',
  input,
  output: paymentOutput,
  effect: 'write',
  scope: 'payments:write',
  http: { method: 'POST', path: '/v1/payments' },
  // Where the payer's money will go at settlement: the recipient lists judge it like a payout's.
  async policy(value) {
    return {
      amountSettlementMinor: undefined,
      recipients: value.payout_address ? [value.payout_address] : [],
      summary: `Create a payment of ${value.amount} ${value.currency}${value.payout_address ? ` settling to ${value.payout_address}` : ''}`,
    };
  },
  async precheck(value, { config }) {
    if (!value.webhook_url) return;
    const verdict = await validateWebhookUrl(value.webhook_url, { allowPrivate: config.webhookAllowPrivate });
    if (!verdict.ok) {
      const message = verdict.message.startsWith('webhook') ? verdict.message : `webhook_url ${verdict.message}`;
      throw new AppError('invalid_request', `${message}.`, { param: 'webhook_url' });
    }
  },
  async handler(value, ctx) {
    const { config, db, actor } = ctx;
    const scope = { accountId: actor.accountId, livemode: actor.livemode };
    const settings = await findCreationSettings(db, scope);
    if (!settings) throw new AppError('not_found', 'The account of this key no longer exists.');
    rememberSettings(scope, settings);
    const row = paymentRow(value, ctx, settings);
    const creationHash = row.creation_hash;
    const inserted = await insertPayment(db, newPayment(row));
    if (inserted) return presentPayment(config, inserted);

    // The reference is taken on this account and mode: the same request is the same payment.
    const existing = await findPaymentByReference(db, scope, value.reference!);
    if (existing && existing.creation_hash === creationHash) return presentPayment(config, existing);
    throw new AppError(
      'conflict',
      `A payment with reference '${value.reference}' already exists (${existing?.id ?? 'unknown'}) with different parameters. Use a new reference, or repeat the original parameters to get that payment back.`,
      { param: 'reference' },
    );
  },
  // One statement where the handler takes a transaction of four (src/pipeline/execute-tool.ts): the account's
  // settings as last read, and the insert writes only while they are still the account's.
  async singleInsert(value, ctx) {
    const { config, actor } = ctx;
    const scope = { accountId: actor.accountId, livemode: actor.livemode };
    const settings = knownSettings.get(settingsKey(scope)) ?? (await findCreationSettings(ctx.db, scope));
    if (!settings) return undefined;
    rememberSettings(scope, settings);
    const row = paymentRow(value, ctx, settings);
    return {
      insert: insertPaymentWithSettings(newPayment(row), settings),
      row,
      output: (written: PaymentRow) => presentPayment(config, written),
    };
  },
});

/**
 * Each account's creation settings (per mode) as last read, for the one-statement create. Never
 * trusted alone: its insert checks them against the database, and a change falls back to the
 * handler, which reads them again. Bounded: forgotten wholesale past MAX_KNOWN_SETTINGS.
 */
const MAX_KNOWN_SETTINGS = 10_000;
const knownSettings = new Map<string, CreationSettings>();

function settingsKey(scope: { accountId: string; livemode: boolean }): string {
  return `${scope.accountId}:${scope.livemode}`;
}

function rememberSettings(scope: { accountId: string; livemode: boolean }, settings: CreationSettings): void {
  const key = settingsKey(scope);
  if (knownSettings.size >= MAX_KNOWN_SETTINGS && !knownSettings.has(key)) knownSettings.clear();
  knownSettings.set(key, settings);
}

/**
 * The new payment as the database will hold it, every column given (so the one-statement create
 * knows its response before writing it, and the schedule trigger of migration 020 has nothing to
 * fill in). Throws the request's errors: no rate, a bad amount.
 */
function paymentRow(
  value: z.output<typeof input>,
  { rates, actor, now }: ToolContext,
  settings: CreationSettings,
): PaymentRow {
  const currency = getCurrency(value.currency)!;
  const parsed = parseMajorAmount(value.amount, currency);
  if (!parsed.ok) throw new AppError('invalid_request', 'amount is not a valid amount', { param: 'amount' });
  const quote = quoteFromTable(parsed.minor, currency, rates, settings.feeBps);
  if (!quote)
    throw new AppError('invalid_request', `No FX rate is configured for ${currency.code}.`, { param: 'currency' });
  return {
    id: newId('pay'),
    account_id: actor.accountId,
    livemode: actor.livemode,
    status: 'pending',
    amount_minor: parsed.minor,
    currency: currency.code,
    redirect_url: value.redirect_url,
    reference: value.reference ?? null,
    merchant_name: value.merchant_name ?? null,
    description: value.description ?? null,
    webhook_url: value.webhook_url ?? null,
    payout_address: value.payout_address ?? null,
    // As read back: json text is parsed on the way out (db/connect.ts).
    metadata: value.metadata == null ? null : parseStoredJson(stringifyJson(value.metadata)),
    creation_hash: exactRequestHash(value),
    expires_at: new Date(now.getTime() + value.ttl_minutes * 60_000),
    quote_rate: quote.rate,
    quote_source: quote.source,
    fee_bps: quote.fee_bps,
    settlement_asset: SETTLEMENT_CURRENCY.code,
    gross_settlement_minor: quote.gross_settlement_minor,
    fee_minor: quote.fee_minor,
    settlement_minor: quote.settlement_minor,
    settlement_destination: null,
    settlement_address: null,
    settlement_tx_hash: null,
    settlement_chain_id: null,
    settlement_gas_used: null,
    settlement_gas_cost_wei: null,
    refunded_minor: 0n,
    // The payment's own schedule, else the account's (migration 020's trigger does the same).
    settlement_schedule: value.settlement_schedule ?? settings.schedule ?? 'instant',
    settlement_threshold_minor: value.settlement_schedule ? null : settings.thresholdMinor,
    settlement_due_at: null,
    paid_at: null,
    settled_at: null,
    expired_at: null,
    created_at: now,
    updated_at: now,
  };
}

function newPayment(row: PaymentRow): NewPayment {
  return { ...row, metadata: row.metadata === null ? null : stringifyJson(row.metadata) };
}
