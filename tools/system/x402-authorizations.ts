// USDC paid in by an EIP-3009 authorization (x402's exact scheme on EVM, docs/x402.md): recorded
// before anything is submitted (record_x402_authorization), then, as the settlement worker follows
// its transfer, confirmed on chain (confirm_x402_authorization: the treasury grows, the payment is
// paid) or failed for good (fail_x402_authorization: nothing moved). From `paid` the payment takes
// the same road as any rail's: start_payment_settlements settles it to the payout address or the
// custodial balance, with payment.settled.

import { z } from 'zod';
import { stringifyJson } from '../../src/core/json-text.ts';
import { defineTool, type ToolContext } from '../../src/core/tool.ts';
import type { NewPayment, PaymentRow } from '../../src/db/database.ts';
import { updatePaymentAttempt, insertPaymentAttempt } from '../../src/db/money-writes/payment-attempts.ts';
import { insertPayment, transitionPayment } from '../../src/db/money-writes/payments.ts';
import { postLedger } from '../../src/db/money-writes/ledger.ts';
import {
  insertX402Authorization,
  lockX402Authorization,
  markX402AuthorizationConfirmed,
  markX402AuthorizationFailed,
  markX402AuthorizationReverted,
} from '../../src/db/money-writes/x402-authorizations.ts';
import {
  findCreationSettings,
  findKnownPayment,
  lockPaymentById,
  lockScopedPayment,
} from '../../src/db/repositories/payments.ts';
import {
  findX402AuthorizationById,
  findX402AuthorizationByKey,
  lockX402AuthorizationKey,
} from '../../src/db/repositories/x402-authorizations.ts';
import { insertEvent } from '../../src/db/repositories/events.ts';
import { USDC_RAIL, type X402AuthorizationRow } from '../../src/db/tables/x402.ts';
import { quoteSettlement } from '../../src/domain/fx.ts';
import { newId } from '../../src/domain/ids.ts';
import { SETTLEMENT_CURRENCY } from '../../src/domain/money.ts';
import { presentPayment } from '../../src/domain/present-payment.ts';
import { credit, debit, type LedgerEntry, ledgerAccount } from '../../src/ledger/ledger.ts';

const address = z.string().regex(/^0x[0-9a-f]{40}$/, 'a lower-case 0x address');
const uint = z.string().regex(/^\d{1,78}$/);

/** The longest a facilitator payment stays open for its authorization (its own validBefore may be later). */
const FACILITATOR_PAYMENT_TTL_MS = 24 * 3600_000;

const authorizationSummary = z.object({
  id: z.string(),
  account_id: z.string(),
  livemode: z.boolean(),
  payment_id: z.string(),
  request_hash: z.string(),
  status: z.string(),
});
type AuthorizationSummary = z.output<typeof authorizationSummary>;

function summary(row: X402AuthorizationRow): AuthorizationSummary {
  return {
    id: row.id,
    account_id: row.account_id,
    livemode: row.livemode,
    payment_id: row.payment_id,
    request_hash: row.request_hash,
    status: row.status,
  };
}

const recordInput = z.strictObject({
  payment_id: z
    .string()
    .min(1)
    .max(100)
    .optional()
    .describe("A checkout session's payment this authorization pays; absent: a new facilitator payment."),
  chain_id: z.number().int().positive(),
  token: address,
  payer: address.describe("The authorization's `from`."),
  nonce: z.string().regex(/^0x[0-9a-f]{64}$/),
  pay_to: address,
  value_minor: uint.describe('USDC atomic units authorized.'),
  valid_after: uint,
  valid_before: uint,
  signature: z
    .string()
    .regex(/^0x[0-9a-f]+$/)
    .max(20_000),
  request_hash: z.string().length(64).describe('SHA-256 of the settle request, to recognise it again.'),
  resource: z
    .strictObject({ url: z.string().max(2048), description: z.string().max(1000).optional() })
    .optional()
    .describe('What was paid for (x402 ResourceInfo).'),
});
type RecordInput = z.output<typeof recordInput>;

const recordOutput = z.object({
  /** recorded: new; existing: the key was taken before (by this request or another); refused: not payable. */
  result: z.enum(['recorded', 'existing', 'refused']),
  authorization: authorizationSummary.optional(),
  refusal: z.object({ reason: z.string(), message: z.string() }).optional(),
});
type RecordOutput = z.output<typeof recordOutput>;

/**
 * Records an authorization the merchant asked plainpay to settle, before anything is submitted:
 * its payment (a new facilitator payment in USDC, or the checkout session named) goes `processing`
 * with an open attempt on the `usdc` rail. The authorization's key (chain, token, payer, nonce) is
 * taken once: a second record of it answers `existing` and writes nothing.
 */
export const recordX402Authorization = defineTool({
  name: 'record_x402_authorization',
  title: 'Record a USDC authorization to settle',
  description: 'Records an EIP-3009 authorization and the payment it pays, before it is submitted on chain.',
  input: recordInput,
  output: recordOutput,
  effect: 'money',
  scope: 'payments:write',
  system: {},
  async handler(input, ctx): Promise<RecordOutput> {
    const { db } = ctx;
    // One recorder per key at a time (concurrent settles of one payload): the second waits here and
    // then finds the first one's row.
    const key = `${input.chain_id}:${input.token}:${input.payer}:${input.nonce}`;
    await lockX402AuthorizationKey(db, key);
    const existing = await findX402AuthorizationByKey(db, {
      chainId: input.chain_id,
      token: input.token,
      payer: input.payer,
      nonce: input.nonce,
    });
    if (existing) return { result: 'existing', authorization: summary(existing) };

    const value = BigInt(input.value_minor);
    const payment =
      input.payment_id === undefined
        ? await newFacilitatorPayment(input, value, ctx)
        : await lockSession(input, value, ctx);
    if ('refusal' in payment) return { result: 'refused', refusal: payment.refusal };

    const attemptId = newId('att');
    await insertPaymentAttempt(db, {
      id: attemptId,
      payment_id: payment.id,
      rail: USDC_RAIL,
      outcome: 'pending',
      amount_minor: value,
      currency: SETTLEMENT_CURRENCY.code,
      // The token's key for the authorization: unique per rail, a second guard against paying twice.
      provider_reference: key,
      payer_hint: input.payer,
      created_at: ctx.now,
    });
    const row = await insertX402Authorization(db, {
      id: newId('xauth'),
      chain_id: input.chain_id,
      token: input.token,
      payer: input.payer,
      nonce: input.nonce,
      account_id: ctx.actor.accountId,
      livemode: ctx.actor.livemode,
      payment_id: payment.id,
      attempt_id: attemptId,
      pay_to: input.pay_to,
      value_minor: value,
      valid_after: BigInt(input.valid_after),
      valid_before: BigInt(input.valid_before),
      signature: input.signature,
      request_hash: input.request_hash,
      resource: input.resource ? stringifyJson(input.resource) : null,
      status: 'recorded',
      created_at: ctx.now,
      updated_at: ctx.now,
    });
    if (!row) throw new Error(`authorization ${key} was taken under its advisory lock`);
    return { result: 'recorded', authorization: summary(row) };
  },
});

type Refused = { refusal: { reason: string; message: string } };

/** A payment of the merchant's for what the authorization pays: USDC in, at rate 1, the account's fee. */
async function newFacilitatorPayment(input: RecordInput, value: bigint, ctx: ToolContext): Promise<PaymentRow> {
  const { db, actor, now } = ctx;
  const settings = await findCreationSettings(db, { accountId: actor.accountId, livemode: actor.livemode });
  if (!settings) throw new Error(`account ${actor.accountId} vanished while settling an authorization`);
  const quote = quoteSettlement({
    amountMinor: value,
    currency: SETTLEMENT_CURRENCY,
    rate: '1',
    feeBps: settings.feeBps,
    source: 'identity',
  });
  const validBefore = Number(BigInt(input.valid_before) > 10n ** 12n ? 10n ** 12n : BigInt(input.valid_before));
  const expiresAt = new Date(Math.min(validBefore * 1000, now.getTime() + FACILITATOR_PAYMENT_TTL_MS));
  const payment: NewPayment = {
    id: newId('pay'),
    account_id: actor.accountId,
    livemode: actor.livemode,
    // Its attempt is in flight from the start: nothing else can pay it, and expiry waits for it.
    status: 'processing',
    amount_minor: value,
    currency: SETTLEMENT_CURRENCY.code,
    // The payer of an x402 payment is not redirected anywhere; the resource is where it went.
    redirect_url: input.resource?.url ?? '',
    reference: null,
    merchant_name: null,
    description: input.resource?.description?.slice(0, 300) ?? null,
    webhook_url: null,
    payout_address: null,
    metadata: stringifyJson({ x402_resource: input.resource?.url ?? null, x402_payer: input.payer }),
    creation_hash: input.request_hash,
    expires_at: expiresAt,
    quote_rate: quote.rate,
    quote_source: quote.source,
    fee_bps: quote.fee_bps,
    settlement_asset: SETTLEMENT_CURRENCY.code,
    gross_settlement_minor: quote.gross_settlement_minor,
    fee_minor: quote.fee_minor,
    settlement_minor: quote.settlement_minor,
    settlement_schedule: settings.schedule ?? 'instant',
    settlement_threshold_minor: settings.thresholdMinor,
    created_at: now,
    updated_at: now,
  };
  const row = await insertPayment(db, payment);
  if (!row) throw new Error('a facilitator payment without a reference conflicted');
  return row;
}

/** The checkout session the authorization pays: payable now, and for exactly its locked gross in USDC. */
async function lockSession(input: RecordInput, value: bigint, ctx: ToolContext): Promise<PaymentRow | Refused> {
  const payment = await lockScopedPayment(ctx.db, ctx.actor, input.payment_id!);
  const refuse = (reason: string, message: string): Refused => ({ refusal: { reason, message } });
  if (!payment) return refuse('invalid_payment_requirements', `no payment '${input.payment_id}' of this account`);
  if (payment.status !== 'pending') {
    return refuse('invalid_transaction_state', `payment ${payment.id} is ${payment.status}, not payable`);
  }
  if (payment.expires_at <= ctx.now) return refuse('invalid_transaction_state', `payment ${payment.id} has expired`);
  if (payment.settlement_asset !== SETTLEMENT_CURRENCY.code || value !== payment.gross_settlement_minor) {
    return refuse(
      'invalid_exact_evm_payload_authorization_value',
      `payment ${payment.id} is paid by exactly ${payment.gross_settlement_minor} USDC atomic units, not ${value}`,
    );
  }
  const processing = await transitionPayment(ctx.db, payment.id, 'pending', 'processing', {}, ctx.now);
  if (!processing) throw new Error(`payment ${payment.id} changed under its row lock`);
  return processing;
}

const chainFacts = z.strictObject({
  key: z.string().min(1).max(200),
  chain_id: z.number().int().positive(),
  batch_address: z.string().regex(/^0x[0-9a-fA-F]{40}$/),
  asset: z.string().min(1).max(16),
  ephemeral: z.boolean(),
});
const receipt = z.strictObject({
  hash: z.string().regex(/^0x[0-9a-fA-F]{64}$/),
  block_number: uint,
  block_hash: z.string().regex(/^0x[0-9a-fA-F]{64}$/),
  gas_used: uint,
  effective_gas_price: uint,
});

const outcomeOutput = z.object({
  authorization_id: z.string(),
  /** False: it was no longer in flight (another worker recorded it); nothing changed. */
  changed: z.boolean(),
  payment_id: z.string(),
  payment_status: z.string(),
});

/**
 * The authorization's transfer is on chain at the configured depth: the treasury grew by its value
 * (one posting per authorization), its attempt succeeded, and its payment is paid (payment.paid).
 * The settlement worker's intake settles it from there like any paid payment.
 */
export const confirmX402Authorization = defineTool({
  name: 'confirm_x402_authorization',
  title: 'Record a USDC authorization paid on chain',
  description: "Records an authorization's transfer into the treasury and pays its payment.",
  input: z.strictObject({ authorization_id: z.string().min(1).max(100), chain: chainFacts, receipt }),
  output: outcomeOutput,
  effect: 'money',
  scope: 'payments:write',
  system: {},
  async handler(input, ctx) {
    const { db, now } = ctx;
    const authorization = await lockX402Authorization(db, input.authorization_id, ctx.actor.accountId);
    const confirmed = await markX402AuthorizationConfirmed(
      db,
      authorization.id,
      {
        chainKey: input.chain.key,
        txHash: input.receipt.hash,
        blockNumber: BigInt(input.receipt.block_number),
        blockHash: input.receipt.block_hash,
        gasUsed: BigInt(input.receipt.gas_used),
        effectiveGasPrice: BigInt(input.receipt.effective_gas_price),
        final: input.chain.ephemeral,
      },
      now,
    );
    const payment = await lockPaymentById(db, authorization.payment_id);
    if (!confirmed) return outcome(authorization, false, payment);
    await postLedger(db, {
      kind: 'usdc_received',
      reference: authorization.reversals === 0 ? authorization.id : `${authorization.id}:${authorization.reversals}`,
      at: now,
      entries: usdcReceivedEntries(input.chain, payment, authorization.value_minor),
    });
    await updatePaymentAttempt(db, authorization.attempt_id, {
      outcome: 'succeeded',
      provider_receipt: input.receipt.hash,
      completed_at: now,
    });
    if (authorization.reversals > 0) {
      // Landed again after a reorg took it off the chain: the payment was paid the first time.
      ctx.logger.warn(
        { authorization: authorization.id, tx: input.receipt.hash },
        'a transfer a reorg undid landed again',
      );
      return outcome(authorization, true, payment);
    }
    const paid = await transitionPayment(db, payment.id, 'processing', 'paid', { paid_at: now }, now);
    if (!paid) {
      // Recorded before submission, the payment was held `processing` for this attempt alone.
      throw new Error(
        `payment ${payment.id} of authorization ${authorization.id} is ${payment.status}, not processing`,
      );
    }
    const view = presentPayment(ctx.config, paid);
    await insertEvent(db, {
      accountId: paid.account_id,
      livemode: paid.livemode,
      type: 'payment.paid',
      objectId: paid.id,
      data: { object: view, reference: view.reference, metadata: view.metadata },
      webhookUrl: paid.webhook_url,
      createdAt: now,
    });
    return outcome(authorization, true, paid);
  },
});

/**
 * The payer's USDC reached the treasury: the treasury holds `value` more, which is the payment's
 * local amount at its locked quote. With the payment_received posting that follows at settlement
 * (rail clearing → FX → merchant + fee), the rail clearing and FX accounts net to zero.
 */
function usdcReceivedEntries(chain: z.output<typeof chainFacts>, payment: PaymentRow, value: bigint): LedgerEntry[] {
  const mode = payment.livemode;
  const treasury = ledgerAccount.treasury(chain.key, chain.batch_address, chain.asset);
  if (payment.currency === chain.asset)
    return [debit(treasury, value), credit(ledgerAccount.railClearing(mode, chain.asset), value)];
  return [
    debit(treasury, value),
    credit(ledgerAccount.fx(mode, chain.asset), value),
    debit(ledgerAccount.fx(mode, payment.currency), payment.amount_minor),
    credit(ledgerAccount.railClearing(mode, payment.currency), payment.amount_minor),
  ];
}

/**
 * A reorg took the authorization's confirmed transfer off the chain (its block is no longer the
 * chain's and its transaction is not mined deep enough elsewhere): the treasury no longer holds its
 * value, so usdc_received is reversed by a posting of its own (the rail clearing account shows the
 * payer's money outstanding again), and the authorization is back in flight with its signed
 * transactions live: the worker broadcasts the same bytes again, and the token's nonce lets it land
 * once. The payment keeps its status (it may have settled into the balance or been paid out): its
 * credit stands on the transfer landing again, which confirm_x402_authorization records. One that
 * never lands again is failed loudly (fail_x402_authorization) for an operator to settle with the
 * merchant (docs/x402.md).
 */
export const revertX402Authorization = defineTool({
  name: 'revert_x402_authorization',
  title: 'Record a USDC authorization a reorg took off the chain',
  description: "Reverses an authorization's treasury credit after a reorg and puts it back in flight.",
  input: z.strictObject({
    authorization_id: z.string().min(1).max(100),
    chain: chainFacts,
    tx_hash: z
      .string()
      .regex(/^0x[0-9a-fA-F]{64}$/)
      .describe('The confirmed transaction the reorg took away.'),
    reason: z.string().min(1).max(2000),
  }),
  output: outcomeOutput,
  effect: 'money',
  scope: 'payments:write',
  system: {},
  async handler(input, ctx) {
    const { db, now } = ctx;
    const authorization = await lockX402Authorization(db, input.authorization_id, ctx.actor.accountId);
    const payment = await findKnownPayment(db, authorization.payment_id);
    if (authorization.status !== 'confirmed' || authorization.tx_hash !== input.tx_hash) {
      return outcome(authorization, false, payment);
    }
    await postLedger(db, {
      kind: 'usdc_reverted',
      reference: `${authorization.id}:${authorization.reversals}`,
      at: now,
      entries: usdcReceivedEntries(input.chain, payment, authorization.value_minor).map((e) =>
        e.side === 'debit' ? credit(e.account, e.amount) : debit(e.account, e.amount),
      ),
    });
    const reverted = await markX402AuthorizationReverted(db, authorization.id, input.tx_hash, now);
    return outcome(reverted ?? authorization, reverted !== undefined, payment);
  },
});

/**
 * The authorization can never land (refused on simulation, expired unsubmitted, canceled by its
 * payer): nothing moved. Its attempt fails and its payment is payable again (a checkout session),
 * or waits to expire (a facilitator payment, whose only payer was this authorization).
 */
export const failX402Authorization = defineTool({
  name: 'fail_x402_authorization',
  title: 'Record a USDC authorization that cannot land',
  description: 'Ends an authorization that can never be paid on chain; nothing moved.',
  input: z.strictObject({
    authorization_id: z.string().min(1).max(100),
    reason: z.string().min(1).max(100).describe("The specification's reason code."),
    message: z.string().min(1).max(2000),
  }),
  output: outcomeOutput,
  effect: 'write',
  scope: 'payments:write',
  system: {},
  async handler(input, ctx) {
    const { db, now } = ctx;
    const failed = await markX402AuthorizationFailed(db, input.authorization_id, input, now);
    const authorization = failed ?? (await findX402AuthorizationById(db, input.authorization_id));
    if (authorization.account_id !== ctx.actor.accountId) throw new Error('authorization of another account');
    if (!failed) {
      const payment = await findKnownPayment(db, authorization.payment_id);
      return outcome(authorization, false, payment);
    }
    await updatePaymentAttempt(db, authorization.attempt_id, {
      outcome: 'failed',
      failure_reason: `${input.reason}: ${input.message}`.slice(0, 300),
      completed_at: now,
    });
    if (authorization.reversals > 0) {
      // It was credited once, then a reorg took the transfer away, and now it can never land again:
      // the merchant holds a credit no money backs. The collection invariant names the payment (its
      // day's reconciliation: credit_without_operator_collection); settling it is an operator's task.
      ctx.logger.error(
        { authorization: authorization.id, payment: authorization.payment_id },
        'a credited x402 payment lost its transfer to a reorg and can no longer land',
      );
    }
    const reopened = await transitionPayment(db, authorization.payment_id, 'processing', 'pending', {}, now);
    const payment = reopened ?? (await findKnownPayment(db, authorization.payment_id));
    return outcome(authorization, true, payment);
  },
});

function outcome(authorization: X402AuthorizationRow, changed: boolean, payment: PaymentRow) {
  return { authorization_id: authorization.id, changed, payment_id: payment.id, payment_status: payment.status };
}
