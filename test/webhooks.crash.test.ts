// Acceptance 3: kill -9 of the delivery worker at 20 random points while 300 events are due:
// every event is delivered at least once, none is lost.
//
// The workers are separate processes (`plainpay serve --role worker`), killed with SIGKILL, so
// this needs a database several processes can share: Postgres. PGlite is one process per data
// dir, so under the default `npm test` (no DATABASE_URL) the test is skipped; CI runs test/ again
// on Postgres, where it runs, on the file's own database (as every file has).

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Webhook } from 'standardwebhooks';
import { afterAll, expect, it } from 'vitest';
import { createLogger } from '../src/core/logger.ts';
import { insertEvent } from '../src/db/repositories/events.ts';
import { createRuntime, type Runtime } from '../src/runtime.ts';
import { fileDatabaseUrl, isPostgres, testAccount, testConfig, testDatabase } from './support/harness.ts';

const CLI = fileURLToPath(new URL('../bin/plainpay.mjs', import.meta.url));
const EVENTS = 300;
const KILLS = 20;

const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

interface WorkerProcess {
  child: ChildProcess;
  running: Promise<void>;
  exited: Promise<void>;
  stderr: string[];
}

function spawnWorker(env: Record<string, string>): WorkerProcess {
  const child = spawn(process.execPath, [CLI, 'serve', '--role', 'worker'], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stderr: string[] = [];
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const running = new Promise<void>((resolve, reject) => {
    // The banner goes to stderr when stdout carries JSON logs (LOG_FORMAT).
    createInterface({ input: child.stderr! }).on('line', (line) => {
      stderr.push(line);
      if (line.startsWith('plainpay is running')) resolve();
    });
    void exited.then(() => reject(new Error(`worker exited before running:\n${stderr.join('\n')}`)));
  });
  running.catch(() => {});
  return { child, running, exited, stderr };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

it.skipIf(!isPostgres)(
  `kill -9 of the worker at ${KILLS} random points while ${EVENTS} events are due: every event is delivered, none lost`,
  async () => {
    const url = (await fileDatabaseUrl())!;
    const handle = await testDatabase();
    const config = testConfig({ DATABASE_URL: url, WEBHOOK_ALLOW_PRIVATE: '1' });
    const runtime: Runtime = await createRuntime(config, { database: handle, logger: createLogger('silent') });
    cleanups.push(() => runtime.close());
    const merchant = await testAccount(runtime);
    const verifier = new Webhook(merchant.webhookSecret);

    // An event counts as delivered when the receiver's 204 went out on a live connection, not when
    // its request arrived: every worker claims up to 16 deliveries the moment it starts, so counting
    // arrivals, 20 short-lived workers sent all 300 before the last kill on a fast machine. The
    // receiver answers slowly (400–800 ms) and a worker lives 0–400 ms after it is running, so the
    // kills cut most attempts short, and those deliveries stay leased until the survivor's turn.
    const received = new Map<string, number>();
    let forged = 0;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        let eventId: string;
        try {
          eventId = (verifier.verify(Buffer.concat(chunks).toString('utf8'), req.headers as never) as { id: string })
            .id;
        } catch {
          forged++;
          res.writeHead(400).end();
          return;
        }
        // 'finish' only if the answer was handed to a connection still open: a killed worker's is not.
        res.once('finish', () => received.set(eventId, (received.get(eventId) ?? 0) + 1));
        setTimeout(() => res.writeHead(204).end(), 400 + Math.random() * 400);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    });
    const target = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;

    const eventIds = await runtime.db.transaction().execute(async (trx) => {
      const ids: string[] = [];
      for (let i = 0; i < EVENTS; i++) {
        const event = await insertEvent(trx, {
          accountId: merchant.accountId,
          livemode: false,
          type: 'payment.settled',
          objectId: `pay_${i}`,
          data: { reference: `order-${i}`, metadata: { i } },
          webhookUrl: target,
          createdAt: runtime.clock.now(),
        });
        ids.push(event.id);
      }
      return ids;
    });

    const dataDir = mkdtempSync(join(tmpdir(), 'plainpay-crash-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const env = {
      DATABASE_URL: url,
      WEBHOOK_ALLOW_PRIVATE: '1',
      LOG_LEVEL: 'warn',
      PLAINPAY_MASTER_KEY: config.masterKey!,
      PLAINPAY_DATA_DIR: dataDir,
      DEMO_ACCOUNT: '0',
    };

    const killedAt: number[] = [];
    for (let kill = 0; kill < KILLS; kill++) {
      const worker = spawnWorker(env);
      cleanups.push(() => {
        worker.child.kill('SIGKILL');
      });
      await worker.running;
      await sleep(Math.random() * 400);
      killedAt.push(received.size);
      worker.child.kill('SIGKILL');
      await worker.exited;
    }
    // The kills really interrupted delivery: work remained after the last one.
    expect(received.size).toBeLessThan(EVENTS);

    // A last worker is left running: attempts cut short by the kills are taken again once their
    // leases (timeout 15 s + 5 s) expire.
    const survivor = spawnWorker(env);
    cleanups.push(async () => {
      survivor.child.kill('SIGTERM');
      await survivor.exited;
    });
    await survivor.running;
    const deadline = Date.now() + 60_000;
    let pending = EVENTS;
    while (Date.now() < deadline) {
      const row = await runtime.db
        .selectFrom('event_deliveries')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('account_id', '=', merchant.accountId)
        .where('status', '!=', 'delivered')
        .executeTakeFirstOrThrow();
      pending = Number(row.n);
      if (pending === 0) break;
      await sleep(250);
    }

    expect(pending).toBe(0);
    expect(forged).toBe(0);
    const missing = eventIds.filter((id) => !received.has(id));
    expect(missing).toEqual([]);
    expect(received.size).toBe(EVENTS);

    const attempts = await runtime.db
      .selectFrom('webhook_attempts')
      .select(['event_id', 'outcome'])
      .where('event_id', 'in', eventIds)
      .execute();
    const interrupted = attempts.filter((a) => a.outcome === null).length;
    const duplicates = [...received.values()].reduce((sum, n) => sum + n, 0) - EVENTS;
    // Kills landed mid-attempt: those attempts have no outcome, and their events went out again.
    expect(interrupted).toBeGreaterThan(0);
    expect(attempts.filter((a) => a.outcome === 'failed')).toEqual([]);
    console.info(
      `crash test: ${KILLS} kills (events delivered before each: ${killedAt.join(', ')}); ` +
        `${interrupted} attempts interrupted; ${duplicates} duplicate arrivals; ${EVENTS} of ${EVENTS} delivered`,
    );
  },
  180_000,
);
