import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseRetryAfter, postWebhook, RESPONSE_EXCERPT_BYTES } from './deliver.ts';
import { generateWebhookSecret, signWebhook } from './signer.ts';
import type { HostLookup } from './ssrf-guard.ts';

let server: Server;
let port: number;
let seen: Array<{ url: string; headers: IncomingHttpHeaders; body: string }> = [];
let reply: (res: import('node:http').ServerResponse) => void = (res) => res.end('ok');

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
    });
    req.on('end', () => {
      seen.push({ url: req.url ?? '', headers: req.headers, body });
      reply(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});
beforeEach(() => {
  seen = [];
  reply = (res) => res.end('ok');
});

const body = JSON.stringify({ id: 'evt_1', type: 'payment.paid', data: {} });
const headers = signWebhook({ id: 'evt_1', timestamp: 1_700_000_000, body, secrets: [generateWebhookSecret()] });
const toLoopback: HostLookup = async () => [{ address: '127.0.0.1', family: 4 }];

describe('postWebhook', () => {
  it('POSTs the body and signature headers to the pinned address, with the URL host in Host', async () => {
    const result = await postWebhook({
      url: `http://hooks.merchant.example:${port}/in?x=1`,
      body,
      headers,
      allowPrivate: true,
      lookup: toLoopback,
    });
    expect(result).toMatchObject({ ok: true, status: 200, responseExcerpt: 'ok', errorCode: null });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.url).toBe('/in?x=1');
    expect(seen[0]!.body).toBe(body);
    expect(seen[0]!.headers).toMatchObject({
      host: `hooks.merchant.example:${port}`,
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      'webhook-id': 'evt_1',
      'webhook-timestamp': '1700000000',
      'webhook-signature': headers['webhook-signature'],
      'user-agent': 'plainpay-webhooks/1',
    });
  });

  it('refuses private targets before connecting when private targets are not allowed', async () => {
    const literal = await postWebhook({ url: `http://127.0.0.1:${port}/`, body, headers, allowPrivate: false });
    expect(literal).toMatchObject({ ok: false, status: null, errorCode: 'refused_target' });
    const named = await postWebhook({
      url: `http://rebind.merchant.example:${port}/`,
      body,
      headers,
      allowPrivate: false,
      lookup: toLoopback,
    });
    expect(named).toMatchObject({ ok: false, errorCode: 'refused_target' });
    expect(named.errorMessage).toContain('127.0.0.1');
    expect(seen).toHaveLength(0);
  });

  it('reports DNS failures and a lookup that never answers', async () => {
    const nx: HostLookup = async () => {
      throw Object.assign(new Error('nope'), { code: 'ENOTFOUND' });
    };
    expect(
      await postWebhook({ url: 'https://gone.merchant.example/', body, headers, allowPrivate: false, lookup: nx }),
    ).toMatchObject({ ok: false, errorCode: 'dns_failed' });
    const hang: HostLookup = () => new Promise(() => {});
    const result = await postWebhook({
      url: 'https://slow.merchant.example/',
      body,
      headers,
      allowPrivate: false,
      lookup: hang,
      timeoutMs: 50,
    });
    expect(result).toMatchObject({ ok: false, errorCode: 'timeout' });
  });

  it('counts only 2xx as success; 3xx is a redirect failure and is not followed', async () => {
    reply = (res) => res.writeHead(204).end();
    expect(await postWebhook({ url: `http://127.0.0.1:${port}/`, body, headers, allowPrivate: true })).toMatchObject({
      ok: true,
      status: 204,
      responseExcerpt: null,
    });
    for (const status of [301, 302, 303, 307, 308]) {
      reply = (res) => res.writeHead(status, { location: `http://127.0.0.1:${port}/elsewhere` }).end();
      const result = await postWebhook({ url: `http://127.0.0.1:${port}/`, body, headers, allowPrivate: true });
      expect(result).toMatchObject({ ok: false, status, errorCode: 'redirect' });
    }
    expect(seen.map((r) => r.url)).not.toContain('/elsewhere');
    reply = (res) => res.writeHead(404).end('no such hook');
    expect(await postWebhook({ url: `http://127.0.0.1:${port}/`, body, headers, allowPrivate: true })).toMatchObject({
      ok: false,
      status: 404,
      errorCode: 'http_status',
      responseExcerpt: 'no such hook',
    });
  });

  it('keeps at most 1 KB of the response, without NUL, and does not wait for the rest', async () => {
    reply = (res) => {
      res.writeHead(200);
      res.write(`\u0000${'é'.repeat(2000)}`);
      // The rest never comes: the excerpt is complete after 1 KB.
    };
    const result = await postWebhook({
      url: `http://127.0.0.1:${port}/`,
      body,
      headers,
      allowPrivate: true,
      // Longer than the test may run: waiting for the rest would end in the test's own timeout.
      timeoutMs: 120_000,
    });
    expect(result.ok).toBe(true);
    expect(Buffer.byteLength(result.responseExcerpt!)).toBeLessThanOrEqual(RESPONSE_EXCERPT_BYTES);
    expect(result.responseExcerpt!.startsWith('\uFFFDé')).toBe(true);
  });

  it('gives up at the timeout when the receiver does not answer, and reads Retry-After', async () => {
    reply = () => {};
    const result = await postWebhook({
      url: `http://127.0.0.1:${port}/`,
      body,
      headers,
      allowPrivate: true,
      timeoutMs: 100,
    });
    expect(result).toMatchObject({ ok: false, status: null, errorCode: 'timeout' });
    reply = (res) => res.writeHead(503, { 'retry-after': '30' }).end();
    expect(await postWebhook({ url: `http://127.0.0.1:${port}/`, body, headers, allowPrivate: true })).toMatchObject({
      ok: false,
      status: 503,
      retryAfterMs: 30_000,
    });
  });
});

describe('parseRetryAfter', () => {
  const now = new Date('2025-01-01T00:00:00Z');
  it('reads delay-seconds and HTTP dates, and ignores junk', () => {
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:01:00 GMT', now)).toBe(60_000);
    expect(parseRetryAfter('Tue, 31 Dec 2024 00:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter(undefined, now)).toBeNull();
    expect(parseRetryAfter('soon', now)).toBeNull();
    expect(parseRetryAfter('-5', now)).toBeNull();
    expect(parseRetryAfter('1.5', now)).toBeNull();
  });
});
