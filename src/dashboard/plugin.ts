import type { FastifyError, FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { isSameOriginPost } from '../checkout/csrf.ts';
import { html } from '../checkout/html.ts';
import { AppError, isAppError, toAppError } from '../core/errors.ts';
import type { AnyTool } from '../core/tool.ts';
import { dashboardAssets } from './assets.ts';
import { type DashboardDeps, type DashboardServices, formOf, pageContext, sendPage } from './context.ts';
import { CSRF_FIELD, csrfTokenMatches } from './csrf.ts';
import { registerActions } from './screens/actions.ts';
import { registerConfirmations } from './screens/confirmations.ts';
import { registerDevelopers } from './screens/developers.ts';
import { registerOverview } from './screens/overview.ts';
import { registerPayments } from './screens/payments.ts';
import { registerPayouts } from './screens/payouts.ts';
import { registerReconciliation } from './screens/reconciliation.ts';
import { registerRuns } from './screens/runs.ts';
import { registerSignIn, safeNext, signInPage } from './screens/sign-in.ts';
import { registerWebhooks } from './screens/webhooks.ts';
import { clearedSessionCookie, loadSession, readSessionCookie } from './sessions.ts';
import { allows, renderPage, withQuery } from './view.ts';

/**
 * Every dashboard response carries this policy: nothing inline, nothing from another origin, no
 * script at all, forms post only here, no framing. Navigations to other sites (none today) would
 * not be covered by form-action, which is why no page links out with secrets in the URL.
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "style-src 'self'",
  "img-src 'self' data:",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy': DASHBOARD_CSP,
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  // same-origin, not no-referrer: under no-referrer a browser sends `Origin: null` on our own form
  // posts, which the origin check would refuse (see checkout/csrf.ts).
  'Referrer-Policy': 'same-origin',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

/** The forms are a few fields; a key's name is the longest. */
const FORM_BODY_LIMIT = 16 * 1024;

/**
 * The dashboard on the API host, under /dashboard: server-rendered pages for finance staff and
 * developers, signed in with an API key (see sessions.ts and csrf.ts, and docs/dashboard.md).
 * Everything it does goes through the same functions as the API (approveConfirmation,
 * issueApiKey, requestRedelivery, …) with the signed-in key's account, mode and scopes.
 */
export function dashboardRoutes(services: DashboardServices, tools: readonly AnyTool[]): FastifyPluginAsync {
  return async (app) => {
    await app.register(dashboard(services, tools), { prefix: '/dashboard' });
  };
}

function dashboard(services: DashboardServices, tools: readonly AnyTool[]): FastifyPluginAsync {
  return async (app: FastifyInstance) => {
    const deps: DashboardDeps = { services, tools, assets: dashboardAssets() };
    const apiOrigin = new URL(services.config.publicBaseUrl).origin;
    const secureCookie = services.config.publicBaseUrl.startsWith('https:');

    app.decorateRequest('dashboardSession', null);
    // This context only: the API's JSON parser is replaced by the one media type HTML forms send.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT },
      (_request, body, done) => done(null, new URLSearchParams(body as string)),
    );

    const refuse = (request: FastifyRequest, reply: FastifyReply, status: number, heading: string, text: string) =>
      refusePage(deps, request, reply, status, heading, text);

    app.addHook('onRequest', (request, reply) => admitSession(deps, secureCookie, refuse, request, reply));

    // Forms: after the body is parsed, before any handler runs.
    app.addHook('preHandler', (request, reply) => checkForm(apiOrigin, refuse, request, reply));

    app.setErrorHandler((raw: FastifyError | AppError, request, reply) => {
      const error = translate(raw);
      if (error.status >= 500) {
        request.log.error({ err: isAppError(raw) ? (raw.cause ?? raw) : raw }, 'dashboard request failed');
        return refuse(
          request,
          reply,
          error.status,
          'Something went wrong',
          'The request could not be completed. It has been logged; please try again in a moment.',
        );
      }
      for (const [name, value] of Object.entries(error.headers)) {
        if (name !== 'WWW-Authenticate') reply.header(name, value);
      }
      return refuse(request, reply, error.status, HEADINGS[error.status] ?? 'Request not accepted', error.message);
    });

    app.setNotFoundHandler((request, reply) =>
      refuse(request, reply, 404, 'Page not found', 'There is no dashboard page at this address.'),
    );

    app.get(
      deps.assets.css.path.slice('/dashboard'.length),
      { config: { dashboard: { access: 'asset' } } },
      async (_request, reply) =>
        reply
          .header('Cache-Control', 'public, max-age=31536000, immutable')
          .type(deps.assets.css.contentType)
          .send(deps.assets.css.body),
    );

    registerSignIn(app, deps, { secureCookie });
    registerOverview(app, deps);
    registerRuns(app, deps);
    registerActions(app, deps);
    registerConfirmations(app, deps);
    registerPayments(app, deps);
    registerPayouts(app, deps);
    registerReconciliation(app, deps);
    registerWebhooks(app, deps);
    registerDevelopers(app, deps, { secureCookie });
  };
}

type Refuse = (request: FastifyRequest, reply: FastifyReply, status: number, heading: string, text: string) => unknown;

/** A dashboard page that says why a request was refused, with the status it was refused with. */
function refusePage(
  deps: DashboardDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  status: number,
  heading: string,
  text: string,
) {
  return sendPage(
    reply,
    status,
    renderPage(
      pageContext(deps, request),
      heading,
      html`<h1>${heading}</h1><p id="error-message">${text}</p><p><a href="/dashboard">Back to the overview</a></p>`,
      { narrow: true },
    ),
  );
}

/**
 * Who may reach a dashboard route (its config's `dashboard` rule): assets anyone, public pages
 * with any session or none, every other page a signed-in session within the key's rate limit and
 * holding one of the route's scopes. Security headers on every answer.
 */
async function admitSession(
  deps: DashboardDeps,
  secureCookie: boolean,
  refuse: Refuse,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<unknown> {
  const { services } = deps;
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) reply.header(name, value);
  reply.header('Cache-Control', 'no-store');
  const rule = request.routeOptions.config?.dashboard ?? {};
  const access = rule.access ?? 'session';
  if (access === 'asset') return;

  const cookie = readSessionCookie(request.headers.cookie);
  const session = await loadSession(services.db, cookie, services.clock.now());
  request.dashboardSession = session ?? null;
  if (access === 'public') return;

  if (!session) {
    // A cookie that no longer opens a session is removed, so the browser stops sending it.
    if (cookie) reply.header('Set-Cookie', clearedSessionCookie(secureCookie));
    if (request.method === 'GET' || request.method === 'HEAD') {
      const next = safeNext(request.url);
      return reply.redirect(withQuery('/dashboard/sign-in', { next, ended: cookie ? '1' : undefined }), 303);
    }
    return sendPage(
      reply,
      401,
      signInPage(pageContext(deps, request), {
        message: cookie
          ? 'Your session has ended, so the form was not sent. Sign in again and repeat it.'
          : 'Sign in to use the dashboard.',
      }),
    );
  }

  const limit = await services.rateLimiter.hit(session.keyId, services.clock.now().getTime());
  if (!limit.allowed) {
    reply.header('Retry-After', String(limit.resetSeconds));
    return refuse(request, reply, 429, 'Too many requests', `Wait ${limit.resetSeconds} s and reload the page.`);
  }
  if (!allows(session, rule.scopes ?? [])) {
    const needed = (rule.scopes ?? []).join("' or '");
    return refuse(
      request,
      reply,
      403,
      'Not allowed with this key',
      `This needs an API key with the '${needed}' scope. The key you signed in with has: ${[...session.scopes].join(', ') || 'no scopes'}.`,
    );
  }
}

/** A form must come from this dashboard: same origin, and (past sign-in) the session's token. */
async function checkForm(
  apiOrigin: string,
  refuse: Refuse,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<unknown> {
  if (request.method !== 'POST') return;
  if (!isSameOriginPost(request.headers, apiOrigin)) {
    return refuse(
      request,
      reply,
      403,
      'Form not accepted',
      'This form was sent from another site. For your safety the dashboard only accepts its own forms: open the dashboard and try again.',
    );
  }
  // The sign-in form has no session and so no token: the origin check above is its defence.
  if ((request.routeOptions.config?.dashboard?.access ?? 'session') !== 'session') return;
  const session = request.dashboardSession;
  if (!session || !csrfTokenMatches(session.csrfToken, formOf(request).get(CSRF_FIELD))) {
    return refuse(
      request,
      reply,
      403,
      'Form not accepted',
      'The form was out of date or did not come from this dashboard (its security token did not match). Reload the page and try again.',
    );
  }
}

const HEADINGS: Record<number, string> = {
  400: 'Request not accepted',
  401: 'Not signed in',
  403: 'Not allowed',
  404: 'Not found',
  409: 'Could not be done',
  413: 'Form too large',
  415: 'Form not accepted',
};

function translate(error: FastifyError | AppError): AppError {
  if (isAppError(error)) return error;
  if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return new AppError('unsupported_media_type', 'Dashboard forms must be sent as application/x-www-form-urlencoded.');
  }
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new AppError('payload_too_large', 'The form is too large.');
  const status = error.statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    return new AppError('invalid_request', 'The request is malformed.');
  }
  return toAppError(error);
}
