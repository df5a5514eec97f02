// Test support for the multi-instance run (test/multi-instance.test.ts): `plainpay serve --role …`
// processes on one Postgres, a webhook receiver that verifies signatures per account and counts
// arrivals by webhook-id, an HTTP client that keeps per-instance statistics, and a rate-limit burst.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Webhook } from 'standardwebhooks';
import { CLI } from './settlement.ts';
import { freePort } from './server.ts';

// ---------------------------------------------------------------------------------------------
// Processes

export type Role = 'api' | 'worker';

export interface Instance {
  name: string;
  role: Role;
  /** http://127.0.0.1:PORT for an API instance. */
  url: string | undefined;
  child: ChildProcess;
  /** Resolves when the process printed that it is running. */
  running: Promise<void>;
  exited: Promise<number | null>;
  output: string[];
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit code (null when killed). */
  stop(graceMs?: number): Promise<number | null>;
}

const living = new Set<ChildProcess>();
let exitHookInstalled = false;

/** Every child still alive when the test process exits is killed: no orphans even on a crash. */
function killOnExit(child: ChildProcess): void {
  living.add(child);
  child.once('exit', () => living.delete(child));
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const c of living) c.kill('SIGKILL');
  });
}

/** `plainpay serve --role <role>` with the given environment (PATH and a data dir are added). */
export async function spawnInstance(name: string, role: Role, env: Record<string, string>): Promise<Instance> {
  const port = role === 'api' ? await freePort() : undefined;
  const dataDir = mkdtempSync(join(tmpdir(), `plainpay-multi-${name}-`));
  const child = spawn(process.execPath, [CLI, 'serve', '--role', role], {
    env: {
      PATH: process.env.PATH ?? '',
      PLAINPAY_DATA_DIR: dataDir,
      ...(port === undefined ? {} : { PORT: String(port), HOST: '127.0.0.1' }),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  killOnExit(child);
  const output: string[] = [];
  const running = new Promise<void>((resolve, reject) => {
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => {
        output.push(line);
        if (line.startsWith('plainpay is running')) resolve();
      });
    }
    child.once('exit', (code) =>
      reject(new Error(`${name} exited with ${code} before running:\n${output.join('\n')}`)),
    );
  });
  running.catch(() => {});
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      rmSync(dataDir, { recursive: true, force: true });
      resolve(code);
    }),
  );
  return {
    name,
    role,
    url: port === undefined ? undefined : `http://127.0.0.1:${port}`,
    child,
    running,
    exited,
    output,
    async stop(graceMs = 20_000) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        const code = await exited;
        clearTimeout(timer);
        return code;
      }
      return exited;
    },
  };
}

/** Lines a process logged at pino level error (50) or fatal (60). */
export function errorLines(instance: Instance): string[] {
  return instance.output.filter((line) => /"level":(50|60)/.test(line));
}

// ---------------------------------------------------------------------------------------------
// Webhook receiver

export interface CountingReceiver {
  /** The webhook_url for an account's payments: the receiver verifies with that account's secret. */
  urlFor(accountId: string): string;
  /** Verified arrivals per webhook-id (retries and duplicates included). */
  arrivals: Map<string, number>;
  /** Event ids the receiver acknowledged with a 2xx. */
  acknowledged: Set<string>;
  /** Event ids whose first arrival was deliberately answered 503 (to exercise the retry). */
  refusedFirst: Set<string>;
  /** Requests whose signature, path or body did not check out. */
  rejected: string[];
  close(): Promise<void>;
}

/**
 * An HTTP receiver on 127.0.0.1 that verifies every delivery with the Standard Webhooks library
 * and the secret of the account named in its path, checks that the body's id is the webhook-id,
 * and counts arrivals by id. The first arrival of every event for which `refuseFirst(id)` holds is
 * answered 503, so that a second attempt (5 s later, maybe by the other worker) has to deliver it.
 */
export async function startCountingReceiver(
  secrets: ReadonlyMap<string, string>,
  refuseFirst: (eventId: string) => boolean = () => false,
): Promise<CountingReceiver> {
  const verifiers = new Map([...secrets].map(([account, secret]) => [account, new Webhook(secret)]));
  const arrivals = new Map<string, number>();
  const acknowledged = new Set<string>();
  const refusedFirst = new Set<string>();
  const rejected: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const account = /^\/hooks\/([\w-]+)$/.exec(req.url ?? '')?.[1];
      const verifier = account ? verifiers.get(account) : undefined;
      let event: { id: string } | undefined;
      try {
        if (!verifier) throw new Error(`no account for path ${req.url}`);
        event = verifier.verify(body, req.headers as Record<string, string>) as { id: string };
        if (event.id !== req.headers['webhook-id']) throw new Error(`body id ${event.id} is not the webhook-id`);
      } catch (error) {
        rejected.push(`${req.url}: ${(error as Error).message}`);
        res.writeHead(400).end();
        return;
      }
      const seen = arrivals.get(event.id) ?? 0;
      arrivals.set(event.id, seen + 1);
      if (seen === 0 && refuseFirst(event.id)) {
        refusedFirst.add(event.id);
        res.writeHead(503).end('try again');
        return;
      }
      acknowledged.add(event.id);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  let closed = false;
  return {
    urlFor: (accountId) => `http://127.0.0.1:${port}/hooks/${accountId}`,
    arrivals,
    acknowledged,
    refusedFirst,
    rejected,
    async close() {
      if (closed) return;
      closed = true;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// ---------------------------------------------------------------------------------------------
// HTTP against the API instances

export interface InstanceStats {
  requests: number;
  /** Responses per status code. */
  statuses: Map<number, number>;
  /** 429s from the load (should stay 0: load keys are paced under the limit). */
  load429: number;
  /** 429s from the rate-limit bursts. */
  burst429: number;
  burstAllowed: number;
}

export interface ApiResponse {
  status: number;
  body: Record<string, unknown>;
  headers: Headers;
  instance: number;
}

/** Requests to a set of API instances, counted per instance. */
export class ApiPool {
  readonly stats: InstanceStats[];
  private next = 0;

  constructor(readonly urls: readonly string[]) {
    this.stats = urls.map(() => ({ requests: 0, statuses: new Map(), load429: 0, burst429: 0, burstAllowed: 0 }));
  }

  /** The next instance, round robin. */
  pick(): number {
    const i = this.next % this.urls.length;
    this.next++;
    return i;
  }

  async request(
    instance: number,
    key: string,
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<ApiResponse> {
    const res = await fetch(`${this.urls[instance]}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    const stats = this.stats[instance]!;
    stats.requests++;
    stats.statuses.set(res.status, (stats.statuses.get(res.status) ?? 0) + 1);
    let parsed: Record<string, unknown> = {};
    try {
      parsed = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
    } catch {
      parsed = { raw: text };
    }
    return { status: res.status, body: parsed, headers: res.headers, instance };
  }

  /** Responses with a 5xx status, over all instances. */
  serverErrors(): number {
    let n = 0;
    for (const s of this.stats) for (const [status, count] of s.statuses) if (status >= 500) n += count;
    return n;
  }
}

export interface BurstResult {
  /** All requests were sent and answered inside one wall-clock second: one rate-limit window. */
  oneWindow: boolean;
  allowed: number[];
  limited: number[];
  /** Every 429 carried Retry-After. */
  retryAfterOnEvery429: boolean;
  ms: number;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Sends `perInstance` requests with one key to EACH instance at once, at the start of a
 * wall-clock second (the limiter's windows are epoch seconds). With a shared (Redis) store the
 * instances together allow `limit`; with a store per process each would allow up to `limit`.
 */
export async function rateLimitBurst(pool: ApiPool, key: string, perInstance: number): Promise<BurstResult> {
  await sleep(1000 - (Date.now() % 1000) + 10);
  const started = Date.now();
  const window = Math.floor(started / 1000);
  const calls = pool.urls.flatMap((_, instance) =>
    Array.from({ length: perInstance }, () => pool.request(instance, key, 'GET', '/v1/ping')),
  );
  const responses = await Promise.all(calls);
  const finished = Date.now();
  const allowed = pool.urls.map(() => 0);
  const limited = pool.urls.map(() => 0);
  let retryAfterOnEvery429 = true;
  for (const r of responses) {
    if (r.status === 429) {
      limited[r.instance]!++;
      pool.stats[r.instance]!.burst429++;
      if (!r.headers.get('retry-after')) retryAfterOnEvery429 = false;
    } else if (r.status === 200) {
      allowed[r.instance]!++;
      pool.stats[r.instance]!.burstAllowed++;
    } else {
      throw new Error(`burst: unexpected ${r.status} ${JSON.stringify(r.body)}`);
    }
  }
  return {
    oneWindow: Math.floor(finished / 1000) === window,
    allowed,
    limited,
    retryAfterOnEvery429,
    ms: finished - started,
  };
}
