// Startup (issue 10): wall time from spawning `node bin/plainpay.mjs serve` with the embedded
// defaults (PGlite in PLAINPAY_DATA_DIR, the in-process devnet, every role) to GET /readyz answering
// 200, on a fresh data dir (initdb, migrations, master key, demo account) and again on that existing
// dir. Baseline: spawning `node -e` with a fastify hello-world to GET / answering 200. Each is run
// ROUNDS times, one after the other, and the median is reported; the readiness probe polls every 10 ms.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BenchResult, BenchRow } from './run.ts';
import {
  CLI,
  type ChildServer,
  childEnv,
  freePort,
  HELLO_SERVER,
  machineNote,
  percentile,
  sortedNumbers,
  spawnInlineServer,
  spawnServer,
  waitReady,
} from './support.ts';

const ROUNDS = 3;

/** Spawn → ready, in ms; the process is stopped (SIGTERM, graceful) before this returns. */
async function timeToReady(spawnIt: (port: number) => ChildServer, readyPath: string): Promise<number> {
  const port = await freePort();
  const started = performance.now();
  const server = spawnIt(port);
  try {
    await waitReady(`http://127.0.0.1:${port}${readyPath}`, server, { timeoutMs: 120_000, intervalMs: 10 });
    return performance.now() - started;
  } finally {
    await server.stop();
  }
}

async function serveEmbedded(dataDir: string): Promise<number> {
  const checkoutPort = await freePort();
  return timeToReady(
    (port) =>
      spawnServer(
        [CLI, 'serve'],
        childEnv({
          PLAINPAY_DATA_DIR: dataDir,
          PORT: String(port),
          CHECKOUT_PORT: String(checkoutPort),
          HOST: '127.0.0.1',
          LOG_LEVEL: 'warn',
        }),
      ),
    '/readyz',
  );
}

export async function startupBench(): Promise<BenchResult> {
  const machine = machineNote();
  const hello: number[] = [];
  const fresh: number[] = [];
  const existing: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    hello.push(await timeToReady((port) => spawnInlineServer(HELLO_SERVER, childEnv({ PORT: String(port) })), '/'));
    const dataDir = mkdtempSync(join(tmpdir(), 'plainpay-bench-startup-'));
    try {
      fresh.push(await serveEmbedded(dataDir));
      existing.push(await serveEmbedded(dataDir));
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
  const median = (values: number[]): number => Math.round(percentile(sortedNumbers(values), 50));
  const all = (values: number[]): string => values.map((v) => Math.round(v)).join(', ');
  const baseline: BenchRow = { label: 'node -e fastify hello-world', value: median(hello), unit: 'ms' };
  return {
    title: `startup: spawn → ready (GET /readyz 200), embedded default (PGlite + in-process devnet), median of ${ROUNDS}`,
    baseline,
    rows: [
      { label: 'plainpay serve, fresh data dir', value: median(fresh), unit: 'ms', ratio: true },
      { label: 'plainpay serve, existing data dir', value: median(existing), unit: 'ms', ratio: true },
    ],
    notes: [
      machine,
      'fresh: PGlite initdb + migrations + master key + demo account; existing: the same dir reopened',
      'plainpay runs its TypeScript through tsx (bin/plainpay.mjs), the baseline is plain JavaScript',
      `all runs (ms): hello-world ${all(hello)}; fresh ${all(fresh)}; existing ${all(existing)}`,
    ],
    checks: [{ label: `every start answered ready (${ROUNDS * 3} starts)`, pass: true }],
  };
}
