import type { FastifyInstance } from 'fastify';
import { type IncomingHttpHeaders, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { negotiateEncoding } from '../src/checkout/encoding.ts';
import { buildCheckoutApp } from '../src/checkout/app.ts';
import { testAccount, testApp, testRuntime, type TestRuntime } from './support/harness.ts';
import { createPayment } from './support/payments.ts';

/**
 * What a payer's phone downloads for the checkout page on a first visit: the page, its stylesheet
 * and its script, counted as bytes on the wire (status line, headers and body) over a real socket.
 */
let runtime: TestRuntime;
let api: FastifyInstance;
let checkout: FastifyInstance;
let base: string;
let apiKey: string;

/** Chrome on Android, over HTTPS (what a payer's phone sends). */
const PHONE = 'gzip, deflate, br, zstd';
/** Chrome over plain HTTP: no brotli. */
const PLAIN_HTTP = 'gzip, deflate';
const BUDGET = 5 * 1024;

beforeAll(async () => {
  runtime = await testRuntime();
  api = await testApp(runtime);
  checkout = await buildCheckoutApp(runtime);
  await checkout.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(checkout.server.address() as AddressInfo).port}`;
  apiKey = (await testAccount(runtime, { name: 'Mama Put Kitchen' })).apiKey;
});
afterAll(() => checkout.close());

interface Wire {
  status: number;
  headers: IncomingHttpHeaders;
  /** Bytes received on the socket for this one response. */
  bytes: number;
  /** The body as received (still encoded). */
  body: Buffer;
}

/** One GET on its own connection, so the socket's byte count is this response's. */
function get(path: string, headers: Record<string, string>): Promise<Wire> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const bytes = res.socket.bytesRead;
        res.socket.destroy();
        resolve({ status: res.statusCode ?? 0, headers: res.headers, bytes, body: Buffer.concat(chunks) });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

function decode(wire: Wire): string {
  const coding = wire.headers['content-encoding'];
  if (coding === 'br') return brotliDecompressSync(wire.body).toString('utf8');
  if (coding === 'gzip') return gunzipSync(wire.body).toString('utf8');
  return wire.body.toString('utf8');
}

/** The page and what it loads, as a browser with this Accept-Encoding fetches them on a first visit. */
async function firstVisit(acceptEncoding: string) {
  const p = await createPayment(api, apiKey, {
    merchant_name: 'Mama Put Kitchen',
    description: 'Two plates of jollof rice, one zobo',
    redirect_url: 'https://shop.example/thanks?order=42',
  });
  const headers = { 'accept-encoding': acceptEncoding, accept: 'text/html' };
  const page = await get(`/pay/${p.id}`, headers);
  const html = decode(page);
  const css = /href="(\/assets\/checkout\.[0-9a-f]{10}\.css)"/.exec(html)?.[1];
  const js = /src="(\/assets\/checkout\.[0-9a-f]{10}\.js)"/.exec(html)?.[1];
  expect(css && js).toBeTruthy();
  const [style, script] = [await get(css!, headers), await get(js!, headers)];
  return { page, html, style, script, paths: { css: css!, js: js! } };
}

describe('the checkout page on the wire', () => {
  it(`transfers at most 5 KB on a phone's first visit (page, stylesheet and script, headers included)`, async () => {
    const { page, html, style, script } = await firstVisit(PHONE);
    for (const r of [page, style, script]) {
      expect(r.status).toBe(200);
      expect(r.headers['content-encoding']).toBe('br');
      expect(r.headers.vary).toBe('Accept-Encoding');
    }
    expect(html).toContain('<span id="amount">₦5,000.00</span>');
    const total = page.bytes + style.bytes + script.bytes;
    console.log(`checkout first visit (${PHONE}): ${total} bytes`, {
      page: page.bytes,
      css: style.bytes,
      js: script.bytes,
    });
    expect(total).toBeLessThanOrEqual(BUDGET);
  });

  it('is gzipped for a browser without brotli (plain HTTP): under 60% of the uncompressed transfer', async () => {
    const gzip = await firstVisit(PLAIN_HTTP);
    const plain = await firstVisit('identity');
    for (const r of [gzip.page, gzip.style, gzip.script]) expect(r.headers['content-encoding']).toBe('gzip');
    const total = (v: typeof gzip): number => v.page.bytes + v.style.bytes + v.script.bytes;
    console.log(`checkout first visit: gzip ${total(gzip)} bytes, uncompressed ${total(plain)} bytes`);
    expect(total(gzip)).toBeLessThan(total(plain) * 0.6);
  });

  it('serves the same bytes whatever the encoding, and plain to a client that asks for none', async () => {
    const br = await firstVisit(PHONE);
    const plain = await firstVisit('identity');
    for (const r of [plain.page, plain.style, plain.script]) expect(r.headers['content-encoding']).toBeUndefined();
    expect(decode(br.style)).toBe(decode(plain.style));
    expect(decode(br.script)).toBe(decode(plain.script));
    expect(decode(await get(br.paths.js, { 'accept-encoding': 'gzip' }))).toBe(decode(plain.script));
  });

  it('assets carry an ETag per encoding and answer 304 to If-None-Match; pages are never cached', async () => {
    const { page, style, script, paths } = await firstVisit(PHONE);
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.headers.etag).toBeUndefined();
    for (const [path, first] of [
      [paths.css, style],
      [paths.js, script],
    ] as const) {
      expect(first.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      const etag = first.headers.etag!;
      expect(etag).toMatch(/^"[0-9a-f]{10}-br"$/);
      const again = await get(path, { 'accept-encoding': PHONE, 'if-none-match': etag });
      expect(again.status).toBe(304);
      expect(again.body.length).toBe(0);
      expect(again.headers.etag).toBe(etag);
      // A weak match counts (If-None-Match uses the weak comparison).
      expect((await get(path, { 'accept-encoding': PHONE, 'if-none-match': `W/${etag}` })).status).toBe(304);
      // The gzip representation has its own validator: the brotli one does not validate it.
      const gzip = await get(path, { 'accept-encoding': 'gzip', 'if-none-match': etag });
      expect(gzip.status).toBe(200);
      expect(gzip.headers.etag).not.toBe(etag);
      expect((await get(path, { 'accept-encoding': 'gzip', 'if-none-match': gzip.headers.etag! })).status).toBe(304);
    }
  });

  it('keeps the security headers on compressed responses', async () => {
    const { page, script } = await firstVisit(PHONE);
    for (const r of [page, script]) {
      expect(r.headers['content-security-policy']).toContain("default-src 'none'");
      expect(r.headers['x-content-type-options']).toBe('nosniff');
      expect(r.headers['x-frame-options']).toBe('DENY');
    }
  });
});

describe('Accept-Encoding negotiation', () => {
  it.each([
    [undefined, undefined],
    ['', undefined],
    ['identity', undefined],
    ['gzip', 'gzip'],
    ['gzip, deflate', 'gzip'],
    ['gzip, deflate, br, zstd', 'br'],
    ['br;q=0, gzip', 'gzip'],
    ['gzip;q=0.5, br;q=0.4', 'gzip'],
    ['GZIP', 'gzip'],
    ['*', 'br'],
    ['*;q=0', undefined],
    ['br;q=0, gzip;q=0', undefined],
    ['deflate', undefined],
  ])('%j → %s', (header, expected) => {
    expect(negotiateEncoding(header)).toBe(expected);
  });
});
