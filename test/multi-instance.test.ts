// Issue 10, acceptance 4: several instances on one Postgres. Two `plainpay serve --role api`
// processes and two `--role worker` processes share a scratch Postgres database, one RPC devnet and
// Redis (rate limits). A mixed load of creates, pays, payouts and webhooks runs against both API
// instances for MULTI_INSTANCE_LOAD_SECONDS (default 60); afterwards the workers drain and every
// invariant must hold: each paid payment settled exactly once, every payout settled, the ledger
// balanced and equal to the chain, every event with a webhook_url delivered and verified by the
// receiver, and the rate limit counted across the instances (a burst split over both is limited
// as one budget).
//
// Postgres only: the processes must share one database, and PGlite is one process per data
// directory, so under the default `npm test` (no DATABASE_URL) this is skipped. CI's Postgres pass
// (DATABASE_URL and REDIS_URL set) runs it. Redis defaults to redis://127.0.0.1:6379.

import { createHash, randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import type { Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain, readTokenBalance } from '../src/chain/chain.ts';
import { DEV_ACCOUNTS, type DevnetRpcServer, startDevnetRpcServer } from '../src/chain/devnet.ts';
import { getLedgerBalance, ledgerAccount } from '../src/ledger/ledger.ts';
import type { Runtime } from '../src/runtime.ts';
import { fileDatabaseUrl, isPostgres, type TestAccount, testAccount } from './support/harness.ts';
import {
  ApiPool,
  type ApiResponse,
  type BurstResult,
  type CountingReceiver,
  errorLines,
  type Instance,
  rateLimitBurst,
  spawnInstance,
  startCountingReceiver,
} from './support/multi-instance.ts';
import { expectSettledExactlyOnce, payoutAddresses, settlementRuntime, waitUntil } from './support/settlement.ts';

/** How long the load runs; CI uses the default. */
const LOAD_SECONDS = Number(process.env.MULTI_INSTANCE_LOAD_SECONDS ?? 60);
const LOAD_MS = LOAD_SECONDS * 1000;
/** After the load: the longest the workers may take to settle and deliver everything. */
const DRAIN_MS = 120_000;
/** Per key per second, small enough that one burst shows it. */
const RATE_LIMIT = 20;
/** Concurrent load clients, one merchant account (and key) each. */
const CLIENTS = 3;
/** Pause after each step of a client: about 5 requests a second per key, well under the limit. */
const PACE_MS = 200;
const BURST_EVERY_MS = 10_000;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

let devnet: DevnetRpcServer;
let chain: ChainConnection;
let runtime: Runtime;
let receiver: CountingReceiver;
let merchants: TestAccount[] = [];
let burster: TestAccount;
const instances: Instance[] = [];

// Runs before the support modules' clean-ups (the file's database is dropped by afterFile, whose
// afterAll was registered first, when the imports loaded): the processes are gone first, whatever
// the test did. They are also killed if the test process exits (support/multi-instance.ts).
afterAll(async () => {
  for (const instance of instances) {
    if (instance.child.exitCode === null && instance.child.signalCode === null) instance.child.kill('SIGKILL');
  }
  await Promise.all(instances.map((i) => i.exited));
  await receiver?.close();
  await devnet?.close();
});

beforeAll(async () => {
  if (!isPostgres) return;
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    await redis.ping();
  } catch (error) {
    throw new Error(`the multi-instance test needs Redis at ${REDIS_URL}: ${(error as Error).message}`);
  } finally {
    redis.disconnect();
  }

  devnet = await startDevnetRpcServer();
  chain = await connectChain({
    rpcUrl: devnet.url,
    tokenAddress: devnet.tokenAddress,
    batchAddress: devnet.batchAddress,
    relayerPrivateKey: DEV_ACCOUNTS.relayer.privateKey,
    confirmations: 1,
  });
  // One master key for the test's runtime and every process: webhook secrets sealed by one open in all.
  const masterKey = randomBytes(32).toString('base64');
  runtime = await settlementRuntime(chain, { PLAINPAY_MASTER_KEY: masterKey });
  const databaseUrl = (await fileDatabaseUrl())!;
  merchants = [];
  for (let c = 0; c < CLIENTS; c++) merchants.push(await testAccount(runtime, { name: `Load merchant ${c}` }));
  burster = await testAccount(runtime, { name: 'Burst merchant' });
  receiver = await startCountingReceiver(
    new Map(merchants.map((m) => [m.accountId, m.webhookSecret])),
    // About one event in ten is refused at its first arrival: its second attempt (5 s later, by
    // whichever worker leases it) must deliver it.
    (id) => createHash('sha256').update(id).digest()[0]! % 10 === 0,
  );

  const env = {
    DATABASE_URL: databaseUrl,
    REDIS_URL,
    CHAIN_RPC_URL: devnet.url,
    CHAIN_ID: String(devnet.chainId),
    SETTLEMENT_TOKEN_ADDRESS: devnet.tokenAddress,
    BATCH_CONTRACT_ADDRESS: devnet.batchAddress,
    RELAYER_PRIVATE_KEY: DEV_ACCOUNTS.relayer.privateKey,
    CONFIRMATIONS: '1',
    WEBHOOK_ALLOW_PRIVATE: '1',
    PLAINPAY_MASTER_KEY: masterKey,
    LOG_LEVEL: 'warn',
    DEMO_ACCOUNT: '0',
    RATE_LIMIT_PER_SECOND: String(RATE_LIMIT),
  };
  // Each is recorded as soon as it is spawned, so that afterAll kills it whatever happens next; they
  // all boot at once.
  for (const [name, role] of [
    ['api-1', 'api'],
    ['api-2', 'api'],
    ['worker-1', 'worker'],
    ['worker-2', 'worker'],
  ] as const) {
    instances.push(await spawnInstance(name, role, env));
  }
  await Promise.all(instances.map((i) => i.running));
}, 180_000);

/** What the load did, for the end checks and the summary. */
interface LoadRecord {
  /** Payments that must end settled, by id. */
  paid: Map<string, { account: string }>;
  /** Payments left unpaid whose ttl was made to lapse: must end expired. */
  expiring: Set<string>;
  payouts: Array<{ id: string; account: string; to: string }>;
  fundedMinor: Map<string, bigint>;
  created: number;
  idempotentPairs: number;
  doublePays: number;
  declinedFirst: number;
  crossReads: number;
  load429: number;
  problems: string[];
}

/** One request of the load; a 429 (never expected at this pace) is waited out and retried. */
async function call(
  pool: ApiPool,
  record: LoadRecord,
  instance: number,
  key: string,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
): Promise<ApiResponse> {
  for (let attempt = 0; ; attempt++) {
    const res = await pool.request(instance, key, method, path, body, headers);
    if (res.status !== 429 || attempt === 5) return res;
    record.load429++;
    pool.stats[instance]!.load429++;
    await sleep(Number(res.headers.get('retry-after') ?? '1') * 1000);
  }
}

function expectStatus(record: LoadRecord, what: string, res: ApiResponse, status: number): boolean {
  if (res.status === status) return true;
  record.problems.push(`${what}: expected ${status}, got ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
  return false;
}

/**
 * One load client: a merchant's backend spreading its requests over both instances. Each round
 * creates a payment (with a webhook_url; every other one with a payout_address), sometimes twice at
 * once on both instances with one Idempotency-Key, sometimes reads it back from the other instance,
 * then pays it (sometimes on both instances at once: one must win), or leaves it unpaid to expire;
 * every fourth round funds the balance and pays out from it.
 */
async function loadClient(
  c: number,
  pool: ApiPool,
  record: LoadRecord,
  until: number,
  paymentAddresses: readonly Address[],
  payoutTargets: readonly Address[],
): Promise<void> {
  const merchant = merchants[c]!;
  const key = merchant.apiKey;
  for (let n = 1; Date.now() < until && record.problems.length === 0; n++) {
    const a = pool.pick();
    const b = (a + 1) % pool.urls.length;
    const body = {
      amount: 1000 + ((n * 7919 + c * 104729) % 50_000) + (n % 100) / 100,
      currency: 'NGN',
      redirect_url: 'https://shop.example/thanks',
      reference: `mi-${c}-${n}`,
      webhook_url: receiver.urlFor(merchant.accountId),
      metadata: { client: c, round: n },
      ...(n % 2 === 0 ? { payout_address: paymentAddresses[(n + c) % paymentAddresses.length] } : {}),
    };
    let id: string;
    if (n % 5 === 0) {
      // The same Idempotency-Key on both instances at once: one payment, the same answer twice.
      const idem = { 'idempotency-key': `mi-${c}-${n}-${randomBytes(4).toString('hex')}` };
      const [r1, r2] = await Promise.all([
        call(pool, record, a, key, 'POST', '/v1/payments', body, idem),
        call(pool, record, b, key, 'POST', '/v1/payments', body, idem),
      ]);
      if (!expectStatus(record, 'idempotent create', r1, 200) || !expectStatus(record, 'idempotent create', r2, 200))
        return;
      if (r1.body.id !== r2.body.id) record.problems.push(`idempotent create gave ${r1.body.id} and ${r2.body.id}`);
      record.idempotentPairs++;
      id = r1.body.id as string;
    } else {
      const res = await call(pool, record, a, key, 'POST', '/v1/payments', body);
      if (!expectStatus(record, 'create', res, 200)) return;
      id = res.body.id as string;
    }
    record.created++;
    await sleep(PACE_MS);

    if (n % 3 === 0) {
      // Read-your-writes across instances: the other instance sees it at once (one database).
      const res = await call(pool, record, b, key, 'GET', `/v1/payments/${id}`);
      if (!expectStatus(record, 'read on the other instance', res, 200)) return;
      record.crossReads++;
      await sleep(PACE_MS);
    }

    if (n % 7 === 0) {
      // Left unpaid; its ttl is made to lapse now (standing in for 60 minutes passing), so that the
      // workers' expiry jobs expire it while the load goes on.
      await runtime.db
        .updateTable('payments')
        .set({ expires_at: sql<Date>`created_at` })
        .where('id', '=', id)
        .execute();
      record.expiring.add(id);
      continue;
    }

    const pay = (instance: number, outcome: 'succeeded' | 'declined' = 'succeeded') =>
      call(pool, record, instance, key, 'POST', `/v1/test_helpers/payments/${id}/pay`, { outcome });
    if (n % 4 === 0) {
      // Both instances pay at once: exactly one succeeds, the other is a 409 conflict.
      const statuses = (await Promise.all([pay(a), pay(b)])).map((r) => r.status).sort();
      if (statuses[0] !== 200 || statuses[1] !== 409) {
        record.problems.push(`double pay of ${id}: statuses ${statuses.join(', ')}, expected 200 and 409`);
        return;
      }
      record.doublePays++;
    } else {
      if (n % 6 === 1) {
        if (!expectStatus(record, 'declined pay', await pay(a, 'declined'), 200)) return;
        record.declinedFirst++;
        await sleep(PACE_MS);
      }
      if (!expectStatus(record, 'pay', await pay(b), 200)) return;
    }
    record.paid.set(id, { account: merchant.accountId });
    await sleep(PACE_MS);

    if (n % 4 === 2) {
      // Fund the balance on one instance, pay out of it on the other.
      const fund = await call(pool, record, a, key, 'POST', '/v1/test_helpers/balance/fund', { amount: 3 });
      if (!expectStatus(record, 'fund', fund, 200)) return;
      record.fundedMinor.set(merchant.accountId, (record.fundedMinor.get(merchant.accountId) ?? 0n) + 3_000_000n);
      await sleep(PACE_MS);
      const to = payoutTargets[(n + c) % payoutTargets.length]!;
      const payout = await call(pool, record, b, key, 'POST', '/v1/payouts', {
        amount: 1 + (n % 5) * 0.25,
        asset: 'USDC',
        to_address: to,
        reference: `po-${c}-${n}`,
      });
      if (!expectStatus(record, 'payout', payout, 200)) return;
      record.payouts.push({ id: payout.body.id as string, account: merchant.accountId, to });
      await sleep(PACE_MS);
    }
  }
}

/** A process's warnings (pino level 40), counted by message. */
function warningSummary(instance: Instance): string {
  const byMessage = new Map<string, number>();
  for (const line of instance.output) {
    if (!/"level":40/.test(line)) continue;
    let msg = line.slice(0, 120);
    try {
      msg = (JSON.parse(line) as { msg?: string }).msg ?? msg;
    } catch {}
    byMessage.set(msg, (byMessage.get(msg) ?? 0) + 1);
  }
  return byMessage.size === 0 ? 'none' : [...byMessage].map(([msg, n]) => `${n}× "${msg}"`).join(', ');
}

async function count(query: Promise<{ n: number } | undefined>): Promise<number> {
  return (await query)?.n ?? 0;
}

describe('multi-instance: 2 API + 2 worker processes on one Postgres with Redis rate limits', () => {
  it.skipIf(!isPostgres)(
    `a mixed load for ${LOAD_SECONDS} s ends with every invariant holding (issue 10, acceptance 4)`,
    async () => {
      const started = Date.now();
      const apis = instances.filter((i) => i.role === 'api');
      const pool = new ApiPool(apis.map((i) => i.url!));
      const paymentAddresses = payoutAddresses(8);
      const payoutTargets = payoutAddresses(4);
      const record: LoadRecord = {
        paid: new Map(),
        expiring: new Set(),
        payouts: [],
        fundedMinor: new Map(),
        created: 0,
        idempotentPairs: 0,
        doublePays: 0,
        declinedFirst: 0,
        crossReads: 0,
        load429: 0,
        problems: [],
      };

      // Load and, alongside it, a rate-limit burst every 10 s with a key of its own.
      const until = Date.now() + LOAD_MS;
      const bursts: BurstResult[] = [];
      const burstLoop = (async () => {
        await sleep(2_000);
        while (Date.now() < until - 1_500 && record.problems.length === 0) {
          bursts.push(await rateLimitBurst(pool, burster.apiKey, RATE_LIMIT));
          await sleep(Math.max(0, Math.min(BURST_EVERY_MS, until - Date.now())));
        }
      })();
      await Promise.all([
        ...merchants.map((_, c) =>
          loadClient(c, pool, record, until, paymentAddresses, payoutTargets).catch((error: Error) => {
            record.problems.push(`client ${c}: ${error.stack ?? error.message}`);
          }),
        ),
        burstLoop,
      ]);
      // A burst that straddled two windows proves nothing; make sure at least one fit in one.
      for (let i = 0; i < 5 && !bursts.some((b) => b.oneWindow); i++) {
        bursts.push(await rateLimitBurst(pool, burster.apiKey, RATE_LIMIT));
      }
      const loadEnded = Date.now();
      expect(record.problems).toEqual([]);

      // Drain: every transition is done before the deliveries are checked, since each one writes
      // its event (and delivery row) in its own transaction.
      const accounts = merchants.map((m) => m.accountId);
      const paidIds = [...record.paid.keys()];
      const expiringIds = [...record.expiring];
      const payoutIds = record.payouts.map((p) => p.id);
      let drainStep = 'expiry';
      await waitUntil(
        'the workers to settle, expire and deliver everything',
        async () => {
          drainStep = 'expiry';
          if (
            expiringIds.length > 0 &&
            (await count(
              runtime.db
                .selectFrom('payments')
                .select(sql<number>`count(*)::int`.as('n'))
                .where('id', 'in', expiringIds)
                .where('status', '!=', 'expired')
                .executeTakeFirst(),
            )) > 0
          )
            return false;
          drainStep = 'settlement';
          if (
            (await count(
              runtime.db
                .selectFrom('payments')
                .select(sql<number>`count(*)::int`.as('n'))
                .where('id', 'in', paidIds)
                .where('status', '!=', 'settled')
                .executeTakeFirst(),
            )) > 0
          )
            return false;
          drainStep = 'payouts';
          if (
            payoutIds.length > 0 &&
            (await count(
              runtime.db
                .selectFrom('payouts')
                .select(sql<number>`count(*)::int`.as('n'))
                .where('id', 'in', payoutIds)
                .where('status', '!=', 'settled')
                .executeTakeFirst(),
            )) > 0
          )
            return false;
          drainStep = 'webhooks';
          return (
            (await count(
              runtime.db
                .selectFrom('event_deliveries')
                .select(sql<number>`count(*)::int`.as('n'))
                .where('account_id', 'in', accounts)
                .where('status', '!=', 'delivered')
                .executeTakeFirst(),
            )) === 0
          );
        },
        DRAIN_MS,
      ).catch((error: Error) => {
        throw new Error(`${error.message} (stuck at: ${drainStep})`);
      });
      const drained = Date.now();

      // Graceful stop of every process; none logged an error.
      const codes = await Promise.all(instances.map((i) => i.stop()));
      expect(Object.fromEntries(instances.map((i, k) => [i.name, codes[k]]))).toEqual(
        Object.fromEntries(instances.map((i) => [i.name, 0])),
      );
      expect(Object.fromEntries(instances.map((i) => [i.name, errorLines(i)]))).toEqual(
        Object.fromEntries(instances.map((i) => [i.name, []])),
      );
      expect(pool.serverErrors()).toBe(0);

      // Nothing was created beyond what the load asked for (idempotent pairs made one payment).
      const rows = await runtime.db.selectFrom('payments').selectAll().where('account_id', 'in', accounts).execute();
      expect(rows).toHaveLength(record.created);
      const paidRows = rows.filter((r) => record.paid.has(r.id));
      expect(paidRows).toHaveLength(paidIds.length);

      // Each paid payment settled exactly once: one transfer, one confirmed batch paid once on chain,
      // on-chain balances equal to the sums, one payment.settled each; then the settlement invariants
      // (ledger zero sum, balances = entries, ledger = chain for the treasury, in-flight = open transfers).
      await expectSettledExactlyOnce(runtime, chain, paidRows);

      // One payment.paid per paid payment (the double pays paid once), one payment.expired per
      // lapsed one and nothing else for those.
      const events = await runtime.db
        .selectFrom('events')
        .select(['id', 'type', 'object_id', 'webhook_url', 'account_id'])
        .where('account_id', 'in', accounts)
        .execute();
      const perObject = new Map<string, string[]>();
      for (const e of events) perObject.set(e.object_id!, [...(perObject.get(e.object_id!) ?? []), e.type]);
      for (const id of paidIds) expect(perObject.get(id)?.sort(), id).toEqual(['payment.paid', 'payment.settled']);
      for (const id of expiringIds) expect(perObject.get(id), id).toEqual(['payment.expired']);
      for (const id of payoutIds) expect(perObject.get(id), id).toEqual(['payout.settled']);
      expect(rows.filter((r) => record.expiring.has(r.id) && r.status !== 'expired')).toEqual([]);

      // Every payout settled on chain, once: its transfer confirmed, the recipients hold the sums.
      const payouts = await runtime.db
        .selectFrom('payouts')
        .leftJoin('transfers', 'transfers.id', 'payouts.transfer_id')
        .select([
          'payouts.id',
          'payouts.status',
          'payouts.amount_minor',
          'payouts.to_address',
          'payouts.tx_hash',
          'transfers.status as transfer_status',
        ])
        .where('payouts.account_id', 'in', accounts)
        .execute();
      expect(payouts).toHaveLength(payoutIds.length);
      expect(payouts.filter((p) => p.status !== 'settled' || p.transfer_status !== 'confirmed' || !p.tx_hash)).toEqual(
        [],
      );
      const payoutTransfers = await runtime.db
        .selectFrom('transfers')
        .select('source_id')
        .where('kind', '=', 'payout')
        .where('account_id', 'in', accounts)
        .execute();
      expect(payoutTransfers).toHaveLength(payoutIds.length);
      for (const to of payoutTargets) {
        const expected = payouts
          .filter((p) => p.to_address.toLowerCase() === to.toLowerCase())
          .reduce((sum, p) => sum + p.amount_minor, 0n);
        expect(await readTokenBalance(chain, to), to).toBe(expected);
      }

      // Each merchant's custodial balance = funded + payments settled to the balance − payouts.
      for (const m of merchants) {
        const settledToBalance = paidRows
          .filter((p) => p.account_id === m.accountId && p.payout_address === null)
          .reduce((sum, p) => sum + p.settlement_minor, 0n);
        const paidOut = payouts
          .filter((p) => record.payouts.some((r) => r.id === p.id && r.account === m.accountId))
          .reduce((sum, p) => sum + p.amount_minor, 0n);
        const expected = (record.fundedMinor.get(m.accountId) ?? 0n) + settledToBalance - paidOut;
        expect(
          await getLedgerBalance(runtime.db, ledgerAccount.merchant(m.accountId, false, 'USDC')),
          m.accountId,
        ).toBe(expected);
      }

      // Every event with a webhook_url was delivered and seen, verified, by the receiver.
      const hooked = events.filter((e) => e.webhook_url !== null);
      const deliveries = await runtime.db
        .selectFrom('event_deliveries')
        .select(['event_id', 'status', 'attempt_count'])
        .where('account_id', 'in', accounts)
        .execute();
      expect(deliveries).toHaveLength(hooked.length);
      expect(deliveries.filter((d) => d.status !== 'delivered')).toEqual([]);
      expect(hooked.filter((e) => !receiver.acknowledged.has(e.id)).map((e) => e.id)).toEqual([]);
      expect(receiver.rejected).toEqual([]);
      const known = new Set(hooked.map((e) => e.id));
      expect([...receiver.arrivals.keys()].filter((id) => !known.has(id))).toEqual([]);
      // The events refused at their first arrival came again and were delivered then.
      for (const id of receiver.refusedFirst) expect(receiver.arrivals.get(id), id).toBeGreaterThanOrEqual(2);
      const attemptsById = new Map(deliveries.map((d) => [d.event_id, d.attempt_count]));
      for (const id of receiver.refusedFirst) expect(attemptsById.get(id), id).toBeGreaterThanOrEqual(2);

      // The rate limit is one budget across both instances: in a burst of 2 × the limit, split
      // evenly over the two and inside one window, exactly `limit` pass (each instance alone
      // would have let its whole half through with a store of its own).
      const clean = bursts.filter((b) => b.oneWindow);
      expect(clean.length).toBeGreaterThan(0);
      for (const b of clean) {
        expect(b.allowed.reduce((s, n) => s + n, 0)).toBe(RATE_LIMIT);
        expect(b.limited.reduce((s, n) => s + n, 0)).toBe(RATE_LIMIT);
      }
      for (const b of bursts) expect(b.retryAfterOnEvery429).toBe(true);

      const batches = await runtime.db
        .selectFrom('settlement_batches')
        .select(['status', sql<number>`count(*)::int`.as('n')])
        .groupBy('status')
        .execute();
      const arrivals = [...receiver.arrivals.values()].reduce((s, n) => s + n, 0);
      const lines = [
        `multi-instance: ${LOAD_SECONDS} s of load, drained in ${Math.round((drained - loadEnded) / 1000)} s, ` +
          `${Math.round((Date.now() - started) / 1000)} s in all`,
        `  payments: ${record.created} created (${record.idempotentPairs} as idempotent pairs on both instances, ` +
          `${record.crossReads} read back on the other), ${paidIds.length} paid and settled ` +
          `(${paidRows.filter((p) => p.payout_address).length} on chain, ${paidRows.filter((p) => !p.payout_address).length} to balance; ` +
          `${record.doublePays} double pays on both instances, ${record.declinedFirst} declined first), ${expiringIds.length} expired`,
        `  payouts: ${payoutIds.length} settled; batches ${JSON.stringify(batches)}`,
        `  webhooks: ${hooked.length} events delivered, ${arrivals} arrivals (${receiver.refusedFirst.size} refused once ` +
          `and retried, ${arrivals - hooked.length - receiver.refusedFirst.size} duplicates)`,
        ...apis.map((api, k) => {
          const s = pool.stats[k]!;
          const statuses = [...s.statuses].sort(([x], [y]) => x - y).map(([code, n]) => `${code}×${n}`);
          return `  ${api.name}: ${s.requests} requests (${statuses.join(' ')}); load 429s ${s.load429}; burst ${s.burstAllowed} allowed / ${s.burst429} 429`;
        }),
        `  bursts (limit ${RATE_LIMIT}/s, ${RATE_LIMIT} per instance): ` +
          bursts
            .map(
              (b) =>
                `[${b.allowed.join('+')} ok, ${b.limited.join('+')} 429, ${b.ms} ms${b.oneWindow ? '' : ', two windows'}]`,
            )
            .join(' '),
        `  warnings: ${instances.map((i) => `${i.name} ${warningSummary(i)}`).join('; ')}`,
      ];
      console.log(lines.join('\n'));
    },
    LOAD_MS + DRAIN_MS + 120_000,
  );
});
