// Shared by the HTTP, webhook and startup benchmarks: a scratch Postgres database, servers run as
// child processes (so the load generator in this process and the server compete for the two cores
// the way a client and a server do), a readiness probe and interleaved autocannon runs.

import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon, { type Request } from 'autocannon';
import pg from 'pg';
import { createAccount } from '../src/accounts/create-account.ts';
import { createSecretBox } from '../src/core/secret-box.ts';
import { connectDatabase } from '../src/db/connect.ts';
import { migrateToLatest } from '../src/db/migrate.ts';

export const ROOT = new URL('..', import.meta.url).pathname;
export const CLI = join(ROOT, 'bin/plainpay.mjs');
/** The admin database of the local Postgres; scratch databases are created from it. */
const ADMIN_URL = process.env.BENCH_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/**
 * Load runs: 50 connections; each server gets a 3 s warm-up (JIT, pool connections), then the
 * servers compared take turns, `rounds` turns of `roundS` seconds each (A B A B …), so that whatever
 * else the machine does during the comparison weighs on every side alike.
 */
export const LOAD = { connections: 50, warmupS: 3, roundS: 2, rounds: 5 } as const;

/** Where the figures came from; others' work on the machine shows up in the load average. */
export function machineNote(): string {
  return `machine: ${availableParallelism()} cores, Node ${process.version}, 1-min load average ${loadavg()[0]!.toFixed(2)} at the start`;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

export interface ScratchDatabase {
  url: string;
  drop(): Promise<void>;
}

/** A fresh database on the local Postgres, dropped by drop() (even with connections left open). */
export async function createScratchDatabase(prefix: string): Promise<ScratchDatabase> {
  const name = `plainpay_bench_${prefix}_${Date.now()}_${randomBytes(3).toString('hex')}`;
  await adminQuery(`create database ${name}`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => adminQuery(`drop database if exists ${name} with (force)`),
  };
}

async function adminQuery(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

/** The environment of a child server: this one without database/Redis settings, plus `extra`. */
export function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const { DATABASE_URL: _db, REDIS_URL: _redis, LOG_LEVEL: _log, ...rest } = process.env;
  return { ...rest, ...extra };
}

export interface ChildServer {
  child: ChildProcess;
  /** What the process wrote (stdout and stderr go to a file, not through this process). */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Starts a server process. Its output goes to a file rather than a pipe, so that reading it costs
 * the load generator nothing during a run.
 */
export function spawnServer(args: string[], env: NodeJS.ProcessEnv): ChildServer {
  const dir = mkdtempSync(join(tmpdir(), 'plainpay-bench-log-'));
  const logPath = join(dir, 'server.log');
  const fd = openSync(logPath, 'w');
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const output = (): string => {
    try {
      return readFileSync(logPath, 'utf8');
    } catch {
      return '';
    }
  };
  return {
    child,
    output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The variables `npm start` sets before `node` (the `NAME=value` words that open package.json's
 * start script: glibc's malloc settings, read only when a process starts), so that what the
 * benchmarks measure is what `npm start` runs.
 */
export function npmStartEnv(): Record<string, string> {
  const { scripts } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const env: Record<string, string> = {};
  for (const word of scripts.start.split(/\s+/)) {
    const assignment = /^([A-Za-z_][A-Za-z0-9_]*)=(\S*)$/.exec(word);
    if (!assignment) break;
    env[assignment[1]!] = assignment[2]!;
  }
  // The benchmarks would measure another process than npm start's without saying so.
  if (!('MALLOC_MMAP_THRESHOLD_' in env)) {
    throw new Error(`package.json's start script no longer opens with MALLOC_MMAP_THRESHOLD_=…: ${scripts.start}`);
  }
  return env;
}

/**
 * `plainpay serve` on the embedded database in `dataDir` (no DATABASE_URL) on the two ports, at
 * LOG_LEVEL=warn, in the environment `npm start` gives it; `extra` adds to or overrides that.
 */
export function spawnEmbeddedServe(
  dataDir: string,
  ports: { port: number; checkoutPort: number },
  args: readonly string[] = [],
  extra: Record<string, string> = {},
): ChildServer {
  return spawnServer(
    [CLI, 'serve', ...args],
    childEnv({
      ...npmStartEnv(),
      PLAINPAY_DATA_DIR: dataDir,
      PORT: String(ports.port),
      CHECKOUT_PORT: String(ports.checkoutPort),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      ...extra,
    }),
  );
}

/** One API call with a key; its JSON answer, or an error naming the call and the answer. */
export async function callApi(
  base: string,
  key: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<Record<string, unknown>> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as Record<string, unknown>;
}

/** A plain-JavaScript ESM server run with `node -e` (the baselines): no tsx, no build. */
export function spawnInlineServer(code: string, env: NodeJS.ProcessEnv): ChildServer {
  return spawnServer(['--input-type=module', '-e', code], env);
}

/** One GET; resolves with the status code, or 0 when nothing answers yet. */
export function probe(url: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request(url, { agent: false, timeout: 2_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

/** Polls `url` every `intervalMs` until it answers 200; fails if the process exits first or on timeout. */
export async function waitReady(
  url: string,
  server: ChildServer,
  options: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<void> {
  const deadline = performance.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    if (server.child.exitCode !== null) {
      throw new Error(`the server exited with ${server.child.exitCode} before ${url} answered:\n${server.output()}`);
    }
    if ((await probe(url)) === 200) return;
    if (performance.now() > deadline) throw new Error(`${url} did not answer 200 in time:\n${server.output()}`);
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 10));
  }
}

export interface LoadResult {
  /** Requests per second over the measured rounds. */
  rps: number;
  p50: number;
  p99: number;
  total: number;
  /** Responses that were not 2xx, plus errors and timeouts: must be 0 for the figure to count. */
  failed: number;
}

export interface LoadTarget {
  url: string;
  requests: Request[];
  /** Concurrent connections; LOAD.connections unless given. */
  connections?: number;
}

/**
 * Warms every target up, then runs them in turns (see LOAD) and sums each one's rounds. Latency
 * percentiles come from every response's own time (autocannon's histogram keeps whole
 * milliseconds, too coarse for a hello-world); only 2xx responses count, as in autocannon.
 */
export async function compareLoad(targets: readonly LoadTarget[]): Promise<LoadResult[]> {
  const options = (t: LoadTarget) => ({
    url: t.url,
    connections: t.connections ?? LOAD.connections,
    requests: t.requests,
    timeout: 10,
  });
  for (const target of targets) await autocannon({ ...options(target), duration: LOAD.warmupS });
  const acc = targets.map(() => ({ times: new Float64Array(1 << 20), count: 0, total: 0, failed: 0 }));
  for (let round = 0; round < LOAD.rounds; round++) {
    for (const [i, target] of targets.entries()) {
      const a = acc[i]!;
      const result = await autocannon({ ...options(target), duration: LOAD.roundS }).on(
        'response',
        (_c, status, _b, ms) => {
          if (status < 200 || status > 299) return;
          if (a.count === a.times.length) {
            const grown = new Float64Array(a.times.length * 2);
            grown.set(a.times);
            a.times = grown;
          }
          a.times[a.count++] = ms;
        },
      );
      a.total += result.requests.total;
      a.failed += result.non2xx + result.errors + result.timeouts;
    }
  }
  return acc.map((a) => {
    const measured = a.times.subarray(0, a.count).sort();
    return {
      rps: Math.round((a.total / (LOAD.rounds * LOAD.roundS)) * 10) / 10,
      p50: round2(percentile(measured, 50)),
      p99: round2(percentile(measured, 99)),
      total: a.total,
      failed: a.failed,
    };
  });
}

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

export function sortedNumbers(values: readonly number[]): number[] {
  return [...values].sort((a, b) => a - b);
}

/** The bare baseline: fastify's hello-world, no logger, plain JavaScript run with `node -e`. */
export const HELLO_SERVER = `
import Fastify from 'fastify';
const app = Fastify({ logger: false });
app.get('/', async () => ({ hello: 'world' }));
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
`;

export interface Started {
  url: string;
  server: ChildServer;
}

/** An inline (`node -e`) server on a free port, ready when `readyPath` answers 200. */
export async function startInline(
  code: string,
  readyPath: string,
  extra: Record<string, string> = {},
): Promise<Started> {
  const port = await freePort();
  const server = spawnInlineServer(code, childEnv({ PORT: String(port), ...extra }));
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitReady(`${url}${readyPath}`, server);
  } catch (error) {
    await server.stop();
    throw error;
  }
  return { url, server };
}

export interface BenchSetup {
  database: ScratchDatabase;
  accountId: string;
  apiKey: string;
  masterKey: string;
}

/** A scratch database, migrated, with one test-mode account and its first key (every scope). */
export async function setUpDatabase(prefix: string): Promise<BenchSetup> {
  const database = await createScratchDatabase(prefix);
  try {
    const handle = await connectDatabase({ kind: 'postgres', url: database.url });
    try {
      await migrateToLatest(handle.db);
      const masterKey = randomBytes(32).toString('base64');
      const account = await createAccount(handle.db, createSecretBox(Buffer.from(masterKey, 'base64')), {
        name: 'Bench merchant',
        livemode: false,
      });
      return { database, accountId: account.account, apiKey: account.api_key, masterKey };
    } finally {
      await handle.close();
    }
  } catch (error) {
    await database.drop();
    throw error;
  }
}

/**
 * `plainpay serve --role <role>` on the scratch database (the bench's master key, so that it can
 * read the account's webhook secret), ready when /readyz answers 200. LOG_LEVEL=warn, and a rate
 * limit no run reaches. The data dir is temporary (nothing should be written to it on Postgres).
 */
export async function startPlainpay(
  setup: BenchSetup,
  role: 'api' | 'all',
  extra: Record<string, string> = {},
): Promise<Started & { checkoutPort: number }> {
  const [port, checkoutPort] = [await freePort(), await freePort()];
  const dataDir = mkdtempSync(join(tmpdir(), 'plainpay-bench-data-'));
  const server = spawnServer(
    [CLI, 'serve', '--role', role],
    childEnv({
      DATABASE_URL: setup.database.url,
      PLAINPAY_DATA_DIR: dataDir,
      PLAINPAY_MASTER_KEY: setup.masterKey,
      DEMO_ACCOUNT: '0',
      HOST: '127.0.0.1',
      PORT: String(port),
      CHECKOUT_PORT: String(checkoutPort),
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_SECOND: '1000000',
      ...extra,
    }),
  );
  const stop = server.stop;
  server.stop = async () => {
    await stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitReady(`${url}/readyz`, server);
  } catch (error) {
    await server.stop();
    throw error;
  }
  return { url, server, checkoutPort };
}
