import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { insertEvent } from '../src/db/repositories/events.ts';
import { usdc } from '../src/dashboard/view.ts';
import { pow10, SETTLEMENT_CURRENCY } from '../src/domain/money.ts';
import { bearer, extraKey, testAccount, testApp, testRuntime, type TestRuntime } from './support/harness.ts';
import { ADDRESS_A, editPolicy, fund, post } from './support/money.ts';

/**
 * The dashboard through inject: sign-in and its cookie, CSRF, sessions that die with their key,
 * the approval rules, and the keys screen showing a secret only once. The browser half (a real
 * chromium approving a held action) is test/browser/dashboard.test.ts.
 */

let chain: ChainConnection;
let runtime: TestRuntime;
let app: FastifyInstance;

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await testRuntime({}, { chain });
  app = await testApp(runtime);
});

afterAll(async () => {
  await chain.close();
});

const SAME_ORIGIN = { 'sec-fetch-site': 'same-origin' };
const FULL_SECRET = /sk_(test|live)_[0-9A-Za-z]{38}/g;

function form(fields: Record<string, string | string[]>): string {
  const body = new URLSearchParams();
  for (const [name, value] of Object.entries(fields)) {
    for (const v of Array.isArray(value) ? value : [value]) body.append(name, v);
  }
  return body.toString();
}

function setCookie(res: LightMyRequestResponse): string {
  const header = res.headers['set-cookie'];
  return Array.isArray(header) ? header.join('\n') : (header ?? '');
}

async function signIn(key: string): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/dashboard/sign-in',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...SAME_ORIGIN },
    payload: form({ api_key: key }),
  });
  expect(res.statusCode, res.body).toBe(303);
  const match = /plainpay_session=([^;]+)/.exec(setCookie(res));
  expect(match).not.toBeNull();
  return `plainpay_session=${match![1]}`;
}

function get(cookie: string | undefined, url: string) {
  return app.inject({ method: 'GET', url, headers: cookie ? { cookie } : {} });
}

/** The session no longer opens pages: a page request is sent to sign in again. */
function expectSignedOut(res: LightMyRequestResponse): void {
  expect(res.statusCode).toBe(303);
  expect(res.headers.location).toMatch(/^\/dashboard\/sign-in\?next=/);
}

function csrfOf(page: string): string {
  const match = /name="csrf_token" value="([^"]+)"/.exec(page);
  if (!match) throw new Error('no csrf token on the page');
  return match[1]!;
}

async function submit(
  cookie: string,
  url: string,
  fields: Record<string, string | string[]>,
  options: { from?: string; headers?: Record<string, string> } = {},
) {
  const token = csrfOf((await get(cookie, options.from ?? '/dashboard')).body);
  return app.inject({
    method: 'POST',
    url,
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', ...SAME_ORIGIN, ...options.headers },
    payload: form({ csrf_token: token, ...fields }),
  });
}

/** A payout held for approval: the api channel's policy confirms anything above 10 USDC. */
async function heldPayout(key: string): Promise<string> {
  await fund(app, key, 100);
  const put = await editPolicy(app, key, (policy) => {
    policy.channels.api.confirm_above = '10';
  });
  expect(put.statusCode, put.body).toBe(200);
  const held = await post(app, key, '/v1/payouts', { amount: 11, to_address: ADDRESS_A, reference: 'dash-1' });
  expect(held.statusCode, held.body).toBe(202);
  return held.json().confirmation_id as string;
}

function keyIdOf(secret: string) {
  return runtime.db
    .selectFrom('api_keys')
    .select('id')
    .where('secret_hash', '=', createHash('sha256').update(secret).digest('hex'))
    .executeTakeFirstOrThrow()
    .then((r) => r.id);
}

describe('overview', () => {
  it('shows the balance GET /v1/balance reports: available, and what queued payouts take out of it', async () => {
    const m = await testAccount(runtime);
    await fund(app, m.apiKey, 100);
    const payout = await post(app, m.apiKey, '/v1/payouts', { amount: 30, to_address: ADDRESS_A });
    expect(payout.statusCode, payout.body).toBeLessThan(300);
    const balance = await app.inject({ method: 'GET', url: '/v1/balance', headers: bearer(m.apiKey) });
    expect(balance.json()).toMatchObject({ available: [{ amount: 70 }], pending_payouts: [{ amount: 30 }] });
    const res = await get(await signIn(m.apiKey), '/dashboard');
    expect(res.statusCode).toBe(200);
    const unit = pow10(SETTLEMENT_CURRENCY.exponent);
    expect(res.body).toContain(`<p class="stat">${usdc(70n * unit)}</p>`);
    expect(res.body).toContain(`${usdc(30n * unit)} in queued payouts`);
  });
});

describe('signing in', () => {
  it('refuses a bad key with a 401 page and no cookie', async () => {
    for (const key of ['sk_test_nope', 'sk_test_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', '']) {
      const res = await app.inject({
        method: 'POST',
        url: '/dashboard/sign-in',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...SAME_ORIGIN },
        payload: form({ api_key: key }),
      });
      expect(res.statusCode).toBe(401);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.body).toContain('id="sign-in-error"');
      expect(res.headers['set-cookie']).toBeUndefined();
    }
  });

  it('a good key gets a session cookie that is HttpOnly, SameSite=Strict, Path=/dashboard and holds no key', async () => {
    const m = await testAccount(runtime);
    const res = await app.inject({
      method: 'POST',
      url: '/dashboard/sign-in',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...SAME_ORIGIN },
      payload: form({ api_key: m.apiKey, next: '/dashboard/payouts?status=queued' }),
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/dashboard/payouts?status=queued');
    const cookie = setCookie(res);
    expect(cookie).toMatch(
      /^plainpay_session=[A-Za-z0-9_-]{43}; HttpOnly; SameSite=Strict; Path=\/dashboard; Max-Age=43200$/,
    );
    expect(cookie).not.toContain(m.apiKey);
    expect(cookie).not.toContain('Secure');
    // The table holds the id's hash, never the id.
    const id = /plainpay_session=([^;]+)/.exec(cookie)![1]!;
    const rows = await runtime.db
      .selectFrom('dashboard_sessions')
      .selectAll()
      .where('account_id', '=', m.accountId)
      .execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.id_hash).toBe(createHash('sha256').update(id).digest('hex'));
    expect(JSON.stringify(rows)).not.toContain(id);

    const page = await get(`plainpay_session=${id}`, '/dashboard');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('id="signed-in-key"');
  });

  it('never redirects to another site after sign-in', async () => {
    const m = await testAccount(runtime);
    for (const next of ['https://evil.example/x', '//evil.example/x', '/\\evil.example', '/v1/balance']) {
      const res = await app.inject({
        method: 'POST',
        url: '/dashboard/sign-in',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...SAME_ORIGIN },
        payload: form({ api_key: m.apiKey, next }),
      });
      expect(res.headers.location).toBe('/dashboard');
    }
  });

  it('sets Secure on the cookie when PUBLIC_BASE_URL is https', async () => {
    const secureRuntime = await testRuntime({ PUBLIC_BASE_URL: 'https://pay.example.com' }, { chain });
    const secureApp = await testApp(secureRuntime);
    const m = await testAccount(secureRuntime);
    const res = await secureApp.inject({
      method: 'POST',
      url: '/dashboard/sign-in',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://pay.example.com' },
      payload: form({ api_key: m.apiKey }),
    });
    expect(res.statusCode).toBe(303);
    expect(setCookie(res)).toMatch(/; Secure$/);
  });

  it('a page without a session sends the browser to sign in and back to the page', async () => {
    const res = await get(undefined, '/dashboard/confirmations/conf_x?x=1');
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/dashboard/sign-in?next=%2Fdashboard%2Fconfirmations%2Fconf_x%3Fx%3D1');
    const signInForm = await get(undefined, res.headers.location as string);
    expect(signInForm.statusCode).toBe(200);
    expect(signInForm.body).toContain('name="next" value="/dashboard/confirmations/conf_x?x=1"');
    expect(signInForm.body).not.toContain('csrf_token');
    // A form posted without a session is not run: it is the sign-in page, 401.
    const posted = await app.inject({
      method: 'POST',
      url: '/dashboard/confirmations/conf_x/approve',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...SAME_ORIGIN },
      payload: form({ csrf_token: 'x' }),
    });
    expect(posted.statusCode).toBe(401);
    expect(posted.body).toContain('Sign in to the dashboard');
  });

  it('after a link from another site, the sign-in page offers to open the page again (SameSite=Strict)', async () => {
    const res = await app.inject({
      method: 'GET',
      url: '/dashboard/sign-in?next=%2Fdashboard%2Fconfirmations%2Fconf_x',
      headers: { 'sec-fetch-site': 'cross-site' },
    });
    expect(res.body).toContain('<a href="/dashboard/confirmations/conf_x">Open this page again</a>');
  });

  it('an unknown dashboard page is a 404 page', async () => {
    const m = await testAccount(runtime);
    const res = await get(await signIn(m.apiKey), '/dashboard/nope');
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['x-frame-options']).toBe('DENY');
  });

  it('every page carries the strict headers; the stylesheet is content-hashed and cacheable', async () => {
    const m = await testAccount(runtime);
    const cookie = await signIn(m.apiKey);
    const res = await get(cookie, '/dashboard');
    expect(res.headers['content-security-policy']).toBe(
      "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    );
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    const css = /href="(\/dashboard\/assets\/dashboard\.[0-9a-f]{10}\.css)"/.exec(res.body)![1]!;
    const sheet = await get(undefined, css);
    expect(sheet.statusCode).toBe(200);
    expect(sheet.headers['content-type']).toMatch(/^text\/css/);
    expect(sheet.headers['cache-control']).toContain('immutable');
    // Nothing from elsewhere, no inline script or style.
    expect(res.body).not.toMatch(/<script|style=|https?:\/\/(?!localhost)/);
  });

  it('sign-out ends the session for good', async () => {
    const m = await testAccount(runtime);
    const cookie = await signIn(m.apiKey);
    const out = await submit(cookie, '/dashboard/sign-out', {});
    expect(out.statusCode).toBe(303);
    expect(setCookie(out)).toMatch(/^plainpay_session=; .*Max-Age=0/);
    expectSignedOut(await get(cookie, '/dashboard'));
  });
});

describe('CSRF', () => {
  it('a form without the session token, or with another token, is refused with 403', async () => {
    const m = await testAccount(runtime);
    const cookie = await signIn(m.apiKey);
    const other = await signIn(m.apiKey);
    const otherToken = csrfOf((await get(other, '/dashboard')).body);
    const attempts: Record<string, string>[] = [
      {},
      { csrf_token: '' },
      { csrf_token: otherToken },
      { csrf_token: 'x'.repeat(43) },
    ];
    for (const fields of attempts) {
      const res = await app.inject({
        method: 'POST',
        url: '/dashboard/developers/keys',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', ...SAME_ORIGIN },
        payload: form({ ...fields, mode: 'test', scopes: 'payments:read' }),
      });
      expect(res.statusCode).toBe(403);
      expect(res.body).toContain('security token did not match');
    }
    const keys = await runtime.db.selectFrom('api_keys').select('id').where('account_id', '=', m.accountId).execute();
    expect(keys).toHaveLength(1);
  });

  it('a form sent from another site is refused even with the right token', async () => {
    const m = await testAccount(runtime);
    const cookie = await signIn(m.apiKey);
    for (const headers of [{ 'sec-fetch-site': 'cross-site' }, { 'sec-fetch-site': 'same-site' }]) {
      const res = await submit(cookie, '/dashboard/sign-out', {}, { headers });
      expect(res.statusCode).toBe(403);
    }
    const noFetchMetadata = await app.inject({
      method: 'POST',
      url: '/dashboard/sign-out',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example' },
      payload: form({ csrf_token: csrfOf((await get(cookie, '/dashboard')).body) }),
    });
    expect(noFetchMetadata.statusCode).toBe(403);
    expect((await get(cookie, '/dashboard')).statusCode).toBe(200);
  });

  it('the sign-in form refuses a post from another site (login CSRF)', async () => {
    const m = await testAccount(runtime);
    const res = await app.inject({
      method: 'POST',
      url: '/dashboard/sign-in',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'cross-site' },
      payload: form({ api_key: m.apiKey }),
    });
    expect(res.statusCode).toBe(403);
    expect(res.headers['set-cookie']).toBeUndefined();
  });

  it('only form bodies are accepted', async () => {
    const m = await testAccount(runtime);
    const cookie = await signIn(m.apiKey);
    const res = await app.inject({
      method: 'POST',
      url: '/dashboard/sign-out',
      headers: { cookie, 'content-type': 'application/json', ...SAME_ORIGIN },
      payload: '{}',
    });
    expect(res.statusCode).toBe(415);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
  });
});

describe('sessions follow their key', () => {
  it('a key revoked through the API ends its dashboard session', async () => {
    const m = await testAccount(runtime);
    const second = await extraKey(runtime, m.accountId, { scopes: ['payments:read'] });
    const cookie = await signIn(second);
    expect((await get(cookie, '/dashboard/payments')).statusCode).toBe(200);
    const revoke = await post(app, m.apiKey, `/keys/${await keyIdOf(second)}/revoke`);
    expect(revoke.statusCode).toBe(200);
    const after = await get(cookie, '/dashboard/payments');
    expectSignedOut(after);
    expect(after.headers.location).toContain('ended=1');
    expect(setCookie(after)).toMatch(/^plainpay_session=;/);
    expect((await get(undefined, after.headers.location as string)).body).toContain('Your session has ended');
  });

  it('a key revoked on the dashboard gets 401 on the API and its sessions end', async () => {
    const m = await testAccount(runtime);
    const admin = await signIn(m.apiKey);
    const second = await extraKey(runtime, m.accountId, { scopes: ['payments:read'] });
    const secondSession = await signIn(second);
    const id = await keyIdOf(second);
    const res = await submit(
      admin,
      `/dashboard/developers/keys/${id}/revoke`,
      {},
      { from: `/dashboard/developers/keys/${id}` },
    );
    expect(res.statusCode).toBe(303);
    expect((await app.inject({ method: 'GET', url: '/v1/ping', headers: bearer(second) })).statusCode).toBe(401);
    expectSignedOut(await get(secondSession, '/dashboard'));
    const sessions = await runtime.db
      .selectFrom('dashboard_sessions')
      .select('revoked_at')
      .where('key_id', '=', id)
      .execute();
    expect(sessions.every((s) => s.revoked_at !== null)).toBe(true);
  });

  it('a session ends after two idle hours', async () => {
    const m = await testAccount(runtime);
    const cookie = await signIn(m.apiKey);
    runtime.clock.advance(2 * 60 * 60_000 + 1000);
    expectSignedOut(await get(cookie, '/dashboard'));
  });
});

describe('scopes govern the screens', () => {
  it('a payments:read key sees payments but not runs, keys or webhooks, and the overview says so', async () => {
    const m = await testAccount(runtime);
    const reader = await extraKey(runtime, m.accountId, { scopes: ['payments:read'] });
    const cookie = await signIn(reader);
    expect((await get(cookie, '/dashboard/payments')).statusCode).toBe(200);
    expect((await get(cookie, '/dashboard/payouts')).statusCode).toBe(200);
    for (const url of [
      '/dashboard/runs',
      '/dashboard/actions',
      '/dashboard/actions.csv',
      '/dashboard/developers',
      '/dashboard/webhooks',
    ]) {
      const res = await get(cookie, url);
      expect(res.statusCode, url).toBe(403);
      expect(res.body).toContain('This needs an API key with the');
    }
    const overview = (await get(cookie, '/dashboard')).body;
    expect(overview).toContain('data-screen="payments"><td><a href="/dashboard/payments">');
    expect(overview).not.toContain('href="/dashboard/developers"');
    expect(overview).toContain('This key cannot approve.');
  });

  it('text from the database is escaped', async () => {
    const m = await testAccount(runtime);
    const created = await post(app, m.apiKey, '/v1/payments', {
      amount: 5000,
      currency: 'NGN',
      description: '<script>alert(1)</script>',
      redirect_url: 'https://shop.example/thanks',
    });
    expect(created.statusCode, created.body).toBe(200);
    const cookie = await signIn(m.apiKey);
    const page = await get(cookie, '/dashboard/payments');
    expect(page.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page.body).not.toContain('<script>');
  });
});

describe('approvals', () => {
  it('the key that asked cannot approve; a key without approvals cannot either; another approvals key can', async () => {
    const m = await testAccount(runtime);
    const confirmationId = await heldPayout(m.apiKey);
    const url = `/dashboard/confirmations/${confirmationId}`;

    // The requesting key (it holds every scope, approvals included).
    const asker = await signIn(m.apiKey);
    const own = await get(asker, url);
    expect(own.statusCode).toBe(200);
    expect(own.body).toContain('You are signed in with the key that asked for this action');
    const refused = await submit(asker, `${url}/approve`, {}, { from: url });
    // Refused, and still post-redirect-get: back to the page, which names the refusal.
    expect(refused.statusCode).toBe(303);
    expect(refused.headers.location).toBe(`${url}?failed=approve&code=permission_denied`);

    // A reader sees it, without the forms, and cannot post them.
    const reader = await signIn(await extraKey(runtime, m.accountId, { scopes: ['payments:read'] }));
    const readerPage = await get(reader, url);
    expect(readerPage.statusCode).toBe(200);
    expect(readerPage.body).not.toContain('id="approve"');
    const readerTry = await submit(reader, `${url}/approve`, {}, { from: url });
    expect(readerTry.statusCode).toBe(403);

    // A finance key with approvals: listed as pending, approve runs it.
    const approverKey = await extraKey(runtime, m.accountId, { scopes: ['approvals'] });
    const approver = await signIn(approverKey);
    const list = await get(approver, '/dashboard/confirmations');
    expect(list.body).toContain(`data-confirmation-id="${confirmationId}"`);
    expect((await get(approver, '/dashboard')).body).toMatch(/id="pending-count">1</);
    const approved = await submit(approver, `${url}/approve`, {}, { from: url });
    expect(approved.statusCode, approved.body).toBe(303);
    expect(approved.headers.location).toBe(`${url}?done=approved`);
    const done = await get(approver, `${url}?done=approved`);
    expect(done.body).toMatch(/id="confirmation-status"><span class="badge ok">executed/);
    expect(done.body).toContain(await keyIdOf(approverKey));
    expect(done.body).toMatch(/data-object-id="po_\w+"/);

    // Decided once: a second approval is refused, and the page it redirects to says so.
    const again = await submit(approver, `${url}/approve`, {}, { from: url });
    expect(again.statusCode).toBe(303);
    expect(again.headers.location).toBe(`${url}?failed=approve&code=conflict`);

    // The action log agrees, and the CSV export has it.
    const action = await runtime.db
      .selectFrom('agent_actions')
      .selectAll()
      .where('confirmation_id', '=', confirmationId)
      .executeTakeFirstOrThrow();
    expect(action.status).toBe('executed');
    expect(action.approved_by_key).toBe(await keyIdOf(approverKey));
    const admin = await signIn(m.apiKey);
    const csv = await get(admin, '/dashboard/actions.csv?status=executed');
    expect(csv.statusCode).toBe(200);
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(csv.headers['content-disposition']).toMatch(
      /^attachment; filename="agent-actions-test-\d{4}-\d{2}-\d{2}\.csv"$/,
    );
    expect(csv.body).toContain(action.id);
    const filtered = await get(admin, '/dashboard/actions.csv?status=held');
    expect(filtered.body).not.toContain(action.id);
  });

  it('reject moves nothing', async () => {
    const m = await testAccount(runtime);
    const confirmationId = await heldPayout(m.apiKey);
    const url = `/dashboard/confirmations/${confirmationId}`;
    const approver = await signIn(await extraKey(runtime, m.accountId, { scopes: ['approvals'] }));
    const res = await submit(approver, `${url}/reject`, {}, { from: url });
    expect(res.statusCode).toBe(303);
    expect((await get(approver, `${url}?done=rejected`)).body).toMatch(
      /id="confirmation-status"><span class="badge bad">rejected/,
    );
    const payouts = await runtime.db.selectFrom('payouts').select('id').where('account_id', '=', m.accountId).execute();
    expect(payouts).toHaveLength(0);
  });
});

describe('the developer screen', () => {
  it('shows no secret except once after creating a key, and the key works on the API', async () => {
    const m = await testAccount(runtime);
    const cookie = await signIn(m.apiKey);
    const before = await get(cookie, '/dashboard/developers');
    expect(before.statusCode).toBe(200);
    expect(before.body.match(FULL_SECRET)).toBeNull();
    expect(before.body).not.toContain(m.webhookSecret);

    const created = await submit(
      cookie,
      '/dashboard/developers/keys',
      { name: 'finance', mode: 'test', scopes: ['payments:read', 'approvals'] },
      { from: '/dashboard/developers' },
    );
    expect(created.statusCode, created.body).toBe(201);
    const secrets = created.body.match(FULL_SECRET) ?? [];
    expect(secrets).toHaveLength(1);
    const secret = secrets[0]!;
    expect((await app.inject({ method: 'GET', url: '/v1/ping', headers: bearer(secret) })).statusCode).toBe(200);
    const row = await runtime.db
      .selectFrom('api_keys')
      .selectAll()
      .where('id', '=', await keyIdOf(secret))
      .executeTakeFirstOrThrow();
    expect(row.scopes).toEqual(['payments:read', 'approvals']);
    expect(row.name).toBe('finance');

    const after = await get(cookie, '/dashboard/developers');
    expect(after.body.match(FULL_SECRET)).toBeNull();
    expect(after.body).toContain(row.id);
    const keyPage = await get(cookie, `/dashboard/developers/keys/${row.id}`);
    expect(keyPage.body.match(FULL_SECRET)).toBeNull();
  });

  it('a key cannot grant scopes it lacks, a test key cannot make live keys, and rotating needs the scopes too', async () => {
    const m = await testAccount(runtime);
    const limited = await signIn(await extraKey(runtime, m.accountId, { scopes: ['keys', 'payments:read'] }));
    const grant = await submit(limited, '/dashboard/developers/keys', { mode: 'test', scopes: ['payouts:write'] });
    expect(grant.statusCode).toBe(403);
    expect(grant.body).toContain('cannot grant scopes it does not hold: payouts:write');
    const live = await submit(limited, '/dashboard/developers/keys', { mode: 'live', scopes: ['payments:read'] });
    expect(live.statusCode).toBe(403);
    const rootId = await keyIdOf(m.apiKey);
    const rotate = await submit(limited, `/dashboard/developers/keys/${rootId}/rotate`, { expires_in_minutes: '0' });
    expect(rotate.statusCode).toBe(403);
    expect(rotate.body.match(FULL_SECRET)).toBeNull();
  });

  it('rotates a key: the new secret is shown once, the old key keeps working for the grace period', async () => {
    const m = await testAccount(runtime);
    const cookie = await signIn(m.apiKey);
    const target = await extraKey(runtime, m.accountId, { scopes: ['payments:read'] });
    const id = await keyIdOf(target);
    const res = await submit(cookie, `/dashboard/developers/keys/${id}/rotate`, { expires_in_minutes: '60' });
    expect(res.statusCode, res.body).toBe(201);
    const [fresh] = res.body.match(FULL_SECRET) ?? [];
    expect(fresh).toBeDefined();
    expect((await app.inject({ method: 'GET', url: '/v1/ping', headers: bearer(fresh!) })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/v1/ping', headers: bearer(target) })).statusCode).toBe(200);
  });

  it('shows the webhook secret on request and rotates it', async () => {
    const m = await testAccount(runtime);
    const cookie = await signIn(m.apiKey);
    const shown = await get(cookie, '/dashboard/developers?show=webhook-secret');
    expect(shown.body).toContain(m.webhookSecret);
    const res = await submit(cookie, '/dashboard/developers/webhook-secret/rotate', { grace_period_minutes: '60' });
    expect(res.statusCode).toBe(303);
    const after = await get(cookie, '/dashboard/developers?show=webhook-secret');
    const current = /id="webhook-secret-value">(whsec_[^<]+)</.exec(after.body)![1];
    expect(current).not.toBe(m.webhookSecret);
    expect(after.body).toContain('Previous secret');
  });
});

describe('webhooks screen', () => {
  it('lists events and queues a redelivery', async () => {
    const m = await testAccount(runtime);
    const at = runtime.clock.now();
    const eventId = await runtime.db.transaction().execute(async (trx) => {
      const row = await insertEvent(trx, {
        accountId: m.accountId,
        livemode: false,
        type: 'payment.settled',
        objectId: 'pay_dashboardtest',
        data: { hello: 'world' },
        webhookUrl: 'https://merchant.example/hooks',
        createdAt: at,
      });
      await trx
        .updateTable('event_deliveries')
        .set({ status: 'failed', failed_at: at })
        .where('event_id', '=', row.id)
        .execute();
      return row.id;
    });
    const cookie = await signIn(m.apiKey);
    const list = await get(cookie, '/dashboard/webhooks');
    expect(list.body).toContain(`data-event-id="${eventId}"`);
    const url = `/dashboard/webhooks/events/${eventId}`;
    expect((await get(cookie, url)).body).toMatch(/id="delivery-status"><span class="badge bad">failed/);
    const res = await submit(cookie, `${url}/redeliver`, {}, { from: url });
    expect(res.statusCode).toBe(303);
    const delivery = await runtime.db
      .selectFrom('event_deliveries')
      .selectAll()
      .where('event_id', '=', eventId)
      .executeTakeFirstOrThrow();
    expect(delivery.status).toBe('pending');
    expect(delivery.redelivery_requested).toBe(true);
  });
});
