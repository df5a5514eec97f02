// HTTP throughput and latency (issue 10): the real service, `plainpay serve --role api` on a scratch
// Postgres database, against bare fastify servers measured in the same run on the same machine.
//
// Setup, identical for the service and its baseline: each server runs in its own child process;
// autocannon runs in this process (50 connections), so the load generator, the servers and Postgres
// share the machine's cores. The servers compared are all started first, warmed up, then loaded in
// turns (support.ts LOAD) so that others' work on the machine weighs on each alike. The service logs
// at LOG_LEVEL=warn (its per-request line is at info, so it is not written); the baselines do not
// log. The service's rate limiter runs (in-process, as in the default setup) with a budget no run
// reaches: the benchmark measures the cost of counting, not of refusing.

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Request } from 'autocannon';
import { sql } from 'kysely';
import { createAccount } from '../src/accounts/create-account.ts';
import { createSecretBox } from '../src/core/secret-box.ts';
import { connectDatabase } from '../src/db/connect.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import type { BenchResult, BenchRow } from './run.ts';
import {
  compareLoad,
  freePort,
  HELLO_SERVER,
  LOAD,
  type LoadResult,
  machineNote,
  type Started,
  setUpDatabase,
  spawnEmbeddedServe,
  startInline,
  startPlainpay,
  waitReady,
} from './support.ts';

/** Issue 15 targets: throughput as a share of the bare baseline's (and p99 on the embedded database). */
const PING_TARGET = 0.75;
const PAYMENTS_TARGET = 0.8;
const EMBEDDED_PAYMENTS_TARGET = 0.5;
const EMBEDDED_P99_TARGET_MS = 200;
/** The embedded database is one session: measured at the connections of a small shop, not 50. */
const EMBEDDED_CONNECTIONS = 8;

/**
 * The POST baseline: fastify parses the JSON body and one insert (autocommit) writes a row with
 * the payment's columns into a copy of the payments table (same columns, checks, indexes and the
 * foreign key to accounts), returning the row. No auth, no validation, no idempotency, no quote.
 * `open` connects to the database as `db`, whose `query(text, values)` answers `{ rows }`.
 */
function baselineInsertServer(open: string): string {
  return `
import { randomBytes } from 'node:crypto';
import Fastify from 'fastify';
${open}
const account = process.env.BENCH_ACCOUNT;
const columns = ['id', 'account_id', 'livemode', 'status', 'amount_minor', 'currency', 'redirect_url', 'reference',
  'merchant_name', 'description', 'webhook_url', 'payout_address', 'metadata', 'creation_hash', 'expires_at',
  'quote_rate', 'quote_source', 'fee_bps', 'settlement_asset', 'gross_settlement_minor', 'fee_minor',
  'settlement_minor', 'created_at', 'updated_at'];
const text = 'insert into bench_baseline (' + columns.join(', ') + ') values (' +
  columns.map((_, i) => '$' + (i + 1)).join(', ') + ') returning *';
const app = Fastify({ logger: false });
app.get('/healthz', async () => ({ ok: true }));
app.post('/v1/payments', async (request) => {
  const b = request.body;
  const now = new Date();
  const { rows } = await db.query(text, ['pay_' + randomBytes(12).toString('hex'), account, false, 'pending',
    Math.round(b.amount * 100), b.currency, b.redirect_url, b.reference ?? null, null, b.description ?? null, null,
    null, JSON.stringify(b.metadata ?? null), 'hash', new Date(now.getTime() + 3_600_000), '0.00065', 'sandbox',
    100, 'USDC', 3250000, 32500, 3217500, now, now]);
  return rows[0];
});
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
`;
}

/** On Postgres, with a pool of 10 like the service's. */
const INSERT_SERVER = baselineInsertServer(`import pg from 'pg';
const db = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });`);

/**
 * The embedded baseline: the same route and insert on PGlite, on a data dir migrated like the
 * service's with bench_baseline added (prepared by the bench before the server starts).
 */
const PGLITE_INSERT_SERVER = baselineInsertServer(`import { PGlite } from '@electric-sql/pglite';
const db = await PGlite.create({ dataDir: process.env.BENCH_DATA_DIR });`);

const PAYMENT_BODY = JSON.stringify({
  amount: 5000,
  currency: 'NGN',
  redirect_url: 'https://shop.example/thanks',
  description: 'Order 1042',
  metadata: { order: 'order_1042' },
});

/** Starts the servers one by one, loads them in turns, and stops them all whatever happens. */
async function measure(
  starts: Array<() => Promise<Started>>,
  requests: Request[][],
  connections?: number,
): Promise<LoadResult[]> {
  const started: Started[] = [];
  try {
    for (const start of starts) started.push(await start());
    return await compareLoad(started.map((s, i) => ({ url: s.url, requests: requests[i]!, connections })));
  } finally {
    for (const s of started) await s.server.stop();
  }
}

function latencyRows(label: string, result: LoadResult, against?: { p50: BenchRow; p99: BenchRow }): BenchRow[] {
  const p50: BenchRow = { label: `${label} p50 latency`, value: result.p50, unit: 'ms' };
  const p99: BenchRow = { label: `${label} p99 latency`, value: result.p99, unit: 'ms' };
  if (against) {
    p50.label += ` (× ${against.p50.label})`;
    p50.against = against.p50;
    p99.label += ` (× ${against.p99.label})`;
    p99.against = against.p99;
  }
  return [p50, p99];
}

const MEASURED_S = LOAD.rounds * LOAD.roundS;

function loadNote(label: string, r: LoadResult): string {
  return `${label}: ${r.total.toLocaleString('en-US')} requests in ${MEASURED_S} s, ${r.failed} failed or non-2xx`;
}

const SETUP_NOTE = `setup: each server in a child process, autocannon in the bench process (${LOAD.connections} connections, ${LOAD.warmupS} s warm-up each, then ${LOAD.rounds} turns of ${LOAD.roundS} s each, alternating), Postgres local, all on the same cores`;

export async function pingBench(): Promise<BenchResult> {
  const machine = machineNote();
  const setup = await setUpDatabase('ping');
  try {
    const pingRequests: Request[] = [
      { method: 'GET', path: '/v1/ping', headers: { authorization: `Bearer ${setup.apiKey}` } },
    ];
    const [hello, ping, logged] = (await measure(
      [
        () => startInline(HELLO_SERVER, '/'),
        () => startPlainpay(setup, 'api'),
        // The production default writes one line per request: measured too, to show what it costs.
        () => startPlainpay(setup, 'api', { LOG_LEVEL: 'info' }),
      ],
      [[{ method: 'GET', path: '/' }], pingRequests, pingRequests],
    )) as [LoadResult, LoadResult, LoadResult];
    const baseline: BenchRow = { label: 'fastify hello-world', value: hello.rps, unit: 'req/s' };
    const [helloP50, helloP99] = latencyRows('hello-world', hello);
    const ratio = ping.rps / hello.rps;
    return {
      title: 'GET /v1/ping (bearer key: hash lookup, rate limit, scope check) vs a bare fastify hello-world',
      baseline,
      rows: [
        helloP50!,
        helloP99!,
        { label: 'GET /v1/ping', value: ping.rps, unit: 'req/s', ratio: true },
        ...latencyRows('GET /v1/ping', ping, { p50: helloP50!, p99: helloP99! }),
        { label: 'GET /v1/ping, LOG_LEVEL=info (a line per request)', value: logged.rps, unit: 'req/s', ratio: true },
      ],
      notes: [
        machine,
        SETUP_NOTE,
        'logging: plainpay at LOG_LEVEL=warn (no per-request line; the target row), then at info (to a file); the baseline without a logger',
        loadNote('hello-world', hello),
        loadNote('GET /v1/ping', ping),
        loadNote('GET /v1/ping at info', logged),
      ],
      checks: [
        {
          label: 'every request answered 2xx',
          pass: hello.failed === 0 && ping.failed === 0 && logged.failed === 0,
        },
        {
          label: `GET /v1/ping throughput ≥ ${PING_TARGET * 100}% of hello-world (${(ratio * 100).toFixed(1)}%)`,
          pass: ratio >= PING_TARGET,
        },
      ],
    };
  } finally {
    await setup.database.drop();
  }
}

export async function paymentsBench(): Promise<BenchResult> {
  const machine = machineNote();
  const setup = await setUpDatabase('payments');
  try {
    const admin = await connectDatabase({ kind: 'postgres', url: setup.database.url });
    try {
      await sql`create table bench_baseline (like payments including all)`.execute(admin.db);
      await sql`alter table bench_baseline add foreign key (account_id) references accounts (id)`.execute(admin.db);
      // The payments trigger that fills in the schedule (migration 020) is not copied: its default.
      await sql`alter table bench_baseline alter column settlement_schedule set default 'instant'`.execute(admin.db);
    } finally {
      await admin.close();
    }
    const headers = { authorization: `Bearer ${setup.apiKey}`, 'content-type': 'application/json' };
    // Every request carries a new Idempotency-Key (the baseline gets the same requests).
    let sequence = 0;
    const prefix = randomBytes(4).toString('hex');
    const requests: Request[] = [
      {
        method: 'POST',
        path: '/v1/payments',
        headers,
        body: PAYMENT_BODY,
        setupRequest(request) {
          sequence += 1;
          return { ...request, headers: { ...request.headers, 'idempotency-key': `bench-${prefix}-${sequence}` } };
        },
      },
    ];
    // Without the header the pipeline skips the idempotency claim and the stored response: what
    // those two statements cost.
    const withoutKeyRequests: Request[] = [{ method: 'POST', path: '/v1/payments', headers, body: PAYMENT_BODY }];

    const [bare, service, withoutKey] = (await measure(
      [
        () =>
          startInline(INSERT_SERVER, '/healthz', { DATABASE_URL: setup.database.url, BENCH_ACCOUNT: setup.accountId }),
        () => startPlainpay(setup, 'api'),
        () => startPlainpay(setup, 'api'),
      ],
      [requests, requests, withoutKeyRequests],
    )) as [LoadResult, LoadResult, LoadResult];

    const embedded = await measureEmbedded(requests);

    const baseline: BenchRow = { label: 'fastify + one pg insert', value: bare.rps, unit: 'req/s' };
    const [bareP50, bareP99] = latencyRows('bare insert', bare);
    const ratio = service.rps / bare.rps;
    const pgliteBare: BenchRow = {
      label: `fastify + one PGlite insert (${EMBEDDED_CONNECTIONS} connections)`,
      value: embedded.bare.rps,
      unit: 'req/s',
    };
    const [pgliteP50, pgliteP99] = latencyRows('PGlite insert', embedded.bare);
    const embeddedRatio = embedded.service.rps / embedded.bare.rps;
    return {
      title:
        'POST /v1/payments (auth, rate limit, Idempotency-Key, validation, quote, insert) vs a bare fastify route with one pg insert; the same on the embedded database (PGlite)',
      baseline,
      rows: [
        bareP50!,
        bareP99!,
        { label: 'POST /v1/payments', value: service.rps, unit: 'req/s', ratio: true },
        ...latencyRows('POST /v1/payments', service, { p50: bareP50!, p99: bareP99! }),
        { label: 'POST /v1/payments without Idempotency-Key', value: withoutKey.rps, unit: 'req/s', ratio: true },
        pgliteBare,
        pgliteP50!,
        pgliteP99!,
        {
          label: `POST /v1/payments, embedded (× ${pgliteBare.label})`,
          value: embedded.service.rps,
          unit: 'req/s',
          against: pgliteBare,
        },
        ...latencyRows('POST /v1/payments, embedded', embedded.service, { p50: pgliteP50!, p99: pgliteP99! }),
      ],
      notes: [
        machine,
        SETUP_NOTE,
        'logging: plainpay at LOG_LEVEL=warn (no per-request line), the baseline without a logger; both pools have 10 connections',
        loadNote('bare insert', bare),
        loadNote('POST /v1/payments', service),
        loadNote('POST /v1/payments without Idempotency-Key', withoutKey),
        `embedded: plainpay serve --role api on PGlite (no DATABASE_URL) and the PGlite baseline, each on its own migrated data dir, loaded in turns like the others with ${EMBEDDED_CONNECTIONS} connections`,
        loadNote('PGlite insert', embedded.bare),
        loadNote('POST /v1/payments, embedded', embedded.service),
      ],
      checks: [
        {
          label: 'every request answered 2xx',
          pass:
            bare.failed === 0 &&
            service.failed === 0 &&
            withoutKey.failed === 0 &&
            embedded.bare.failed === 0 &&
            embedded.service.failed === 0,
        },
        {
          label: `POST /v1/payments throughput ≥ ${PAYMENTS_TARGET * 100}% of the bare insert (${(ratio * 100).toFixed(1)}%)`,
          pass: ratio >= PAYMENTS_TARGET,
        },
        {
          label: `embedded: POST /v1/payments throughput ≥ ${EMBEDDED_PAYMENTS_TARGET * 100}% of the bare PGlite insert (${(embeddedRatio * 100).toFixed(1)}%)`,
          pass: embeddedRatio >= EMBEDDED_PAYMENTS_TARGET,
        },
        {
          label: `embedded: POST /v1/payments p99 < ${EMBEDDED_P99_TARGET_MS} ms at ${EMBEDDED_CONNECTIONS} connections (${embedded.service.p99} ms)`,
          pass: embedded.service.p99 < EMBEDDED_P99_TARGET_MS,
        },
      ],
    };
  } finally {
    await setup.database.drop();
  }
}

/**
 * The embedded variant: `plainpay serve --role api` on PGlite (the default without DATABASE_URL)
 * against the same bare route with one PGlite insert, each on its own data dir prepared here
 * (migrated, one account; the baseline's with bench_baseline), loaded in turns with
 * EMBEDDED_CONNECTIONS connections. PGlite is one session per data dir, so the dirs are separate.
 */
async function measureEmbedded(requests: Request[]): Promise<{ bare: LoadResult; service: LoadResult }> {
  const root = mkdtempSync(join(tmpdir(), 'plainpay-bench-embedded-'));
  try {
    const masterKey = randomBytes(32).toString('base64');
    const prepare = async (dir: string, baseline: boolean): Promise<{ accountId: string; apiKey: string }> => {
      const handle = await connectDatabase({ kind: 'pglite', dataDir: dir });
      try {
        await migrateToLatest(handle.db);
        const account = await createAccount(handle.db, createSecretBox(Buffer.from(masterKey, 'base64')), {
          name: 'Bench merchant',
          livemode: false,
        });
        if (baseline) {
          await sql`create table bench_baseline (like payments including all)`.execute(handle.db);
          await sql`alter table bench_baseline add foreign key (account_id) references accounts (id)`.execute(
            handle.db,
          );
          await sql`alter table bench_baseline alter column settlement_schedule set default 'instant'`.execute(
            handle.db,
          );
        }
        return { accountId: account.account, apiKey: account.api_key };
      } finally {
        await handle.close();
      }
    };
    const serviceDir = join(root, 'service');
    const bareDir = join(root, 'bare');
    // plainpay keeps its database in <PLAINPAY_DATA_DIR>/pgdata (config.ts).
    const service = await prepare(join(serviceDir, 'pgdata'), false);
    const bare = await prepare(bareDir, true);
    const serviceRequests = requests.map((r) => ({
      ...r,
      headers: { ...r.headers, authorization: `Bearer ${service.apiKey}` },
    }));
    const [bareResult, serviceResult] = (await measure(
      [
        () => startInline(PGLITE_INSERT_SERVER, '/healthz', { BENCH_DATA_DIR: bareDir, BENCH_ACCOUNT: bare.accountId }),
        () => startEmbedded(serviceDir, masterKey),
      ],
      [requests, serviceRequests],
      EMBEDDED_CONNECTIONS,
    )) as [LoadResult, LoadResult];
    return { bare: bareResult, service: serviceResult };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** `plainpay serve --role api` on the embedded database in `dataDir`, ready when /readyz answers 200. */
async function startEmbedded(dataDir: string, masterKey: string): Promise<Started> {
  const [port, checkoutPort] = [await freePort(), await freePort()];
  const server = spawnEmbeddedServe(dataDir, { port, checkoutPort }, ['--role', 'api'], {
    PLAINPAY_MASTER_KEY: masterKey,
    DEMO_ACCOUNT: '0',
    RATE_LIMIT_PER_SECOND: '1000000',
  });
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitReady(`${url}/readyz`, server);
  } catch (error) {
    await server.stop();
    throw error;
  }
  return { url, server };
}
