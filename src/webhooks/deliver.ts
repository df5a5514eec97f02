// One webhook POST, with the SSRF guard at connect time. node:http/https rather than fetch
// because fetch cannot be told which address to connect to without an undici Agent, and because
// node:http never follows redirects: a 3xx is simply the receiver's answer, and a failure.

import http from 'node:http';
import https from 'node:https';
import type { WebhookHeaders } from './signer.ts';
import { checkWebhookUrl, type HostLookup, pinnedLookup, resolveAndPin } from './ssrf-guard.ts';

export const WEBHOOK_TIMEOUT_MS = 15_000;
/** The most of a response body that is kept (for the merchant's debugging) and read at all. */
export const RESPONSE_EXCERPT_BYTES = 1024;
export const WEBHOOK_USER_AGENT = 'plainpay-webhooks/1';

/** Why an attempt failed, as recorded with it and counted in plainpay_webhook_deliveries_total. */
export const DELIVERY_ERROR_CODES = [
  /** The stored URL no longer passes the URL check. */
  'invalid_target',
  /** The host is, or resolves to, an address delivery may not connect to. */
  'refused_target',
  'dns_failed',
  'timeout',
  /** Connection refused or reset, TLS failure, … */
  'network',
  /** A 3xx: redirects are never followed. */
  'redirect',
  /** Any other non-2xx answer. */
  'http_status',
  /** The worker could not sign the event (no or unreadable secret): nothing was sent. */
  'signing_failed',
] as const;
export type DeliveryErrorCode = (typeof DELIVERY_ERROR_CODES)[number];

export interface WebhookRequest {
  url: string;
  /** The exact bytes that were signed. */
  body: string;
  headers: WebhookHeaders;
  /** For the whole attempt: DNS, connect, TLS, request and response headers. */
  timeoutMs?: number;
  allowPrivate: boolean;
  lookup?: HostLookup;
  /** For Retry-After dates; the wall clock by default. */
  now?: () => Date;
}

export interface DeliveryResult {
  /** True only for a 2xx answer. */
  ok: boolean;
  /** The receiver's HTTP status, when it answered at all. */
  status: number | null;
  /** From the start of the attempt to the response headers (or the failure). */
  latencyMs: number;
  responseExcerpt: string | null;
  errorCode: DeliveryErrorCode | null;
  errorMessage: string | null;
  /** The receiver's Retry-After, in milliseconds from now, when it sent a valid one. */
  retryAfterMs: number | null;
}

/** POSTs a signed event once. Never throws: every outcome is a DeliveryResult to record. */
export async function postWebhook(request: WebhookRequest): Promise<DeliveryResult> {
  const started = performance.now();
  const elapsed = (): number => Math.round(performance.now() - started);
  const timeoutMs = request.timeoutMs ?? WEBHOOK_TIMEOUT_MS;
  const fail = (errorCode: DeliveryErrorCode, errorMessage: string): DeliveryResult => ({
    ok: false,
    status: null,
    latencyMs: elapsed(),
    responseExcerpt: null,
    errorCode,
    errorMessage,
    retryAfterMs: null,
  });

  const checked = checkWebhookUrl(request.url, { allowPrivate: request.allowPrivate });
  if (!checked.ok) {
    const refused = checked.reason === 'non_public_address' || checked.reason === 'internal_hostname';
    return fail(refused ? 'refused_target' : 'invalid_target', checked.message);
  }
  const url = checked.url;

  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  try {
    // The connect-time check: every address the name has now must be deliverable, and the socket
    // is pinned to the one checked, so a DNS answer that changes in between cannot redirect it.
    const pinned = await Promise.race([
      resolveAndPin(url.hostname, {
        allowPrivate: request.allowPrivate,
        ...(request.lookup ? { lookup: request.lookup } : {}),
      }),
      deadline,
    ]);
    if (pinned === 'timeout') return fail('timeout', `no answer within ${timeoutMs} ms (DNS)`);
    if (!pinned.ok) return fail(pinned.reason === 'dns_failed' ? 'dns_failed' : 'refused_target', pinned.message);
    return await send(url, pinned, request, deadline, elapsed, timeoutMs);
  } finally {
    clearTimeout(timer);
  }
}

function send(
  url: URL,
  pinned: { address: string; family: 4 | 6 },
  request: WebhookRequest,
  deadline: Promise<'timeout'>,
  elapsed: () => number,
  timeoutMs: number,
): Promise<DeliveryResult> {
  return new Promise((resolve) => {
    let settled = false;
    let status: number | null = null;
    let latencyMs = 0;
    let retryAfterMs: number | null = null;
    let location: string | undefined;
    const chunks: Buffer[] = [];
    let received = 0;

    const finish = (failure?: { code: DeliveryErrorCode; message: string }): void => {
      if (settled) return;
      settled = true;
      req.destroy();
      if (status === null) {
        resolve({
          ok: false,
          status: null,
          latencyMs: elapsed(),
          responseExcerpt: null,
          errorCode: failure?.code ?? 'network',
          errorMessage: failure?.message ?? 'the connection closed without a response',
          retryAfterMs: null,
        });
        return;
      }
      const ok = status >= 200 && status < 300;
      let errorCode: DeliveryErrorCode | null = null;
      let errorMessage: string | null = null;
      if (status >= 300 && status < 400) {
        errorCode = 'redirect';
        errorMessage = `the receiver answered ${status}${location ? ` redirecting to ${truncate(location, 200)}` : ''}; redirects are not followed, point webhook_url at the receiver itself`;
      } else if (!ok) {
        errorCode = 'http_status';
        errorMessage = `the receiver answered ${status}`;
      }
      resolve({
        ok,
        status,
        latencyMs,
        responseExcerpt: excerpt(chunks),
        errorCode,
        errorMessage,
        retryAfterMs,
      });
    };

    const transport = url.protocol === 'https:' ? https : http;
    const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    const req = transport.request({
      method: 'POST',
      host: hostname,
      port: url.port === '' ? undefined : Number(url.port),
      path: `${url.pathname}${url.search}`,
      headers: {
        host: url.host,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(request.body),
        'user-agent': WEBHOOK_USER_AGENT,
        ...request.headers,
      },
      lookup: pinnedLookup(pinned.address, pinned.family),
      // A fresh connection per attempt: a pooled socket could have been opened to another address.
      agent: false,
    });

    req.on('response', (res) => {
      status = res.statusCode ?? null;
      latencyMs = elapsed();
      retryAfterMs = parseRetryAfter(res.headers['retry-after'], (request.now ?? (() => new Date()))());
      location = res.headers.location;
      res.on('data', (chunk: Buffer) => {
        if (received >= RESPONSE_EXCERPT_BYTES) return;
        chunks.push(chunk);
        received += chunk.length;
        // The acknowledgement is the status; the body is read only as far as the excerpt needs.
        if (received >= RESPONSE_EXCERPT_BYTES) finish();
      });
      res.on('end', () => finish());
      res.on('error', () => finish());
      res.on('close', () => finish());
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      finish({ code: 'network', message: networkMessage(error) });
    });
    void deadline.then(() => finish({ code: 'timeout', message: `no response within ${timeoutMs} ms` }));
    req.end(request.body);
  });
}

function networkMessage(error: NodeJS.ErrnoException): string {
  const code = error.code ? `${error.code}: ` : '';
  return truncate(`${code}${error.message}`, 300);
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** Up to 1 KB of the body as text; NUL is replaced (Postgres text cannot hold it). */
function excerpt(chunks: Buffer[]): string | null {
  if (chunks.length === 0) return null;
  const bytes = Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is exactly what must go.
  let text = bytes.toString('utf8').replace(/\u0000/g, '\uFFFD');
  // A character cut at the 1 KB edge decodes to U+FFFD, which can be longer than what it replaced.
  while (Buffer.byteLength(text) > RESPONSE_EXCERPT_BYTES) text = text.slice(0, -1);
  return text;
}

/** Retry-After as delay-seconds or an HTTP date (RFC 9110 §10.2.3); null when absent or invalid. */
export function parseRetryAfter(value: string | undefined, now: Date): number | null {
  if (value === undefined) return null;
  const text = value.trim();
  if (/^\d{1,10}$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  if (Number.isNaN(at) || !/[a-z]/i.test(text)) return null;
  return Math.max(0, at - now.getTime());
}
