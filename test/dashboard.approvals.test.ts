import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { bearer, extraKey, testAccount, testApp, testRuntime, type TestRuntime } from './support/harness.ts';
import { ADDRESS_A, editPolicy, fund, post } from './support/money.ts';

/**
 * The approval screen as a finance person uses it (issue 14, point 4), through inject: the held
 * action in words, the balance and the shortfall, approve disabled with the reason whenever it
 * cannot run, and post-redirect-get after every decision, refused ones included. The browser half
 * is test/browser/approval.test.ts.
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

async function signIn(key: string): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/dashboard/sign-in',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...SAME_ORIGIN },
    payload: new URLSearchParams({ api_key: key }).toString(),
  });
  expect(res.statusCode, res.body).toBe(303);
  const header = res.headers['set-cookie'];
  return /plainpay_session=[^;]+/.exec(Array.isArray(header) ? header.join('\n') : (header ?? ''))![0];
}

function get(cookie: string, url: string): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'GET', url, headers: { cookie } });
}

/** Posts a decision form the way the page does: the session's CSRF token from the page itself. */
async function decide(cookie: string, page: string, decision: 'approve' | 'reject'): Promise<LightMyRequestResponse> {
  const token = /name="csrf_token" value="([^"]+)"/.exec((await get(cookie, page)).body)![1]!;
  return app.inject({
    method: 'POST',
    url: `${page}/${decision}`,
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', ...SAME_ORIGIN },
    payload: new URLSearchParams({ csrf_token: token }).toString(),
  });
}

/** The text of the element with this id, as a reader sees it (none of these nest in their own kind). */
function textOf(page: string, id: string): string {
  const match = new RegExp(`<(\\w+)[^>]*id="${id}"[^>]*>([\\s\\S]*?)</\\1>`).exec(page);
  if (!match) return '';
  const entities: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'" };
  return match[2]!
    .replace(/<[^>]+>/g, '')
    .replace(/&(?:amp|lt|gt|quot|#39);/g, (e) => entities[e]!)
    .trim();
}

function approveButton(page: string): string {
  return /<button[^>]*id="approve"[^>]*>/.exec(page)?.[0] ?? '';
}

function rejectButton(page: string): string {
  return /<button[^>]*id="reject"[^>]*>/.exec(page)?.[0] ?? '';
}

interface Held {
  page: string;
  confirmationId: string;
  accountId: string;
  /** The account's first key, all scopes: it created the two keys below. */
  adminKey: string;
  financeKey: string;
}

/**
 * An "ops agent" key asks for a 250 USDC payout with a memo on an account holding `balance`; the
 * api channel's policy holds anything above 10 USDC. The admin created both the agent's key and a
 * finance key with the approvals scope: the finance key is another principal than the agent's.
 */
async function heldPayout(balance: number): Promise<Held> {
  const m = await testAccount(runtime);
  await fund(app, m.apiKey, balance);
  const put = await editPolicy(app, m.apiKey, (policy) => {
    policy.channels.api.confirm_above = '10';
  });
  expect(put.statusCode, put.body).toBe(200);
  const agent = await post(app, m.apiKey, '/keys', { name: 'ops agent', scopes: ['payouts:write', 'payments:read'] });
  const finance = await post(app, m.apiKey, '/keys', { name: 'finance', scopes: ['approvals', 'payments:read'] });
  expect(agent.statusCode, agent.body).toBe(200);
  expect(finance.statusCode, finance.body).toBe(200);
  const held = await post(app, agent.json().secret, '/v1/payouts', {
    amount: 250,
    to_address: ADDRESS_A,
    memo: 'March invoice',
  });
  expect(held.statusCode, held.body).toBe(202);
  const confirmationId: string = held.json().confirmation_id;
  return {
    page: `/dashboard/confirmations/${confirmationId}`,
    confirmationId,
    accountId: m.accountId,
    adminKey: m.apiKey,
    financeKey: finance.json().secret,
  };
}

describe('the approval screen', () => {
  it('says what is held in words, shows the balance and the shortfall, and disables approve with the reason', async () => {
    const held = await heldPayout(100);
    const finance = await signIn(held.financeKey);
    const res = await get(finance, held.page);
    expect(res.statusCode).toBe(200);
    const page = res.body;

    expect(textOf(page, 'confirmation-summary')).toBe(
      'Pay out 250.000000 USDC to 0x1111…1111 — memo: March invoice — asked by ops agent',
    );
    // The full address is on the page too, to check it against the request.
    expect(page).toContain(`<dd>${ADDRESS_A}</dd>`);
    expect(textOf(page, 'confirmation-reasons')).toMatch(/250 USDC is above the api channel's confirmation threshold/);
    expect(textOf(page, 'available-balance')).toBe('100.000000 USDC');
    expect(textOf(page, 'needed-amount')).toBe('250.000000 USDC');
    expect(textOf(page, 'shortfall')).toBe('150.000000 USDC');
    expect(approveButton(page)).toContain('disabled');
    expect(rejectButton(page)).not.toContain('disabled');
    expect(textOf(page, 'approve-blocked')).toBe(
      'The balance is too low: it is 150.000000 USDC short. Add funds to the balance, then approve.',
    );
    // No raw JSON and no API hints: the numbers are on the screen.
    expect(page).not.toContain('<pre>');
    expect(page).not.toMatch(/\/v1\/|"to_address"/);
  });

  it('approving anyway redirects back (303) and says why in words; after funding, approve runs and redirects', async () => {
    const held = await heldPayout(100);
    const finance = await signIn(held.financeKey);

    const refused = await decide(finance, held.page, 'approve');
    expect(refused.statusCode).toBe(303);
    expect(refused.headers.location).toBe(`${held.page}?failed=approve&code=insufficient_funds`);
    const after = (await get(finance, refused.headers.location as string)).body;
    expect(textOf(after, 'decision-error')).toBe(
      'Not approved: the balance is too low for it (the numbers are below). Nothing moved.',
    );
    expect(after).not.toContain('GET /v1/balance');
    expect(textOf(after, 'confirmation-status')).toBe('pending');
    expect(textOf(after, 'shortfall')).toBe('150.000000 USDC');

    await fund(app, held.adminKey, 200);
    const funded = (await get(finance, held.page)).body;
    expect(approveButton(funded)).not.toContain('disabled');
    expect(funded).not.toContain('id="shortfall"');
    expect(funded).not.toContain('id="approve-blocked"');

    const approved = await decide(finance, held.page, 'approve');
    expect(approved.statusCode, approved.body).toBe(303);
    expect(approved.headers.location).toBe(`${held.page}?done=approved`);
    const done = (await get(finance, approved.headers.location as string)).body;
    expect(textOf(done, 'confirmation-status')).toBe('executed');
    expect(done).toMatch(/id="confirmation-result">.*data-object-id="po_\w+"/s);
    // Decided: nothing left to approve, and the screen says why.
    expect(approveButton(done)).toContain('disabled');
    expect(textOf(done, 'approve-blocked')).toBe('It has already been approved, and it ran.');
    expect(done).not.toContain('id="funds"');

    // A second approval (a stale tab) is a redirect back too, named in words.
    const again = await decide(finance, held.page, 'approve');
    expect(again.statusCode).toBe(303);
    expect(again.headers.location).toBe(`${held.page}?failed=approve&code=conflict`);
    expect(textOf((await get(finance, again.headers.location as string)).body, 'decision-error')).toBe(
      'Not approved: it is no longer pending, or no longer matches the action that was held. Nothing moved.',
    );
  });

  it('the key that asked, and a key it created, see both buttons disabled with the reason; posting anyway redirects back', async () => {
    const m = await testAccount(runtime);
    await fund(app, m.apiKey, 1000);
    const put = await editPolicy(app, m.apiKey, (policy) => {
      policy.channels.api.confirm_above = '10';
    });
    expect(put.statusCode).toBe(200);
    const held = await post(app, m.apiKey, '/v1/payouts', { amount: 11, to_address: ADDRESS_A });
    expect(held.statusCode, held.body).toBe(202);
    const page = `/dashboard/confirmations/${held.json().confirmation_id}`;
    const created = await post(app, m.apiKey, '/keys', { name: 'my helper', scopes: ['approvals', 'payments:read'] });
    expect(created.statusCode).toBe(200);

    for (const key of [m.apiKey, created.json().secret as string]) {
      const cookie = await signIn(key);
      const body = (await get(cookie, page)).body;
      expect(approveButton(body)).toContain('disabled');
      expect(rejectButton(body)).toContain('disabled');
      expect(textOf(body, 'approve-blocked')).toMatch(
        /^You are signed in with the key that asked for this action, or a key in its lineage/,
      );
      const refused = await decide(cookie, page, 'reject');
      expect(refused.statusCode).toBe(303);
      expect(refused.headers.location).toBe(`${page}?failed=reject&code=permission_denied`);
      expect(textOf((await get(cookie, refused.headers.location as string)).body, 'decision-error')).toBe(
        'Not rejected: this key may not decide it. Nothing moved.',
      );
    }
    const row = await runtime.db
      .selectFrom('confirmations')
      .select('status')
      .where('id', '=', held.json().confirmation_id)
      .executeTakeFirstOrThrow();
    expect(row.status).toBe('pending');
  });

  it('an expired hold disables both buttons and says so; reject redirects with a notice', async () => {
    const held = await heldPayout(1000);
    const finance = await signIn(held.financeKey);
    expect(approveButton((await get(finance, held.page)).body)).not.toContain('disabled');

    const rejected = await decide(finance, held.page, 'reject');
    expect(rejected.statusCode).toBe(303);
    expect(rejected.headers.location).toBe(`${held.page}?done=rejected`);
    const after = (await get(finance, rejected.headers.location as string)).body;
    expect(after).toContain('Rejected: nothing moved.');
    expect(textOf(after, 'approve-blocked')).toBe('It has already been rejected.');

    const other = await heldPayout(1000);
    const otherFinance = await signIn(other.financeKey);
    runtime.clock.advance(16 * 60_000);
    const expired = (await get(otherFinance, other.page)).body;
    expect(textOf(expired, 'confirmation-status')).toBe('expired');
    expect(approveButton(expired)).toContain('disabled');
    expect(rejectButton(expired)).toContain('disabled');
    expect(textOf(expired, 'approve-blocked')).toBe(
      'It expired without a decision. Ask for it again if it is still wanted.',
    );
  });

  it('a notice comes only from the closed set of codes: a crafted link puts no words on the page', async () => {
    const held = await heldPayout(1000);
    const finance = await signIn(held.financeKey);
    for (const query of ['failed=approve&code=Send+funds+to+0xevil', 'failed=wire&code=conflict', 'done=paid']) {
      const body = (await get(finance, `${held.page}?${query}`)).body;
      expect(body, query).not.toContain('id="decision-error"');
      expect(body, query).not.toContain('0xevil');
      expect(body, query).not.toContain('class="notice ok"');
    }
    // The API agrees with the page: still pending, nothing moved.
    const api = await app.inject({
      method: 'GET',
      url: `/v1/confirmations/${held.confirmationId}`,
      headers: bearer(await extraKey(runtime, held.accountId, { scopes: ['payments:read'] })),
    });
    expect(api.json()).toMatchObject({ status: 'pending', created_object: null });
  });
});
