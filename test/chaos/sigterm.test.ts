// Chaos: SIGTERM to the API under load (issue 17, "graceful shutdown"). One `plainpay serve --role
// api` process; several clients, each on its own kept-alive connection, create, read and ping in a
// tight loop, and one agent request hangs on a model that never answers. SIGTERM mid-load. Judged:
//   - every request that got an answer got a success or the 503 error object (`api_error`,
//     `unavailable`, Retry-After, Connection: close): never fastify's own 503 body, never a 500;
//   - no request was met by a reset or a dropped connection: the only failure allowed is a refused
//     new connection (the listener is closed), which the server never received;
//   - the request that cannot finish (the hung model) is answered with the 503 error object;
//   - the process exits 0, well within the ceiling;
//   - each payment create is made once or cleanly refused: retried with the same Idempotency-Key on
//     a fresh server, every key gives one payment (the one first answered, if any), and the
//     account holds exactly one payment per key.
// Runs on PGlite (a data dir of its own) and on Postgres (DATABASE_URL: this file's database).

import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { Agent, createServer, type IncomingHttpHeaders, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ChildProcess, spawn } from 'node:child_process';
import { afterAll, expect, inject, it } from 'vitest';
import { createAccount } from '../../src/accounts/create-account.ts';
import { createLogger } from '../../src/core/logger.ts';
import { createRuntime, type Runtime } from '../../src/runtime.ts';
import { fileDatabaseUrl, isPostgres, testConfig } from '../support/harness.ts';
import { CLI, freePort } from '../support/server.ts';

const CLIENTS = 8;
/** Creates answered before the SIGTERM: the load is under way (a state, not a duration). */
const CREATES_BEFORE_STOP = 60;
const SHUTDOWN_TIMEOUT_MS = 6_000;
/** Far above the configured SHUTDOWN_TIMEOUT_MS: only a stop that hangs reaches it. */
const EXIT_CEILING_MS = 30_000;

const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(what: string, check: () => boolean, ceilingMs = 30_000): Promise<void> {
  const deadline = Date.now() + ceilingMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await sleep(20);
  }
}

interface ApiProcess {
  port: number;
  exited: Promise<number | null>;
  output(): string;
  signal(signal: NodeJS.Signals): void;
}

async function spawnApi(env: Record<string, string>): Promise<ApiProcess> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [CLI, 'serve', '--role', 'api'], {
    env: { PATH: process.env.PATH ?? '', ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr!.on('data', (chunk) => {
    output += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${output}`)), 60_000);
    // The banner goes to stderr when stdout carries JSON logs (LOG_FORMAT).
    for (const stream of [child.stdout!, child.stderr!]) {
      stream.on('data', () => {
        if (output.includes('plainpay is running')) {
          clearTimeout(timer);
          resolve();
        }
      });
    }
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code} before running:\n${output}`));
    });
  });
  return { port, exited, output: () => output, signal: (signal) => child.kill(signal) };
}

type Ending =
  | { kind: 'response'; status: number; headers: IncomingHttpHeaders; body: unknown }
  | { kind: 'error'; code: string | undefined; message: string };
/** afterStop: it ended after the SIGTERM was sent. */
type Outcome = Ending & { afterStop: boolean };

interface Sent {
  op: 'create' | 'read' | 'ping' | 'agent';
  key?: string;
  outcome: Outcome;
}

let stopSentAt: number | undefined;

/** One request on `agent` (one kept-alive connection per client), as it ended: an answer or a socket error. */
function send(
  port: number,
  agent: Agent,
  apiKey: string,
  method: string,
  path: string,
  options: { body?: unknown; headers?: Record<string, string> } = {},
): Promise<Outcome> {
  const text = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve) => {
    let done = false;
    const finish = (ending: Ending): void => {
      if (done) return;
      done = true;
      resolve({ ...ending, afterStop: stopSentAt !== undefined });
    };
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent,
        headers: {
          authorization: `Bearer ${apiKey}`,
          ...(text === undefined ? {} : { 'content-type': 'application/json' }),
          ...options.headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', (error: NodeJS.ErrnoException) =>
          finish({ kind: 'error', code: error.code, message: `response cut: ${error.message}` }),
        );
        res.on('end', () => {
          const raw = Buffer.concat(chunks).toString('utf8');
          let body: unknown = raw;
          try {
            body = JSON.parse(raw);
          } catch {
            // kept as text: judged below
          }
          finish({ kind: 'response', status: res.statusCode ?? 0, headers: res.headers, body });
        });
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) =>
      finish({ kind: 'error', code: error.code, message: error.message }),
    );
    req.end(text);
  });
}

function paymentBody(key: string): Record<string, unknown> {
  return { amount: 5000, currency: 'NGN', redirect_url: 'https://shop.example/done', metadata: { key } };
}

interface ErrorObject {
  error?: { type?: unknown; code?: unknown; message?: unknown };
}

/** The 503 of a stop: our error object with Retry-After, and the connection closed after it. */
function isStopError(outcome: Extract<Outcome, { kind: 'response' }>): boolean {
  const error = (outcome.body as ErrorObject | null)?.error;
  return (
    outcome.status === 503 &&
    typeof error === 'object' &&
    error !== null &&
    error.type === 'api_error' &&
    error.code === 'unavailable' &&
    typeof error.message === 'string' &&
    outcome.headers['retry-after'] !== undefined &&
    outcome.headers.connection === 'close'
  );
}

it('SIGTERM under load: answers are successes or the 503 error object, no resets, one payment per key, exit 0', async () => {
  // The account and its key, on the database the server will use.
  const masterKey = randomBytes(32).toString('base64');
  const dataDir = mkdtempSync(join(tmpdir(), 'plainpay-sigterm-'));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  const databaseUrl = await fileDatabaseUrl();
  if (!isPostgres) {
    const template = inject('pgliteTemplateDir');
    if (!template) throw new Error('global setup did not provide a database');
    cpSync(template, join(dataDir, 'pgdata'), { recursive: true });
  }
  const dbEnv: Record<string, string> = databaseUrl ? { DATABASE_URL: databaseUrl } : {};
  const openRuntime = (): Promise<Runtime> =>
    createRuntime(testConfig({ ...dbEnv, PLAINPAY_DATA_DIR: dataDir, PLAINPAY_MASTER_KEY: masterKey }), {
      logger: createLogger('silent'),
    });
  const setup = await openRuntime();
  const account = await createAccount(setup.db, setup.secretBox, { name: 'Sigterm merchant', livemode: false });
  // PGlite opens in one process at a time: the server's.
  await setup.close();

  // A model that takes the request and never answers: the agent run cannot finish before the drain ends.
  const hung = new Set<string>();
  const model: Server = createServer((req) => {
    hung.add(req.url ?? '');
  });
  await new Promise<void>((resolve) => model.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => {
    model.closeAllConnections();
    return new Promise<void>((resolve) => model.close(() => resolve()));
  });

  const env = {
    ...dbEnv,
    PLAINPAY_DATA_DIR: dataDir,
    PLAINPAY_MASTER_KEY: masterKey,
    DEMO_ACCOUNT: '0',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_SECOND: '1000000',
    SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
    ANTHROPIC_API_KEY: 'sk-ant-chaos-test',
    ANTHROPIC_BASE_URL: `http://127.0.0.1:${(model.address() as AddressInfo).port}`,
  };
  const api = await spawnApi(env);

  const sent: Sent[] = [];
  const created: string[] = [];
  let createdBeforeStop = 0;
  const agents: Agent[] = [];
  const client = async (index: number): Promise<void> => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    agents.push(agent);
    for (let n = 0; ; n++) {
      const pick = (n + index) % 5;
      let entry: Sent;
      if (pick < 3 || created.length === 0) {
        const key = `sigterm-${index}-${n}-${randomBytes(4).toString('hex')}`;
        const outcome = await send(api.port, agent, account.api_key, 'POST', '/v1/payments', {
          body: paymentBody(key),
          headers: { 'idempotency-key': key },
        });
        entry = { op: 'create', key, outcome };
        if (outcome.kind === 'response' && outcome.status < 300) {
          created.push((outcome.body as { id: string }).id);
          if (!outcome.afterStop) createdBeforeStop += 1;
        }
      } else if (pick === 3) {
        const id = created[created.length - 1 - (n % created.length)];
        entry = { op: 'read', outcome: await send(api.port, agent, account.api_key, 'GET', `/v1/payments/${id}`) };
      } else {
        entry = { op: 'ping', outcome: await send(api.port, agent, account.api_key, 'GET', '/v1/ping') };
      }
      sent.push(entry);
      // The listener is closed (or any other failure, judged below): this client is done.
      if (entry.outcome.kind === 'error') return;
    }
  };
  const clients = Array.from({ length: CLIENTS }, (_, i) => client(i));

  const agentClient = new Agent({ keepAlive: true, maxSockets: 1 });
  agents.push(agentClient);
  const slow = send(api.port, agentClient, account.api_key, 'POST', '/agent/settle', {
    body: { instruction: 'Pay 10 USDC to 0x1111111111111111111111111111111111111111.' },
  }).then((outcome) => sent.push({ op: 'agent', outcome }));
  cleanups.push(() => {
    for (const agent of agents) agent.destroy();
  });

  await waitFor('the load to be under way', () => createdBeforeStop >= CREATES_BEFORE_STOP && hung.size > 0);
  stopSentAt = Date.now();
  api.signal('SIGTERM');

  const exit = await Promise.race([api.exited, sleep(EXIT_CEILING_MS).then(() => 'still running' as const)]);
  await Promise.all([...clients, slow]);

  const responses = sent.flatMap((s) => (s.outcome.kind === 'response' ? [{ ...s, outcome: s.outcome }] : []));
  const failures = sent.flatMap((s) => (s.outcome.kind === 'error' ? [{ ...s, outcome: s.outcome }] : []));
  const unexpected = responses.filter(({ outcome }) => !(outcome.status === 200 || isStopError(outcome)));
  const describe = (list: Array<{ op: string; outcome: Outcome }>) =>
    list.slice(0, 5).map(({ op, outcome }) => ({ op, ...outcome }));

  // Every answer: a success, or our 503 error object (never fastify's body, never a 500).
  expect(describe(unexpected), api.output()).toEqual([]);
  // No reset, no dropped connection: only new connections refused once the listener closed.
  expect(
    describe(failures.filter(({ outcome }) => outcome.code !== 'ECONNREFUSED' || !outcome.afterStop)),
    api.output(),
  ).toEqual([]);
  // The request that could not finish got the error object.
  const agentAnswer = sent.find((s) => s.op === 'agent')?.outcome;
  expect(agentAnswer?.kind === 'response' && isStopError(agentAnswer), JSON.stringify(agentAnswer)).toBe(true);
  // The requests in flight at the SIGTERM ran to their end: some were answered after it.
  expect(responses.some(({ outcome }) => outcome.afterStop && outcome.status === 200)).toBe(true);
  expect(exit, api.output()).toBe(0);
  expect(api.output()).not.toMatch(/"level":(50|60)/);

  // Each create once: its key, retried on a fresh server, gives one payment (the first answer's, if it had one).
  const fresh = await spawnApi(env);
  const creates = sent.filter((s) => s.op === 'create');
  const retryAgent = new Agent({ keepAlive: true, maxSockets: 4 });
  agents.push(retryAgent);
  const idsByKey = new Map<string, string>();
  for (let i = 0; i < creates.length; i += 4) {
    await Promise.all(
      creates.slice(i, i + 4).map(async ({ key, outcome }) => {
        const retry = await send(fresh.port, retryAgent, account.api_key, 'POST', '/v1/payments', {
          body: paymentBody(key!),
          headers: { 'idempotency-key': key! },
        });
        expect(retry.kind === 'response' && retry.status, JSON.stringify(retry)).toBe(200);
        const id = ((retry as { body: { id: string } }).body as { id: string }).id;
        if (outcome.kind === 'response' && outcome.status === 200) {
          expect(id).toBe((outcome.body as { id: string }).id);
        }
        idsByKey.set(key!, id);
      }),
    );
  }
  fresh.signal('SIGTERM');
  expect(await Promise.race([fresh.exited, sleep(EXIT_CEILING_MS).then(() => 'still running')])).toBe(0);

  const check = await openRuntime();
  try {
    const rows = await check.db.selectFrom('payments').select('id').where('account_id', '=', account.account).execute();
    expect(new Set(idsByKey.values()).size).toBe(creates.length);
    expect(rows.length).toBe(creates.length);
  } finally {
    await check.close();
  }
}, 120_000);
