import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify';
import { type CheckoutAssets, type CompressedAsset, checkoutAssets } from './assets.ts';
import { compressPage, negotiateEncoding } from './encoding.ts';
import { answerUnpaidRequest, isAgentRequest } from './agent-answer.ts';
import { answerPaymentSignature } from './agent-payment.ts';
import { isSameOriginPost } from './csrf.ts';
import { ATTEMPT_NOTICES, type CheckoutPageOptions, checkoutPage, type MessagePage, messagePage } from './pages.ts';
import { STATUS_STREAM_LIMITS, type StatusStreamLimits, statusStreams } from './status-stream.ts';
import { type CheckoutStatusBody, type CheckoutView, checkoutView, payPath, presentCheckoutStatus } from './view.ts';
import { payFromWallet, type WalletPaymentAnswer } from './wallet-payment.ts';
import type { ChainConnection } from '../chain/chain.ts';
import { AppError, isAppError } from '../core/errors.ts';
import { isOpenAttempt, type PaymentRow } from '../db/database.ts';
import { findAccountName } from '../db/repositories/accounts.ts';
import {
  findOpenPaymentAttempt,
  findPaymentAttempt,
  type PaymentAttemptRow,
} from '../db/repositories/payment-attempts.ts';
import { findPaymentById } from '../db/repositories/payments.ts';
import { isId } from '../domain/ids.ts';
import type { Config } from '../config/config.ts';
import { PROVIDER_RAIL_NAMES, type ProviderRail } from '../db/tables/rails.ts';
import { USDC_RAIL } from '../db/tables/x402.ts';
import { attemptNotice, beginAttempt, checkAttempt, offeredRails } from '../payments/rails/attempts.ts';
import { paySandbox, type SandboxOutcome } from '../payments/sandbox-rail.ts';
import type { CheckoutDeps } from './deps.ts';
import { logEachRequest, randomRequestId, requestLoggerFactory } from '../http/request-log.ts';
import { noSchemaCompilers } from '../http/schema-compilers.ts';
import { installGracefulStop } from '../http/graceful-stop.ts';
import { sendError } from '../http/plugins/errors.ts';

/**
 * Every checkout response carries this policy. Nothing inline, nothing from another origin: the
 * page's one stylesheet and one script come from this host (content-hashed under /assets/),
 * the script talks only to this host, and the forms post only here. The one other origin is
 * Paystack's payment pages: the Paystack form's answer sends the payer there, and form-action
 * governs that redirect too. Trusted Types are required so that no script on the page can ever
 * reach innerHTML and friends (ours uses textContent). Navigating to the merchant's redirect_url
 * is a GET navigation, which form-action does not cover.
 */
export function checkoutCsp(config: Pick<Config, 'rails'>): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    `form-action 'self' ${config.rails.paystackCheckoutOrigin}`,
    "base-uri 'none'",
    "frame-ancestors 'none'",
    "require-trusted-types-for 'script'",
    "trusted-types 'none'",
  ].join('; ');
}

function securityHeaders(config: Pick<Config, 'rails'>): Record<string, string> {
  return {
    'Content-Security-Policy': checkoutCsp(config),
    'X-Content-Type-Options': 'nosniff',
    // same-origin, not no-referrer: see csrf.ts (no-referrer turns Origin into "null" on our own posts).
    'Referrer-Policy': 'same-origin',
    'X-Frame-Options': 'DENY',
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Cross-Origin-Resource-Policy': 'same-origin',
  };
}

const UNKNOWN_SESSION: MessagePage = {
  title: 'Checkout not found',
  heading: 'We could not find this checkout',
  text: 'The link may be mistyped or incomplete. Go back to the merchant and start the payment again.',
};

/** What a payer sees when this instance is shutting down. The reloaded page shows whether a payment went through. */
const STOPPING_PAGE: MessagePage = {
  title: 'Please reload',
  heading: 'This page is restarting',
  text: 'Please reload the page in a moment: it will show whether your payment went through.',
};

/** A payment attempt made this recently counts as "just paid here": the page then sends the payer back. */
const JUST_PAID_WINDOW_MS = 15 * 60_000;

const SANDBOX_OUTCOMES = ['succeeded', 'declined'] as const;

/**
 * The seed's {checkout_host}: a separate listener that serves the hosted payment page to payers.
 * It shares no cookies or routes with the API host. Routes:
 *
 *   GET  /pay/:id          the page (server-rendered; works without JavaScript); to an x402 client
 *                          (an agent: no text/html in Accept, or a PAYMENT-SIGNATURE), 402 with
 *                          PAYMENT-REQUIRED, and its paid retry (agent-answer.ts, agent-payment.ts)
 *   POST /pay/:id          the form post: rail=paystack (email) or rail=mpesa (phone) starts an attempt
 *                          (rail=usdc: the authorization the payer's wallet signed, paid: wallet-payment.ts)
 *                          (303 to Paystack's page, or back here to "check your phone"); outcome=
 *                          succeeded|declined pays on the sandbox rail (test mode), then 303 to the page
 *   GET  /pay/:id/return/:attempt   where Paystack sends the payer back: asks Paystack, 303 to the page
 *   POST /pay/:id/abandon  "Pay another way": ends the open attempt if the provider says it is not paid
 *   GET  /pay/:id/status   the status as JSON; with `Accept: text/event-stream`, its live stream (status-stream.ts)
 *   GET  /assets/…         the stylesheet and the script, content-hashed, compressed, cached for good
 *   GET  /healthz
 *
 * Pages and assets are compressed (brotli or gzip) for a browser that accepts it.
 */
export interface CheckoutAppOptions {
  /** The live status stream's limits (tests shorten them). */
  statusStreams?: Partial<StatusStreamLimits>;
}

export async function buildCheckoutApp(deps: CheckoutDeps, options: CheckoutAppOptions = {}): Promise<FastifyInstance> {
  const assets = checkoutAssets();
  const headers = Object.entries(securityHeaders(deps.config));
  const app = checkoutFastify(deps, assets, headers);
  installPageHooks(app, deps, assets, headers);
  installErrorPages(app, assets);

  app.get('/healthz', async () => ({ ok: true }));
  for (const asset of [assets.css, assets.js, assets.usdcJs]) {
    app.get(asset.path, async (request, reply) => serveAsset(request, reply, asset));
  }

  const host = checkoutHost(deps, assets);
  registerPayRoutes(app, host);
  registerStatusRoutes(app, host, options);
  return app;
}

type HeaderEntries = readonly (readonly [string, string])[];

/** The host's fastify instance: no fastify logging, no schema compilers, small bodies. */
function checkoutFastify(
  deps: Pick<CheckoutDeps, 'logger'>,
  assets: CheckoutAssets,
  headers: HeaderEntries,
): FastifyInstance {
  return Fastify({
    // Requests log through the host's logger (request-log.ts), fastify itself through none.
    logger: false,
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: requestLoggerFactory(deps.logger),
    schemaController: noSchemaCompilers,
    // The only bodies are small forms; the largest, a signed USDC authorization, is under 1 KB.
    bodyLimit: 4096,
    genReqId: randomRequestId,
    routerOptions: { ignoreTrailingSlash: true },
    trustProxy: false,
    // Routing errors fastify answers before any hook runs (a malformed escape, an id over 100
    // characters): for a payer that is a checkout link that does not work, for the poller an error object.
    frameworkErrors: (error, request, raw) => {
      const reply = raw as FastifyReply;
      reply.header('Request-Id', request.id).header('Cache-Control', 'no-store');
      for (const [name, value] of headers) reply.header(name, value);
      if (wantsJson(request)) return sendError(reply, translate(error));
      return reply.code(404).type('text/html; charset=utf-8').send(messagePage(assets, UNKNOWN_SESSION));
    },
    // While stopping, graceful-stop.ts answers (a page, or the error object to the poller).
    return503OnClosing: false,
  });
}

/** What every answer of the host gets: the graceful stop, its headers, a log line, compressed pages, form bodies. */
function installPageHooks(
  app: FastifyInstance,
  deps: Pick<CheckoutDeps, 'logger'>,
  assets: CheckoutAssets,
  headers: HeaderEntries,
): void {
  // First of the onRequest hooks, so the headers the next one sets are set here too.
  installGracefulStop(app, {
    logger: deps.logger,
    refuse: (request, reply, error) => {
      reply.header('Request-Id', request.id).header('Cache-Control', 'no-store');
      for (const [name, value] of headers) reply.header(name, value);
      if (wantsJson(request)) return sendError(reply, error);
      for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
      return reply.code(error.status).type('text/html; charset=utf-8').send(messagePage(assets, STOPPING_PAGE));
    },
  });

  // A callback-style hook: no promise per request.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('Request-Id', request.id);
    for (const [name, value] of headers) reply.header(name, value);
    reply.header('Cache-Control', 'no-store');
    done();
  });
  logEachRequest(app, deps.logger, 'checkout request');

  // Every page, compressed for the browser that takes it (the status JSON is a few hundred bytes,
  // the event stream must not wait for a compressor's buffer, the assets come compressed).
  app.addHook('onSend', async (request, reply, payload) => {
    if (typeof payload !== 'string' || !String(reply.getHeader('content-type')).startsWith('text/html')) {
      return payload;
    }
    reply.header('Vary', 'Accept-Encoding');
    const coding = negotiateEncoding(request.headers['accept-encoding']);
    if (coding === undefined) return payload;
    reply.header('Content-Encoding', coding);
    return compressPage(payload, coding);
  });

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    done(null, new URLSearchParams(body as string));
  });
}

/** Errors as pages for a payer, as the error object for the poller and an agent. */
function installErrorPages(app: FastifyInstance, assets: CheckoutAssets): void {
  app.setErrorHandler((raw: FastifyError | AppError, request, reply) => {
    const error = translate(raw);
    if (error.status >= 500) request.log.error({ err: isAppError(raw) ? (raw.cause ?? raw) : raw }, 'request failed');
    if (wantsJson(request)) return sendError(reply, error);
    if (error.status >= 500) {
      return errorPage(reply, assets, error.status, {
        title: 'Something went wrong',
        heading: 'Something went wrong on our side',
        text: 'Nothing was charged by this error. Please reload the page in a moment.',
      });
    }
    return errorPage(reply, assets, error.status, {
      title: 'Request not accepted',
      heading: 'This request could not be handled',
      text: error.message,
    });
  });

  app.setNotFoundHandler((request, reply) => {
    if (wantsJson(request)) {
      return sendError(
        reply,
        new AppError('not_found', `Unrecognized request URL (${request.method} ${pathOf(request)}).`),
      );
    }
    if (pathOf(request).startsWith('/pay/')) return unknownSession(reply, assets);
    return errorPage(reply, assets, 404, {
      title: 'Page not found',
      heading: 'There is no page here',
      text: 'This host only serves checkout pages. Use the checkout link the merchant gave you.',
    });
  });
}

function page(reply: FastifyReply, status: number, body: string): FastifyReply {
  return reply.code(status).type('text/html; charset=utf-8').send(body);
}

function errorPage(reply: FastifyReply, assets: CheckoutAssets, status: number, message: MessagePage): FastifyReply {
  return page(reply, status, messagePage(assets, message));
}

function unknownSession(reply: FastifyReply, assets: CheckoutAssets): FastifyReply {
  return errorPage(reply, assets, 404, UNKNOWN_SESSION);
}

function crossSite(reply: FastifyReply, assets: CheckoutAssets): FastifyReply {
  return errorPage(reply, assets, 403, {
    title: 'Payment not accepted',
    heading: 'This payment form was sent from another site',
    text: 'For your safety, payments are only accepted from this checkout page. Open the checkout link again and pay there.',
  });
}

function noSuchSession(id: string): AppError {
  return new AppError('not_found', `No such checkout session: '${id}'.`, { param: 'id' });
}

/** What the routes share: the session as the page sees it, and the form posts' origin. */
interface CheckoutHost {
  deps: CheckoutDeps;
  assets: CheckoutAssets;
  checkoutOrigin: string;
  load(id: string): Promise<PaymentRow | undefined>;
  viewOf(row: PaymentRow, open?: PaymentAttemptRow): Promise<CheckoutView>;
  /** The attempt in flight on a processing payment: its outcome is part of the page's state. */
  openAttemptOf(row: PaymentRow): Promise<PaymentAttemptRow | undefined>;
}

function checkoutHost(deps: CheckoutDeps, assets: CheckoutAssets): CheckoutHost {
  return {
    deps,
    assets,
    checkoutOrigin: new URL(deps.config.checkoutBaseUrl).origin,
    load: async (id) => (isId('pay', id) ? findPaymentById(deps.db, id) : undefined),
    viewOf: async (row, open) => {
      const accountName = row.merchant_name === null ? await findAccountName(deps.db, row.account_id) : undefined;
      const rails: ProviderRail[] = row.status === 'pending' ? await offeredRails(deps, row) : [];
      return checkoutView(row, accountName, deps.clock.now(), rails, open?.outcome);
    },
    openAttemptOf: (row) =>
      row.status === 'processing' ? findOpenPaymentAttempt(deps.db, row.id) : Promise.resolve(undefined),
  };
}

/** The checkout page for a session, with what the attempt named in the URL says and a form's error. */
async function renderCheckout(
  host: CheckoutHost,
  reply: FastifyReply,
  row: PaymentRow,
  status: number,
  attemptId: string | undefined,
  formError?: CheckoutPageOptions['formError'],
  stillOpen = false,
): Promise<FastifyReply> {
  const { deps } = host;
  const open = await host.openAttemptOf(row);
  const view = await host.viewOf(row, open);
  const now = deps.clock.now();
  const options: CheckoutPageOptions = { justPaid: false, formError, stillOpen };
  if (isId('att', attemptId)) {
    const attempt = await findPaymentAttempt(deps.db, row.id, attemptId);
    if (attempt) {
      if (view.state === 'payable') options.attemptNotice = attemptNotice(attempt) ?? ATTEMPT_NOTICES[attempt.outcome];
      options.justPaid =
        attempt.outcome === 'succeeded' &&
        !attempt.late &&
        now.getTime() - attempt.created_at.getTime() < JUST_PAID_WINDOW_MS;
    }
  }
  if (open) options.openAttempt = { rail: open.rail, payerUrl: open.payer_url, payerHint: open.payer_hint };
  return page(reply, status, checkoutPage(host.assets, view, options));
}

/** The page, the form posts, the payer's return from Paystack and "pay another way". */
function registerPayRoutes(app: FastifyInstance, host: CheckoutHost): void {
  const { deps, assets } = host;
  app.get<{ Params: { id: string }; Querystring: { attempt?: string; open?: string } }>(
    '/pay/:id',
    async (request, reply) => {
      const row = await host.load(request.params.id);
      if (isAgentRequest(request.headers)) {
        if (!row) throw noSuchSession(request.params.id);
        const conn = await chainOrUnavailable(deps);
        const signature = request.headers['payment-signature'];
        return signature === undefined
          ? answerUnpaidRequest(reply, deps.config, conn, row, deps.clock.now())
          : answerPaymentSignature(reply, deps, conn, row, signature);
      }
      if (!row) return unknownSession(reply, assets);
      return renderCheckout(host, reply, row, 200, request.query.attempt, undefined, request.query.open === '1');
    },
  );

  app.post<{ Params: { id: string }; Body: URLSearchParams | undefined }>('/pay/:id', async (request, reply) => {
    const row = await host.load(request.params.id);
    if (!row) return unknownSession(reply, assets);
    if (!isSameOriginPost(request.headers, host.checkoutOrigin)) return crossSite(reply, assets);
    const form = request.body ?? new URLSearchParams();
    const rail = form.get('rail') ?? (form.has('outcome') ? 'sandbox' : undefined);
    if (rail === USDC_RAIL) return payWithWallet(host, request, reply, row, form);
    if (rail !== undefined && (PROVIDER_RAIL_NAMES as readonly string[]).includes(rail)) {
      return payOnProviderRail(host, reply, row, rail as ProviderRail, form);
    }
    return payOnSandbox(host, reply, row, rail, form.get('outcome'));
  });

  // Paystack's callback_url (and cancel_action): the payer is back. Their browser proves nothing, so
  // Paystack is asked; a failure or abandonment ends the attempt, a success waits for Paystack's event.
  app.get<{ Params: { id: string; attempt: string } }>('/pay/:id/return/:attempt', async (request, reply) => {
    const row = await host.load(request.params.id);
    if (!row) return unknownSession(reply, assets);
    const attempt = isId('att', request.params.attempt)
      ? await findPaymentAttempt(deps.db, row.id, request.params.attempt)
      : undefined;
    if (!attempt) return reply.redirect(payPath(row.id), 303);
    if (isOpenAttempt(attempt.outcome)) {
      await checkAttempt(deps, attempt, { trigger: 'return', mayPay: false, abandonIsFinal: true });
    }
    return reply.redirect(`${payPath(row.id)}?attempt=${attempt.id}`, 303);
  });

  app.post<{ Params: { id: string } }>('/pay/:id/abandon', async (request, reply) => {
    const row = await host.load(request.params.id);
    if (!row) return unknownSession(reply, assets);
    if (!isSameOriginPost(request.headers, host.checkoutOrigin)) return crossSite(reply, assets);
    const open = await findOpenPaymentAttempt(deps.db, row.id);
    if (!open) return reply.redirect(payPath(row.id), 303);
    // Ended only if the provider says no money moved; a success still pays, later, through its event.
    await checkAttempt(deps, open, { trigger: 'payer', mayPay: false, abandonIsFinal: true });
    const after = await findPaymentAttempt(deps.db, row.id, open.id);
    const stillOpen = after && isOpenAttempt(after.outcome) ? '&open=1' : '';
    return reply.redirect(`${payPath(row.id)}?attempt=${open.id}${stillOpen}`, 303);
  });
}

/** Paystack or M-Pesa: an attempt begun, the payer sent to the provider's page or back here. */
async function payOnProviderRail(
  host: CheckoutHost,
  reply: FastifyReply,
  row: PaymentRow,
  rail: ProviderRail,
  form: URLSearchParams,
): Promise<FastifyReply> {
  const back = payPath(row.id);
  try {
    const { attemptId, payerUrl } = await beginAttempt(host.deps, row, rail, form);
    return reply.redirect(payerUrl ?? `${back}?attempt=${attemptId}`, 303);
  } catch (error) {
    if (!isAppError(error)) throw error;
    if (error.code === 'conflict' || error.code === 'not_found') return reply.redirect(back, 303);
    // A mistyped email or phone, or a provider that did not answer: the page again, saying so.
    const fresh = (await host.load(row.id)) ?? row;
    // Only an error about what the payer typed marks their field; a provider failure is not theirs.
    const field = error.param === 'email' || error.param === 'phone';
    // What they typed stays in the field, so trying again is one press.
    const typed = form.get(rail === 'paystack' ? 'email' : 'phone')?.slice(0, 254) ?? undefined;
    return renderCheckout(host, reply, fresh, error.status, undefined, { rail, message: error.message, field, typed });
  }
}

/** The sandbox rail's buttons (test mode only): the outcome pressed, then the page. */
async function payOnSandbox(
  host: CheckoutHost,
  reply: FastifyReply,
  row: PaymentRow,
  rail: string | undefined,
  outcome: string | null,
): Promise<FastifyReply> {
  const back = payPath(row.id);
  if (rail !== 'sandbox' || !SANDBOX_OUTCOMES.includes(outcome as (typeof SANDBOX_OUTCOMES)[number])) {
    return errorPage(reply, host.assets, 400, {
      title: 'Payment not accepted',
      heading: 'Please choose how to pay',
      text: 'The form did not say which payment option was chosen. Go back and press one of the buttons.',
    });
  }
  // The sandbox rail exists in test mode only: a live page never shows its buttons.
  if (row.livemode) return reply.redirect(back, 303);
  try {
    const result = await paySandbox(
      host.deps,
      { accountId: row.account_id, livemode: row.livemode },
      row.id,
      outcome as SandboxOutcome,
    );
    return reply.redirect(`${back}?attempt=${result.attempt_id}`, 303);
  } catch (error) {
    // Expired, already paid, paid in another tab: the page shows the payment as it now is.
    if (isAppError(error) && (error.code === 'conflict' || error.code === 'not_found')) {
      return reply.redirect(back, 303);
    }
    throw error;
  }
}

/** "Pay with USDC": the authorization the payer's wallet signed, submitted by the page's script. */
async function payWithWallet(
  host: CheckoutHost,
  request: FastifyRequest,
  reply: FastifyReply,
  row: PaymentRow,
  form: URLSearchParams,
): Promise<FastifyReply> {
  const back = payPath(row.id);
  let answer: WalletPaymentAnswer;
  try {
    answer = await payFromWallet(host.deps, await chainOrUnavailable(host.deps), row, form);
  } catch (error) {
    if (isAppError(error) && error.code === 'invalid_request') throw error;
    // The authorization may have been submitted: the page shows the session as it now is (in
    // progress if it was), never "nothing was charged".
    request.log.error({ err: error }, 'USDC payment outcome unknown');
    return reply.redirect(back, 303);
  }
  if (answer.show === 'attempt') return reply.redirect(`${back}?attempt=${answer.attemptId}`, 303);
  if (answer.show === 'session') return reply.redirect(back, 303);
  request.log.info({ reason: answer.reason }, 'USDC payment refused');
  const fresh = (await host.load(row.id)) ?? row;
  return renderCheckout(host, reply, fresh, 402, undefined, { rail: USDC_RAIL, message: answer.message });
}

/** The status as JSON, and its live stream for the page (status-stream.ts). */
function registerStatusRoutes(app: FastifyInstance, host: CheckoutHost, options: CheckoutAppOptions): void {
  /** The one projection of the status: the JSON read, and every event of the stream. */
  const statusOf = async (id: string): Promise<CheckoutStatusBody | undefined> => {
    const row = await host.load(id);
    return row && presentCheckoutStatus(await host.viewOf(row, await host.openAttemptOf(row)));
  };

  const streams = statusStreams(statusOf, host.deps.notifications, host.deps.logger, {
    ...STATUS_STREAM_LIMITS,
    ...options.statusStreams,
  });
  // Streams never end by themselves: closing them lets the host stop (the browsers reconnect elsewhere).
  app.addHook('preClose', async () => {
    await streams.close();
  });

  app.get<{ Params: { id: string } }>('/pay/:id/status', async (request, reply) => {
    if (request.method !== 'GET' || !String(request.headers.accept).includes('text/event-stream')) {
      const body = await statusOf(request.params.id);
      if (!body) throw noSuchSession(request.params.id);
      return body;
    }
    const place = streams.reserve();
    if (!place) {
      // A designed limit, not a failure (so not logged as one). EventSource gives up on an error
      // status: the page then reads the JSON status, slowly.
      return sendError(
        reply,
        new AppError('unavailable', 'Too many live status streams on this instance; read the status as JSON.', {
          headers: { 'Retry-After': '30' },
        }),
      );
    }
    try {
      // Listening before the first read: a change that commits after the read wakes the stream.
      await streams.listening();
      const first = await statusOf(request.params.id);
      if (!first) throw noSuchSession(request.params.id);
      return reply
        .type('text/event-stream; charset=utf-8')
        .header('X-Accel-Buffering', 'no')
        .send(place.open(request.params.id, first));
    } finally {
      place.release();
    }
  });
}

function serveAsset(request: FastifyRequest, reply: FastifyReply, asset: CompressedAsset): FastifyReply {
  const coding = negotiateEncoding(request.headers['accept-encoding']);
  const etag = asset.etags[coding ?? 'identity'];
  // Content-hashed paths never change meaning, so they may be cached for good. A file cannot fail
  // in a way a request id would help trace, and its bytes count against the page's 5 KB.
  reply
    .removeHeader('Request-Id')
    .header('Cache-Control', 'public, max-age=31536000, immutable')
    .header('Vary', 'Accept-Encoding')
    .header('ETag', etag);
  if (matchesEtag(request.headers['if-none-match'], etag)) return reply.code(304).send();
  if (coding !== undefined) reply.header('Content-Encoding', coding);
  return reply.type(asset.contentType).send(coding === undefined ? asset.body : asset.encoded[coding]);
}

/** If-None-Match (RFC 9110 13.1.2): weak comparison, `*` matches any. */
function matchesEtag(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  return header.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t.replace(/^W\//, '') === etag;
  });
}

function pathOf(request: FastifyRequest): string {
  return request.url.split('?')[0] ?? request.url;
}

/** The polling endpoint and an agent on the checkout URL speak the API's error object; everything else on this host is a page. */
function wantsJson(request: FastifyRequest): boolean {
  return pathOf(request).endsWith('/status') || isAgentRequest(request.headers);
}

/** The chain, or a 503 the payer can retry: USDC cannot be offered while the node does not answer. */
async function chainOrUnavailable(deps: Pick<CheckoutDeps, 'chain'>): Promise<ChainConnection> {
  try {
    return await deps.chain();
  } catch (error) {
    throw new AppError('unavailable', 'USDC payments are unavailable for a moment: please retry shortly.', {
      cause: error,
      headers: { 'Retry-After': '10' },
    });
  }
}

function translate(error: FastifyError | AppError): AppError {
  if (isAppError(error)) return error;
  const status = error.statusCode;
  if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return new AppError('unsupported_media_type', 'This form must be sent as application/x-www-form-urlencoded.');
  }
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return new AppError('payload_too_large', 'The form is too large.');
  }
  if (status !== undefined && status >= 400 && status < 500) {
    return new AppError('invalid_request', 'The request is malformed.');
  }
  return new AppError('internal', 'An internal error occurred. It has been logged; please retry later.', {
    cause: error,
  });
}
