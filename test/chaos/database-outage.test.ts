// Chaos: Postgres stops for ~6 s under load, then starts again (issue 17, "database outages"). One
// API process and one worker process (`plainpay serve --role api|worker`, real processes) run on a
// private Postgres cluster of this file's own, while clients create, read and pay payments. Judged:
//   - no process exits (a restart ends every session with 57P01; an 'error' event nobody listened
//     to used to kill both);
//   - every answer is a success or the 503 error object (`api_error`, `unavailable`, Retry-After),
//     never a 500, and while the database is down every answer is that 503; /readyz says 503;
//   - after the start: /readyz 200, requests succeed, the workers resume by themselves (payments
//     paid during and after the outage settle), without restarting anything;
//   - no money is half-done or doubled: a create cut off by the outage is wholly there or absent,
//     its retry with the same Idempotency-Key gives one payment; every paid payment settles once.
//   - the outage is logged once per process, not once per client or per request.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../src/accounts/create-account.ts';
import { createLogger } from '../../src/core/logger.ts';
import { connectDatabase, type DatabaseHandle } from '../../src/db/connect.ts';
import { checkLedgerInvariants } from '../../src/ledger/ledger.ts';
import { createRuntime } from '../../src/runtime.ts';
import { testConfig } from '../support/harness.ts';
import { freePort } from './support/free-port.ts';
import { createPostgresCluster, type PostgresCluster, postgresBinDir } from './support/postgres-cluster.ts';
import { type ServiceProcess, spawnService } from './support/service-process.ts';

const OUTAGE_MS = 6_000;
const CLIENTS = 6;

const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The service's processes: a wait gives up at once when one of them has exited. */
const processes: ServiceProcess[] = [];

/** Polls `check` until it returns a value other than undefined; a generous ceiling, not a timing assertion. */
async function waitFor<T>(what: string, check: () => Promise<T | undefined>, ceilingMs = 45_000): Promise<T> {
  const deadline = Date.now() + ceilingMs;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value !== undefined) return value;
    const dead = processes.find((service) => service.hasExited());
    if (dead) throw new Error(`while waiting for ${what}, the ${dead.role} process exited:\n${dead.stderr.join('\n')}`);
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await sleep(200);
  }
}

interface Answer {
  op: 'create' | 'read' | 'list' | 'pay' | 'readyz';
  status: number;
  body: unknown;
  retryAfter: string | null;
  startedAt: number;
  endedAt: number;
}

const skip = postgresBinDir() === undefined;
if (skip) console.warn('database-outage chaos test skipped: no Postgres server binaries under /usr/lib/postgresql');

describe.skipIf(skip)('Postgres stops for a few seconds under load, then starts again', () => {
  it('no process exits, answers are 503 + Retry-After while it is down, and everything resumes with no money doubled', async () => {
    // --- a private cluster, migrated, with one merchant ---------------------------------------
    const cluster: PostgresCluster = await createPostgresCluster();
    cleanups.push(() => cluster.destroy());
    await cluster.start();
    const admin = new pg.Client({ connectionString: cluster.url() });
    await admin.connect();
    await admin.query('create database plainpay');
    await admin.end();
    const url = cluster.url('plainpay');

    const dataDir = mkdtempSync(join(tmpdir(), 'plainpay-chaos-db-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const config = testConfig({ DATABASE_URL: url, PLAINPAY_DATA_DIR: dataDir });
    let handle: DatabaseHandle = await connectDatabase({ kind: 'postgres', url }, { poolSize: 2 });
    const setup = await createRuntime(config, { database: handle, logger: createLogger('silent') });
    const merchant = await createAccount(setup.db, setup.secretBox, { name: 'Chaos merchant', livemode: false });
    await setup.close();
    // Closed before the outage: only the service's processes face it.
    await handle.close();

    // --- the service: one API process, one worker process ----------------------------------------
    const port = await freePort();
    const env = {
      DATABASE_URL: url,
      PORT: String(port),
      HOST: '127.0.0.1',
      PLAINPAY_MASTER_KEY: config.masterKey!,
      PLAINPAY_DATA_DIR: dataDir,
      DEMO_ACCOUNT: '0',
      LOG_LEVEL: 'info',
      RATE_LIMIT_PER_SECOND: '100000',
    };
    processes.push(spawnService('api', env), spawnService('worker', env));
    for (const service of processes) cleanups.push(() => service.stop());
    await Promise.all(processes.map((service) => service.running));
    const [api, worker] = processes as [ServiceProcess, ServiceProcess];

    // --- the load ------------------------------------------------------------------------------------
    const base = `http://127.0.0.1:${port}`;
    const auth = { authorization: `Bearer ${merchant.api_key}` };
    const answers: Answer[] = [];
    const transportFailures: string[] = [];
    const created: string[] = [];
    const paid = new Set<string>();
    /** Idempotency-Key → the last status its create got. */
    const creates = new Map<string, number>();
    const createBody = (key: string) => ({
      amount: 5000,
      currency: 'NGN',
      redirect_url: 'https://shop.example/thanks',
      metadata: { attempt: key },
    });

    async function call(op: Answer['op'], method: string, path: string, body?: unknown, headers = {}) {
      const startedAt = Date.now();
      try {
        const res = await fetch(`${base}${path}`, {
          method,
          headers: {
            ...(op === 'readyz' ? {} : auth),
            ...(body ? { 'content-type': 'application/json' } : {}),
            ...headers,
          },
          body: body ? JSON.stringify(body) : undefined,
          signal: AbortSignal.timeout(30_000),
        });
        const text = await res.text();
        const answer: Answer = {
          op,
          status: res.status,
          body: text ? JSON.parse(text) : undefined,
          retryAfter: res.headers.get('retry-after'),
          startedAt,
          endedAt: Date.now(),
        };
        answers.push(answer);
        return answer;
      } catch (error) {
        transportFailures.push(`${op} ${path}: ${(error as Error).message} ${String((error as Error).cause ?? '')}`);
        return undefined;
      }
    }

    async function create(key: string): Promise<Answer | undefined> {
      const answer = await call('create', 'POST', '/v1/payments', createBody(key), { 'idempotency-key': key });
      if (answer) creates.set(key, answer.status);
      if (answer?.status === 200) {
        const id = (answer.body as { id: string }).id;
        if (!created.includes(id)) created.push(id);
      }
      return answer;
    }

    async function pay(id: string): Promise<void> {
      const answer = await call('pay', 'POST', `/v1/test_helpers/payments/${id}/pay`, { outcome: 'succeeded' });
      // 409: it was paid already (an earlier pay committed though its answer was lost).
      if (answer?.status === 200 || answer?.status === 409) paid.add(id);
    }

    let loadRunning = true;
    let sequence = 0;
    const client = async (n: number): Promise<void> => {
      while (loadRunning) {
        const roll = Math.random();
        const unpaid = created.filter((id) => !paid.has(id));
        if (roll < 0.4 || created.length === 0) await create(`chaos-${n}-${sequence++}`);
        else if (roll < 0.6)
          await call('read', 'GET', `/v1/payments/${created[Math.floor(Math.random() * created.length)]}`);
        else if (roll < 0.7) await call('list', 'GET', '/v1/payments?limit=5');
        else if (unpaid.length > 0) await pay(unpaid[Math.floor(Math.random() * unpaid.length)]!);
        await sleep(15);
      }
    };
    const load = Promise.all(Array.from({ length: CLIENTS }, (_, n) => client(n)));

    await waitFor('a few payments before the outage', async () => (paid.size >= 3 ? true : undefined));

    // --- the outage ----------------------------------------------------------------------------------
    await cluster.stop();
    const downAt = Date.now();
    const readyDown = await waitFor('/readyz to say not ready', async () => {
      const answer = await call('readyz', 'GET', '/readyz');
      return answer?.status === 503 ? answer : undefined;
    });
    await sleep(OUTAGE_MS);
    const upAt = Date.now();
    await cluster.start();
    const readyUp = await waitFor('/readyz to say ready', async () => {
      const answer = await call('readyz', 'GET', '/readyz');
      return answer?.status === 200 ? answer : undefined;
    });
    const recoveredAt = Date.now();
    // The load goes on after the return until creates and pays succeed again.
    await waitFor('creates and pays to succeed after the outage', async () =>
      answers.filter((a) => a.startedAt > recoveredAt && a.status === 200 && (a.op === 'create' || a.op === 'pay'))
        .length >= 10
        ? true
        : undefined,
    );
    loadRunning = false;
    await load;

    // --- judged: the processes lived, and every answer was a success or the documented 503 ---------
    expect(api.hasExited(), `API exited:\n${api.stderr.join('\n')}`).toBe(false);
    expect(worker.hasExited(), `worker exited:\n${worker.stderr.join('\n')}`).toBe(false);
    for (const service of processes) {
      expect(service.stderr.filter((line) => /Unhandled|uncaught/i.test(line))).toEqual([]);
    }
    expect(transportFailures).toEqual([]);

    const failures = answers.filter((a) => a.status >= 500);
    expect(failures.length).toBeGreaterThan(0);
    expect(failures.filter((a) => a.status !== 503)).toEqual([]);
    for (const answer of failures) {
      expect(answer.body).toMatchObject({
        error: { type: 'api_error', code: 'unavailable', message: expect.any(String) },
      });
      expect(answer.retryAfter).toMatch(/^\d+$/);
    }
    // Other than 503, only what the load can provoke: 200, and 409 for a payment already paid.
    expect([...new Set(answers.map((a) => a.status))].filter((s) => s !== 200 && s !== 503 && s !== 409)).toEqual([]);

    // While it was down (a request sent after the stop completed, answered before the start began),
    // every answer was the 503.
    const whileDown = answers.filter((a) => a.startedAt > downAt && a.endedAt < upAt);
    // Requests really met the outage (a refused connect answers at once, so each client gets
    // many in; one each is the floor even on a starved machine).
    expect(whileDown.length).toBeGreaterThanOrEqual(CLIENTS);
    expect(whileDown.filter((a) => a.status !== 503)).toEqual([]);
    expect(readyDown.body).toMatchObject({ error: { type: 'api_error', code: 'unavailable' } });
    expect(readyDown.retryAfter).toMatch(/^\d+$/);
    expect(readyUp.body).toEqual({ ok: true, database: 'postgres' });

    // --- no half-done or doubled money -------------------------------------------------------------
    handle = await connectDatabase({ kind: 'postgres', url }, { poolSize: 2 });
    cleanups.push(() => handle.close());
    const db = handle.db;
    const attemptsStored = async () => {
      const rows = await db
        .selectFrom('payments')
        .select(['id', 'metadata'])
        .where('account_id', '=', merchant.account)
        .execute();
      const byKey = new Map<string, string[]>();
      for (const row of rows) {
        const key = (row.metadata as { attempt?: string } | null)?.attempt;
        if (key) byKey.set(key, [...(byKey.get(key) ?? []), row.id]);
      }
      return byKey;
    };
    const unanswered = [...creates].filter(([, status]) => status !== 200).map(([key]) => key);
    expect(unanswered.length).toBeGreaterThan(0);
    const before = await attemptsStored();
    const keysStored = new Set(
      (
        await db
          .selectFrom('idempotency_keys')
          .select('key')
          .where('account_id', '=', merchant.account)
          .where('key', 'in', unanswered)
          .execute()
      ).map((r) => r.key),
    );
    for (const key of unanswered) {
      // A create that got the 503 is wholly there (payment and its idempotency record) or absent.
      const payments = before.get(key) ?? [];
      expect(payments.length, key).toBeLessThanOrEqual(1);
      expect(keysStored.has(key), key).toBe(payments.length === 1);
    }
    // Each is retried with its Idempotency-Key: one payment, the first one if it had committed.
    for (const key of unanswered) {
      const retry = await create(key);
      expect(retry?.status, key).toBe(200);
      const id = (retry!.body as { id: string }).id;
      if (before.get(key)) expect(id).toBe(before.get(key)![0]);
    }
    const after = await attemptsStored();
    for (const key of creates.keys()) expect(after.get(key)?.length, key).toBe(1);

    // Pay what is unpaid, then the worker (never restarted) settles everything paid.
    for (const id of created.filter((id) => !paid.has(id))) await pay(id);
    expect(created.filter((id) => !paid.has(id))).toEqual([]);
    const paidAfterOutage = answers.filter((a) => a.op === 'pay' && a.status === 200 && a.startedAt > upAt).length;
    expect(paidAfterOutage).toBeGreaterThan(0);
    await waitFor('every paid payment to settle', async () => {
      const open = await db
        .selectFrom('payments')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('account_id', '=', merchant.account)
        .where('status', '!=', 'settled')
        .executeTakeFirstOrThrow();
      return Number(open.n) === 0 ? true : undefined;
    });
    const settledEvents = await db
      .selectFrom('events')
      .select(['object_id', (eb) => eb.fn.countAll<string>().as('n')])
      .where('account_id', '=', merchant.account)
      .where('type', '=', 'payment.settled')
      .groupBy('object_id')
      .execute();
    expect(settledEvents.map((e) => e.object_id).sort()).toEqual([...created].sort());
    expect(settledEvents.filter((e) => Number(e.n) !== 1)).toEqual([]);
    const received = await db
      .selectFrom('ledger_postings')
      .select(['reference', (eb) => eb.fn.countAll<string>().as('n')])
      .where('kind', '=', 'payment_received')
      .where('reference', 'in', created)
      .groupBy('reference')
      .execute();
    expect(received).toHaveLength(created.length);
    expect(received.filter((r) => Number(r.n) !== 1)).toEqual([]);
    const ledger = await checkLedgerInvariants(db);
    expect(ledger.problems).toEqual([]);

    // --- logged once per outage, not per client, request or tick -----------------------------------
    const lines = (service: ServiceProcess, pattern: RegExp) => service.logs.filter((l) => pattern.test(l.msg));
    expect(lines(api, /^database connection lost/)).toHaveLength(1);
    expect(lines(api, /^database connection lost/)[0]!.level).toBe(40);
    expect(lines(api, /^database reachable again/)).toHaveLength(1);
    expect(lines(worker, /^database connection lost/)).toHaveLength(1);
    for (const job of ['expiry', 'payer rails', 'webhook-delivery']) {
      expect(lines(worker, new RegExp(`^${job} job paused`)).length, job).toBeLessThanOrEqual(1);
    }
    expect(api.logs.filter((l) => l.level >= 50)).toEqual([]);

    console.info(
      `database outage: ${answers.length} answers (${failures.length} × 503, ${whileDown.length} while down), ` +
        `${unanswered.length} creates retried, ${created.length} payments settled once each`,
    );
  });
});
