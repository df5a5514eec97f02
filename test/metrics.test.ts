// GET /metrics (docs/operations.md, "Metrics"): only with METRICS_TOKEN and only for its bearer; the
// body is Prometheus text; each metric follows a state the test creates on the file's database and an
// embedded devnet. Times come from the runtime's clock, frozen where a test reads an age or a lag.

import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { formatEther } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain, readTreasuryBalance } from '../src/chain/chain.ts';
import { ConfigError, loadConfig } from '../src/config/config.ts';
import type { ManualClock } from '../src/core/clock.ts';
import { findPaymentById } from '../src/db/repositories/payments.ts';
import type { Runtime } from '../src/runtime.ts';
import { settlePaidPayments } from '../src/settlement/payment-settlement.ts';
import { startSettlementWorker } from '../src/settlement/worker.ts';
import { bearer, type TestAccount, testAccount, testApp, testRuntime } from './support/harness.ts';
import { payoutAddresses, settlementRuntime, waitUntil } from './support/settlement.ts';
import { createPaidPayments } from './support/settlement-fixtures.ts';
import { writeEvent } from './support/webhooks.ts';

const TOKEN = 'metrics-test-token-0123456789abcdef';

let chain: ChainConnection;
let runtime: Runtime & { clock: ManualClock };
let app: FastifyInstance;
let merchant: TestAccount;

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await settlementRuntime(chain, { METRICS_TOKEN: TOKEN });
  app = await testApp(runtime);
  merchant = await testAccount(runtime);
});

afterAll(async () => {
  await chain?.close();
});

// ---------------------------------------------------------------------------------------------------
// A small parser of the Prometheus text format (version 0.0.4): it refuses any line it cannot read.

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

interface Exposition {
  types: Map<string, string>;
  samples: Sample[];
  /** The value of the one sample of `name` whose labels include `labels`; undefined when none. */
  value(name: string, labels?: Record<string, string>): number | undefined;
}

function parseExposition(text: string): Exposition {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('# HELP ')) continue;
    const type = /^# TYPE ([a-zA-Z_:][\w:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (type) {
      types.set(type[1]!, type[2]!);
      continue;
    }
    const sample = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!sample) throw new Error(`not a Prometheus text line: ${line}`);
    const labels: Record<string, string> = {};
    const labelText = sample[2] ?? '';
    let consumed = 0;
    // Sticky: pairs must follow one another from the start; whatever is left over is unreadable.
    for (const pair of labelText.matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)",?/gy)) {
      labels[pair[1]!] = pair[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
      consumed = pair.index + pair[0].length;
    }
    if (consumed !== labelText.length) throw new Error(`unreadable labels in: ${line}`);
    const raw = sample[3]!;
    const value = raw === '+Inf' ? Number.POSITIVE_INFINITY : raw === '-Inf' ? Number.NEGATIVE_INFINITY : Number(raw);
    // prom-client writes NaN as "Nan"; Prometheus reads floats case-insensitively (Go's ParseFloat).
    if (Number.isNaN(value) && !/^nan$/i.test(raw)) throw new Error(`unreadable value in: ${line}`);
    const family = sample[1]!.replace(/_(bucket|sum|count)$/, '');
    if (!types.has(sample[1]!) && types.get(family) !== 'histogram') {
      throw new Error(`sample without a # TYPE line: ${line}`);
    }
    samples.push({ name: sample[1]!, labels, value });
  }
  return {
    types,
    samples,
    value(name, wanted = {}) {
      const matches = samples.filter(
        (s) => s.name === name && Object.entries(wanted).every(([k, v]) => s.labels[k] === v),
      );
      if (matches.length > 1) throw new Error(`${matches.length} samples of ${name} match ${JSON.stringify(wanted)}`);
      return matches[0]?.value;
    },
  };
}

async function scrape(target: FastifyInstance = app): Promise<Exposition> {
  const res = await target.inject({ method: 'GET', url: '/metrics', headers: bearer(TOKEN) });
  expect(res.statusCode, res.body).toBe(200);
  expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
  return parseExposition(res.body);
}

/** Count of requests the histogram holds for one route and status (0 before the first). */
function requests(metrics: Exposition, method: string, route: string, status: number): number {
  return (
    metrics.value('plainpay_http_request_duration_seconds_count', { method, route, status_code: String(status) }) ?? 0
  );
}

/** The paid → settled histogram of test mode: count, sum and the cumulative buckets. */
function settlementLag(metrics: Exposition) {
  const bucket = (le: string) =>
    metrics.value('plainpay_payment_paid_to_settled_seconds_bucket', { livemode: 'false', le }) ?? 0;
  return {
    count: metrics.value('plainpay_payment_paid_to_settled_seconds_count', { livemode: 'false' }) ?? 0,
    sum: metrics.value('plainpay_payment_paid_to_settled_seconds_sum', { livemode: 'false' }) ?? 0,
    le3: bucket('3'),
    le5: bucket('5'),
  };
}

/** Runs `body` with the runtime's clock stopped, so that ages and lags are exactly what it advances. */
async function withFrozenClock(body: () => Promise<void>): Promise<void> {
  const resume = runtime.clock.freeze();
  try {
    await body();
  } finally {
    resume();
  }
}

// ---------------------------------------------------------------------------------------------------

describe('who can read /metrics', () => {
  it('nobody without METRICS_TOKEN: it is an unknown URL (404 error object)', async () => {
    const plain = await testApp(await testRuntime({}, { chain }));
    for (const headers of [{}, bearer(TOKEN)]) {
      const res = await plain.inject({ method: 'GET', url: '/metrics', headers });
      expect(res.statusCode).toBe(404);
      expect(res.json().error).toMatchObject({ type: 'invalid_request_error', code: 'not_found' });
    }
  });

  it('with METRICS_TOKEN, a missing, malformed or wrong bearer gets a 401 error object', async () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{}, 'authentication_required'],
      [{ authorization: `Basic ${Buffer.from(`ops:${TOKEN}`).toString('base64')}` }, 'authentication_required'],
      [{ authorization: TOKEN }, 'authentication_required'],
      [bearer('wrong-token-0123456789abcdef'), 'authentication_failed'],
      [bearer(TOKEN.slice(0, -1)), 'authentication_failed'],
      [bearer(`${TOKEN}x`), 'authentication_failed'],
    ];
    for (const [headers, code] of cases) {
      const res = await app.inject({ method: 'GET', url: '/metrics', headers });
      expect(res.statusCode, JSON.stringify(headers)).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="plainpay-metrics"/);
      expect(res.json().error).toMatchObject({ type: 'authentication_error', code });
      expect(res.body).not.toContain('plainpay_');
    }
  });

  it('is refused at start when METRICS_TOKEN is too short or cannot travel as a bearer', () => {
    for (const token of ['short', 'has spaces in the middle of it', 'quote"inside-0123456789']) {
      expect(() => loadConfig({ METRICS_TOKEN: token })).toThrow(ConfigError);
    }
    expect(loadConfig({ METRICS_TOKEN: TOKEN }).metricsToken).toBe(TOKEN);
    expect(loadConfig({ METRICS_TOKEN: '' }).metricsToken).toBeUndefined();
  });

  it('the bearer of METRICS_TOKEN, without an API key and without a per-key rate limit', async () => {
    const limited = await testApp(await testRuntime({ METRICS_TOKEN: TOKEN, RATE_LIMIT_PER_SECOND: '1' }, { chain }));
    for (let i = 0; i < 3; i++) {
      const res = await limited.inject({ method: 'GET', url: '/metrics', headers: bearer(TOKEN) });
      expect(res.statusCode).toBe(200);
      expect(res.headers.ratelimit).toBeUndefined();
    }
  });
});

describe('the exposition', () => {
  it('is Prometheus text with every metric named plainpay_*, the Node process metrics included', async () => {
    const metrics = await scrape();
    expect([...metrics.types.keys()].filter((name) => !name.startsWith('plainpay_'))).toEqual([]);
    expect(metrics.types.get('plainpay_process_cpu_seconds_total')).toBe('counter');
    expect(metrics.types.get('plainpay_nodejs_heap_size_used_bytes')).toBe('gauge');
    expect(metrics.types.get('plainpay_http_request_duration_seconds')).toBe('histogram');
    expect(metrics.types.get('plainpay_payment_paid_to_settled_seconds')).toBe('histogram');
    expect(metrics.types.get('plainpay_agent_runs_total')).toBe('counter');
    for (const collector of ['transfer_queue', 'webhook_queue', 'confirmations', 'chain', 'reconciliation']) {
      expect(metrics.value('plainpay_metrics_collect_errors_total', { collector })).toBe(0);
    }
  });

  it('has every metric of its own listed in docs/operations.md', async () => {
    const docs = readFileSync(new URL('../docs/operations.md', import.meta.url), 'utf8');
    const own = [...(await scrape()).types.keys()].filter((name) => !/^plainpay_(process|nodejs)_/.test(name));
    expect(own.length).toBeGreaterThan(10);
    expect(own.filter((name) => !docs.includes(`| \`${name}\` |`))).toEqual([]);
  });

  it('counts requests by route pattern and status, never by raw URL, and not its own scrapes', async () => {
    const before = await scrape();
    expect((await app.inject({ method: 'GET', url: '/v1/ping', headers: bearer(merchant.apiKey) })).statusCode).toBe(
      200,
    );
    expect((await app.inject({ method: 'GET', url: '/v1/ping' })).statusCode).toBe(401);
    const unknownPayment = await app.inject({
      method: 'GET',
      url: '/v1/payments/pay_0000000000000000000000',
      headers: bearer(merchant.apiKey),
    });
    expect(unknownPayment.statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: '/no/such/page-123' })).statusCode).toBe(404);
    const after = await scrape();

    expect(requests(after, 'GET', '/v1/ping', 200)).toBe(requests(before, 'GET', '/v1/ping', 200) + 1);
    expect(requests(after, 'GET', '/v1/ping', 401)).toBe(requests(before, 'GET', '/v1/ping', 401) + 1);
    expect(requests(after, 'GET', '/v1/payments/:payment_id', 404)).toBe(
      requests(before, 'GET', '/v1/payments/:payment_id', 404) + 1,
    );
    expect(requests(after, 'GET', 'unmatched', 404)).toBe(requests(before, 'GET', 'unmatched', 404) + 1);

    const routes = new Set(
      after.samples
        .filter((s) => s.name.startsWith('plainpay_http_request_duration_seconds'))
        .map((s) => s.labels.route),
    );
    expect(routes.has('/metrics')).toBe(false);
    expect([...routes].filter((route) => /pay_|page-123/.test(route ?? ''))).toEqual([]);
    // Each request also lands in the buckets: the +Inf bucket equals the count.
    expect(
      after.value('plainpay_http_request_duration_seconds_bucket', {
        route: '/v1/ping',
        status_code: '200',
        le: '+Inf',
      }),
    ).toBe(requests(after, 'GET', '/v1/ping', 200));
  });

  it("reads the relayer's gas and the treasury from the chain", async () => {
    // Nothing moves on this chain before the settlement tests below.
    const gas = Number(formatEther(await chain.publicClient.getBalance({ address: chain.relayer.address })));
    const treasury = Number(await readTreasuryBalance(chain)) / 1e6;
    const metrics = await scrape();
    expect(gas).toBeGreaterThan(0);
    expect(metrics.value('plainpay_relayer_gas_balance_ether')).toBe(gas);
    expect(metrics.value('plainpay_treasury_balance_usdc')).toBe(treasury);
  });
});

describe('settlement', () => {
  it('observes paid → settled when a payment settles into the balance, with its lag', async () => {
    const before = settlementLag(await scrape());
    await withFrozenClock(async () => {
      const [paid] = await createPaidPayments(runtime, merchant.accountId, [{ amount: 5000, currency: 'NGN' }]);
      runtime.clock.advance(4_000);
      expect(await settleNow()).toBe(1);
      expect((await findPaymentById(runtime.db, paid!.id))?.status).toBe('settled');
    });
    const after = settlementLag(await scrape());
    expect(after.count).toBe(before.count + 1);
    expect(after.sum - before.sum).toBeCloseTo(4, 6);
    expect(after.le3).toBe(before.le3);
    expect(after.le5).toBe(before.le5 + 1);
  });

  it('shows a queued transfer with its age, then an empty queue once it settled on chain', async () => {
    const before = settlementLag(await scrape());
    const [address] = payoutAddresses(1);
    let paymentId = '';
    await withFrozenClock(async () => {
      const [paid] = await createPaidPayments(runtime, merchant.accountId, [
        { amount: 7000, currency: 'NGN', payoutAddress: address! },
      ]);
      paymentId = paid!.id;
      expect(await settleNow()).toBe(1);
    });
    // Transfers are stamped by the database's clock: queued a minute ago by that clock.
    await sql`update transfers set created_at = now() - interval '60 seconds' where source_id = ${paymentId}`.execute(
      runtime.db,
    );
    const queued = await scrape();
    expect(queued.value('plainpay_transfer_queue_depth', { status: 'queued' })).toBe(1);
    // At least the minute; the ceiling is only reached by a hang between the update and the scrape.
    expect(queued.value('plainpay_transfer_queue_oldest_age_seconds', { status: 'queued' })).toBeGreaterThanOrEqual(60);
    expect(queued.value('plainpay_transfer_queue_oldest_age_seconds', { status: 'queued' })).toBeLessThan(600);
    expect(queued.value('plainpay_transfer_queue_depth', { status: 'sent' })).toBe(0);
    expect(queued.value('plainpay_transfer_queue_oldest_age_seconds', { status: 'sent' })).toBe(0);

    const worker = startSettlementWorker(runtime, { pollIntervalMs: 20 });
    try {
      // A ceiling only a hang reaches.
      await waitUntil(
        'the payment to settle on chain',
        async () => (await findPaymentById(runtime.db, paymentId))?.status === 'settled',
        120_000,
      );
    } finally {
      await worker.stop();
    }
    const after = await scrape();
    for (const status of ['queued', 'batched', 'sent']) {
      expect(after.value('plainpay_transfer_queue_depth', { status })).toBe(0);
      expect(after.value('plainpay_transfer_queue_oldest_age_seconds', { status })).toBe(0);
    }
    expect(settlementLag(after).count).toBe(before.count + 1);
  });
});

describe('webhook queue', () => {
  it('counts pending deliveries as due or waiting, and the age of the oldest', async () => {
    await withFrozenClock(async () => {
      const due = await writeEvent(runtime, { accountId: merchant.accountId, webhookUrl: 'https://hooks.example/a' });
      const waiting = await writeEvent(runtime, {
        accountId: merchant.accountId,
        webhookUrl: 'https://hooks.example/b',
      });
      runtime.clock.advance(120_000);
      // The second one failed once and backs off for an hour.
      await runtime.db
        .updateTable('event_deliveries')
        .set({ next_attempt_at: new Date(runtime.clock.now().getTime() + 3_600_000) })
        .where('event_id', '=', waiting.id)
        .execute();

      const pending = await scrape();
      expect(pending.value('plainpay_webhook_queue_depth', { state: 'due' })).toBe(1);
      expect(pending.value('plainpay_webhook_queue_depth', { state: 'waiting' })).toBe(1);
      expect(pending.value('plainpay_webhook_queue_oldest_age_seconds')).toBe(120);

      await runtime.db
        .updateTable('event_deliveries')
        .set({ status: 'delivered', delivered_at: runtime.clock.now() })
        .where('event_id', 'in', [due.id, waiting.id])
        .execute();
      const drained = await scrape();
      expect(drained.value('plainpay_webhook_queue_depth', { state: 'due' })).toBe(0);
      expect(drained.value('plainpay_webhook_queue_depth', { state: 'waiting' })).toBe(0);
      expect(drained.value('plainpay_webhook_queue_oldest_age_seconds')).toBe(0);
    });
  });
});

describe('agent runs and held confirmations', () => {
  const settle = (instruction: string) =>
    app.inject({
      method: 'POST',
      url: '/agent/settle',
      headers: { ...bearer(merchant.apiKey), 'content-type': 'application/json' },
      payload: { instruction },
    });
  const runs = (metrics: Exposition, outcome: string) => metrics.value('plainpay_agent_runs_total', { outcome });

  it('counts runs by outcome and shows a held action waiting until it lapses', async () => {
    await withFrozenClock(async () => {
      const before = await scrape();
      expect(before.value('plainpay_confirmations_waiting')).toBe(0);

      const held = await settle('pay out 5000 USDC to 0x2222222222222222222222222222222222222222');
      expect(held.statusCode, held.body).toBe(200);
      expect(held.json().status).toBe('confirmation_required');
      runtime.clock.advance(300_000);
      const waiting = await scrape();
      expect(runs(waiting, 'confirmation_required')).toBe(runs(before, 'confirmation_required')! + 1);
      expect(waiting.value('plainpay_confirmations_waiting')).toBe(1);
      expect(waiting.value('plainpay_confirmations_oldest_waiting_age_seconds')).toBe(300);

      // Confirmations lapse after 15 minutes; a lapsed one waits for nobody.
      runtime.clock.advance(15 * 60_000);
      const lapsed = await scrape();
      expect(lapsed.value('plainpay_confirmations_waiting')).toBe(0);
      expect(lapsed.value('plainpay_confirmations_oldest_waiting_age_seconds')).toBe(0);

      const asked = await settle('what is the weather like in Lagos?');
      expect(asked.statusCode, asked.body).toBe(200);
      expect(asked.json().status).toBe('needs_input');
      const after = await scrape();
      expect(runs(after, 'needs_input')).toBe(runs(before, 'needs_input')! + 1);
      expect(runs(after, 'rejected')).toBe(runs(before, 'rejected'));
      expect(runs(after, 'confirmation_required')).toBe(runs(before, 'confirmation_required')! + 1);
      expect(runs(after, 'completed')).toBe(runs(before, 'completed'));
    });
  });
});

/** One intake turn of the settlement worker, run here so that the test decides when. */
function settleNow(): Promise<number> {
  return settlePaidPayments(runtime, {
    chunk: 100,
    testModeOnChain: async () => true,
  });
}
