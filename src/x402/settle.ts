// Settling an x402 `exact` payment: the EIP-3009 authorization verified again, recorded with the
// payment it pays before anything is submitted (record_x402_authorization), submitted and followed
// by the settlement worker (src/settlement/authorizations.ts), credited at confirmation
// (confirm_x402_authorization). This file is the caller's side: it records, then waits for the
// worker's outcome. POST /x402/settle and checkout sessions paid in USDC both come through here.
//
// Exactly once: the authorization's (chain, token, payer, nonce) is recorded once. The same request
// again (same merchant, payment and payload) is answered from that record, waiting for it if it is
// still in flight; the same authorization offered for anything else is refused and moves nothing.

import { setTimeout as sleep } from 'node:timers/promises';
import { getAddress, type Hex } from 'viem';
import { canonicalHash } from '../core/canonical-json.ts';
import type { ToolEnvironment } from '../core/tool.ts';
import {
  findX402AuthorizationById,
  findX402AuthorizationByKey,
  type X402AuthorizationKey,
} from '../db/repositories/x402-authorizations.ts';
import type { X402AuthorizationRow } from '../db/tables/x402.ts';
import { runSystemTool } from '../pipeline/system-runs.ts';
import { recordX402Authorization } from '../../tools/system/x402-authorizations.ts';
import {
  caip2,
  exactEvmPayload,
  type PaymentPayload,
  type PaymentRequirements,
  X402_REASONS,
  type X402Reason,
} from './messages.ts';
import { verifyForMode } from './verify-for-mode.ts';

export type SettleOutcome =
  | { status: 'settled'; transaction: string; network: string; payer: string; paymentId: string }
  | { status: 'refused'; reason: X402Reason; message: string; payer?: string }
  /** Still in flight when the wait ended: unknown, never "did not happen". */
  | { status: 'pending'; paymentId: string; payer: string };

export interface SettleInput {
  accountId: string;
  livemode: boolean;
  /** An existing checkout session's payment this authorization pays; absent: a new facilitator payment. */
  paymentId?: string;
  payload: PaymentPayload;
  requirements: PaymentRequirements;
}

/** How long a settle waits for the transfer by default, when the requirements allow that long. */
const DEFAULT_WAIT_MS = 30_000;
const POLL_MS = 25;

/**
 * Settles one authorization for the account: refused (with the specification's reason, nothing
 * moved), settled (the transfer is on chain at depth and the payment paid), or pending when the
 * wait (options.waitMs, else up to the requirements' maxTimeoutSeconds, at most 30 s) ended first.
 */
export async function settleAuthorization(
  deps: ToolEnvironment,
  input: SettleInput,
  options: { waitMs?: number } = {},
): Promise<SettleOutcome> {
  const waitMs = options.waitMs ?? Math.min(input.requirements.maxTimeoutSeconds * 1000, DEFAULT_WAIT_MS);
  const requestHash = settleRequestHash(input);
  const conn = await deps.chain();
  const key = authorizationKey(conn.chainId, conn.tokenAddress, input.payload);
  // Asked before: answered from the record, whatever the chain says now (the nonce is used by then).
  const earlier = key && (await findX402AuthorizationByKey(deps.db, key));
  if (earlier) return await answerEarlier(deps, earlier, input, requestHash, waitMs);

  const verified = await verifyForMode(deps, input.livemode, {
    paymentPayload: input.payload,
    paymentRequirements: input.requirements,
  });
  if (!verified.ok) return refused(verified.reason, verified.message, verified.payer);
  const auth = verified.authorization;
  const recorded = await runSystemTool(
    deps,
    recordX402Authorization,
    {
      ...(input.paymentId === undefined ? {} : { payment_id: input.paymentId }),
      chain_id: conn.chainId,
      token: conn.tokenAddress.toLowerCase(),
      payer: auth.from.toLowerCase(),
      nonce: auth.nonce.toLowerCase(),
      pay_to: auth.to.toLowerCase(),
      value_minor: auth.value.toString(),
      valid_after: auth.validAfter.toString(),
      valid_before: auth.validBefore.toString(),
      signature: verified.signature.toLowerCase(),
      request_hash: requestHash,
      ...(input.payload.resource
        ? {
            resource: {
              url: input.payload.resource.url,
              ...(input.payload.resource.description ? { description: input.payload.resource.description } : {}),
            },
          }
        : {}),
    },
    { accountId: input.accountId, livemode: input.livemode },
  );
  if (recorded.result === 'refused') {
    return refused(recorded.refusal!.reason as X402Reason, recorded.refusal!.message, auth.from);
  }
  const row = await findX402AuthorizationById(deps.db, recorded.authorization!.id);
  // `existing`: a concurrent settle of the same authorization recorded it first.
  if (recorded.result === 'existing') return await answerEarlier(deps, row, input, requestHash, waitMs);
  return await waitForOutcome(deps, row.id, waitMs);
}

/** The authorization was recorded before: the same request waits for its outcome; anything else is refused. */
async function answerEarlier(
  deps: Pick<ToolEnvironment, 'db'>,
  row: X402AuthorizationRow,
  input: SettleInput,
  requestHash: string,
  waitMs: number,
): Promise<SettleOutcome> {
  const payer = getAddress(row.payer);
  if (row.account_id !== input.accountId || row.livemode !== input.livemode || row.request_hash !== requestHash) {
    return refused(
      X402_REASONS.nonceUsed,
      `nonce ${row.nonce} of ${payer} was already offered for another payment; it pays once`,
      payer,
    );
  }
  return await waitForOutcome(deps, row.id, waitMs);
}

async function waitForOutcome(deps: Pick<ToolEnvironment, 'db'>, id: string, waitMs: number): Promise<SettleOutcome> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const row = await findX402AuthorizationById(deps.db, id);
    const payer = getAddress(row.payer);
    if (row.status === 'confirmed') {
      return {
        status: 'settled',
        transaction: row.tx_hash!,
        network: caip2(row.chain_id),
        payer,
        paymentId: row.payment_id,
      };
    }
    if (row.status === 'failed') {
      return refused(
        (row.failure_reason ?? X402_REASONS.unexpectedSettle) as X402Reason,
        row.failure_message ?? 'the transfer failed',
        payer,
      );
    }
    if (Date.now() >= deadline) return { status: 'pending', paymentId: row.payment_id, payer };
    await sleep(POLL_MS);
  }
}

function refused(reason: X402Reason, message: string, payer?: string): SettleOutcome {
  return payer === undefined ? { status: 'refused', reason, message } : { status: 'refused', reason, message, payer };
}

/** The token's key of the payload's authorization, when the payload is well formed enough to name one. */
function authorizationKey(chainId: number, token: string, payload: PaymentPayload): X402AuthorizationKey | undefined {
  const exact = exactEvmPayload.safeParse(payload.payload);
  if (!exact.success) return undefined;
  const { from, nonce } = exact.data.authorization;
  return { chainId, token: token.toLowerCase(), payer: from.toLowerCase(), nonce: nonce.toLowerCase() };
}

/**
 * What makes two settle requests the same: the payment paid, the signed authorization and what it
 * was asked for (scheme, network, amount, asset, payTo, the resource). Addresses and hex compare
 * case-insensitively, as the chain does.
 */
function settleRequestHash(input: SettleInput): string {
  const exact = exactEvmPayload.safeParse(input.payload.payload);
  const r = input.requirements;
  return canonicalHash({
    payment: input.paymentId ?? null,
    signature: exact.success ? (exact.data.signature.toLowerCase() as Hex) : null,
    authorization: exact.success
      ? Object.fromEntries(Object.entries(exact.data.authorization).map(([k, v]) => [k, v.toLowerCase()]))
      : null,
    requirements: {
      scheme: r.scheme,
      network: r.network,
      amount: BigInt(r.amount).toString(),
      asset: r.asset.toLowerCase(),
      payTo: r.payTo.toLowerCase(),
    },
    resource: input.payload.resource?.url ?? null,
  });
}
