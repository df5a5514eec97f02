// Chaos support for the chain side: an out-of-process devnet node (reorgs by evm_snapshot /
// evm_revert, restarts with another genesis), a runtime on the file's database whose log lines are
// kept for assertions, a settlement worker, a JSON-RPC proxy that can freeze, and the checks every
// chain chaos test ends with.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import type { Address, Hex } from 'viem';
import { expect } from 'vitest';
import { type ChainConnection, connectChain, readTokenBalance } from '../../../src/chain/chain.ts';
import { batchPayoutAbi } from '../../../src/chain/contracts/abis.ts';
import { DEV_ACCOUNTS, type DevnetRpcServer, startDevnetRpcServer } from '../../../src/chain/devnet.ts';
import { ManualClock } from '../../../src/core/clock.ts';
import { createLogger } from '../../../src/core/logger.ts';
import { createServiceMetrics } from '../../../src/metrics/metrics.ts';
import { createRuntime, type Runtime } from '../../../src/runtime.ts';
import { checkSettlementInvariants } from '../../../src/settlement/invariants.ts';
import {
  type SettlementWorker,
  type SettlementWorkerOptions,
  startSettlementWorker,
} from '../../../src/settlement/worker.ts';
import { afterFile } from '../../support/after-file.ts';
import { testConfig, testDatabase } from '../../support/harness.ts';

export async function devnetNode(options: Parameters<typeof startDevnetRpcServer>[0] = {}): Promise<DevnetRpcServer> {
  const node = await startDevnetRpcServer(options);
  // Hardhat's server close() waits for kept-alive client connections; a client still polling it
  // (a worker of a test that failed midway) must not hang the file's clean-up.
  afterFile(() => Promise.race([node.close(), new Promise((resolve) => setTimeout(resolve, 5_000).unref())]));
  return node;
}

/** A connection to `url` serving a devnet deployment (same addresses on every devnet). */
export async function connectNode(
  url: string,
  node: Pick<DevnetRpcServer, 'tokenAddress' | 'batchAddress'>,
  options: { confirmations?: number; rpcTimeoutMs?: number } = {},
): Promise<ChainConnection> {
  const conn = await connectChain({
    rpcUrl: url,
    tokenAddress: node.tokenAddress,
    batchAddress: node.batchAddress,
    relayerPrivateKey: DEV_ACCOUNTS.relayer.privateKey,
    confirmations: options.confirmations ?? 1,
    ...(options.rpcTimeoutMs ? { rpcTimeoutMs: options.rpcTimeoutMs } : {}),
  });
  afterFile(() => conn.close());
  return conn;
}

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

/** A runtime on the file's database and `chain`, keeping every log line at warn and above. */
export async function chaosRuntime(chain: ChainConnection): Promise<{ runtime: Runtime; logs: LogLine[] }> {
  const logs: LogLine[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.trim() !== '') logs.push(JSON.parse(line) as LogLine);
      }
      done();
    },
  });
  const runtime = await createRuntime(testConfig(), {
    database: await testDatabase(),
    migrate: false,
    clock: new ManualClock(),
    logger: createLogger('warn', sink),
    chain,
  });
  afterFile(() => runtime.close());
  return { runtime, logs };
}

export function chaosWorker(runtime: Runtime, options: SettlementWorkerOptions = {}): SettlementWorker {
  const worker = startSettlementWorker(runtime, {
    pollIntervalMs: 20,
    batchWindowMs: 30,
    identityCheckIntervalMs: 200,
    ...options,
  });
  afterFile(() => worker.stop());
  return worker;
}

/** Waits for a state (never for a duration): polls `check` until true, fails after `timeoutMs`. */
export async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** A process-level metric's value, as GET /metrics would show it. */
export async function metricValue(
  runtime: Runtime,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const metrics = createServiceMetrics({
    db: runtime.db,
    clock: runtime.clock,
    logger: runtime.logger,
    chain: () => runtime.chain(),
  });
  const metric = await metrics.registry.getSingleMetric(name)?.get();
  const value = metric?.values.find((v) =>
    Object.entries(labels).every(([k, want]) => String((v.labels as Record<string, unknown>)[k]) === want),
  );
  return value?.value ?? Number.NaN;
}

/** How many times the batch contract on `chain` paid each batch id (BatchPaid events). */
export async function paidBatchIds(chain: ChainConnection): Promise<Map<string, number>> {
  const events = await chain.publicClient.getContractEvents({
    address: chain.batchAddress,
    abi: batchPayoutAbi,
    eventName: 'BatchPaid',
    fromBlock: 0n,
  });
  const counts = new Map<string, number>();
  for (const e of events) {
    const key = e.args.batchId!.toLowerCase();
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

/** Each address holds exactly the expected amount on `chain`; the invariants hold there. */
export async function expectPaidExactlyOnce(
  runtime: Runtime,
  chain: ChainConnection,
  expected: ReadonlyMap<string, bigint>,
): Promise<void> {
  for (const [address, amount] of expected) {
    expect(await readTokenBalance(chain, address as Address), address).toBe(amount);
  }
  for (const [key, n] of await paidBatchIds(chain)) expect(n, `batch id ${key} paid`).toBe(1);
  const report = await checkSettlementInvariants(runtime, chain);
  expect(report.problems).toEqual([]);
}

export interface FreezableProxy {
  url: string;
  /** From now on requests get no answer (held open) until thaw(). */
  freeze(): void;
  /** Answers again; requests held meanwhile are cut (their callers timed out or will retry). */
  thaw(): void;
  held(): number;
  /** Sends every later request to another node: the node behind the URL was replaced. */
  retarget(upstream: string): void;
}

/**
 * A JSON-RPC proxy in front of `upstream` that can stop answering, or be pointed at another node:
 * what CHAIN_RPC_URL names from the worker's side. (Hardhat's RPC server cannot be restarted on its
 * own port while a client keeps a connection open: its close() waits for keep-alive connections.)
 */
export async function freezableProxy(initialUpstream: string): Promise<FreezableProxy> {
  let upstream = initialUpstream;
  let frozen = false;
  const holding = new Set<ServerResponse>();
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (frozen) {
      holding.add(res);
      res.on('close', () => holding.delete(res));
      return;
    }
    const answer = await fetch(upstream, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Buffer.concat(chunks),
    });
    res.writeHead(answer.status, { 'content-type': 'application/json' }).end(await answer.text());
  };
  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.socket?.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  afterFile(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    freeze: () => {
      frozen = true;
    },
    thaw: () => {
      frozen = false;
      for (const res of holding) res.socket?.destroy();
      holding.clear();
    },
    held: () => holding.size,
    retarget: (url) => {
      upstream = url;
    },
  };
}

export type { Hex };
