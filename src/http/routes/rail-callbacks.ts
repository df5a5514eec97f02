import { timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { AppError } from '../../core/errors.ts';
import {
  findMpesaAttempt,
  findMpesaAttemptByCallbackHash,
  findPaystackAttemptByReference,
  keepSignedSuccess,
  mpesaReferenceTaken,
  type PaymentAttemptRow,
  recordMissingProviderReference,
} from '../../db/repositories/payment-attempts.ts';
import type { PaymentRailDeps } from '../../payments/deps.ts';
import { recordRailEvent } from '../../db/repositories/rail-events.ts';
import { checkAttempt, collectionOfAttempt } from '../../payments/rails/attempts.ts';
import { sha256Hex } from '../../core/sha256.ts';
import { paystackSignatureValid } from '../../payments/rails/paystack.ts';
import type { ProviderVerdict } from '../../payments/rails/rail.ts';
import { STK_CALLBACK_PATH } from '../../payments/rails/mpesa.ts';
import { isId } from '../../domain/ids.ts';

/**
 * What the providers send plainpay (docs/rails.md), on the API host, with no API key: they prove
 * themselves another way, and nothing they say is believed until the provider's own API confirms it.
 *
 *   POST /hooks/paystack                 Paystack's events, signed with the merchant's secret key
 *   POST /hooks/stk/:token               Daraja's STK result callback (unsigned: the URL holds a
 *                                        secret of the attempt's own, and the STK query decides)
 *   POST /hooks/mpesa/:attempt/:token    the same, at the URL pushes made before the upgrade named
 *
 * Every callback, accepted or refused, leaves a rail event on the payment for finance.
 */
export function railCallbackRoutes(deps: PaymentRailDeps): FastifyPluginAsync {
  return async (app) => {
    // The signature is over the raw body: keep it as sent (this plugin's own parser).
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => done(null, body));

    app.post('/hooks/paystack', (request) => receivePaystackEvent(deps, request));

    // The secret alone names the attempt (hex, 256 bits; stored hashed, so looked up by its hash).
    app.post<{ Params: { token: string } }>(`${STK_CALLBACK_PATH}/:token`, async (request) => {
      const { token } = request.params;
      const attempt = /^[0-9a-f]{64}$/.test(token)
        ? await findMpesaAttemptByCallbackHash(deps.db, sha256Hex(token))
        : undefined;
      return receiveStkCallback(deps, request, attempt, attempt !== undefined);
    });

    // The URL pushes were given before the callback path lost the word "mpesa" (which Safaricom
    // tells integrators to keep out of callback URLs). Daraja posts a push's result once, to the
    // URL the push named, so this keeps answering for pushes made before the upgrade; no push is
    // given it any more (stkCallbackUrl).
    app.post<{ Params: { attempt: string; token: string } }>('/hooks/mpesa/:attempt/:token', async (request) => {
      const attempt = isId('att', request.params.attempt)
        ? await findMpesaAttempt(deps.db, request.params.attempt)
        : undefined;
      const hash = attempt?.callback_token_hash;
      const known = hash ? sameHash(hash, sha256Hex(request.params.token)) : false;
      return receiveStkCallback(deps, request, attempt, known);
    });
  };
}

/**
 * A Paystack event, signed with the secret key of the integration the payer paid into. Only
 * charge.success moves anything, and only once verify confirms it; every event is noted.
 */
async function receivePaystackEvent(deps: PaymentRailDeps, request: FastifyRequest): Promise<{ received: true }> {
  const raw = typeof request.body === 'string' ? request.body : '';
  const now = () => deps.clock.now();
  const event = parseJson(raw) as { event?: unknown; data?: Record<string, unknown> } | undefined;
  // A charge event names its transaction's `reference`; a refund.* event its `transaction_reference`
  // (Paystack's published samples).
  const named = event?.data?.reference ?? event?.data?.transaction_reference;
  const reference = typeof named === 'string' ? named : undefined;
  if (!event || typeof event.event !== 'string' || !reference) {
    await recordRailEvent(deps.db, 'paystack', null, 'callback', 'refused_malformed', 'not a Paystack event', now());
    throw new AppError('invalid_request', 'The body is not a Paystack event.');
  }
  const attempt = await findPaystackAttemptByReference(deps.db, reference);
  if (!attempt) {
    // Another system on the same Paystack integration, or a forgery: acknowledged, never acted on.
    await recordRailEvent(
      deps.db,
      'paystack',
      null,
      'callback',
      'refused_unknown',
      `${event.event} for unknown reference ${reference.slice(0, 100)}`,
      now(),
    );
    request.log.warn({ reference }, 'Paystack event for an unknown reference ignored');
    return { received: true };
  }
  // Signed with the secret key of the integration the payer paid into.
  const credentials = (await collectionOfAttempt<'paystack'>(deps, attempt))?.credentials;
  const signature = request.headers['x-paystack-signature'];
  if (
    !credentials ||
    !paystackSignatureValid(credentials.secret_key, raw, typeof signature === 'string' ? signature : undefined)
  ) {
    await recordRailEvent(
      deps.db,
      'paystack',
      attempt,
      'callback',
      'refused_signature',
      `${event.event}: x-paystack-signature does not match`,
      now(),
    );
    request.log.warn({ attemptId: attempt.id }, 'Paystack event with a bad signature refused');
    throw new AppError('authentication_failed', 'The x-paystack-signature header does not match the body.');
  }
  if (event.event !== 'charge.success') {
    // A refund.* event is believed no more than a charge: the refunds worker reads the refund
    // from Paystack's API (Fetch Refund), here only noted for finance.
    const refundEvent = event.event.startsWith('refund.');
    await recordRailEvent(
      deps.db,
      'paystack',
      attempt,
      'callback',
      refundEvent ? 'noted' : 'ignored',
      refundEvent
        ? `${event.event}: the refund is read from Paystack's API, not from this event`
        : `${event.event} is not acted on`,
      now(),
    );
    return { received: true };
  }
  if (attempt.outcome === 'succeeded' || attempt.outcome === 'flagged') {
    await recordRailEvent(
      deps.db,
      'paystack',
      attempt,
      'callback',
      'duplicate',
      `charge.success again: the attempt is already ${attempt.outcome}`,
      now(),
    );
    return { received: true };
  }
  await recordRailEvent(
    deps.db,
    'paystack',
    attempt,
    'callback',
    'received',
    'charge.success, signature valid: kept until verify confirms it',
    now(),
  );
  await keepSignedSuccess(deps.db, attempt.id, now());
  // The event's own figures must agree with verify's: a signed event that disagrees flags the
  // attempt. Both report in `amount` what the payer was charged, any fee passed to them included.
  const claimed = {
    amount_minor: String(event.data?.amount ?? ''),
    currency: String(event.data?.currency ?? ''),
    reference,
  };
  await checkAttempt(deps, attempt, {
    trigger: 'callback',
    mayPay: true,
    abandonIsFinal: false,
    overlay: (v) => disagreeing(v, claimed),
  });
  // Confirmed, or kept: if verify did not answer or does not show the charge yet, the reconciler
  // asks it again until it does (ended attempt or not), so Paystack need not send it again.
  return { received: true };
}

/**
 * Daraja's STK result for an attempt: acknowledged whatever it says, believed only as far as the
 * STK query confirms it. `known`: the URL's secret is the attempt's own.
 */
async function receiveStkCallback(
  deps: PaymentRailDeps,
  request: FastifyRequest,
  attempt: PaymentAttemptRow | undefined,
  known: boolean,
): Promise<{ ResultCode: number; ResultDesc: string }> {
  const now = () => deps.clock.now();
  const accepted = { ResultCode: 0, ResultDesc: 'Accepted' };
  if (!attempt || !known) {
    await recordRailEvent(
      deps.db,
      'mpesa',
      attempt ?? null,
      'callback',
      'refused_unknown',
      'callback URL does not name an attempt with this secret',
      now(),
    );
    request.log.warn({ url: request.url.slice(0, 60) }, 'M-Pesa callback on an unknown URL refused');
    throw new AppError('not_found', 'No such callback.');
  }
  const body = parseJson(typeof request.body === 'string' ? request.body : '') as
    | { Body?: { stkCallback?: Record<string, unknown> } }
    | undefined;
  const callback = body?.Body?.stkCallback;
  const checkoutRequestId = callback?.CheckoutRequestID;
  if (!callback || typeof checkoutRequestId !== 'string' || checkoutRequestId.length > 100) {
    await recordRailEvent(deps.db, 'mpesa', attempt, 'callback', 'refused_malformed', 'not an STK callback', now());
    throw new AppError('invalid_request', 'The body is not an M-Pesa STK callback.');
  }
  if (attempt.provider_reference !== null && checkoutRequestId !== attempt.provider_reference) {
    await recordRailEvent(
      deps.db,
      'mpesa',
      attempt,
      'callback',
      'refused_mismatch',
      `callback for ${checkoutRequestId.slice(0, 60)}, the attempt is ${attempt.provider_reference}`,
      now(),
    );
    throw new AppError('invalid_request', 'The callback is about another request.');
  }
  if (attempt.outcome === 'succeeded' || attempt.outcome === 'flagged') {
    await recordRailEvent(
      deps.db,
      'mpesa',
      attempt,
      'callback',
      'duplicate',
      `callback again: the attempt is already ${attempt.outcome}`,
      now(),
    );
    return accepted;
  }
  if (attempt.provider_reference === null) {
    // The push's answer never came (lost, a timeout, a 5xx, a crash): only its callback names it
    // (the STK query needs the ID), unless another attempt has it.
    if (await mpesaReferenceTaken(deps.db, checkoutRequestId)) {
      await recordRailEvent(
        deps.db,
        'mpesa',
        attempt,
        'callback',
        'refused_mismatch',
        `callback names ${checkoutRequestId.slice(0, 60)}, which belongs to another attempt`,
        now(),
      );
      throw new AppError('invalid_request', 'The callback is about another request.');
    }
    await recordMissingProviderReference(deps.db, attempt.id, checkoutRequestId);
    attempt.provider_reference = checkoutRequestId;
  }
  const claimed = mpesaClaim(callback);
  await recordRailEvent(
    deps.db,
    'mpesa',
    attempt,
    'callback',
    'received',
    `ResultCode ${String(callback.ResultCode)}: ${String(callback.ResultDesc ?? '')}`.slice(0, 300),
    now(),
  );
  await checkAttempt(deps, attempt, {
    trigger: 'callback',
    mayPay: true,
    abandonIsFinal: true,
    overlay: (v) =>
      // The query decides; a callback that claimed a success must also claim the amount pushed.
      v.outcome === 'succeeded' && v.confirmed && Number(callback.ResultCode) === 0
        ? disagreeing(
            { ...v, confirmed: { ...v.confirmed, receipt: claimed.receipt } },
            {
              amount_minor: claimed.amountMinor ?? '',
              currency: 'KES',
              reference: v.confirmed.reference,
            },
          )
        : v,
  });
  // Daraja wants an acknowledgement whatever plainpay made of it; the query decided, not this body.
  return accepted;
}

/**
 * A success whose confirmation disagrees with what the callback claimed carries the claim, so it is
 * flagged. The claim's amount is what the payer was charged in all: the confirmed amount asked plus
 * any fee the payer paid on top.
 */
function disagreeing(
  verdict: ProviderVerdict,
  claimed: { amount_minor: string; currency: string; reference: string },
): ProviderVerdict {
  if (verdict.outcome !== 'succeeded' || !verdict.confirmed) return verdict;
  const { payer_fee_minor: fee, ...c } = verdict.confirmed;
  const charged = fee === undefined ? c.amount_minor : String(BigInt(c.amount_minor) + BigInt(fee));
  if (charged === claimed.amount_minor && c.currency === claimed.currency && c.reference === claimed.reference)
    return verdict;
  return {
    ...verdict,
    confirmed: { ...c, ...claimed },
    detail: `${verdict.detail}; the callback claimed ${claimed.amount_minor} ${claimed.currency}`,
  };
}

/** The amount (whole shillings → cents) and receipt an STK callback claims. */
function mpesaClaim(callback: Record<string, unknown>): {
  amountMinor: string | undefined;
  receipt: string | undefined;
} {
  const metadata = callback.CallbackMetadata as { Item?: unknown } | null | undefined;
  const items = Array.isArray(metadata?.Item)
    ? (metadata.Item as Array<{ Name?: unknown; Value?: unknown } | null>)
    : [];
  const value = (name: string) => items.find((i) => i?.Name === name)?.Value;
  const amount = value('Amount');
  const receipt = value('MpesaReceiptNumber');
  const amountMinor =
    typeof amount === 'number' && Number.isFinite(amount) && amount >= 0 ? String(Math.round(amount * 100)) : undefined;
  return { amountMinor, receipt: typeof receipt === 'string' ? receipt.slice(0, 100) : undefined };
}

function sameHash(a: string, b: string): boolean {
  return a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
