import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterFile } from './after-file.ts';
import type { Runtime } from '../../src/runtime.ts';
import { insertEvent } from '../../src/db/repositories/events.ts';
import type { EventRow } from '../../src/db/database.ts';
import type { EventType } from '../../src/webhooks/event-types.ts';

/** One request as the receiver saw it: raw body text and headers. */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface TestReceiver {
  url: string;
  port: number;
  received: ReceivedRequest[];
  /** Resolves once `count` requests have arrived (rejects after timeoutMs). */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

export type ReceiverHandler = (request: ReceivedRequest, response: ServerResponse, index: number) => void;

const answer200: ReceiverHandler = (_req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
};

/** An HTTP receiver on 127.0.0.1 that records every request; closed after the file's tests. */
export async function startReceiver(handler: ReceiverHandler = answer200): Promise<TestReceiver> {
  const received: ReceivedRequest[] = [];
  let waiters: Array<() => void> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      received.push(request);
      for (const wake of waiters) wake();
      handler(request, res, received.length - 1);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  let closed = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  afterFile(close);
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    port,
    received,
    close,
    waitFor(count, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = (): boolean => {
          if (received.length < count) return false;
          clearTimeout(timer);
          waiters = waiters.filter((w) => w !== wake);
          resolve(received.slice());
          return true;
        };
        const wake = (): void => {
          check();
        };
        const timer = setTimeout(() => {
          waiters = waiters.filter((w) => w !== wake);
          reject(new Error(`receiver got ${received.length} of ${count} requests within ${timeoutMs} ms`));
        }, timeoutMs);
        if (!check()) waiters.push(wake);
      });
    },
  };
}

/** Writes an event the way the services do: in a transaction, with its delivery row. */
export async function writeEvent(
  runtime: Runtime,
  input: { accountId: string; livemode?: boolean; type?: EventType; data?: unknown; webhookUrl: string | null },
): Promise<EventRow> {
  return runtime.db.transaction().execute((trx) =>
    insertEvent(trx, {
      accountId: input.accountId,
      livemode: input.livemode ?? false,
      type: input.type ?? 'payment.paid',
      objectId: 'pay_test',
      data: input.data ?? { reference: 'order-1', metadata: { plan: 'pro' } },
      webhookUrl: input.webhookUrl,
      createdAt: runtime.clock.now(),
    }),
  );
}

/** Polls until `check` returns a value (not undefined), or fails after timeoutMs. */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
