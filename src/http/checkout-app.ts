import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify';
import { randomBytes } from 'node:crypto';
import { checkoutAssets, type StaticAsset } from '../checkout/assets.ts';
import { findAccountName, findPaymentAttempt } from '../checkout/attempts.ts';
import { isSameOriginPost } from '../checkout/csrf.ts';
import { checkoutPage, type MessagePage, messagePage } from '../checkout/pages.ts';
import { checkoutView, payPath, presentCheckoutStatus } from '../checkout/view.ts';
import { AppError, isAppError } from '../core/errors.ts';
import type { PaymentRow } from '../db/database.ts';
import { findPaymentById } from '../db/repositories/payments.ts';
import { isId } from '../domain/ids.ts';
import { recordSandboxPayment, type SandboxOutcome } from '../payments/sandbox-rail.ts';
import type { Runtime } from '../runtime.ts';
import { sendError } from './plugins/errors.ts';

/**
 * Every checkout response carries this policy. Nothing inline, nothing from another origin: the
 * page's one stylesheet and one script come from this host (content-hashed under /assets/),
 * the script talks only to this host, and the form posts only here. Trusted Types are required
 * so that no script on the page can ever reach innerHTML and friends (ours uses textContent).
 * Navigating to the merchant's redirect_url is a GET navigation, which form-action does not cover.
 */
export const CHECKOUT_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join('; ');

const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy': CHECKOUT_CSP,
  'X-Content-Type-Options': 'nosniff',
  // same-origin, not no-referrer: see csrf.ts (no-referrer turns Origin into "null" on our own posts).
  'Referrer-Policy': 'same-origin',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

const UNKNOWN_SESSION: MessagePage = {
  title: 'Checkout not found',
  heading: 'We could not find this checkout',
  text: 'The link may be mistyped or incomplete. Go back to the merchant and start the payment again.',
};

/** A payment attempt made this recently counts as "just paid here": the page then sends the payer back. */
const JUST_PAID_WINDOW_MS = 15 * 60_000;

const OUTCOMES: readonly SandboxOutcome[] = ['succeeded', 'declined'];

/**
 * The seed's {checkout_host}: a separate listener that serves the hosted payment page to payers.
 * It shares no cookies or routes with the API host. Routes:
 *
 *   GET  /pay/:id          the page (server-rendered; works without JavaScript)
 *   POST /pay/:id          the form post: outcome=succeeded|declined on the sandbox rail, then 303 to the page
 *   GET  /pay/:id/status   JSON for the page's polling script
 *   GET  /assets/…         the stylesheet and the script, content-hashed
 *   GET  /healthz
 */
export async function buildCheckoutApp(runtime: Runtime): Promise<FastifyInstance> {
  const { config } = runtime;
  const assets = checkoutAssets();
  const checkoutOrigin = new URL(config.checkoutBaseUrl).origin;
  const app = Fastify({
    loggerInstance: runtime.logger as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    // The only body is a one-field form.
    bodyLimit: 4096,
    genReqId: () => `req_${randomBytes(12).toString('hex')}`,
    routerOptions: { ignoreTrailingSlash: true },
    trustProxy: false,
    // Routing errors fastify answers before any hook runs (a malformed escape, an id over 100
    // characters): for a payer that is a checkout link that does not work, for the poller an error object.
    frameworkErrors: (error, request, raw) => {
      const reply = raw as FastifyReply;
      reply.header('Request-Id', request.id).header('Cache-Control', 'no-store');
      for (const [name, value] of Object.entries(SECURITY_HEADERS)) reply.header(name, value);
      if (wantsJson(request)) return sendError(reply, translate(error));
      return reply.code(404).type('text/html; charset=utf-8').send(messagePage(assets, UNKNOWN_SESSION));
    },
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('Request-Id', request.id);
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) reply.header(name, value);
    reply.header('Cache-Control', 'no-store');
  });
  app.addHook('onResponse', async (request, reply) => {
    // The route pattern, never the URL: the payment id is the session's capability.
    request.log.info(
      {
        method: request.method,
        url: request.routeOptions.url ?? 'unmatched',
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      },
      'checkout request',
    );
  });

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    done(null, new URLSearchParams(body as string));
  });

  const page = (reply: FastifyReply, status: number, body: string): FastifyReply =>
    reply.code(status).type('text/html; charset=utf-8').send(body);
  const errorPage = (reply: FastifyReply, status: number, message: MessagePage): FastifyReply =>
    page(reply, status, messagePage(assets, message));
  const unknownSession = (reply: FastifyReply): FastifyReply => errorPage(reply, 404, UNKNOWN_SESSION);

  app.setErrorHandler((raw: FastifyError | AppError, request, reply) => {
    const error = translate(raw);
    if (error.status >= 500) request.log.error({ err: isAppError(raw) ? (raw.cause ?? raw) : raw }, 'request failed');
    if (wantsJson(request)) return sendError(reply, error);
    if (error.status >= 500) {
      return errorPage(reply, error.status, {
        title: 'Something went wrong',
        heading: 'Something went wrong on our side',
        text: 'Nothing was charged by this error. Please reload the page in a moment.',
      });
    }
    return errorPage(reply, error.status, {
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
    if (pathOf(request).startsWith('/pay/')) return unknownSession(reply);
    return errorPage(reply, 404, {
      title: 'Page not found',
      heading: 'There is no page here',
      text: 'This host only serves checkout pages. Use the checkout link the merchant gave you.',
    });
  });

  app.get('/healthz', async () => ({ ok: true }));

  for (const asset of [assets.css, assets.js]) {
    app.get(asset.path, async (_request, reply) => serveAsset(reply, asset));
  }

  const load = async (id: string): Promise<PaymentRow | undefined> =>
    isId('pay', id) ? findPaymentById(runtime.db, id) : undefined;

  app.get<{ Params: { id: string }; Querystring: { attempt?: string } }>('/pay/:id', async (request, reply) => {
    const row = await load(request.params.id);
    if (!row) return unknownSession(reply);
    const now = runtime.clock.now();
    const accountName = row.merchant_name === null ? await findAccountName(runtime.db, row.account_id) : undefined;
    const view = checkoutView(row, accountName, now);

    let declined = false;
    let justPaid = false;
    const attemptId = request.query.attempt;
    if (isId('att', attemptId)) {
      const attempt = await findPaymentAttempt(runtime.db, row.id, attemptId);
      if (attempt) {
        declined = attempt.outcome === 'declined' && view.state === 'payable';
        justPaid =
          attempt.outcome === 'succeeded' && now.getTime() - attempt.created_at.getTime() < JUST_PAID_WINDOW_MS;
      }
    }
    return page(reply, 200, checkoutPage(assets, view, { declined, justPaid }));
  });

  app.post<{ Params: { id: string }; Body: URLSearchParams | undefined }>('/pay/:id', async (request, reply) => {
    const row = await load(request.params.id);
    if (!row) return unknownSession(reply);
    if (!isSameOriginPost(request.headers, checkoutOrigin)) {
      return errorPage(reply, 403, {
        title: 'Payment not accepted',
        heading: 'This payment form was sent from another site',
        text: 'For your safety, payments are only accepted from this checkout page. Open the checkout link again and pay there.',
      });
    }
    const outcome = request.body?.get('outcome');
    if (!OUTCOMES.includes(outcome as SandboxOutcome)) {
      return errorPage(reply, 400, {
        title: 'Payment not accepted',
        heading: 'Please choose how to pay',
        text: 'The form did not say which payment option was chosen. Go back and press one of the buttons.',
      });
    }
    const back = payPath(row.id);
    // A live-mode payment has no payer rail yet: the page says so, there is nothing to post.
    if (row.livemode) return reply.redirect(back, 303);
    try {
      const { attemptId } = await runtime.db
        .transaction()
        .execute((trx) => recordSandboxPayment(trx, config, row.id, outcome as SandboxOutcome, runtime.clock.now()));
      return reply.redirect(`${back}?attempt=${attemptId}`, 303);
    } catch (error) {
      // Expired, already paid, paid in another tab: the page shows the payment as it now is.
      if (isAppError(error) && (error.code === 'conflict' || error.code === 'not_found')) {
        return reply.redirect(back, 303);
      }
      throw error;
    }
  });

  app.get<{ Params: { id: string } }>('/pay/:id/status', async (request) => {
    const row = await load(request.params.id);
    if (!row) throw new AppError('not_found', `No such checkout session: '${request.params.id}'.`, { param: 'id' });
    const accountName = row.merchant_name === null ? await findAccountName(runtime.db, row.account_id) : undefined;
    return presentCheckoutStatus(checkoutView(row, accountName, runtime.clock.now()));
  });

  return app;
}

function serveAsset(reply: FastifyReply, asset: StaticAsset): FastifyReply {
  // Content-hashed paths never change meaning, so they may be cached for good.
  return reply.header('Cache-Control', 'public, max-age=31536000, immutable').type(asset.contentType).send(asset.body);
}

function pathOf(request: FastifyRequest): string {
  return request.url.split('?')[0] ?? request.url;
}

/** The polling endpoint speaks the API's error object; everything else on this host is a page. */
function wantsJson(request: FastifyRequest): boolean {
  return pathOf(request).endsWith('/status');
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
