import type { FastifyInstance } from 'fastify';
import { type IncomingMessage, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '../src/db/connect.ts';
import { buildCheckoutApp, type CheckoutAppOptions } from '../src/checkout/app.ts';
import { createRuntime, type Runtime } from '../src/runtime.ts';
import {
  fileDatabaseUrl,
  isPostgres,
  testAccount,
  testApp,
  testConfig,
  testLogger,
  testRuntime,
  type TestAccount,
  type TestRuntime,
} from './support/harness.ts';
import { createPayment } from './support/payments.ts';

/**
 * The checkout page's live status (GET /pay/:id/status with Accept: text/event-stream) over a real
 * socket. Rechecks are set to ten minutes, so a change that arrives within a test was delivered
 * by the database notification (PGlite in this process, or Postgres's LISTEN connection with
 * DATABASE_URL set), not found by a timer. Every wait has a ceiling only a hang reaches.
 */
let runtime: TestRuntime;
let api: FastifyInstance;
let merchant: TestAccount;
const hosts: FastifyInstance[] = [];

const NO_RECHECK = { recheckMs: { processing: 600_000, other: 600_000 } };

beforeAll(async () => {
  runtime = await testRuntime();
  api = await testApp(runtime);
  merchant = await testAccount(runtime, { name: 'Stream Shop' });
});
afterAll(async () => {
  for (const host of hosts) await host.close();
});

async function checkoutHost(
  options: CheckoutAppOptions['statusStreams'],
  on: Runtime = runtime,
): Promise<{ app: FastifyInstance; url: string }> {
  const app = await buildCheckoutApp(on, { statusStreams: options });
  hosts.push(app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` };
}

interface EventStream {
  response: IncomingMessage;
  /** The parsed `data:` of every event so far. */
  events: Array<Record<string, unknown>>;
  /** Everything received, as sent. */
  text(): string;
  ended: Promise<void>;
  waitFor(predicate: (event: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  close(): void;
}

function openStream(url: string): Promise<EventStream> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { accept: 'text/event-stream' }, agent: false }, (response) => {
      let raw = '';
      let buffered = '';
      const events: Array<Record<string, unknown>> = [];
      const waiters: Array<() => void> = [];
      let endedResolve!: () => void;
      const ended = new Promise<void>((r) => {
        endedResolve = r;
      });
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        raw += chunk;
        buffered += chunk;
        let cut = buffered.indexOf('\n\n');
        while (cut >= 0) {
          const block = buffered.slice(0, cut);
          buffered = buffered.slice(cut + 2);
          const data = block
            .split('\n')
            .filter((line) => line.startsWith('data: '))
            .map((line) => line.slice(6))
            .join('\n');
          if (data !== '') events.push(JSON.parse(data) as Record<string, unknown>);
          cut = buffered.indexOf('\n\n');
        }
        for (const w of waiters.splice(0)) w();
      });
      response.on('end', endedResolve);
      response.on('close', endedResolve);
      resolve({
        response,
        events,
        text: () => raw,
        ended,
        async waitFor(predicate) {
          for (;;) {
            const found = events.find(predicate);
            if (found) return found;
            await new Promise<void>((r) => waiters.push(r));
          }
        },
        close: () => req.destroy(),
      });
    });
    req.on('error', reject);
    req.end();
  });
}

async function payOnCheckout(app: FastifyInstance, id: string): Promise<void> {
  const res = await app.inject({
    method: 'POST',
    url: `/pay/${id}`,
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
    payload: 'outcome=succeeded',
  });
  expect(res.statusCode).toBe(303);
}

describe('the live status stream', () => {
  it('sends the status now, then paid once the payment is paid: the same JSON as the status read', async () => {
    const { app, url } = await checkoutHost(NO_RECHECK);
    const p = await createPayment(api, merchant.apiKey, { redirect_url: 'https://shop.example/r' });
    const stream = await openStream(`${url}/pay/${p.id}/status`);
    expect(stream.response.statusCode).toBe(200);
    expect(stream.response.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(stream.response.headers['cache-control']).toBe('no-store');
    expect(stream.response.headers['content-security-policy']).toContain("default-src 'none'");
    expect(stream.response.headers['content-encoding']).toBeUndefined();
    const first = await stream.waitFor(() => true);
    expect(first).toMatchObject({ id: p.id, object: 'checkout_status', status: 'pending', state: 'payable' });
    expect(stream.text()).toMatch(/^retry: \d+\n\n/);

    await payOnCheckout(app, p.id);
    const paid = await stream.waitFor((e) => e.status === 'paid');
    expect(paid).toEqual((await app.inject({ method: 'GET', url: `/pay/${p.id}/status` })).json());
    expect(paid).toMatchObject({
      state: 'received',
      return_url: `https://shop.example/r?payment_id=${p.id}&status=paid`,
    });
    // One event per change: the first and the paid one.
    expect(stream.events).toHaveLength(2);
    stream.close();
  }, 60_000);

  it('two pages on one payment are both woken; a page on another payment is not', async () => {
    const { app, url } = await checkoutHost(NO_RECHECK);
    const [p, other] = [await createPayment(api, merchant.apiKey), await createPayment(api, merchant.apiKey)];
    const [a, b, c] = await Promise.all([
      openStream(`${url}/pay/${p.id}/status`),
      openStream(`${url}/pay/${p.id}/status`),
      openStream(`${url}/pay/${other.id}/status`),
    ]);
    await Promise.all([a, b, c].map((s) => s.waitFor((e) => e.state === 'payable')));
    await payOnCheckout(app, p.id);
    await Promise.all([a, b].map((s) => s.waitFor((e) => e.status === 'paid')));
    expect(c.events.map((e) => e.status)).toEqual(['pending']);
    for (const s of [a, b, c]) s.close();
  }, 60_000);

  it('beats, ends at its lifetime cap, and the reconnect gets the status as it is then', async () => {
    const { app, url } = await checkoutHost({ ...NO_RECHECK, heartbeatMs: 20, lifetimeMs: 400 });
    const p = await createPayment(api, merchant.apiKey);
    const stream = await openStream(`${url}/pay/${p.id}/status`);
    await stream.ended;
    expect(stream.text()).toContain(':\n\n');
    expect(stream.events.map((e) => e.state)).toEqual(['payable']);
    await payOnCheckout(app, p.id);
    const again = await openStream(`${url}/pay/${p.id}/status`);
    expect(await again.waitFor(() => true)).toMatchObject({ status: 'paid', state: 'received' });
    again.close();
  }, 60_000);

  it('refuses a stream over the per-process cap with 503 (the page then polls), and takes one again when a place frees', async () => {
    const { app, url } = await checkoutHost({ ...NO_RECHECK, maxStreams: 1 });
    const p = await createPayment(api, merchant.apiKey);
    const held = await openStream(`${url}/pay/${p.id}/status`);
    await held.waitFor(() => true);

    const refused = await app.inject({
      method: 'GET',
      url: `/pay/${p.id}/status`,
      headers: { accept: 'text/event-stream' },
    });
    expect(refused.statusCode).toBe(503);
    expect(refused.headers['retry-after']).toBe('30');
    expect(refused.json()).toMatchObject({ error: { code: 'unavailable' } });
    // The plain read (the fallback poll) is not capped.
    expect((await app.inject({ method: 'GET', url: `/pay/${p.id}/status` })).json()).toMatchObject({
      state: 'payable',
    });

    held.close();
    await held.ended;
    // The server notices the closed socket in its own time: wait for the place to come back.
    for (;;) {
      const next = await openStream(`${url}/pay/${p.id}/status`);
      if (next.response.statusCode === 200) {
        expect(await next.waitFor(() => true)).toMatchObject({ state: 'payable' });
        next.close();
        break;
      }
      next.close();
      await new Promise((r) => setTimeout(r, 50));
    }
  }, 60_000);

  it.runIf(isPostgres)(
    'on Postgres, a checkout host with its own connections hears a payment paid through another',
    async () => {
      // As `serve --role checkout` and the API or a worker in other processes: nothing shared but Postgres.
      const database = await connectDatabase({ kind: 'postgres', url: (await fileDatabaseUrl())! });
      const own = await createRuntime(testConfig(), { database, migrate: false, logger: testLogger() });
      try {
        const { app: other, url } = await checkoutHost(NO_RECHECK, own);
        const p = await createPayment(api, merchant.apiKey);
        const stream = await openStream(`${url}/pay/${p.id}/status`);
        await stream.waitFor((e) => e.state === 'payable');
        const { app } = await checkoutHost(NO_RECHECK);
        await payOnCheckout(app, p.id);
        expect(await stream.waitFor((e) => e.status === 'paid')).toMatchObject({ state: 'received' });
        stream.close();
        await other.close();
      } finally {
        await own.close();
        await database.close();
      }
    },
    60_000,
  );

  it('an unknown session is the error object, not a stream', async () => {
    const { app } = await checkoutHost(NO_RECHECK);
    const res = await app.inject({
      method: 'GET',
      url: '/pay/pay_0000000000000000000000/status',
      headers: { accept: 'text/event-stream' },
    });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ error: { code: 'not_found' } });
  });

  it('closing the host ends the streams open on it', async () => {
    const { app, url } = await checkoutHost(NO_RECHECK);
    const p = await createPayment(api, merchant.apiKey);
    const stream = await openStream(`${url}/pay/${p.id}/status`);
    await stream.waitFor(() => true);
    await app.close();
    await stream.ended;
    expect(stream.events).toHaveLength(1);
  }, 60_000);
});
