// The graceful stop of each HTTP host (src/http/graceful-stop.ts), in process: a request that
// arrives on a kept-alive connection once the stop began gets the host's own 503 (the error object,
// or the checkout's page), with Retry-After and Connection: close, and the stop then ends.
// test/chaos/sigterm.test.ts drives the same through a real process under load.

import { Agent, type IncomingHttpHeaders, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../src/http/app.ts';
import { buildCheckoutApp } from '../src/checkout/app.ts';
import { gracefulStopOf, isStopping } from '../src/http/graceful-stop.ts';
import { testRuntime } from './support/harness.ts';

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  reusedSocket: boolean;
}

function get(app: FastifyInstance, agent: Agent, path: string): Promise<Answer> {
  const { port } = app.server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, reusedSocket: req.reusedSocket }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

async function stopWithKeptAliveRequest(app: FastifyInstance, first: string, second: string): Promise<Answer> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    expect((await get(app, agent, first)).status).toBe(200);
    const stopped = gracefulStopOf(app)!.stop({ drainMs: 10_000, forceMs: 1_000 });
    expect(isStopping(app)).toBe(true);
    const answer = await get(app, agent, second);
    // The same connection as the first request: it was kept alive, and is closed after this answer.
    expect(answer.reusedSocket).toBe(true);
    await stopped;
    return answer;
  } finally {
    agent.destroy();
  }
}

describe('graceful stop', () => {
  it('the API answers a request on a kept-alive connection with the 503 error object and closes it', async () => {
    const runtime = await testRuntime();
    const answer = await stopWithKeptAliveRequest(await buildApp(runtime), '/healthz', '/v1/ping');
    expect(answer.status).toBe(503);
    expect(answer.headers.connection).toBe('close');
    expect(answer.headers['retry-after']).toBeDefined();
    expect(answer.headers['request-id']).toBeDefined();
    expect(JSON.parse(answer.body)).toEqual({
      error: { type: 'api_error', code: 'unavailable', message: expect.stringContaining('shutting down') },
    });
  });

  it('a request fastify answers before any hook (a malformed URL) also closes its connection', async () => {
    const runtime = await testRuntime();
    const answer = await stopWithKeptAliveRequest(await buildApp(runtime), '/healthz', '/v1/payments/%E0%A4%A');
    expect(answer.status).toBe(400);
    expect(answer.headers.connection).toBe('close');
  });

  it('a request still running at the drain deadline is answered with the 503 error object, and the stop ends', async () => {
    const runtime = await testRuntime();
    const app = await buildApp(runtime);
    let received!: () => void;
    const arrived = new Promise<void>((resolve) => {
      received = resolve;
    });
    // A handler that never finishes, as an agent run waiting on a model that does not answer.
    app.get('/test/hangs', () => {
      received();
      return new Promise(() => {});
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const answer = get(app, agent, '/test/hangs');
      await arrived;
      await gracefulStopOf(app)!.stop({ drainMs: 100, forceMs: 5_000 });
      const cut = await answer;
      expect(cut.status).toBe(503);
      expect(cut.headers.connection).toBe('close');
      expect(cut.headers['retry-after']).toBeDefined();
      expect(JSON.parse(cut.body)).toEqual({
        error: {
          type: 'api_error',
          code: 'unavailable',
          message: expect.stringContaining('may or may not have been applied'),
        },
      });
    } finally {
      agent.destroy();
    }
  });

  it('the checkout host answers the page with a 503 page, and its poller with the error object', async () => {
    const runtime = await testRuntime();
    const page = await stopWithKeptAliveRequest(await buildCheckoutApp(runtime), '/healthz', '/pay/pay_x');
    expect(page.status).toBe(503);
    expect(page.headers.connection).toBe('close');
    expect(page.headers['retry-after']).toBeDefined();
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.headers['content-security-policy']).toBeDefined();
    expect(page.body).toContain('reload');

    const poll = await stopWithKeptAliveRequest(await buildCheckoutApp(runtime), '/healthz', '/pay/pay_x/status');
    expect(poll.status).toBe(503);
    expect(poll.headers.connection).toBe('close');
    expect(JSON.parse(poll.body)).toMatchObject({ error: { type: 'api_error', code: 'unavailable' } });
  });
});
