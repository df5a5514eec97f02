import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const CLI = new URL('../../bin/plainpay.mjs', import.meta.url).pathname;

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** The environment of a child process: embedded database only unless the caller passes one. */
export function childEnv(dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const { DATABASE_URL: _db, REDIS_URL: _redis, ...rest } = process.env;
  return { ...rest, PLAINPAY_DATA_DIR: dataDir, LOG_LEVEL: 'warn', ...extra };
}

export interface RunningServer {
  url: string;
  checkoutUrl: string;
  port: number;
  checkoutPort: number;
  /** PLAINPAY_DATA_DIR of the process (its database is `pgdata` inside). */
  dataDir: string;
  demoKey: string;
  output(): string;
  /** SIGTERM and wait; resolves with the exit code. */
  /** Sends the signals (default one SIGTERM, 100 ms apart) and resolves with the exit code. */
  stop(signals?: readonly NodeJS.Signals[]): Promise<number | null>;
}

/**
 * Runs `plainpay serve` as a real process on free ports with a fresh data dir, removed on stop. A
 * PLAINPAY_DATA_DIR in extraEnv is used instead, and kept (a test restarting on it owns it).
 */
export async function startServer(extraEnv: Record<string, string> = {}): Promise<RunningServer> {
  const ownDataDir = extraEnv.PLAINPAY_DATA_DIR === undefined;
  const ownPorts = extraEnv.PORT === undefined && extraEnv.CHECKOUT_PORT === undefined;
  // freePort() releases the port it found before serve binds it; another process (a test file
  // running beside this one) can take it meanwhile. Then serve exits with EADDRINUSE, and a start
  // on ports of our own choosing is tried again on others, from a fresh data dir as the first was.
  for (let attempt = 1; ; attempt++) {
    const dataDir = extraEnv.PLAINPAY_DATA_DIR ?? mkdtempSync(join(tmpdir(), 'plainpay-server-'));
    try {
      return await spawnServe(dataDir, ownDataDir, extraEnv);
    } catch (error) {
      if (ownDataDir) rmSync(dataDir, { recursive: true, force: true });
      const taken = error instanceof ServeExited && /EADDRINUSE/.test(error.message);
      if (!taken || !ownPorts || attempt === 3) throw error;
    }
  }
}

class ServeExited extends Error {}

async function spawnServe(
  dataDir: string,
  ownDataDir: boolean,
  extraEnv: Record<string, string>,
): Promise<RunningServer> {
  const [port, checkoutPort] = [await freePort(), await freePort()];
  const child: ChildProcess = spawn(process.execPath, [CLI, 'serve'], {
    env: childEnv(dataDir, { PORT: String(port), CHECKOUT_PORT: String(checkoutPort), ...extraEnv }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr!.on('data', (chunk) => {
    output += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      // Not left running on a data dir the caller is about to remove.
      child.kill('SIGKILL');
      reject(new Error(`serve did not start:\n${output}`));
    }, 60_000);
    const check = (): void => {
      if (/Demo key: /.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    // The banner is on stdout on a terminal, on stderr beside JSON logs (LOG_FORMAT).
    child.stdout!.on('data', check);
    child.stderr!.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new ServeExited(`serve exited with ${code}:\n${output}`));
    });
  });
  // Into a pipe the banner names the key's file rather than printing the key (serve.ts).
  let demoKey: string;
  try {
    demoKey = (JSON.parse(readFileSync(join(dataDir, 'demo-account.json'), 'utf8')) as { api_key: string }).api_key;
  } catch (error) {
    throw new Error(`no demo account in ${dataDir}: ${(error as Error).message}\n${output}`);
  }
  return {
    url: `http://localhost:${port}`,
    checkoutUrl: `http://localhost:${checkoutPort}`,
    port,
    checkoutPort,
    dataDir,
    demoKey,
    output: () => output,
    async stop(signals = ['SIGTERM'] as const) {
      for (const [i, signal] of signals.entries()) {
        // Apart, so that a later signal lands while the first one's shutdown is under way.
        if (i > 0) await new Promise((resolve) => setTimeout(resolve, 100));
        if (child.exitCode === null) child.kill(signal);
      }
      const code = await exited;
      if (ownDataDir) rmSync(dataDir, { recursive: true, force: true });
      return code;
    },
  };
}

/**
 * One request to a running server's API with a key, as a client would make it: the status and the
 * parsed JSON body, read field by field by the tests that use it.
 */
export async function callApi(
  server: Pick<RunningServer, 'url'>,
  method: string,
  path: string,
  key: string,
  body?: unknown,
  // biome-ignore lint/suspicious/noExplicitAny: API responses, read field by field in the assertions.
): Promise<{ status: number; json: any }> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: await res.json() };
}
