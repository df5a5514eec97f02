// An agent's x402 retry on the checkout URL: GET /pay/:id with PAYMENT-SIGNATURE (base64 JSON of a
// PaymentPayload). Paid: 200 with PAYMENT-RESPONSE and the payment's public status. Refused: 402
// with the specification's reason in PAYMENT-REQUIRED's `error` and PAYMENT-RESPONSE's `errorReason`. The answers are x402 v2's HTTP transport (specs/transports-v2/http.md).

import type { FastifyReply } from 'fastify';
import type { ChainConnection } from '../chain/chain.ts';
import type { ToolEnvironment } from '../core/tool.ts';
import { AppError } from '../core/errors.ts';
import type { PaymentRow } from '../db/database.ts';
import { findPaymentById } from '../db/repositories/payments.ts';
import { sendError } from '../http/plugins/errors.ts';
import {
  encodeHeader,
  notPayableError,
  sendPaymentRequired,
  sendPublicStatus,
  sendWrongNetwork,
} from './agent-answer.ts';
import { paySessionByAuthorization } from './usdc-pay.ts';
import { sessionPaymentRequired } from './usdc-session.ts';

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** The PAYMENT-SIGNATURE header's PaymentPayload, or a 400 naming the header and the rule. */
function decodePaymentSignature(header: string | string[]): unknown {
  const malformed = (rule: string): AppError =>
    new AppError('invalid_request', `The PAYMENT-SIGNATURE header must be ${rule}.`, { param: 'PAYMENT-SIGNATURE' });
  if (typeof header !== 'string') throw malformed('sent once');
  if (!BASE64.test(header)) throw malformed('base64 (x402 v2 HTTP transport)');
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(header, 'base64').toString('utf8'));
  } catch {
    throw malformed('base64 of a JSON PaymentPayload');
  }
  if (decoded === null || typeof decoded !== 'object' || Array.isArray(decoded)) {
    throw malformed('base64 of a JSON object (a PaymentPayload)');
  }
  return decoded;
}

export async function answerPaymentSignature(
  reply: FastifyReply,
  deps: ToolEnvironment,
  conn: ChainConnection,
  row: PaymentRow,
  header: string | string[],
): Promise<FastifyReply> {
  const payload = decodePaymentSignature(header);
  let paid: Awaited<ReturnType<typeof paySessionByAuthorization>>;
  try {
    paid = await paySessionByAuthorization(deps, conn, row, payload);
  } catch (error) {
    // The authorization may have been submitted: the outcome is unknown, never "not paid".
    throw new AppError(
      'unavailable',
      `The outcome of this payment is not known yet. Send the same PAYMENT-SIGNATURE again to learn it (it is never paid twice), or read GET /checkout/${row.id}.`,
      { cause: error, headers: { 'Retry-After': '5' } },
    );
  }
  const { requirements, payment } = paid;
  const fresh = async (): Promise<PaymentRow> => (await findPaymentById(deps.db, row.id)) ?? row;
  switch (payment.kind) {
    case 'settled': {
      const { transaction, network, payer } = payment;
      reply.header('PAYMENT-RESPONSE', encodeHeader({ success: true, transaction, network, payer }));
      return sendPublicStatus(reply, deps.config, await fresh());
    }
    case 'pending':
      // Accepted, not yet confirmed: the same PAYMENT-SIGNATURE again answers the result.
      return sendPublicStatus(reply.header('Retry-After', '5'), deps.config, await fresh(), 202);
    case 'refused': {
      // Both headers: PAYMENT-REQUIRED's error is how the reference server reports a failed
      // verification, PAYMENT-RESPONSE how it reports a failed settlement; here they are one step.
      reply.header(
        'PAYMENT-RESPONSE',
        encodeHeader({
          success: false,
          errorReason: payment.reason,
          network: requirements.network,
          ...(payment.payer ? { payer: payment.payer } : {}),
        }),
      );
      const required = sessionPaymentRequired(deps.config, row, [requirements], payment.reason);
      return sendPaymentRequired(reply, required, `${payment.message}. Nothing was charged.`);
    }
    case 'not_payable':
      switch (payment.standing) {
        case 'paid':
          return sendError(
            reply,
            new AppError(
              'conflict',
              `Checkout session ${row.id} is already paid: this authorization was not used, and nothing was charged.`,
            ),
          );
        case 'wrong_network':
          return sendWrongNetwork(reply, deps.config, conn, row);
        default:
          return sendError(reply, notPayableError(payment.standing, row));
      }
  }
}
