// Acceptance 1: receivers built only on the public packages — examples/webhook-receiver.mjs on
// standardwebhooks (run as a child process, as a merchant would run it) and one on svix's
// verifier — verify every delivery of a full pay → settle flow (REST create, sandbox pay, the
// settlement worker on the embedded devnet, the delivery worker); a tampered body and a
// 10-minute-old timestamp fail their verification; a repeated delivery is recognised by its id.
// The file runs on a settlement database of its own (test/support/settlement.ts): the settlement
// worker settles every paid payment it can see.

import { type ChildProcess, spawn } from 'node:child_process';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { Webhook as SvixWebhook } from 'svix';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import type { Runtime } from '../src/runtime.ts';
import { startSettlementWorker } from '../src/settlement/worker.ts';
import { startDeliveryWorker } from '../src/webhooks/delivery-worker.ts';
import { signWebhook } from '../src/webhooks/signer.ts';
import { bearer, type TestAccount, testAccount, testApp } from './support/harness.ts';
import { createPayment, payPayment } from './support/payments.ts';
import { payoutAddresses, settlementRuntime } from './support/settlement.ts';
import { eventually } from './support/webhooks.ts';

const RECEIVER = fileURLToPath(new URL('../examples/webhook-receiver.mjs', import.meta.url));

interface ReceiverLine {
  listening?: number;
  verified?: boolean;
  id?: string;
  type?: string;
  duplicate?: boolean;
  data?: { reference?: string; metadata?: unknown };
  error?: string;
}

/** The example receiver as a child process; its stdout lines are what it verified. */
async function startExampleReceiver(
  secret: string,
): Promise<{ url: string; lines: ReceiverLine[]; child: ChildProcess }> {
  const child = spawn(process.execPath, [RECEIVER], {
    env: { PATH: process.env.PATH, WEBHOOK_SECRET: secret, PORT: '0', HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: ReceiverLine[] = [];
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`receiver exited with ${code}`)));
    createInterface({ input: child.stdout! }).on('line', (text) => {
      const line = JSON.parse(text) as ReceiverLine;
      if (line.listening !== undefined) resolve(line.listening);
      else lines.push(line);
    });
  });
  return { url: `http://127.0.0.1:${port}/webhooks/plainpay`, lines, child };
}

interface Captured {
  headers: IncomingHttpHeaders;
  body: string;
  verified: boolean;
  payload?: { id: string; type: string; data: { reference: string; metadata: unknown } };
}

/** A second receiver, in-process, on svix's verifier. */
async function startSvixReceiver(secret: string) {
  const captured: Captured[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        const payload = new SvixWebhook(secret).verify(
          body,
          req.headers as Record<string, string>,
        ) as Captured['payload'];
        captured.push({ headers: req.headers, body, verified: true, payload });
        res.writeHead(204).end();
      } catch {
        captured.push({ headers: req.headers, body, verified: false });
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/svix`,
    captured,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

let chain: ChainConnection;
let runtime: Runtime;
let app: FastifyInstance;
let merchant: TestAccount;
let example: Awaited<ReturnType<typeof startExampleReceiver>>;
let svix: Awaited<ReturnType<typeof startSvixReceiver>>;
const stops: Array<() => Promise<void>> = [];

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await settlementRuntime(chain, { WEBHOOK_ALLOW_PRIVATE: '1' });
  app = await testApp(runtime);
  merchant = await testAccount(runtime);
  example = await startExampleReceiver(merchant.webhookSecret);
  svix = await startSvixReceiver(merchant.webhookSecret);
  const settlement = startSettlementWorker(runtime, { pollIntervalMs: 20 });
  stops.push(() => settlement.stop());
  stops.push(startDeliveryWorker(runtime, { pollIntervalMs: 20, accountIds: [merchant.accountId] }));
});

afterAll(async () => {
  for (const stop of stops) await stop();
  example?.child.kill();
  await svix?.close();
  await chain?.close();
});

async function eventsOf(paymentId: string) {
  const res = await app.inject({
    method: 'GET',
    url: `/v1/events?object_id=${paymentId}&limit=100`,
    headers: bearer(merchant.apiKey),
  });
  return res.json().data as Array<{ id: string; type: string; delivery: { status: string } | null }>;
}

/** Waits until every event of the payment is delivered; returns them. */
async function allDelivered(paymentId: string, types: string[]) {
  return eventually(async () => {
    const events = await eventsOf(paymentId);
    const delivered = events.filter((e) => e.delivery?.status === 'delivered');
    const seen = new Set(delivered.map((e) => e.type));
    return types.every((t) => seen.has(t)) && delivered.length === events.length ? events : undefined;
  }, 20_000);
}

describe('a full payment flow verified by standardwebhooks and svix receivers', () => {
  const metadata = {
    order: 'A-1001',
    customer: { id: 42, tier: 'gold' },
    items: [{ sku: 'x', qty: 2 }],
    note: 'Àdùkẹ́',
  };
  const types = ['payment.paid', 'payment.settled'];
  let paymentA: { id: string };
  let paymentB: { id: string };

  it('delivers every event of the flow, and each receiver verifies every delivery', async () => {
    // A settles on chain to its payout address, B into the custodial balance.
    paymentA = await createPayment(app, merchant.apiKey, {
      reference: 'order-A-1001',
      metadata,
      webhook_url: example.url,
      payout_address: payoutAddresses(1)[0]!.toLowerCase(),
    });
    paymentB = await createPayment(app, merchant.apiKey, {
      reference: 'order-B-2002',
      metadata,
      webhook_url: svix.url,
    });
    for (const payment of [paymentA, paymentB]) {
      const paid = await payPayment(app, merchant.apiKey, payment.id);
      expect(paid.statusCode, paid.body).toBe(200);
    }

    const eventsA = await allDelivered(paymentA.id, types);
    const eventsB = await allDelivered(paymentB.id, types);
    expect(eventsA.map((e) => e.type).sort()).toEqual(types);
    expect(eventsB.map((e) => e.type).sort()).toEqual(types);

    // The standardwebhooks receiver verified each of A's events, with reference and metadata unchanged.
    expect(example.lines.filter((l) => !l.verified)).toEqual([]);
    expect(new Set(example.lines.map((l) => l.id))).toEqual(new Set(eventsA.map((e) => e.id)));
    for (const line of example.lines) {
      // reference and metadata at the top of data, unchanged (the seed's rule), key order included.
      expect(line.data).toMatchObject({ reference: 'order-A-1001', metadata });
      expect(JSON.stringify(line.data!.metadata)).toBe(JSON.stringify(metadata));
    }
    const settled = example.lines.find((l) => l.type === 'payment.settled')!;
    expect(settled.data).toMatchObject({ object: { id: paymentA.id, status: 'settled' } });
    // The svix receiver verified each of B's.
    expect(svix.captured.filter((c) => !c.verified)).toEqual([]);
    expect(new Set(svix.captured.map((c) => c.payload!.id))).toEqual(new Set(eventsB.map((e) => e.id)));
    for (const capture of svix.captured) {
      expect(capture.payload!.data).toMatchObject({ reference: 'order-B-2002', metadata });
      expect(capture.headers['webhook-id']).toBe(capture.payload!.id);
    }
  });

  it('metadata arrives in payment.settled exactly as the caller wrote it', async () => {
    const exact = '{"f":12345678901234567890,"a":-0,"b":1,"1":2}';
    const created = await app.inject({
      method: 'POST',
      url: '/v1/payments',
      headers: { ...bearer(merchant.apiKey), 'content-type': 'application/json' },
      payload: `{"amount":5000,"currency":"NGN","redirect_url":"https://shop.example/thanks","webhook_url":"${svix.url}","metadata":${exact}}`,
    });
    expect(created.statusCode, created.body).toBe(200);
    const id = created.json().id as string;
    expect((await payPayment(app, merchant.apiKey, id)).statusCode).toBe(200);
    await allDelivered(id, types);
    const settled = svix.captured.find((c) => c.payload?.type === 'payment.settled' && c.body.includes(id));
    expect(settled?.verified).toBe(true);
    // Twice: at the top of data (the seed's place) and inside the payment object.
    expect(settled!.body.split(`"metadata":${exact}`)).toHaveLength(3);
  });

  it('a tampered body, a 10-minute-old timestamp or a wrong secret fail both receivers; a replay is a recognised duplicate', async () => {
    const genuine = svix.captured.find((c) => c.verified)!;
    const headers = {
      'content-type': 'application/json',
      'webhook-id': String(genuine.headers['webhook-id']),
      'webhook-timestamp': String(genuine.headers['webhook-timestamp']),
      'webhook-signature': String(genuine.headers['webhook-signature']),
    };
    const tampered = genuine.body.replace('order-B-2002', 'order-B-9999');
    expect(tampered).not.toBe(genuine.body);
    const oldTimestamp = Math.floor(Date.now() / 1000) - 600;
    const stale = {
      ...headers,
      ...signWebhook({
        id: headers['webhook-id'],
        timestamp: oldTimestamp,
        body: genuine.body,
        secrets: [merchant.webhookSecret],
      }),
    };
    const forged = {
      ...headers,
      ...signWebhook({
        id: headers['webhook-id'],
        timestamp: Math.floor(Date.now() / 1000),
        body: genuine.body,
        secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
      }),
    };

    const post = (url: string, h: Record<string, string>, body: string) =>
      fetch(url, { method: 'POST', headers: h, body, redirect: 'manual' });

    for (const url of [example.url, svix.url]) {
      expect((await post(url, headers, tampered)).status, `${url} tampered`).toBe(400);
      expect((await post(url, stale, genuine.body)).status, `${url} stale`).toBe(400);
      expect((await post(url, forged, genuine.body)).status, `${url} forged`).toBe(400);
    }
    const rejected = example.lines.filter((l) => l.verified === false);
    expect(rejected.map((l) => l.error)).toEqual([
      'No matching signature found',
      'Message timestamp too old',
      'No matching signature found',
    ]);
    expect(svix.captured.filter((c) => !c.verified)).toHaveLength(3);

    // The example receiver dedupes by id: a genuine replay (within the window) is acknowledged, not re-handled.
    const delivery = example.lines.find((l) => l.verified)!;
    const redeliver = await app.inject({
      method: 'POST',
      url: `/v1/events/${delivery.id}/redeliver`,
      headers: bearer(merchant.apiKey),
    });
    expect(redeliver.statusCode, redeliver.body).toBe(200);
    await eventually(async () =>
      example.lines.some((l) => l.id === delivery.id && l.duplicate === true) ? true : undefined,
    );
  });
});
