// The checkout page and the public status read (issue 15, items 3 and 6):
//
// - bytes a phone transfers for the hosted page on a first visit (the page, its stylesheet and its
//   script: status lines, headers and bodies, each on its own connection), with Chrome-on-Android's
//   Accept-Encoding, with gzip only, and uncompressed; from `plainpay serve --role checkout`;
// - GET /checkout/:id (the public status read) on `plainpay serve --role api` against a bare fastify
//   route doing one pg select by primary key on the same table, measured in the same run, in turns
//   (bench/support.ts compareLoad, the method of bench/http.ts).

import { request } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Request } from 'autocannon';
import type { BenchResult, BenchRow } from './run.ts';
import {
  CLI,
  childEnv,
  compareLoad,
  freePort,
  LOAD,
  type LoadResult,
  machineNote,
  type Started,
  setUpDatabase,
  spawnServer,
  startInline,
  startPlainpay,
  waitReady,
} from './support.ts';

/** Issue 15 targets. */
const STATUS_TARGET = 0.9;
const PAGE_BUDGET_BYTES = 5 * 1024;
/** What the page weighed before issue 15 (page, stylesheet and script, uncompressed), in KB. */
const OLD_PAGE_KB = 9.3;

/** Chrome on Android over HTTPS; Chrome over plain HTTP (no brotli); a client that asks for nothing. */
const ENCODINGS = { phone: 'gzip, deflate, br, zstd', gzip: 'gzip, deflate', none: 'identity' } as const;

/** The baseline: fastify and one select by primary key on the payments table, the row as JSON. */
const SELECT_SERVER = `
import Fastify from 'fastify';
import pg from 'pg';
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const app = Fastify({ logger: false });
app.get('/healthz', async () => ({ ok: true }));
app.get('/checkout/:id', async (request, reply) => {
  const { rows } = await pool.query('select * from payments where id = $1', [request.params.id]);
  if (rows.length === 0) return reply.code(404).send({ error: 'not_found' });
  return rows[0];
});
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
`;

const PAYMENTS = 20;

/** Bytes received for one GET on a connection of its own (status line, headers, body). */
function wireBytes(url: string, acceptEncoding: string): Promise<{ bytes: number; body: Buffer; status: number }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false, headers: { 'accept-encoding': acceptEncoding } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const bytes = res.socket.bytesRead;
        res.socket.destroy();
        resolve({ bytes, body: Buffer.concat(chunks), status: res.statusCode ?? 0 });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** A first visit: the page, then the stylesheet and the script it names (read from the uncompressed page). */
async function firstVisit(checkoutUrl: string, acceptEncoding: string): Promise<number> {
  const plain = (await wireBytes(checkoutUrl, 'identity')).body.toString('utf8');
  const assets = [...plain.matchAll(/(?:href|src)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);
  if (assets.length !== 2)
    throw new Error(`expected a stylesheet and a script on the page, found ${assets.join(', ')}`);
  const origin = new URL(checkoutUrl).origin;
  let total = 0;
  for (const url of [checkoutUrl, ...assets.map((a) => `${origin}${a}`)]) {
    const r = await wireBytes(url, acceptEncoding);
    if (r.status !== 200) throw new Error(`${url} answered ${r.status}`);
    total += r.bytes;
  }
  return total;
}

export async function checkoutBench(): Promise<BenchResult> {
  const machine = machineNote();
  const setup = await setUpDatabase('checkout');
  const started: Started[] = [];
  try {
    const api = await startPlainpay(setup, 'api');
    started.push(api);
    const ids: string[] = [];
    for (let i = 0; i < PAYMENTS; i++) {
      const res = await fetch(`${api.url}/v1/payments`, {
        method: 'POST',
        headers: { authorization: `Bearer ${setup.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          amount: 5000,
          currency: 'NGN',
          merchant_name: 'Mama Put Kitchen',
          description: 'Two plates of jollof rice, one zobo',
          redirect_url: 'https://shop.example/thanks?order=42',
          metadata: { order: `order_${i}` },
        }),
      });
      if (res.status !== 200) throw new Error(`creating a payment answered ${res.status}: ${await res.text()}`);
      ids.push(((await res.json()) as { id: string }).id);
    }

    // The page, from the checkout role on its own.
    const checkoutPort = await freePort();
    const dataDir = mkdtempSync(join(tmpdir(), 'plainpay-bench-data-'));
    const checkoutHost = spawnServer(
      [CLI, 'serve', '--role', 'checkout'],
      childEnv({
        DATABASE_URL: setup.database.url,
        PLAINPAY_DATA_DIR: dataDir,
        PLAINPAY_MASTER_KEY: setup.masterKey,
        DEMO_ACCOUNT: '0',
        HOST: '127.0.0.1',
        PORT: String(await freePort()),
        CHECKOUT_PORT: String(checkoutPort),
        CHECKOUT_BASE_URL: `http://127.0.0.1:${checkoutPort}`,
        LOG_LEVEL: 'warn',
      }),
    );
    const bytes = { phone: 0, gzip: 0, none: 0 };
    try {
      await waitReady(`http://127.0.0.1:${checkoutPort}/healthz`, checkoutHost);
      const pageUrl = `http://127.0.0.1:${checkoutPort}/pay/${ids[0]}`;
      for (const key of Object.keys(ENCODINGS) as Array<keyof typeof ENCODINGS>) {
        bytes[key] = await firstVisit(pageUrl, ENCODINGS[key]);
      }
    } finally {
      await checkoutHost.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }

    // GET /checkout/:id against the bare select, in turns.
    const bare = await startInline(SELECT_SERVER, '/healthz', { DATABASE_URL: setup.database.url });
    started.push(bare);
    let next = 0;
    const requests: Request[] = [
      {
        method: 'GET',
        path: `/checkout/${ids[0]}`,
        setupRequest(req) {
          next = (next + 1) % ids.length;
          return { ...req, path: `/checkout/${ids[next]}` };
        },
      },
    ];
    const [select, status] = (await compareLoad([
      { url: bare.url, requests },
      { url: api.url, requests },
    ])) as [LoadResult, LoadResult];

    const baseline: BenchRow = { label: 'fastify + one pg select by key', value: select.rps, unit: 'req/s' };
    const selectP50: BenchRow = { label: 'bare select p50 latency', value: select.p50, unit: 'ms' };
    const selectP99: BenchRow = { label: 'bare select p99 latency', value: select.p99, unit: 'ms' };
    const plainPage: BenchRow = { label: 'checkout page, first visit, uncompressed', value: bytes.none, unit: 'bytes' };
    const ratio = status.rps / select.rps;
    return {
      title: 'GET /checkout/:id vs a bare fastify route with one pg select by key; the checkout page on the wire',
      baseline,
      rows: [
        selectP50,
        selectP99,
        { label: 'GET /checkout/:id', value: status.rps, unit: 'req/s', ratio: true },
        {
          label: `GET /checkout/:id p50 latency (× ${selectP50.label})`,
          value: status.p50,
          unit: 'ms',
          against: selectP50,
        },
        {
          label: `GET /checkout/:id p99 latency (× ${selectP99.label})`,
          value: status.p99,
          unit: 'ms',
          against: selectP99,
        },
        plainPage,
        {
          label: `checkout page, first visit, phone (${ENCODINGS.phone}) (× uncompressed)`,
          value: bytes.phone,
          unit: 'bytes',
          against: plainPage,
        },
        {
          label: `checkout page, first visit, ${ENCODINGS.gzip} (× uncompressed)`,
          value: bytes.gzip,
          unit: 'bytes',
          against: plainPage,
        },
      ],
      notes: [
        machine,
        `setup: each server in a child process on a scratch Postgres, autocannon in the bench process (${LOAD.connections} connections, ${LOAD.warmupS} s warm-up each, then ${LOAD.rounds} turns of ${LOAD.roundS} s each, alternating); requests rotate over ${PAYMENTS} payments`,
        'the baseline selects * and answers the row as JSON; plainpay at LOG_LEVEL=warn, both pools 10 connections',
        `GET /checkout/:id: ${status.total.toLocaleString('en-US')} requests, ${status.failed} failed; bare select: ${select.total.toLocaleString('en-US')} requests, ${select.failed} failed`,
        'page bytes: status lines, headers (HTTP/1.1, the CSP and security headers included) and bodies of the page, its stylesheet and its script, each on its own connection',
        `before issue 15 the page weighed about ${OLD_PAGE_KB} KB uncompressed (gzip, had it been on: about 3.8 KB of bodies), and polled its status every 5 s; it now follows a server-sent event stream`,
      ],
      checks: [
        { label: 'every request answered 2xx', pass: select.failed === 0 && status.failed === 0 },
        {
          label: `GET /checkout/:id throughput ≥ ${STATUS_TARGET * 100}% of the bare select (${(ratio * 100).toFixed(1)}%)`,
          pass: ratio >= STATUS_TARGET,
        },
        {
          label: `checkout page on a phone's first visit ≤ ${PAGE_BUDGET_BYTES} bytes (${bytes.phone})`,
          pass: bytes.phone <= PAGE_BUDGET_BYTES,
        },
      ],
    };
  } finally {
    for (const s of started) await s.server.stop();
    await setup.database.drop();
  }
}
