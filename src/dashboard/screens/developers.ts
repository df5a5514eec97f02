import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { html, type SafeHtml } from '../../checkout/html.ts';
import { AppError, isAppError } from '../../core/errors.ts';
import { API_KEY_SCOPES, type ApiKeyScope } from '../../domain/api-key-secret.ts';
import {
  type ApiKeyView,
  assertCanGrant,
  type IssuedApiKey,
  issueApiKey,
  getAccountApiKey,
  listAccountApiKeys,
  presentApiKey,
  revokeAccountApiKey,
  rotateAccountApiKey,
  rotationRefusal,
  scopesNotHeld,
} from '../../keys/api-keys.ts';
import {
  DEFAULT_ROTATION_GRACE_MINUTES,
  readWebhookSecret,
  rotateWebhookSecret,
  type WebhookSecretView,
} from '../../webhooks/secrets.ts';
import { type DashboardDeps, type DashboardServices, formOf, pageContext, sendPage, sessionOf } from '../context.ts';
import { clearedSessionCookie, type DashboardSession, endKeySessions } from '../sessions.ts';
import { badge, csrfField, maybe, notice, param, renderPage, table, time } from '../view.ts';
import { railsSection } from './rails.ts';

/** How long a rotated-out key or webhook secret keeps working: the choices the forms offer. */
const GRACE_CHOICES: readonly { minutes: number; label: string }[] = [
  { minutes: 0, label: 'Stop at once' },
  { minutes: 60, label: '1 hour' },
  { minutes: 1440, label: '24 hours' },
  { minutes: 10_080, label: '7 days' },
];

const DONE: Record<string, string> = {
  revoked: 'The key was revoked. Requests with it now get 401, and its dashboard sessions have ended.',
  'secret-rotated': 'The webhook signing secret was rotated. Deploy the new secret to your receiver.',
};

function keyState(key: ApiKeyView, now: Date): SafeHtml {
  if (key.revoked_at) return badge('revoked');
  if (key.expires_at && new Date(key.expires_at) <= now) return badge('expired');
  if (key.expires_at) return html`${badge('active')} <span class="muted">until ${time(key.expires_at)}</span>`;
  return badge('active');
}

function isUsable(key: ApiKeyView, now: Date): boolean {
  return !key.revoked_at && !(key.expires_at && new Date(key.expires_at) <= now);
}

function graceSelect(name: string, defaultMinutes: number): SafeHtml {
  return html`<select name="${name}" id="${name}">${GRACE_CHOICES.map(
    (c) => html`<option value="${c.minutes}"${c.minutes === defaultMinutes && html` selected`}>${c.label}</option>`,
  )}</select>`;
}

function readGrace(form: URLSearchParams, name: string): number {
  const raw = form.get(name);
  const choice = GRACE_CHOICES.find((c) => String(c.minutes) === raw);
  if (!choice) throw new AppError('invalid_request', 'Choose how long the old secret keeps working.', { param: name });
  return choice.minutes;
}

/** The page that shows a new secret, the one time it is ever shown. */
function newSecretPage(heading: string, key: IssuedApiKey, extra: SafeHtml): SafeHtml {
  return html`<h1>${heading}</h1>
${notice('warn', html`<strong>Copy the secret now.</strong> It is shown this once and cannot be shown again; plainpay keeps only its hash.`)}
<div class="card">
<code class="secret" id="new-key-secret">${key.secret}</code>
<dl class="facts">
<dt>Key id</dt><dd><code id="new-key-id">${key.id}</code></dd>
<dt>Name</dt><dd>${maybe(key.name)}</dd>
<dt>Mode</dt><dd>${key.livemode ? 'live' : 'test'}</dd>
<dt>Scopes</dt><dd>${key.scopes.map((s) => html`<code>${s}</code> `)}</dd>
</dl>
${extra}
</div>
<p><a href="/dashboard/developers">Back to the developer screen</a></p>`;
}

/** The account's keys in the session's mode, and the form to create one. */
async function keysSection(services: DashboardServices, session: DashboardSession): Promise<SafeHtml> {
  const now = services.clock.now();
  const all = await listAccountApiKeys(services.db, session.accountId, session);
  return html`<h2 id="api-keys">API keys</h2>
<p class="muted">Secrets are shown once, when a key is created or rotated; here you see only their first and last characters. These are the account's ${session.livemode ? 'live' : 'test'}-mode keys: sign in with a ${session.livemode ? 'test' : 'live'} key to see and manage ${session.livemode ? 'test' : 'live'}-mode keys.</p>
${table(
  ['Key', 'Name', 'Mode', 'Scopes', 'Created', 'Last used', 'State', ''],
  all.map(
    (key) => html`<tr data-key-id="${key.id}">
<td><code>${key.redacted}</code><br><span class="muted"><code>${key.id}</code></span>${key.id === session.keyId && html` <span class="badge">you</span>`}</td>
<td>${maybe(key.name)}</td>
<td>${key.livemode ? 'live' : 'test'}</td>
<td>${key.scopes.map((s) => html`<code>${s}</code> `)}</td>
<td>${time(key.created)}</td>
<td>${time(key.last_used_at)}</td>
<td>${keyState(key, now)}</td>
<td><a href="/dashboard/developers/keys/${key.id}">Manage</a></td>
</tr>`,
  ),
  'No keys.',
  'keys',
)}
<h2>Create a key</h2>
<form method="post" action="/dashboard/developers/keys" class="card" id="create-key">
${csrfField(session)}
<div class="field"><label for="key-name">Name</label><input type="text" class="wide" id="key-name" name="name" maxlength="100" placeholder="e.g. finance approvals, billing server"></div>
<fieldset><legend>Mode</legend>
<label><input type="radio" name="mode" value="test"${!session.livemode && html` checked`}> Test</label>
<label><input type="radio" name="mode" value="live"${session.livemode ? html` checked` : html` disabled`}> Live${!session.livemode && html` <span class="muted">(needs a live key)</span>`}</label>
</fieldset>
<fieldset><legend>Scopes</legend>
${API_KEY_SCOPES.map((scope) => {
  const held = session.scopes.has(scope);
  return html`<label><input type="checkbox" name="scopes" value="${scope}"${!held && html` disabled`}> <code>${scope}</code>${!held && html` <span class="muted">(your key does not hold it)</span>`}</label>`;
})}
</fieldset>
<button type="submit" class="primary">Create key</button>
</form>`;
}

/** The mode's webhook signing secret (shown only when asked for) and the form to rotate it. */
async function secretSection(services: DashboardServices, session: DashboardSession, show: boolean): Promise<SafeHtml> {
  let secret: WebhookSecretView | undefined;
  try {
    secret = await readWebhookSecret(
      services.db,
      services.secretBox,
      { accountId: session.accountId, livemode: session.livemode },
      services.clock.now(),
    );
  } catch (error) {
    if (!isAppError(error) || error.code !== 'not_found') throw error;
  }
  return html`<h2 id="webhook-secret">Webhook signing secret</h2>
<div class="card">
<p class="muted">The ${session.livemode ? 'live' : 'test'}-mode secret: it signs ${session.livemode ? 'live' : 'test'}-mode events only (each mode has its own). Deliveries carry a signature made with it (Standard Webhooks).</p>
${
  secret
    ? html`<dl class="facts"><dt>Current secret</dt><dd>${
        show
          ? html`<code class="secret" id="webhook-secret-value">${secret.secret}</code>`
          : html`<code>whsec_••••••••</code> <a href="/dashboard/developers?show=webhook-secret#webhook-secret" id="show-webhook-secret">Show</a>`
      }</dd><dt>Created</dt><dd>${time(secret.created)}</dd>${secret.previous_secrets.map(
        (p) =>
          html`<dt>Previous secret</dt><dd>created ${time(p.created)}, still signs until ${time(p.expires_at)}</dd>`,
      )}</dl>`
    : html`<p>This account has no current signing secret. Rotate to create one.</p>`
}
<form method="post" action="/dashboard/developers/webhook-secret/rotate" class="actions">${csrfField(session)}
<label for="grace_period_minutes">Old secret keeps signing</label>${graceSelect('grace_period_minutes', DEFAULT_ROTATION_GRACE_MINUTES)}
<button type="submit" id="rotate-webhook-secret">Rotate secret</button></form>
</div>`;
}

/** One key: its facts, and the forms to rotate or revoke it where the session may. */
async function keyPage(
  services: DashboardServices,
  session: DashboardSession,
  id: string,
): Promise<{ title: string; body: SafeHtml }> {
  const row = await getAccountApiKey(services.db, session.accountId, id, session);
  const key = presentApiKey(row);
  const now = services.clock.now();
  const usable = isUsable(key, now);
  const own = key.id === session.keyId;
  // revokeAccountApiKey and rotateAccountApiKey enforce the scopes and approver rules; they are
  // read here only so that the page offers no form that can only be refused, and says why.
  const beyond = scopesNotHeld(session, key.scopes);
  const rotation = beyond.length > 0 ? undefined : await rotationRefusal(services.db, session, row);
  let manage: SafeHtml;
  if (!usable) {
    manage = html`<p class="muted">This key no longer works; there is nothing to manage.</p>`;
  } else if (beyond.length > 0) {
    manage = notice(
      'info',
      html`Your key cannot rotate or revoke this key: it holds scopes yours does not (${beyond.map((s) => html`<code>${s}</code> `)}). Sign in with a key that holds every one of them.`,
    );
  } else {
    const rotate = rotation
      ? notice(
          'info',
          html`Your key cannot rotate this key: it is an approver of another principal, so it may approve your key's requests; it is rotated by itself or by the key that created it.`,
        )
      : html`<h2>Rotate</h2>
<form method="post" action="/dashboard/developers/keys/${key.id}/rotate" class="card">${csrfField(session)}
<p>Issues a new key with the same mode, scopes and name. The new secret is shown once.</p>
<div class="field"><label for="expires_in_minutes">This key keeps working</label>${graceSelect('expires_in_minutes', 60)}</div>
<button type="submit" id="rotate-key">Rotate key</button></form>`;
    manage = html`${rotate}
<h2>Revoke</h2>
<form method="post" action="/dashboard/developers/keys/${key.id}/revoke" class="card">${csrfField(session)}
<p>Requests with this key get 401 from now on, and its dashboard sessions end.${own && html` <strong>You are signed in with this key: you will be signed out.</strong>`} This cannot be undone.</p>
<button type="submit" class="danger primary" id="revoke-key">Revoke key</button></form>`;
  }
  const body = html`<h1>API key <code>${key.redacted}</code></h1>
<div class="card"><dl class="facts">
<dt>Key id</dt><dd><code>${key.id}</code>${own && html` <span class="badge">you are signed in with it</span>`}</dd>
<dt>Name</dt><dd>${maybe(key.name)}</dd>
<dt>Mode</dt><dd>${key.livemode ? 'live' : 'test'}</dd>
<dt>Scopes</dt><dd>${key.scopes.map((s) => html`<code>${s}</code> `)}</dd>
${key.assistant && html`<dt>Limits</dt><dd id="key-assistant">An assistant's key: held to the policy's <code>mcp</code> limits on every channel</dd>`}
<dt>State</dt><dd id="key-state">${keyState(key, now)}</dd>
<dt>Created</dt><dd>${time(key.created)}</dd>
<dt>Last used</dt><dd>${time(key.last_used_at)}</dd>
${key.revoked_at && html`<dt>Revoked</dt><dd>${time(key.revoked_at)}</dd>`}
${key.rotated_from && html`<dt>Replaces</dt><dd><a href="/dashboard/developers/keys/${key.rotated_from}"><code>${key.rotated_from}</code></a></dd>`}
</dl></div>
${manage}
<p><a href="/dashboard/developers">Back to the developer screen</a></p>`;
  return { title: `API key ${key.redacted}`, body };
}

/** A new key from the create form, within what the session may grant. */
async function createKeyFromForm(
  services: DashboardServices,
  session: DashboardSession,
  form: URLSearchParams,
): Promise<IssuedApiKey> {
  const mode = param(form, 'mode') ?? (session.livemode ? 'live' : 'test');
  if (mode !== 'test' && mode !== 'live') throw new AppError('invalid_request', 'Choose test or live mode.');
  const scopes = form.getAll('scopes');
  const unknown = scopes.filter((s) => !(API_KEY_SCOPES as readonly string[]).includes(s));
  if (unknown.length > 0) throw new AppError('invalid_request', `Unknown scopes: ${unknown.join(', ')}.`);
  if (scopes.length === 0) throw new AppError('invalid_request', 'Choose at least one scope for the new key.');
  const name = param(form, 'name') ?? null;
  if (name !== null && name.length > 100) throw new AppError('invalid_request', 'The name is at most 100 characters.');
  const livemode = mode === 'live';
  // The dashboard makes no assistant keys of its own (the API and the CLI do); one signed in with
  // an assistant's key makes assistant keys only.
  assertCanGrant(session, livemode, scopes, session.assistant);
  const issued = await issueApiKey(services.db, {
    accountId: session.accountId,
    livemode,
    scopes: [...new Set(scopes)] as ApiKeyScope[],
    name,
    createdByKey: session.keyId,
    assistant: session.assistant,
  });
  return issued;
}

export function registerDevelopers(
  app: FastifyInstance,
  deps: DashboardDeps,
  options: { secureCookie: boolean },
): void {
  const { services } = deps;
  const keys = { dashboard: { scopes: ['keys'] as const } };
  const webhooks = { dashboard: { scopes: ['webhooks'] as const } };

  const page = (request: FastifyRequest, reply: FastifyReply, status: number, title: string, body: SafeHtml) =>
    sendPage(reply, status, renderPage(pageContext(deps, request), title, body, { section: 'developers' }));

  app.get(
    '/developers',
    { config: { dashboard: { scopes: ['keys', 'webhooks'] as const } } },
    async (request, reply) => {
      const session = sessionOf(request);
      const done = param(request.query, 'done');
      const body = html`<h1>Developers</h1>
${done && DONE[done] && notice('ok', DONE[done])}
${session.scopes.has('keys') ? await keysSection(services, session) : notice('info', html`API keys need the <code>keys</code> scope.`)}
${await railsSection(services, session)}
${
  session.scopes.has('webhooks')
    ? await secretSection(services, session, param(request.query, 'show') === 'webhook-secret')
    : notice('info', html`The webhook secret needs the <code>webhooks</code> scope.`)
}`;
      return page(request, reply, 200, 'Developers', body);
    },
  );

  const loadKey = async (session: DashboardSession, id: string): Promise<ApiKeyView> => {
    return presentApiKey(await getAccountApiKey(services.db, session.accountId, id, session));
  };

  app.get<{ Params: { id: string } }>('/developers/keys/:id', { config: keys }, async (request, reply) => {
    const { title, body } = await keyPage(services, sessionOf(request), request.params.id);
    return page(request, reply, 200, title, body);
  });

  app.post('/developers/keys', { config: keys }, async (request, reply) => {
    const issued = await createKeyFromForm(services, sessionOf(request), formOf(request));
    return page(request, reply, 201, 'Key created', newSecretPage('Key created', issued, html``));
  });

  app.post<{ Params: { id: string } }>('/developers/keys/:id/revoke', { config: keys }, async (request, reply) => {
    const session = sessionOf(request);
    const key = await loadKey(session, request.params.id);
    const now = services.clock.now();
    await services.db.transaction().execute(async (trx) => {
      await revokeAccountApiKey(trx, session.accountId, key.id, now, session);
      await endKeySessions(trx, session.accountId, key.id, now);
    });
    if (key.id === session.keyId) {
      reply.header('Set-Cookie', clearedSessionCookie(options.secureCookie));
      return sendPage(
        reply,
        200,
        renderPage(
          { assets: deps.assets, session: null },
          'Key revoked',
          html`<h1>Key revoked</h1>${notice('ok', 'You revoked the key you were signed in with, so you are signed out.')}<p><a href="/dashboard/sign-in">Sign in with another key</a></p>`,
          { narrow: true },
        ),
      );
    }
    return reply.redirect('/dashboard/developers?done=revoked', 303);
  });

  app.post<{ Params: { id: string } }>('/developers/keys/:id/rotate', { config: keys }, async (request, reply) => {
    const session = sessionOf(request);
    const key = await loadKey(session, request.params.id);
    const minutes = readGrace(formOf(request), 'expires_in_minutes');
    const rotated = await services.db.transaction().execute((trx) =>
      rotateAccountApiKey(trx, {
        keyId: key.id,
        oldKeyExpiresInMinutes: minutes,
        now: services.clock.now(),
        manager: session,
      }),
    );
    const until = rotated.old_key.expires_at;
    const extra = html`<p>The old key <code>${rotated.old_key.redacted}</code> ${
      until ? html`keeps working until ${time(until)}` : 'has stopped working'
    }.${key.id === session.keyId && html` You are signed in with it: sign in with the new key before then.`}</p>`;
    return page(request, reply, 201, 'Key rotated', newSecretPage('Key rotated', rotated.new_key, extra));
  });

  app.post('/developers/webhook-secret/rotate', { config: webhooks }, async (request, reply) => {
    const session = sessionOf(request);
    const minutes = readGrace(formOf(request), 'grace_period_minutes');
    await services.db.transaction().execute((trx) =>
      rotateWebhookSecret(trx, services.secretBox, {
        accountId: session.accountId,
        livemode: session.livemode,
        now: services.clock.now(),
        gracePeriodMinutes: minutes,
      }),
    );
    return reply.redirect('/dashboard/developers?done=secret-rotated&show=webhook-secret#webhook-secret', 303);
  });
}
