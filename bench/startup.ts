// Startup (issues 10 and 15): wall time from spawning `node bin/plainpay.mjs serve` with the
// embedded defaults (PGlite in PLAINPAY_DATA_DIR, every role, in npm start's environment) to GET /readyz
// answering 200, on a fresh data dir (the pre-migrated database image copied, or initdb and
// migrations without a build; master key; demo account) and again on that existing dir; and the
// peak RSS while starting: the process's high-water mark (VmHWM, Linux) from spawn until SETTLE_MS
// after ready, which covers the work a start leaves for after the banner (the in-process devnet
// starts later, with the first chain work: bench/footprint.ts measures it). Baseline: spawning
// `node -e` with a fastify hello-world to GET / answering 200. Each is run ROUNDS times, one after
// the other, and the median is reported; the readiness probe polls every 10 ms.

import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BenchResult, BenchRow } from './run.ts';
import {
  type ChildServer,
  childEnv,
  freePort,
  HELLO_SERVER,
  machineNote,
  percentile,
  sortedNumbers,
  spawnInlineServer,
  spawnEmbeddedServe,
  waitReady,
} from './support.ts';

const ROUNDS = 3;
/** How long after ready a start still counts as starting for the RSS peak. */
const SETTLE_MS = 3_000;

interface Start {
  /** Spawn → ready, ms. */
  readyMs: number;
  /** Peak RSS (MB) from spawn until SETTLE_MS after ready; undefined where /proc is not there. */
  peakRssMb: number | undefined;
  /** Whether bin/plainpay.mjs ran the TypeScript sources (no or a stale dist/). */
  fromSources: boolean;
}

/** The process's peak resident set so far (VmHWM), in MB; undefined off Linux. */
function peakRss(pid: number | undefined): number | undefined {
  try {
    const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? undefined : Math.round(Number(kb) / 1024);
  } catch {
    return undefined;
  }
}

/** One start; the process is stopped (SIGTERM, graceful) before this returns. */
async function start(spawnIt: (port: number) => ChildServer, readyPath: string): Promise<Start> {
  const port = await freePort();
  const started = performance.now();
  const server = spawnIt(port);
  try {
    await waitReady(`http://127.0.0.1:${port}${readyPath}`, server, { timeoutMs: 120_000, intervalMs: 10 });
    const readyMs = performance.now() - started;
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    return {
      readyMs,
      peakRssMb: peakRss(server.child.pid),
      fromSources: server.output().includes('Running from the TypeScript sources'),
    };
  } finally {
    await server.stop();
  }
}

async function serveEmbedded(dataDir: string): Promise<Start> {
  const checkoutPort = await freePort();
  return start((port) => spawnEmbeddedServe(dataDir, { port, checkoutPort }), '/readyz');
}

export async function startupBench(): Promise<BenchResult> {
  const machine = machineNote();
  const hello: Start[] = [];
  const fresh: Start[] = [];
  const existing: Start[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    hello.push(await start((port) => spawnInlineServer(HELLO_SERVER, childEnv({ PORT: String(port) })), '/'));
    const dataDir = mkdtempSync(join(tmpdir(), 'plainpay-bench-startup-'));
    try {
      fresh.push(await serveEmbedded(dataDir));
      existing.push(await serveEmbedded(dataDir));
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
  const median = (values: number[]): number => Math.round(percentile(sortedNumbers(values), 50));
  const times = (starts: Start[]): number[] => starts.map((s) => s.readyMs);
  const all = (values: (number | undefined)[]): string =>
    values.map((v) => (v === undefined ? '?' : Math.round(v))).join(', ');
  const baseline: BenchRow = { label: 'node -e fastify hello-world', value: median(times(hello)), unit: 'ms' };
  const rows: BenchRow[] = [
    { label: 'plainpay serve, fresh data dir', value: median(times(fresh)), unit: 'ms', ratio: true },
    { label: 'plainpay serve, existing data dir', value: median(times(existing)), unit: 'ms', ratio: true },
  ];
  const rss = (starts: Start[]): number[] | undefined => {
    const peaks = starts.map((s) => s.peakRssMb);
    return peaks.every((p) => p !== undefined) ? (peaks as number[]) : undefined;
  };
  const [helloRss, freshRss, existingRss] = [rss(hello), rss(fresh), rss(existing)];
  if (helloRss && freshRss && existingRss) {
    const helloRow: BenchRow = { label: 'hello-world, peak RSS while starting', value: median(helloRss), unit: 'MB' };
    rows.push(
      helloRow,
      {
        label: 'plainpay serve, fresh, peak RSS while starting',
        value: median(freshRss),
        unit: 'MB',
        against: helloRow,
      },
      {
        label: 'plainpay serve, existing, peak RSS while starting',
        value: median(existingRss),
        unit: 'MB',
        against: helloRow,
      },
    );
  }
  const plainpay = [...fresh, ...existing];
  const sources = plainpay.filter((s) => s.fromSources).length;
  return {
    title: `startup: spawn → ready (GET /readyz 200), embedded default (PGlite, every role, as npm start runs it), median of ${ROUNDS}`,
    baseline,
    rows,
    notes: [
      machine,
      'fresh: the pre-migrated database image copied (initdb + migrations without a build) + master key + demo account; existing: the same dir reopened',
      `peak RSS while starting: the process's VmHWM from spawn until ${SETTLE_MS / 1000} s after ready (the in-process devnet is not started by a start: it waits for the first chain work)`,
      sources === 0
        ? 'plainpay ran the build in dist/ (bin/plainpay.mjs); the baseline is plain JavaScript'
        : `plainpay ran the TypeScript sources through tsx in ${sources} of ${plainpay.length} starts (dist/ missing or older than the sources: npm run build)`,
      `all runs (ms): hello-world ${all(times(hello))}; fresh ${all(times(fresh))}; existing ${all(times(existing))}`,
      `all peaks (MB): hello-world ${all(hello.map((s) => s.peakRssMb))}; fresh ${all(fresh.map((s) => s.peakRssMb))}; existing ${all(existing.map((s) => s.peakRssMb))}`,
    ],
    checks: [{ label: `every start answered ready (${ROUNDS * 3} starts)`, pass: true }],
  };
}
