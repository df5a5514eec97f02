import type { FastifyInstance } from 'fastify';
import { canonicalHash } from '../../src/core/canonical-json.ts';
import { executeTool } from '../../src/pipeline/execute-tool.ts';
import { insertEvent } from '../../src/db/repositories/events.ts';
import { newId } from '../../src/domain/ids.ts';
import { type ApiKeyScope, API_KEY_SCOPES } from '../../src/domain/api-key-secret.ts';
import { issueApiKey } from '../../src/keys/api-keys.ts';
import { createConfirmation } from '../../src/policy/confirmations.ts';
import type { Runtime } from '../../src/runtime.ts';
import { createWebhookEndpoint } from '../../src/webhooks/endpoints.ts';
import { testAccount } from './harness.ts';
import { ADDRESS_B, fund, post } from './money.ts';
import { createPayment, payPayment } from './payments.ts';
import { createPayout } from '../../tools/create-payout.ts';

/**
 * A tenant with one object of every kind an endpoint takes an id of, in test mode and in live
 * mode, for the security matrix (another account's id, the other mode's id) and as real ids for
 * the fuzzers. Test-mode objects come through the API; live-mode objects that the API cannot make
 * without a live rail or live funds (a payout, a held action, an event) are written with the same
 * repository functions the service uses.
 */

/** What a path parameter names, by the collection segment before it (…/payments/:id → payment). */
export type ObjectKind =
  | 'payment'
  | 'payout'
  | 'confirmation'
  | 'event'
  | 'webhook_endpoint'
  | 'api_key'
  | 'agent_run'
  | 'action';

const KIND_BY_SEGMENT: Record<string, ObjectKind> = {
  payments: 'payment',
  checkout: 'payment',
  payouts: 'payout',
  confirmations: 'confirmation',
  events: 'event',
  webhook_endpoints: 'webhook_endpoint',
  // The dashboard's /webhooks/endpoints/:id/… forms.
  endpoints: 'webhook_endpoint',
  keys: 'api_key',
  runs: 'agent_run',
  actions: 'action',
};

export function objectKindOf(path: string, param: string): ObjectKind | undefined {
  if (param === 'payment_id') return 'payment';
  if (param === 'payout_id') return 'payout';
  const segments = path.split('/');
  const at = segments.indexOf(`:${param}`);
  const before = at > 0 ? segments[at - 1] : undefined;
  return before === undefined ? undefined : KIND_BY_SEGMENT[before];
}

export interface ModeObjects {
  /** A key of this mode holding every scope. */
  key: string;
  keyId: string;
  /** Another key of this mode (all scopes) that may be revoked or rotated freely. */
  spareKey: string;
  spareKeyId: string;
  ids: Record<ObjectKind, string>;
}

export interface Tenant {
  accountId: string;
  webhookSecret: string;
  test: ModeObjects;
  live: ModeObjects;
}

async function keyOf(runtime: Runtime, accountId: string, livemode: boolean, scopes?: ApiKeyScope[]) {
  const issued = await issueApiKey(runtime.db, { accountId, livemode, scopes: scopes ?? [...API_KEY_SCOPES] });
  return { key: issued.secret, keyId: issued.id };
}

async function agentRun(app: FastifyInstance, key: string): Promise<string> {
  const res = await post(app, key, '/agent/settle', { instruction: 'what is my balance?' });
  if (res.statusCode !== 200) throw new Error(`agent run failed: ${res.statusCode} ${res.body}`);
  return res.json().run_id;
}

/** The first action a run recorded. */
async function actionOf(runtime: Runtime, runId: string): Promise<string> {
  const row = await runtime.db
    .selectFrom('agent_actions')
    .select('id')
    .where('run_id', '=', runId)
    .orderBy('created_at')
    .executeTakeFirstOrThrow();
  return row.id;
}

async function deliverableEvent(runtime: Runtime, accountId: string, livemode: boolean, objectId: string) {
  const row = await insertEvent(runtime.db, {
    accountId,
    livemode,
    type: 'payment.paid',
    objectId,
    data: { id: objectId, object: 'payment' },
    webhookUrl: 'https://203.0.113.10/hook',
    createdAt: runtime.clock.now(),
  });
  return row.id;
}

/** An account endpoint, written as the API writes it (without its URL check: no DNS here). */
async function webhookEndpoint(runtime: Runtime, accountId: string, livemode: boolean): Promise<string> {
  const created = await runtime.db.transaction().execute((trx) =>
    createWebhookEndpoint(trx, runtime.secretBox, {
      accountId,
      livemode,
      url: 'https://hooks.fixture.example/plainpay',
      enabledEvents: ['payout.settled'],
      description: null,
      disabled: false,
      now: runtime.clock.now(),
    }),
  );
  return created.id;
}

export async function buildTenant(runtime: Runtime, app: FastifyInstance, name: string): Promise<Tenant> {
  const account = await testAccount(runtime, { name });
  const accountId = account.accountId;
  const testKeyId = (
    await runtime.db.selectFrom('api_keys').select('id').where('account_id', '=', accountId).executeTakeFirstOrThrow()
  ).id;

  // Test mode, through the API.
  const payment = (await createPayment(app, account.apiKey)).id as string;
  const paid = (await createPayment(app, account.apiKey)).id as string;
  const payRes = await payPayment(app, account.apiKey, paid);
  if (payRes.statusCode !== 200) throw new Error(`pay failed: ${payRes.body}`);
  await fund(app, account.apiKey, 20_000);
  const payoutRes = await post(app, account.apiKey, '/v1/payouts', { amount: 1, to_address: ADDRESS_B });
  if (payoutRes.statusCode !== 200) throw new Error(`payout failed: ${payoutRes.body}`);
  // The default policy holds a 5,000 USDC payout asked for over MCP.
  const held = await executeTool(
    createPayout,
    { amount: 5000, to_address: ADDRESS_B },
    {
      runtime,
      actor: { accountId, livemode: false, keyId: testKeyId, scopes: new Set(API_KEY_SCOPES), channel: 'mcp' },
    },
  );
  if (held.kind !== 'confirmation_required') throw new Error(`expected a held payout, got ${held.kind}`);
  const spareTest = await keyOf(runtime, accountId, false);
  const test: ModeObjects = {
    key: account.apiKey,
    keyId: testKeyId,
    spareKey: spareTest.key,
    spareKeyId: spareTest.keyId,
    ids: {
      payment,
      payout: payoutRes.json().id,
      confirmation: held.confirmation.confirmation_id,
      event: await deliverableEvent(runtime, accountId, false, paid),
      webhook_endpoint: await webhookEndpoint(runtime, accountId, false),
      api_key: spareTest.keyId,
      agent_run: await agentRun(app, account.apiKey),
      action: held.actionId!,
    },
  };

  // Live mode: a payment and a run through the API; the rest as the service writes them.
  const live = await keyOf(runtime, accountId, true);
  const spareLive = await keyOf(runtime, accountId, true);
  const livePayment = (await createPayment(app, live.key)).id as string;
  const liveRun = await agentRun(app, live.key);
  const now = runtime.clock.now();
  const livePayout = newId('po');
  await runtime.db
    .insertInto('payouts')
    .values({
      id: livePayout,
      account_id: accountId,
      livemode: true,
      amount_minor: 1_000_000n,
      asset: 'USDC',
      to_address: ADDRESS_B,
      status: 'queued',
      channel: 'api',
      revenue_share_id: null,
      reference: null,
      memo: null,
      transfer_id: null,
      chain_id: null,
      tx_hash: null,
      gas_used: null,
      gas_cost_wei: null,
      failure_reason: null,
      created_at: now,
    })
    .execute();
  const heldInput = { amount: 5000, asset: 'USDC', to_address: ADDRESS_B };
  const liveConfirmation = await runtime.db.transaction().execute((trx) =>
    createConfirmation(trx, runtime.config, {
      accountId,
      livemode: true,
      tool: 'create_payout',
      channel: 'api',
      input: heldInput,
      inputHash: canonicalHash(heldInput),
      summary: 'Pay out 5,000.000000 USDC (live fixture)',
      decision: { outcome: 'require_confirmation', reasons: [] },
      requestedByKey: live.keyId,
      runId: null,
      at: now,
    }),
  );
  return {
    accountId,
    webhookSecret: account.webhookSecret,
    test,
    live: {
      key: live.key,
      keyId: live.keyId,
      spareKey: spareLive.key,
      spareKeyId: spareLive.keyId,
      ids: {
        payment: livePayment,
        payout: livePayout,
        confirmation: liveConfirmation.id,
        event: await deliverableEvent(runtime, accountId, true, livePayment),
        webhook_endpoint: await webhookEndpoint(runtime, accountId, true),
        api_key: spareLive.keyId,
        agent_run: liveRun,
        action: await actionOf(runtime, liveRun),
      },
    },
  };
}

export { keyOf as issueKey };
