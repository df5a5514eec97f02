import type { FastifyInstance } from 'fastify';
import { html } from '../../checkout/html.ts';
import { isAppError } from '../../core/errors.ts';
import { authenticate } from '../../http/plugins/auth.ts';
import { type DashboardDeps, formOf, pageContext, sendPage } from '../context.ts';
import {
  clearedSessionCookie,
  createSession,
  endSession,
  hashSessionId,
  readSessionCookie,
  SESSION_MAX_MS,
  sessionCookie,
} from '../sessions.ts';
import { notice, type PageContext, param, renderPage } from '../view.ts';

export interface SignInPageOptions {
  /** Where to go after signing in (a /dashboard path). */
  next?: string | undefined;
  message?: string | undefined;
  /** Set when the cookie may have been withheld on a cross-site navigation: a link back here. */
  retryHere?: string | undefined;
  signedOut?: boolean;
}

export function signInPage(ctx: PageContext, options: SignInPageOptions = {}): string {
  const body = html`<h1>Sign in to the dashboard</h1>
${options.signedOut && notice('ok', 'You are signed out.')}
${options.message && notice('bad', html`<span id="sign-in-error">${options.message}</span>`)}
${
  options.retryHere &&
  notice(
    'info',
    html`Already signed in in this browser? <a href="${options.retryHere}">Open this page again</a>: the sign-in cookie is not sent on links from other sites.`,
  )
}
<form method="post" action="/dashboard/sign-in" class="card">
<div class="field"><label for="api_key">API key</label>
<input type="password" id="api_key" name="api_key" required autocomplete="off" spellcheck="false" placeholder="sk_test_… or sk_live_…"></div>
${options.next && html`<input type="hidden" name="next" value="${options.next}">`}
<button type="submit" class="primary">Sign in</button>
</form>
<p class="muted">The key stays on the server: the browser only gets a session cookie. What you can see and do here is what the key's scopes allow (approving held actions needs the <code>approvals</code> scope). The session ends when you sign out, after 2 hours without use, after 12 hours, or as soon as the key is revoked.</p>`;
  return renderPage(ctx, 'Sign in', body, { narrow: true });
}

/** A /dashboard path (with its query) to return to after sign-in; anything else is dropped. */
export function safeNext(value: string | undefined): string | undefined {
  if (!value || value.length > 1000 || value.includes('\\')) return undefined;
  try {
    const url = new URL(value, 'http://dashboard.invalid');
    if (url.origin !== 'http://dashboard.invalid') return undefined;
    if (url.pathname !== '/dashboard' && !url.pathname.startsWith('/dashboard/')) return undefined;
    if (url.pathname.startsWith('/dashboard/sign-')) return undefined;
    return url.pathname + url.search;
  } catch {
    return undefined;
  }
}

export function registerSignIn(app: FastifyInstance, deps: DashboardDeps, options: { secureCookie: boolean }): void {
  const { services } = deps;
  /** authenticate() writes last_used_at at most once a minute per key; this remembers when. */
  const touched = new Map<string, number>();

  app.get<{ Querystring: Record<string, string> }>(
    '/sign-in',
    { config: { dashboard: { access: 'public' } } },
    async (request, reply) => {
      const next = safeNext(param(request.query, 'next'));
      if (request.dashboardSession) return reply.redirect(next ?? '/dashboard', 303);
      return sendPage(
        reply,
        200,
        signInPage(pageContext(deps, request), {
          next,
          signedOut: param(request.query, 'signed_out') === '1',
          message:
            param(request.query, 'ended') === '1' ? 'Your session has ended. Sign in again to continue.' : undefined,
          // SameSite=Strict withholds the cookie on a navigation that starts on another site (a
          // link in an email or a chat), redirects included; a click on a link of ours carries it.
          retryHere: next && request.headers['sec-fetch-site'] === 'cross-site' ? next : undefined,
        }),
      );
    },
  );

  app.post('/sign-in', { config: { dashboard: { access: 'public' } } }, async (request, reply) => {
    const form = formOf(request);
    const next = safeNext(param(form, 'next'));
    const key = param(form, 'api_key');
    const ctx = { ...pageContext(deps, request), session: null };
    if (!key || /\s/.test(key)) {
      return sendPage(reply, 401, signInPage(ctx, { next, message: 'Enter an API key.' }));
    }
    let auth: Awaited<ReturnType<typeof authenticate>>;
    try {
      auth = await authenticate(services, `Bearer ${key}`, touched);
    } catch (error) {
      if (!isAppError(error) || error.status !== 401) throw error;
      return sendPage(
        reply,
        401,
        signInPage(ctx, {
          next,
          message: 'That API key was not accepted: it may be mistyped, revoked or expired.',
        }),
      );
    }
    const now = services.clock.now();
    // A new session id at every sign-in: an id planted before sign-in is never promoted.
    const previous = readSessionCookie(request.headers.cookie);
    if (previous) await endSession(services.db, hashSessionId(previous), now);
    const { id } = await createSession(services.db, auth, now);
    reply.header('Set-Cookie', sessionCookie(id, SESSION_MAX_MS / 1000, options.secureCookie));
    return reply.redirect(next ?? '/dashboard', 303);
  });

  app.post('/sign-out', async (request, reply) => {
    const session = request.dashboardSession;
    if (session) await endSession(services.db, session.idHash, services.clock.now());
    reply.header('Set-Cookie', clearedSessionCookie(options.secureCookie));
    return reply.redirect('/dashboard/sign-in?signed_out=1', 303);
  });
}
