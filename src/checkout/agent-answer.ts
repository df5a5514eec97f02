// The checkout URL answering an AI agent over x402 v2's HTTP transport (coinbase/x402
// specs/transports-v2/http.md): an unpaid session is a 402 whose PAYMENT-REQUIRED header (base64
// JSON) names the one way to pay it; the body carries the same object, for clients that read bodies.
// A session with nothing to pay says so with the status its state calls for (docs/x402.md).

import type { FastifyReply } from 'fastify';
import type { ChainConnection } from '../chain/chain.ts';
import type { Config } from '../config/config.ts';
import { AppError } from '../core/errors.ts';
import { stringifyJson } from '../core/json-text.ts';
import type { PaymentRow } from '../db/database.ts';
import { presentPublicPayment } from '../domain/present-payment.ts';
import { sendError } from '../http/plugins/errors.ts';
import {
  type PaymentRequired,
  SIGNATURE_REQUIRED,
  sessionPaymentRequired,
  sessionRequirements,
  usdcStanding,
  WRONG_NETWORK_REASON,
} from './usdc-session.ts';

/**
 * Whether a request on the checkout URL is an x402 client's rather than a browser's: it carries a
 * payment, or it names what it accepts and HTML is not among it (@x402/fetch and curl send `*\/*`,
 * every browser's navigation names text/html). A request naming nothing gets the page, as before.
 */
export function isAgentRequest(headers: Record<string, string | string[] | undefined>): boolean {
  if (headers['payment-signature'] !== undefined) return true;
  const accept = headers.accept;
  return typeof accept === 'string' && accept.trim() !== '' && !/\btext\/html\b/i.test(accept);
}

export function encodeHeader(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64');
}

/** A 402 with the PaymentRequired in the header and in the body; `message` says the reason in words. */
export function sendPaymentRequired(reply: FastifyReply, required: PaymentRequired, message?: string): FastifyReply {
  return reply
    .code(402)
    .header('PAYMENT-REQUIRED', encodeHeader(required))
    .type('application/json; charset=utf-8')
    .send(JSON.stringify(message === undefined ? required : { ...required, message }));
}

/** The payment's public status, as GET /checkout/:id answers it. */
export function sendPublicStatus(reply: FastifyReply, config: Config, row: PaymentRow, status = 200): FastifyReply {
  return reply
    .code(status)
    .type('application/json; charset=utf-8')
    .send(stringifyJson(presentPublicPayment(config, row)));
}

/** Why a session that is neither payable nor paid cannot be paid now, for an agent. */
export function notPayableError(standing: 'expired' | 'in_progress', row: PaymentRow): AppError {
  return standing === 'expired'
    ? new AppError(
        'conflict',
        `Checkout session ${row.id} has expired: it can no longer be paid, and nothing was charged. Ask the merchant for a new one.`,
      )
    : new AppError(
        'conflict',
        `Checkout session ${row.id} has a payment in progress, which may still complete: it cannot be paid again now. Read GET /checkout/${row.id} for its outcome.`,
      );
}

/** GET /pay/:id without a payment: what it costs, or why there is nothing to pay. */
export async function answerUnpaidRequest(
  reply: FastifyReply,
  config: Config,
  conn: ChainConnection,
  row: PaymentRow,
  now: Date,
): Promise<FastifyReply> {
  const standing = usdcStanding(row, conn, now);
  switch (standing) {
    case 'payable': {
      const requirements = await sessionRequirements(conn, row);
      return sendPaymentRequired(reply, sessionPaymentRequired(config, row, [requirements], SIGNATURE_REQUIRED));
    }
    case 'paid':
      // Nothing to pay: the answer is the resource itself, the payment's status.
      return sendPublicStatus(reply, config, row);
    case 'wrong_network':
      return sendWrongNetwork(reply, config, conn, row);
    case 'expired':
    case 'in_progress':
      return sendError(reply, notPayableError(standing, row));
  }
}

/**
 * A session whose money cannot move on this chain: payment is still required, just not in this
 * token, so a 402 that offers nothing, with the specification's reason.
 */
export function sendWrongNetwork(
  reply: FastifyReply,
  config: Config,
  conn: Pick<ChainConnection, 'chainId'>,
  row: PaymentRow,
): FastifyReply {
  const message = row.livemode
    ? `This is a live checkout session, and chain ${conn.chainId} is a test network whose tokens are not money: it cannot be paid in USDC here.`
    : `This is a test-mode checkout session, and chain ${conn.chainId} is not a test network: test sessions are not paid with real USDC.`;
  return sendPaymentRequired(reply, sessionPaymentRequired(config, row, [], WRONG_NETWORK_REASON), message);
}
